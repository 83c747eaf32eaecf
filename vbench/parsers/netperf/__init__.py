"""netperf omni output → one record per test (pure).

Three shapes are read:

* ``-k SELECTORS``: ``KEY=value`` lines named by the output selectors themselves
  (``THROUGHPUT=9417.22``, ``P99_LATENCY=64``, ``LOCAL_CPU_UTIL=12.5`` …).
* ``-o SELECTORS`` (what the ``netperf`` workload asks for): a CSV header of human
  titles ("Throughput", "99th Percentile Latency Microseconds" …) over one line of
  values, after the test banner (both absent with ``-P 0``). Consoles and logs
  hard-wrap the banner and the header; the lines between the banner and the values
  are joined back and checked against the number of values.
  Titles map back to selector names; an unknown title keeps a snake_case name.
* A JSON list of such captures, one ``[banner, header, values]`` per test (how
  PerfKitBenchmarker stores them).

A ``--enable-histogram`` build's histogram block after the values is skipped.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register

SOURCE = "netperf"
# -o / -O column titles → the selector names -k prints.
TITLES = {
    "Throughput": "THROUGHPUT",
    "Throughput Units": "THROUGHPUT_UNITS",
    "Throughput Confidence Width (%)": "THROUGHPUT_CONFID",
    "Confidence Iterations Run": "CONFIDENCE_ITERATION",
    "Mean Latency Microseconds": "MEAN_LATENCY",
    "Stddev Latency Microseconds": "STDDEV_LATENCY",
    "Minimum Latency Microseconds": "MIN_LATENCY",
    "Maximum Latency Microseconds": "MAX_LATENCY",
    "50th Percentile Latency Microseconds": "P50_LATENCY",
    "90th Percentile Latency Microseconds": "P90_LATENCY",
    "99th Percentile Latency Microseconds": "P99_LATENCY",
    "Local CPU Util %": "LOCAL_CPU_UTIL",
    "Remote CPU Util %": "REMOTE_CPU_UTIL",
    "Local Service Demand": "LOCAL_SD",
    "Remote Service Demand": "REMOTE_SD",
    "Local Transport Retransmissions": "LOCAL_TRANSPORT_RETRANS",
    "Remote Transport Retransmissions": "REMOTE_TRANSPORT_RETRANS",
    "Transport MSS bytes": "TRANSPORT_MSS",
    "Elapsed Time (sec)": "ELAPSED_TIME",
    "Request Size Bytes": "REQUEST_SIZE",
    "Response Size Bytes": "RESPONSE_SIZE",
    "Local Send Size": "LOCAL_SEND_SIZE",
    "Remote Recv Size": "REMOTE_RECV_SIZE",
    "Protocol": "PROTOCOL",
    "Direction": "DIRECTION",
}
_KEYVAL = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")
_BANNER = re.compile(r"\bTEST\b.*\bfrom\b|^MIGRATED\b|^OMNI\b")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


@dataclass(frozen=True)
class NetperfResult:
    """One test: every reported selector, plus the banner when there is one."""

    format: str  # keyval | csv | json
    banner: str | None
    values: dict[str, float | str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what was odd about the capture (kept, never hidden)

    def number(self, key: str) -> float | None:
        v = self.values.get(key)
        return v if isinstance(v, float) else None

    @property
    def test(self) -> str | None:
        """``TCP STREAM``, ``UDP REQUEST/RESPONSE`` … from the banner."""
        if not self.banner:
            return None
        m = re.search(r"(?:MIGRATED\s+)?(.+?)\s+TEST\b", self.banner)
        return m.group(1).strip() if m else None

    @property
    def throughput(self) -> float | None:
        return self.number("THROUGHPUT")

    @property
    def units(self) -> str | None:
        u = self.values.get("THROUGHPUT_UNITS")
        return u if isinstance(u, str) else None

    def gbps(self) -> float | None:
        """Throughput in Gbit/s when the units are bits (``10^6bits/s`` …), else None."""
        t, u = self.throughput, self.units
        if t is None or u is None:
            return None
        m = re.fullmatch(r"10\^(\d+)bits/s", u)
        return t * 10 ** int(m.group(1)) / 1e9 if m else None


def parse_netperf(text: str, source: str = "<text>") -> list[NetperfResult]:
    stripped = text.replace("\ufeff", "").strip()
    if stripped.startswith("["):
        return _parse_json(stripped, source)
    lines = [ln.rstrip() for ln in re.split(r"\r\n|\r|\n", stripped)]
    if any(_KEYVAL.match(ln) for ln in lines):
        return [_parse_keyval(lines, source)]
    return [_parse_csv(lines, source)]


def _parse_keyval(lines: list[str], source: str) -> NetperfResult:
    values: dict[str, float | str] = {}
    banner = None
    for ln in lines:
        if m := _KEYVAL.match(ln):
            values[m.group(1)] = _value(m.group(2))
        elif banner is None and _BANNER.search(ln):
            banner = ln.strip()
    if not values:
        raise ParseError(f"{source}: no KEY=value lines (not netperf -k output?)")
    return NetperfResult("keyval", banner, values)


def _parse_csv(lines: list[str], source: str, fmt: str = "csv") -> NetperfResult:
    # The values line: the first line whose first cell is a number.
    body = [ln for ln in lines if ln.strip()]
    idx = next((i for i, ln in enumerate(body) if _NUMBER.match(ln.split(",")[0].strip())), None)
    if idx is None:
        raise ParseError(f"{source}: no line of values (not netperf -o output?)")
    cells = _cells(body[idx])
    before = body[:idx]
    # The banner (one line and its wrapped tail: lines without a comma) comes first.
    head_start = 0
    banner = None
    if before and _BANNER.search(before[0]):
        head_start = 1
        while head_start < len(before) and "," not in before[head_start]:
            head_start += 1
        banner = " ".join(ln.strip() for ln in before[:head_start])
    header_lines = before[head_start:]
    if not header_lines:  # -P 0: values only, named by position
        return NetperfResult(fmt, banner, {f"COLUMN_{i + 1}": _value(c) for i, c in
                                           enumerate(cells)})
    titles = _cells(" ".join(ln.strip() for ln in header_lines))
    if len(titles) > len(cells):
        raise ParseError(f"{source}: the header names {len(titles)} columns, the values line "
                         f"holds {len(cells)} (garbled or cut short?)")
    values = {_selector(t): _value(c) for t, c in zip(titles, cells, strict=False)}
    notes: tuple[str, ...] = ()
    if len(cells) > len(titles):
        # Seen in real captures whose header lost its last title: keep the values, unnamed.
        values.update({f"COLUMN_{i + 1}": _value(cells[i]) for i in range(len(titles),
                                                                        len(cells))})
        notes = (f"{len(cells)} values under {len(titles)} titles; the extra ones are "
                 "named COLUMN_<n>",)
    return NetperfResult(fmt, banner, values, notes)


def _parse_json(text: str, source: str) -> list[NetperfResult]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(doc, list) or not all(
        isinstance(t, list) and all(isinstance(x, str) for x in t) for t in doc
    ):
        raise ParseError(f"{source}: expected a list of captured outputs (lists of lines)")
    out = []
    for n, capture in enumerate(doc, start=1):
        lines = [ln for part in capture for ln in part.splitlines()]
        out.append(_parse_csv(lines, f"{source}[{n}]", fmt="json"))
    if not out:
        raise ParseError(f"{source}: the list holds no captures")
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in next(csv.reader(io.StringIO(line)))]


def _selector(title: str) -> str:
    return TITLES.get(title) or re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_").upper()


def _value(text: str) -> float | str:
    t = text.strip()
    return float(t) if _NUMBER.match(t) else t


def result_rows(results: list[NetperfResult]) -> list[dict[str, object]]:
    """One row per test (``vbench parse netperf``)."""
    rows = []
    for r in results:
        row: dict[str, object] = {"format": r.format, "test": r.test, "gbps": r.gbps()}
        row.update({k.lower(): v for k, v in r.values.items()})
        rows.append(row)
    return rows


def _cli_rows(text: str, source: str) -> list[dict[str, object]]:
    return result_rows(parse_netperf(text, source=source))


register(ToolParser(
    "netperf", "netperf omni output: -k KEY=value lines, -o CSV (wrapped headers too), "
    "or a JSON list of captures.", _cli_rows))  # fmt: skip
