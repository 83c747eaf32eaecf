"""Secret references (``${env:NAME}``, ``${file:PATH}``) and path expansion.

Secrets are resolved only when a connection needs them and never written to a run
directory, a log or the store: those keep the reference.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from vbench.config.localfiles import shown_path
from vbench.errors import ConfigError

_REF = re.compile(r"^\$\{(env|file):((?:[^${}]|\$\{vbench:[^}]*\})+)\}$")
_VBENCH = re.compile(r"\$\{vbench:([^}]*)\}")


class SecretError(ConfigError):
    """A secret reference that cannot be resolved: ``where`` (the field) and ``reason``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")


def resolve_secret(ref: str, where: str) -> str:
    """The value a reference points to; ``where`` names the field for messages."""
    m = _REF.match(ref.strip())
    if not m:
        raise SecretError(where, f"{ref!r} is not a secret reference (${{env:NAME}})")
    kind, name = m.group(1), m.group(2).strip()
    if kind == "env":
        value = os.environ.get(name)
        if value is None:
            raise SecretError(where, f"environment variable {name} is not set")
        return value
    path = Path(expand_path(name))
    try:
        return path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL in the name
        reason = (exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
                  if isinstance(exc, UnicodeDecodeError) else "a name cannot hold a NUL")
        raise SecretError(where, f"cannot read secret file {shown_path(path)!r}: {reason}"
                          ) from None


def vbench_home() -> Path:
    """$VBENCH_HOME, else the platform's user data directory for vbench."""
    env = os.environ.get("VBENCH_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("vbench"))


def expand_path(value: str) -> str:
    """Expand ``~`` and ``${vbench:sub/path}`` (under vbench's data directory)."""
    out = _VBENCH.sub(lambda m: str(vbench_home() / m.group(1)), value)
    return os.path.expanduser(out)
