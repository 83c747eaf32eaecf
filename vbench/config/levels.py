"""Levels of a find-max search written as the driver writes them: a number, or a size
with a binary unit as fio and the other drivers take it (``4k`` = 4096 bytes, ``1m``,
``2g``); and the same levels shown back in that form (4096 -> ``4k``, not 4096.0 or
``1.04858e+06``)."""

from __future__ import annotations

import re
from typing import Any

UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt])(?:i?b)?\s*$", re.IGNORECASE)


def is_size(value: Any) -> bool:
    """Whether a bound is written as a size with a unit (``4k``, ``1m``)."""
    return isinstance(value, str) and _SIZE.match(value) is not None


def search_level(value: Any) -> Any:
    """A search bound as a number: sizes with a unit become bytes; anything else that is
    not a number is refused with what a searched factor must be."""
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m is not None:
            return float(m.group(1)) * UNITS[m.group(2).lower()]
        try:
            return float(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"the searched factor must be numeric: expected a number or a size with a "
            f"binary unit (4k, 64k, 1m, 1g), got {value!r}"
        )
    return value


def size_text(n: float) -> str:
    """Bytes in the largest binary unit that divides them: 4096 -> ``4k``, 1536 -> ``1536``."""
    for unit, size in reversed(UNITS.items()):
        if n >= size and float(n).is_integer() and int(n) % size == 0:
            return f"{int(n) // size}{unit}"
    return str(int(n)) if float(n).is_integer() else f"{n:g}"
