"""memtier_benchmark output → one record per request type (pure functions, no I/O).

Reads the text report (the ``ALL STATS`` table: Sets, Gets, Waits, Totals, with
``---`` for a figure that does not apply) and the ``--json-out-file`` document
(``ALL STATS`` → type → ``Ops/sec``, ``Average Latency``, ``Percentile Latencies`` …).
Latencies in ms, throughput in ops/s, KB/sec as printed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register

SOURCE = "memtier"
_HEADER_SPLIT = re.compile(r"\s{2,}")
# Text column → record field.
_TEXT_COLUMNS = {
    "Ops/sec": "ops_per_sec",
    "Hits/sec": "hits_per_sec",
    "Misses/sec": "misses_per_sec",
    "Avg. Latency": "avg_ms",
    "Latency": "avg_ms",  # older memtier
    "KB/sec": "kb_per_sec",
}
_PCT_COLUMN = re.compile(r"^p(\d+(?:\.\d+)?) Latency$")
_PCT_KEY = re.compile(r"^p(\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class MemtierRow:
    """One request type (Sets, Gets, Waits, Totals) of a memtier report."""

    type: str
    ops_per_sec: float | None
    hits_per_sec: float | None = None
    misses_per_sec: float | None = None
    avg_ms: float | None = None
    kb_per_sec: float | None = None
    percentiles_ms: dict[str, float | None] = field(default_factory=dict)  # "p99" → ms


@dataclass(frozen=True)
class MemtierResult:
    format: str  # "text" | "json"
    rows: tuple[MemtierRow, ...]
    threads: int | None = None
    connections_per_thread: int | None = None
    seconds: float | None = None

    def row(self, type_: str) -> MemtierRow | None:
        return next((r for r in self.rows if r.type.lower() == type_.lower()), None)


def parse_memtier(text: str, source: str = "<text>") -> MemtierResult:
    """Text or JSON, whichever the file holds."""
    stripped = text.replace("\ufeff", "").lstrip()
    if stripped.startswith("{"):
        return _parse_json(stripped, source)
    return _parse_text(stripped, source)


def _parse_text(text: str, source: str) -> MemtierResult:
    lines = [ln.rstrip() for ln in re.split(r"\r\n|\r|\n", text)]
    info = _run_info(lines)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "ALL STATS")
        head = next(i for i in range(start, len(lines)) if lines[i].startswith("Type"))
    except StopIteration:
        raise ParseError(f"{source}: no 'ALL STATS' table (not memtier output?)") from None
    columns = _HEADER_SPLIT.split(lines[head].strip())[1:]
    rows = []
    for number, line in enumerate(lines[head + 1 :], start=head + 2):
        if not line.strip():
            break
        if set(line.strip()) <= {"-", "="}:
            continue
        cells = line.split()
        if len(cells) != len(columns) + 1:
            raise ParseError(
                f"{source}: line {number}: row {cells[0]!r} has {len(cells) - 1} values, "
                f"the header {len(columns)} (file cut short or garbled?)"
            )
        rows.append(_text_row(cells[0], dict(zip(columns, cells[1:], strict=True)), source))
    if not any(r.type == "Totals" for r in rows):
        raise ParseError(f"{source}: the ALL STATS table has no Totals row")
    return MemtierResult("text", tuple(rows), *info)


def _run_info(lines: list[str]) -> tuple[int | None, int | None, float | None]:
    found: dict[str, float] = {}
    for ln in lines[:10]:
        m = re.match(r"^\s*(\d+(?:\.\d+)?)\s+(Threads|Connections per thread|Seconds)\s*$", ln)
        if m:
            found[m.group(2)] = float(m.group(1))
    threads = found.get("Threads")
    conns = found.get("Connections per thread")
    return (
        int(threads) if threads is not None else None,
        int(conns) if conns is not None else None,
        found.get("Seconds"),
    )


def _text_row(name: str, values: dict[str, str], source: str) -> MemtierRow:
    fields: dict[str, Any] = {}
    pcts: dict[str, float | None] = {}
    for col, raw in values.items():
        value = _number(raw, f"{name} {col}", source)
        if col in _TEXT_COLUMNS:
            fields[_TEXT_COLUMNS[col]] = value
        elif m := _PCT_COLUMN.match(col):
            pcts[f"p{_pct(m.group(1))}"] = value
    return MemtierRow(type=name, ops_per_sec=fields.pop("ops_per_sec", None),
                      percentiles_ms=pcts, **fields)


def _parse_json(text: str, source: str) -> MemtierResult:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{source}: not valid JSON: {exc}") from None
    stats = doc.get("ALL STATS") if isinstance(doc, dict) else None
    if not isinstance(stats, dict):
        raise ParseError(f"{source}: no 'ALL STATS' object (not memtier --json-out-file?)")
    rows = []
    for name, block in stats.items():
        if not isinstance(block, dict) or "Ops/sec" not in block:
            continue  # Runtime, and the per-command histograms (SET, GET …)
        pcts = {
            f"p{_pct(m.group(1))}": _json_number(v, f"{name} {k}", source)
            for k, v in (block.get("Percentile Latencies") or {}).items()
            if (m := _PCT_KEY.match(k))
        }
        rows.append(MemtierRow(
            type=name,
            ops_per_sec=_json_number(block.get("Ops/sec"), f"{name} Ops/sec", source),
            hits_per_sec=_json_number(block.get("Hits/sec"), f"{name} Hits/sec", source),
            misses_per_sec=_json_number(block.get("Misses/sec"), f"{name} Misses/sec", source),
            avg_ms=_json_number(
                block.get("Average Latency", block.get("Latency")), f"{name} latency", source),
            kb_per_sec=_json_number(block.get("KB/sec"), f"{name} KB/sec", source),
            percentiles_ms=pcts,
        ))
    if not rows:
        raise ParseError(f"{source}: 'ALL STATS' holds no request types")
    info = doc.get("run information") or {}
    return MemtierResult(
        "json", tuple(rows),
        _opt_int(info.get("Threads")), _opt_int(info.get("Connections per thread")),
        _json_number(info.get("Seconds"), "Seconds", source),
    )


def _pct(text: str) -> str:
    # "99.90" and "99.9" name the same percentile.
    value = float(text)
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _number(text: str, where: str, source: str) -> float | None:
    if text.strip("-") == "":
        return None  # "---": does not apply
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"{source}: {where}: {text!r} is not a number") from None
    return None if math.isnan(value) else value


def _json_number(value: Any, where: str, source: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"{source}: {where}: {value!r} is not a number")
    return float(value)


def _opt_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def result_rows(result: MemtierResult) -> list[dict[str, object]]:
    """Tidy rows (one per request type) for ``vbench parse memtier``."""
    out = []
    for r in result.rows:
        row: dict[str, object] = {"format": result.format}
        d = asdict(r)
        pcts = d.pop("percentiles_ms")
        row.update(d)
        row.update({f"{k}_ms": v for k, v in pcts.items()})
        out.append(row)
    return out


def _cli_rows(text: str, source: str) -> list[dict[str, object]]:
    return result_rows(parse_memtier(text, source=source))


register(ToolParser("memtier", "memtier_benchmark output: the text report or --json-out-file.",
                    _cli_rows))  # fmt: skip
