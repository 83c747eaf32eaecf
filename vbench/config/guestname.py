"""Names that reach the guests (lab node names, VM names a scenario gives): a model type
of their own, so that the scenario's VM model takes it without importing the lab's
models (`vbench validate` without --lab builds none of them)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

# A name that reaches the guests: it is written in the header of every job file and
# config pushed to them and in the names of their run directories. One word, so that it
# can add no line, option or path of its own (a newline would add a fio section, a '/'
# a directory).
GUEST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_GUEST_NAME_RULE = ("letters, digits and _ . - only, starting with a letter or digit, "
                    "at most 128 characters")


def check_guest_name(name: str, what: str = "name") -> str:
    """``name`` if it may reach the guests (see GUEST_NAME), else ValueError saying why."""
    if not GUEST_NAME.fullmatch(name):
        raise ValueError(f"{what} {name!r} is refused: {_GUEST_NAME_RULE} (it names files "
                         "and directories on the guests and is written into their job files)")
    return name


def _name(value: str) -> str:
    return check_guest_name(value)


GuestName = Annotated[str, AfterValidator(_name)]
