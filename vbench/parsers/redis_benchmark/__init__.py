"""redis-benchmark output → one record per test (pure functions, no I/O).

Four shapes are read, whichever a file holds:

* ``--csv`` of Redis 6.2 and 7.x: a header ``"test","rps","avg_latency_ms",…`` then one
  quoted row per test (a UTF-8 BOM and a missing final newline are common in
  captured files; test names may hold spaces and parentheses, e.g.
  ``"LRANGE_100 (first 100 elements)"``);
* the older two-column ``--csv`` (``"SET","81433.22"``, no header);
* the default text report (``====== SET ======`` blocks; 7.x adds a
  ``latency summary (msec)`` table, older versions print ``N requests per second``);
* ``-q`` quiet lines (``SET: 81433.22 requests per second, p50=0.143 msec``).

Progress lines that redis-benchmark redraws with carriage returns
(``SET: rps=… (overall: …)``) and warnings such as ``WARNING: Could not fetch
server CONFIG`` (printed when a proxy refuses CONFIG) are not tests; warnings are kept.

In ``-l`` (loop) mode the same test appears once per iteration; see
:func:`combine_iterations`.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register

SOURCE = "redis-benchmark"
# CSV header name → field of RedisBenchTest (7.x names; 6.2 uses the same).
_CSV_FIELDS = {
    "rps": "rps",
    "avg_latency_ms": "avg_ms",
    "min_latency_ms": "min_ms",
    "p50_latency_ms": "p50_ms",
    "p95_latency_ms": "p95_ms",
    "p99_latency_ms": "p99_ms",
    "max_latency_ms": "max_ms",
}
LATENCY_FIELDS = ("avg_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")
_BLOCK = re.compile(r"^={3,}\s*(?P<name>.+?)\s*={3,}$")
_COMPLETED = re.compile(
    r"^(?P<n>\d+)\s+requests completed in\s+(?P<s>[\d.]+)\s+seconds$"
)
_CLIENTS = re.compile(r"^(?P<n>\d+)\s+parallel clients$")
_PAYLOAD = re.compile(r"^(?P<n>\d+)\s+bytes payload$")
_THROUGHPUT = re.compile(
    r"^(?:throughput summary:\s*)?(?P<rps>[\d.]+|-?nan|inf)\s+requests per second$", re.I
)
_QUIET = re.compile(
    r"^(?P<name>.+?):\s+(?P<rps>[\d.]+|-?nan|inf)\s+requests per second"
    r"(?:,\s*p50=(?P<p50>[\d.]+|-?nan)\s*msec)?$",
    re.I,
)
_SUMMARY_HEADER = ("avg", "min", "p50", "p95", "p99", "max")
_PROGRESS = re.compile(r"\brps=")


@dataclass(frozen=True)
class RedisBenchTest:
    """One test of one redis-benchmark report (latencies in ms, throughput in ops/s)."""

    test: str
    rps: float | None
    avg_ms: float | None = None
    min_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    requests: int | None = None  # text report only
    seconds: float | None = None  # text report only
    clients: int | None = None  # text report only
    payload_bytes: int | None = None  # text report only
    iterations: int = 1  # > 1 once loop-mode iterations are combined

    @property
    def command(self) -> str:
        """The command part of the name: ``LRANGE_100 (first 100 elements)`` → LRANGE_100."""
        return self.test.split(" (", 1)[0].strip()


@dataclass(frozen=True)
class RedisBenchResult:
    """A parsed report: its shape, its tests in file order, and warnings it printed."""

    format: str  # "csv" | "csv-legacy" | "text" | "quiet"
    tests: tuple[RedisBenchTest, ...]
    warnings: tuple[str, ...] = ()

    def by_test(self, name: str) -> list[RedisBenchTest]:
        return [t for t in self.tests if t.test == name or t.command == name]

    def names(self) -> list[str]:
        return list(dict.fromkeys(t.test for t in self.tests))


def parse_redis_benchmark(
    text: str, source: str = "<text>", *, cut_short: bool = False
) -> RedisBenchResult:
    """Parse any of the four shapes; ParseError when the text holds no test at all.

    ``cut_short``: the process was stopped (loop mode), so an unfinished last CSV row
    is dropped (and noted in ``warnings``) instead of being an error.
    """
    lines = _lines(text)
    warnings = [ln for ln in lines if _is_warning(ln)]
    body = [ln for ln in lines if not _is_warning(ln) and not _PROGRESS.search(ln)]
    if not body:
        said = f"; it printed: {' | '.join(warnings)[:300]}" if warnings else ""
        raise ParseError(f"{source}: no redis-benchmark results{said}")
    if body[0].startswith('"'):
        # Messages on stderr may be interleaved with the rows when both go to one log.
        warnings += [ln for ln in body if not ln.startswith('"')]
        rows = [ln for ln in body if ln.startswith('"')]
        if cut_short and rows and not _complete_csv(rows[-1]):
            warnings.append(f"unfinished last row dropped: {rows.pop()[:80]}")
        fmt, tests = _parse_csv(rows, source)
    elif any(_BLOCK.match(ln) for ln in body):
        fmt, tests = "text", _parse_text(body, source)
    else:
        fmt, tests = "quiet", _parse_quiet(body, source)
    if not tests:
        said = f"; it printed: {' | '.join(warnings)[:300]}" if warnings else ""
        if cut_short and fmt == "csv":  # a loop stopped before its first row: say why
            raise ParseError(f"{source}: no iteration of redis-benchmark's -n requests "
                             f"finished before it was stopped (only the CSV header){said}")
        raise ParseError(f"{source}: no redis-benchmark test results found{said}")
    return RedisBenchResult(fmt, tuple(tests), tuple(warnings))


def _complete_csv(line: str) -> bool:
    return line.endswith('"') and line.count('"') % 2 == 0


def _lines(text: str) -> list[str]:
    # A BOM may open the file; progress output redraws itself with bare CRs.
    text = text.replace("\ufeff", "")
    return [ln.strip() for ln in re.split(r"\r\n|\r|\n", text) if ln.strip()]


def _is_warning(line: str) -> bool:
    return line.upper().startswith(("WARNING", "ERROR:"))


# ----------------------------------------------------------------------------- CSV


def _parse_csv(lines: list[str], source: str) -> tuple[str, list[RedisBenchTest]]:
    rows = list(csv.reader(lines))
    header: list[str] | None = None
    tests: list[RedisBenchTest] = []
    for number, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if cells and cells[0] == "test":
            header = cells  # printed once, or again by each run appended to one file
            continue
        if header is None:
            tests.append(_legacy_row(cells, number, source))
        else:
            tests.append(_csv_row(header, cells, number, source))
    return ("csv" if header is not None else "csv-legacy"), tests


def _csv_row(header: list[str], cells: list[str], number: int, source: str) -> RedisBenchTest:
    if len(cells) != len(header):
        raise ParseError(
            f"{source}: CSV row {number} has {len(cells)} cells, the header {len(header)}"
        )
    values = dict(zip(header, cells, strict=True))
    fields = {
        attr: _number(values[col], f"CSV row {number} column {col}", source)
        for col, attr in _CSV_FIELDS.items()
        if col in values
    }
    return RedisBenchTest(test=values["test"], **fields)


def _legacy_row(cells: list[str], number: int, source: str) -> RedisBenchTest:
    if len(cells) != 2:
        raise ParseError(
            f"{source}: CSV row {number} has {len(cells)} cells; expected a header "
            '"test","rps",… or the two-column "TEST","RPS" form'
        )
    return RedisBenchTest(test=cells[0], rps=_number(cells[1], f"CSV row {number}", source))


# ----------------------------------------------------------------------------- text


def _parse_text(lines: list[str], source: str) -> list[RedisBenchTest]:
    tests: list[RedisBenchTest] = []
    block: dict[str, object] | None = None
    pending_summary = False
    for line in lines:
        m = _BLOCK.match(line)
        if m:
            if block is not None:
                tests.append(_finish_block(block, source))
            block, pending_summary = {"test": m.group("name")}, False
            continue
        if block is None:
            continue  # text before the first block (e.g. a stray port number)
        if pending_summary:
            block.update(_summary_values(line, block["test"], source))
            pending_summary = False
        elif tuple(line.split()) == _SUMMARY_HEADER:
            pending_summary = True
        else:
            _text_line(line, block, source)
    if block is not None:
        tests.append(_finish_block(block, source))
    return tests


def _text_line(line: str, block: dict[str, object], source: str) -> None:
    if m := _COMPLETED.match(line):
        block["requests"] = int(m.group("n"))
        block["seconds"] = float(m.group("s"))
    elif m := _CLIENTS.match(line):
        block["clients"] = int(m.group("n"))
    elif m := _PAYLOAD.match(line):
        block["payload_bytes"] = int(m.group("n"))
    elif m := _THROUGHPUT.match(line):
        block["rps"] = _number(m.group("rps"), f"test {block['test']}", source)


def _summary_values(line: str, test: object, source: str) -> dict[str, float | None]:
    cells = line.split()
    if len(cells) != len(_SUMMARY_HEADER):
        raise ParseError(f"{source}: test {test}: latency summary row {line!r} is incomplete")
    return {
        f"{name}_ms": _number(cell, f"test {test} latency {name}", source)
        for name, cell in zip(_SUMMARY_HEADER, cells, strict=True)
    }


def _finish_block(block: dict[str, object], source: str) -> RedisBenchTest:
    if "rps" not in block:
        raise ParseError(
            f"{source}: test {block['test']} has no 'requests per second' line "
            "(output cut short?)"
        )
    return RedisBenchTest(**block)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- quiet


def _parse_quiet(lines: list[str], source: str) -> list[RedisBenchTest]:
    tests = []
    for line in lines:
        m = _QUIET.match(line)
        if m is None:
            raise ParseError(f"{source}: unrecognised redis-benchmark line {line[:120]!r}")
        where = f"test {m.group('name')}"
        p50 = m.group("p50")
        tests.append(
            RedisBenchTest(
                test=m.group("name"),
                rps=_number(m.group("rps"), where, source),
                p50_ms=_number(p50, where, source) if p50 is not None else None,
            )
        )
    return tests


# ----------------------------------------------------------------------------- helpers


def _number(text: str, where: str, source: str) -> float | None:
    """A figure; "nan" (printed when nothing completed) is a missing figure, not 0."""
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"{source}: {where}: {text!r} is not a number") from None
    return None if math.isnan(value) or math.isinf(value) else value


def combine_iterations(tests: Sequence[RedisBenchTest]) -> RedisBenchTest:
    """One figure from the iterations of one test in ``-l`` mode.

    Every iteration issues the same number of requests, so the process's throughput
    over all of them is the harmonic mean of the iterations' rps (total requests over
    total time), and its mean latency is the mean of their means. Percentiles cannot be
    merged exactly: the worst iteration's value is kept (min: the lowest; max: the
    highest). An iteration without an rps figure is left out.
    """
    usable = [t for t in tests if t.rps is not None and t.rps > 0]
    if not usable:
        name = tests[0].test if tests else "?"
        return RedisBenchTest(test=name, rps=None, iterations=0)
    rps = len(usable) / sum(1.0 / t.rps for t in usable)  # type: ignore[operator]
    return RedisBenchTest(
        test=usable[0].test,
        rps=rps,
        avg_ms=_mean(t.avg_ms for t in usable),
        min_ms=_pick(min, (t.min_ms for t in usable)),
        p50_ms=_pick(max, (t.p50_ms for t in usable)),
        p95_ms=_pick(max, (t.p95_ms for t in usable)),
        p99_ms=_pick(max, (t.p99_ms for t in usable)),
        max_ms=_pick(max, (t.max_ms for t in usable)),
        iterations=len(usable),
    )


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _pick(fn: object, values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return fn(vals) if vals else None  # type: ignore[operator]


def result_rows(result: RedisBenchResult) -> list[dict[str, object]]:
    """Tidy rows (one per test) for ``vbench parse redis-benchmark``."""
    rows = []
    for t in result.tests:
        row: dict[str, object] = {"format": result.format}
        row.update(asdict(t))
        rows.append(row)
    return rows


def _cli_rows(text: str, source: str) -> list[dict[str, object]]:
    return result_rows(parse_redis_benchmark(text, source=source))


register(
    ToolParser(
        "redis-benchmark",
        "redis-benchmark output: --csv (7.x and the older two-column form), text or -q.",
        _cli_rows,
    )
)
