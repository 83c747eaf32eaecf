"""vdbench's output files: ``flatfile.html`` (one row per reporting interval, and an
``avg_…`` row per run definition) and ``totals.html`` (the average line of each run).

Both come in two shapes: raw I/O to storage definitions (SD/WD: ``rate``, ``resp``,
``queue_depth`` …) and file-system workloads (FSD/FWD: ``Rate``, ``Read_rate``,
``Open_rate`` …). The flatfile names its columns in its header line, so it is read by
name (lower-cased); the totals file has a fixed two-line header per shape.

Units as vdbench reports them: rates in operations per second, response times in
milliseconds, MB/sec in MiB per second. ``n/a`` is missing (None), never 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vbench.errors import ParseError
from vbench.parsers.base import Rows, ToolParser, register
from vbench.results.records import Sample

# totals.html columns after the time stamp and the interval, per shape.
SD_TOTALS = ("rate", "mb_per_sec", "bytes_per_io", "read_pct", "resp", "read_resp",
             "write_resp", "resp_max", "resp_std", "queue_depth", "cpu_used", "cpu_sys")
FS_TOTALS = ("rate", "resp", "cpu_used", "cpu_sys", "read_pct", "read_rate", "read_resp",
             "write_rate", "write_resp", "mb_read", "mb_write", "mb_per_sec", "xfersize",
             "open_rate", "open_resp", "close_rate", "close_resp")
_TOTAL_LINE = re.compile(r"^(\d\d:\d\d:\d\d\.\d+)\s+(avg_\S+|\d+)\s+(.+)$")
_TEXT_COLUMNS = ("tod", "timestamp", "run", "interval", "version")
# Sample name, flatfile column, unit: what a workload run reports per run definition.
FIGURES = (
    ("iops", "rate", "1/s"), ("mb_per_sec", "mb/sec", "MiB/s"), ("resp", "resp", "ms"),
    ("read_resp", "read_resp", "ms"), ("write_resp", "write_resp", "ms"),
    ("resp_max", "resp_max", "ms"), ("resp_std", "resp_std", "ms"),
    ("read_pct", "read%", "%"), ("queue_depth", "queue_depth", "ios"),
    ("read_rate", "read_rate", "1/s"), ("write_rate", "write_rate", "1/s"),
    ("cpu_used", "cpu_used", "%"),
)  # fmt: skip


@dataclass(frozen=True)
class FlatRow:
    """One flatfile row: ``run`` (RD name), ``interval`` (a number, or ``avg_2-60``)."""

    run: str
    interval: str
    values: Mapping[str, float | None]  # numeric columns, lower-cased names
    text: Mapping[str, str]  # tod, timestamp, version …

    @property
    def is_average(self) -> bool:
        return self.interval.startswith("avg")


@dataclass(frozen=True)
class RunTotal:
    """The average line of one run definition in totals.html."""

    run: str
    loops: str  # the "For loops:" text ("" when none)
    interval: str  # e.g. avg_2-60: the intervals averaged
    shape: str  # "sd" (raw I/O) or "fs" (file system)
    values: Mapping[str, float | None]


def _number(text: str) -> float | None:
    if text.lower() in ("n/a", "nan", ""):
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_flatfile(text: str, source: str = "flatfile.html") -> list[FlatRow]:
    header: list[str] | None = None
    rows: list[FlatRow] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("*", "<")):
            continue
        parts = stripped.split()
        if header is None:
            names = [p.lower() for p in parts]
            if "run" not in names or "interval" not in names:
                raise ParseError(f"{source}:{number}: no vdbench flatfile header (Run, Interval)")
            header = names
            continue
        if len(parts) != len(header):
            raise ParseError(
                f"{source}:{number}: {len(parts)} values for {len(header)} columns"
            )
        cells = dict(zip(header, parts, strict=True))
        text_cols = {k: v for k, v in cells.items() if k in _TEXT_COLUMNS}
        values = {k: _number(v) for k, v in cells.items() if k not in _TEXT_COLUMNS}
        rows.append(FlatRow(cells["run"], cells["interval"], values, text_cols))
    if header is None:
        raise ParseError(f"{source}: not a vdbench flatfile (no header line)")
    return rows


def parse_totals(text: str, source: str = "totals.html") -> list[RunTotal]:
    shape: str | None = None
    run, loops = "", ""
    out: list[RunTotal] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "Starting RD=" in line:
            m = re.search(r"Starting RD=([^;\s<]+)", line)
            run = m.group(1) if m else ""
            lm = re.search(r"For loops:\s*([^<]*)", line)
            loops = lm.group(1).strip() if lm and lm.group(1).strip() != "None" else ""
            continue
        if "ReqstdOps" in line:
            shape = "fs"
        elif re.search(r"\bi/o\b", line) and "MB/sec" in line:
            shape = "sd"
        m = _TOTAL_LINE.match(line.strip())
        if not m:
            continue
        if shape is None:
            raise ParseError(f"{source}:{number}: a total before any column header")
        names = SD_TOTALS if shape == "sd" else FS_TOTALS
        cells = m.group(3).split()
        if len(cells) != len(names):
            raise ParseError(f"{source}:{number}: {len(cells)} values, expected {len(names)}")
        values = {k: _number(v) for k, v in zip(names, cells, strict=True)}
        out.append(RunTotal(run, loops, m.group(2), shape, values))
    if not out:
        raise ParseError(f"{source}: no run totals found (is this vdbench's totals.html?)")
    return out


def average_rows(rows: list[FlatRow]) -> list[FlatRow]:
    """The ``avg_…`` row of each run definition, in order."""
    return [r for r in rows if r.is_average]


def samples(rows: list[FlatRow], guest: str | None) -> list[Sample]:
    """Per run definition (its average row): the figures of :data:`FIGURES` that the
    file has; a run repeated by a for-loop keeps its occurrence in ``labels``."""
    out: list[Sample] = []
    seen: dict[str, int] = {}
    for row in average_rows(rows):
        seen[row.run] = seen.get(row.run, 0) + 1
        labels = (("rd", row.run), ("pass", str(seen[row.run])))
        for name, column, unit in FIGURES:
            if column in row.values:
                out.append(Sample(name, row.values[column], unit, "vdbench", guest, labels))
    return out


def _rows(text: str, source: str) -> Rows:
    if "Run totals" in text[:400]:
        return [
            {"run": t.run, "loops": t.loops, "interval": t.interval, "shape": t.shape,
             **t.values}
            for t in parse_totals(text, source)
        ]  # fmt: skip
    out: list[dict[str, Any]] = []
    for r in parse_flatfile(text, source):
        out.append({"run": r.run, "interval": r.interval, **r.text, **r.values})
    return out


register(ToolParser("vdbench", "vdbench flatfile.html (per interval) or totals.html (per run)",
                    _rows))  # fmt: skip
