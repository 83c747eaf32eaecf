"""Files on the controller that a scenario or lab names (an esxtop config, a vdbench
parameter file, an SSH key): why one cannot be read, as a sentence for the field that
names it. Looking a name up can fail in more ways than "not found" — a name too long for
the file system, a path through a plain file, a loop of links, a NUL character — and
each is a problem of the configuration, not an internal error."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def file_problem(path: Path) -> str | None:
    """Why ``path`` is not a file this process can read (None when it is)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "not found"
    except OSError as exc:  # a name too long, a loop of links, a component not a folder
        return str(exc.strerror or exc)
    except ValueError:  # a NUL character, which no file name can hold
        return "a file name cannot hold a NUL character"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not os.access(path, os.R_OK):
        return "not readable"
    return None


def shown_path(path: Path | str, most: int = 120) -> str:
    """A path for a message: a name of thousands of characters is cut, saying its length."""
    text = str(path)
    return text if len(text) <= most else f"{text[:most]}… ({len(text)} characters)"
