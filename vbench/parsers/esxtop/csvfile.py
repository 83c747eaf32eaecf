"""Low-level pieces of the esxtop CSV reader: cells, the header, time stamps, row layout.

esxtop batch output is a perfmon ("PDH-CSV 4.0") file: one header line, one line per
sample, every cell quoted. Real files deviate from plain CSV in ways this module
absorbs (each is reported as a note, never silently):

- a trailing comma on every line (an empty last cell);
- in the PCPU power-state block of some ESXi builds, an *unquoted* fragment glued to
  the next quoted cell without a separator: ``"0.00",    73.1"8.93"`` — that is two
  cells, ``    73.1`` and ``8.93``, and the header has a matching unlabelled ``   -``;
- files re-saved by a spreadsheet: quotes stripped, CR-only or CRLF line ends, time
  stamps cut to ``HH:MM:SS`` (no date) or ``M/D/YYYY H:MM`` (no seconds).
"""

from __future__ import annotations

import bisect
import calendar
import re
from dataclasses import dataclass, field
from datetime import date

from vbench.errors import ParseError
from vbench.parsers.esxtop.names import ColumnName, parse_column_name

_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_PLAIN = re.compile(r'[^,"]*')
_PDH = re.compile(r"^\(PDH-CSV ([0-9.]+)\) \((.*)\)\((-?\d+)\)$")
_FULL = re.compile(r"^\s*(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?\s*$")
_ISO = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?\s*$")
_MINUTE = re.compile(r"^\s*(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2})\s*$")
_TIME = re.compile(r"^\s*(\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?\s*$")

STAMP_FULL, STAMP_MINUTE, STAMP_TIME = "full", "minute", "time"


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    start: int  # offset of the cell (its opening quote, if any) in the line
    glued: bool  # no separator between this cell and the previous one


def split_cells(line: str) -> tuple[list[Cell], list[str]]:
    """The cells of one line and notes on anything irregular in it."""
    cells: list[Cell] = []
    notes: list[str] = []
    pos, n, glued = 0, len(line), False
    while True:
        if pos < n and line[pos] == '"':
            m = _QUOTED.match(line, pos)
            if m is None:  # an unterminated quote: a line cut short
                notes.append(f"unterminated quote at offset {pos}")
                cells.append(Cell(line[pos + 1 :], pos, glued))
                return cells, notes
            cells.append(Cell(m.group(1).replace('""', '"'), pos, glued))
        else:
            m = _PLAIN.match(line, pos)
            assert m is not None  # matches the empty string at least
            cells.append(Cell(m.group(0), pos, glued))
        pos = m.end()
        if pos >= n:
            return cells, notes
        if line[pos] == ",":
            pos, glued = pos + 1, False
            if pos == n:  # a trailing separator: one more (empty) cell
                cells.append(Cell("", pos, False))
                return cells, notes
        else:
            glued = True  # the next cell starts without a separator


@dataclass(frozen=True)
class Header:
    """The parsed header line."""

    pdh_version: str
    timezone: str
    bias_minutes: int  # PDH bias: UTC = local time + bias
    columns: tuple[ColumnName, ...]  # counter columns; cell i+1 of a row is column i
    width: int  # cells a data row has (timestamp + columns [+ trailing empty cell])
    notes: tuple[str, ...]
    quoted: bool


def parse_header(text: str, source: str) -> Header:
    cells, notes = split_cells(text)
    if not cells:
        raise ParseError(f"{source}: empty header line")
    first = cells[0].text.strip()
    m = _PDH.match(first)
    if m is None:
        raise ParseError(
            f"{source}: not an esxtop batch file: the first header cell is {first[:60]!r}, "
            "expected '(PDH-CSV 4.0) (UTC)(0)' (esxtop -b output)"
        )
    notes = [f"header: {x}" for x in notes]
    width = len(cells)
    body = cells[1:]
    if body and body[-1].text == "":
        notes.append("a trailing comma ends every line (empty last cell ignored)")
        body = body[:-1]
    columns: list[ColumnName] = []
    for i, cell in enumerate(body, start=1):
        col = parse_column_name(cell.text)
        if col is None:
            col = _unlabelled(cell, columns, i, source)
            after = columns[-1].name if columns else "the time stamp"
            notes.append(
                f"column {i}: unlabelled cell {cell.text.strip()!r} after {after}"
                + (" glued to the next cell without a separator" if _next_glued(cells, i) else "")
                + f"; read as {col.name!r}"
            )
        columns.append(col)
    quoted = text.lstrip().startswith('"')
    if not quoted:
        notes.append("cells are not quoted (a spreadsheet re-save?)")
    return Header(m.group(1), m.group(2), int(m.group(3)), tuple(columns), width, tuple(notes),
                  quoted)  # fmt: skip


def _next_glued(cells: list[Cell], i: int) -> bool:
    return i + 1 < len(cells) and cells[i + 1].glued


def _unlabelled(cell: Cell, columns: list[ColumnName], i: int, source: str) -> ColumnName:
    """A cell that is not ``\\\\host\\...``: an unlabelled column of the previous object."""
    label = cell.text.strip()
    if not columns or len(label) > 40 or "\\" in label:
        raise ParseError(
            f"{source}: header cell {i} is {cell.text[:80]!r}, expected "
            "\\\\host\\Object(instance)\\Counter"
        )
    prev = columns[-1]
    return ColumnName(prev.host, prev.object, prev.instance, label or "(unlabelled)")


@dataclass
class StampReader:
    """Time stamp text -> epoch seconds (UTC), for the stamp style of one file."""

    source: str
    bias_minutes: int = 0
    date: date | None = None  # for time-only stamps
    style: str | None = None
    _day0: float | None = None
    _last_tod: float | None = None
    _days: int = 0
    _cache: dict[str, float] = field(default_factory=dict)

    def detect(self, text: str, line: int) -> str:
        if _FULL.match(text) or _ISO.match(text):
            self.style = STAMP_FULL
        elif _MINUTE.match(text):
            self.style = STAMP_MINUTE
        elif _TIME.match(text):
            if self.date is None:
                raise ParseError(
                    f"{self.source}:{line}: time stamps carry no date ({text.strip()!r}): the "
                    "file was re-saved by a spreadsheet. Give the capture date "
                    "(--date YYYY-MM-DD) to read it."
                )
            self.style = STAMP_TIME
            self._day0 = calendar.timegm(self.date.timetuple())
        else:
            raise ParseError(f"{self.source}:{line}: unreadable time stamp {text.strip()!r}")
        return self.style

    def __call__(self, text: str, line: int) -> float:
        if self.style is None:
            self.detect(text, line)
        if self.style == STAMP_TIME:
            return self._time_only(text, line)
        # Stamps of one day share the date part: cache the midnight epoch per date text.
        head = text.strip().partition(" ")[0]
        base = self._cache.get(head)
        m = (_FULL if self.style == STAMP_FULL else _MINUTE).match(text) or _ISO.match(text)
        if m is None:
            raise ParseError(f"{self.source}:{line}: unreadable time stamp {text.strip()!r}")
        g = m.groups()
        if base is None:
            y, mo, d = (int(g[0]), int(g[1]), int(g[2])) if "-" in head else (
                int(g[2]), int(g[0]), int(g[1]))  # fmt: skip
            try:
                base = float(calendar.timegm((y, mo, d, 0, 0, 0)))
                date(y, mo, d)
            except ValueError as exc:
                raise ParseError(f"{self.source}:{line}: bad date in {text.strip()!r}") from exc
            self._cache[head] = base
        secs = int(g[5]) if self.style == STAMP_FULL else 0
        return base + int(g[3]) * 3600 + int(g[4]) * 60 + secs + self.bias_minutes * 60

    def _time_only(self, text: str, line: int) -> float:
        m = _TIME.match(text)
        if m is None:
            raise ParseError(f"{self.source}:{line}: unreadable time stamp {text.strip()!r}")
        tod = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        # Past midnight the time of day drops by most of a day: count the day.
        if self._last_tod is not None and self._last_tod - tod > 12 * 3600:
            self._days += 1
        self._last_tod = tod
        assert self._day0 is not None
        return self._day0 + self._days * 86400 + tod + self.bias_minutes * 60


@dataclass(frozen=True)
class Layout:
    """Where the selected cells of a regular data row sit between its commas.

    Built from the first data row. A later row with the same number of commas has the
    same layout (esxtop data cells are numbers and never hold commas); any other row is
    split cell by cell.
    """

    commas: int
    fields: tuple[int, ...]  # per selected column: index of its comma-separated field
    pieces: tuple[int, ...]  # -1: the whole field; p >= 0: glued cell p within the field

    @property
    def has_glued(self) -> bool:
        return any(p >= 0 for p in self.pieces)


def build_layout(row: str, selected: list[int], width: int) -> Layout | None:
    """The layout of ``row`` (decoded as latin-1 so offsets are byte offsets)."""
    cells, notes = split_cells(row)
    if notes or len(cells) != width:
        return None
    commas = [i for i, ch in enumerate(row) if ch == ","]
    field_of = [bisect.bisect_right(commas, c.start) for c in cells]
    counts: dict[int, int] = {}
    for f in field_of:
        counts[f] = counts.get(f, 0) + 1
    fields, pieces = [], []
    for col in selected:
        cell = col + 1
        f = field_of[cell]
        fields.append(f)
        pieces.append(-1 if counts[f] == 1 else field_of[:cell].count(f))
    return Layout(len(commas), tuple(fields), tuple(pieces))


def cell_value(text: str) -> float | None:
    t = text.strip().strip('"').strip()
    if not t:
        return None
    try:
        return float(t)
    except ValueError:
        return None
