"""Faban ``detail.xan`` → sections of numeric tables (pure, no I/O).

The file is Faban's own plain-text "xan" format: ``Title:``, then ``Section:`` blocks,
each with an optional ``Display:`` line, a header row, a dashed rule and rows of
columns separated by two or more spaces. The time-series sections (throughput and
response times per interval, 30 s by default) let vbench compute the standard deviation
of sub-window averages the way seed 003 reports variation.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from vbench.errors import ParseError

_SPLIT = re.compile(r"\s{2,}")


@dataclass(frozen=True)
class XanSection:
    name: str
    display: str | None
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]  # cells as printed

    def numeric(self, column: str) -> list[float | None]:
        i = self.columns.index(column)
        return [_number(r[i]) if i < len(r) else None for r in self.rows]

    @property
    def operations(self) -> tuple[str, ...]:
        """Every column but the first (the time or name column)."""
        return self.columns[1:]


@dataclass(frozen=True)
class FabanDetail:
    title: str | None
    sections: tuple[XanSection, ...]

    def section(self, contains: str) -> XanSection | None:
        """The first section whose name contains ``contains`` (case-insensitive)."""
        want = contains.lower()
        return next((s for s in self.sections if want in s.name.lower()), None)

    def series(self, kind: str) -> dict[str, list[tuple[float, float | None]]]:
        """``kind`` "throughput" or "response times": operation → [(time s, value)]."""
        sec = next((s for s in self.sections
                    if kind.lower() in s.name.lower() and "distribution" not in s.name.lower()),
                   None)  # fmt: skip
        if sec is None:
            return {}
        times = sec.numeric(sec.columns[0])
        return {
            op: [(t, v) for t, v in zip(times, sec.numeric(op), strict=True) if t is not None]
            for op in sec.operations
        }


def parse_detail(text: str, source: str = "<text>") -> FabanDetail:
    lines = re.split(r"\r\n|\r|\n", text.replace("\ufeff", ""))
    title = None
    sections: list[XanSection] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("Title:"):
            title = line.split(":", 1)[1].strip()
        elif line.startswith("Section:"):
            section, i = _section(lines, i, source)
            sections.append(section)
            continue
        i += 1
    if not sections:
        raise ParseError(f"{source}: no 'Section:' block (not a Faban detail.xan?)")
    return FabanDetail(title, tuple(sections))


def _section(lines: list[str], i: int, source: str) -> tuple[XanSection, int]:
    name = lines[i].split(":", 1)[1].strip()
    i += 1
    display = None
    if i < len(lines) and lines[i].strip().startswith("Display:"):
        display = lines[i].split(":", 1)[1].strip()
        i += 1
    if i + 1 >= len(lines) or not set(lines[i + 1].strip()) <= {"-", " "}:
        raise ParseError(f"{source}:{i + 1}: section {name!r} has no header and rule")
    columns = tuple(_SPLIT.split(lines[i].strip()))
    i += 2
    rows = []
    while i < len(lines) and lines[i].strip() and not lines[i].startswith(("Section:", "Title:")):
        rows.append(tuple(_SPLIT.split(lines[i].strip())))
        i += 1
    return XanSection(name, display, columns, tuple(rows)), i


def _number(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
