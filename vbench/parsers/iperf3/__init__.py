"""iperf3 output → throughput, retransmits, CPU and per-interval records (pure).

Reads ``iperf3 -J`` (``start.test_start``, ``intervals[].sum`` and, with ``--bidir``,
``sum_bidir_reverse``; ``end.sum_sent``/``sum_received`` and their ``_bidir_reverse``
twins, ``end.sum`` for UDP, ``end.cpu_utilization_percent``) and, for captures made
without ``-J``, the default text report (interval rows, ``(omitted)`` warm-up rows and
the sender/receiver summary).

Intervals flagged ``omitted`` (``--omit`` warm-up) are kept but marked: the summary
figures iperf3 prints already exclude them. A direction is ``"forward"`` (client sends),
``"reverse"`` (``-R``: server sends) or, with ``--bidir``, both.
Packet counts exist for UDP only; for TCP the packet rate is left to the guest's
network counters (``None`` here, never guessed from the MSS).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register

SOURCE = "iperf3"
_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BYTE_UNITS = {"": 1.0, "K": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "T": 1024.0**4}


@dataclass(frozen=True)
class Iperf3Interval:
    direction: str
    start: float | None  # seconds from the test's start
    end: float | None
    bits_per_second: float | None
    bytes: float | None
    retransmits: int | None
    packets: int | None
    omitted: bool


@dataclass(frozen=True)
class Iperf3Direction:
    """One direction's summary (what iperf3's ``end`` section reports)."""

    direction: str  # forward | reverse
    seconds: float | None
    sent_bytes: float | None
    sent_bps: float | None
    received_bytes: float | None
    received_bps: float | None
    retransmits: int | None  # TCP sender side
    packets: int | None = None  # UDP
    lost_packets: int | None = None
    lost_pct: float | None = None
    jitter_ms: float | None = None

    @property
    def gbps(self) -> float | None:
        """Goodput as the receiver saw it (the sender's figure when it is all there is)."""
        bps = self.received_bps if self.received_bps is not None else self.sent_bps
        return None if bps is None else bps / 1e9

    @property
    def packet_rate(self) -> float | None:
        if self.packets is None or not self.seconds:
            return None
        return self.packets / self.seconds

    @property
    def avg_packet_bytes(self) -> float | None:
        if not self.packets or self.sent_bytes is None:
            return None
        return self.sent_bytes / self.packets


@dataclass(frozen=True)
class Iperf3Result:
    format: str  # json | text
    protocol: str | None
    streams: int | None
    blksize: int | None
    omit: float | None
    duration: float | None
    reverse: bool
    bidir: bool
    directions: tuple[Iperf3Direction, ...]
    intervals: tuple[Iperf3Interval, ...] = ()
    cpu: dict[str, float] = field(default_factory=dict)  # host_total, remote_total …
    version: str | None = None
    error: str | None = None

    def total_gbps(self) -> float | None:
        values = [d.gbps for d in self.directions if d.gbps is not None]
        return sum(values) if values else None

    def retransmits(self) -> int | None:
        values = [d.retransmits for d in self.directions if d.retransmits is not None]
        return sum(values) if values else None

    def direction(self, name: str) -> Iperf3Direction | None:
        return next((d for d in self.directions if d.direction == name), None)


def parse_iperf3(text: str, source: str = "<text>") -> Iperf3Result:
    """JSON (``-J``) or the default text report, whichever the file holds."""
    stripped = text.replace("\ufeff", "").lstrip()
    if stripped.startswith("{"):
        return _parse_json(stripped, source)
    if stripped.startswith("bandwidth_direction,"):
        raise ParseError(f"{source}: a CloudHarmony iperf summary CSV, not iperf3 output "
                         "(run iperf3 with -J)")
    return _parse_text(stripped, source)


# ---------------------------------------------------------------------- JSON


def _parse_json(text: str, source: str) -> Iperf3Result:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or ("start" not in doc and "error" not in doc):
        raise ParseError(f"{source}: no 'start' section (not iperf3 -J output?)")
    start = doc.get("start") or {}
    test = start.get("test_start") or {}
    end = doc.get("end") or {}
    protocol = test.get("protocol")
    reverse = bool(test.get("reverse"))
    bidir = "sum_sent_bidir_reverse" in end or bool(test.get("bidir"))
    first = "reverse" if reverse and not bidir else "forward"
    directions = []
    if end:
        directions.append(_direction(first, end, "", protocol))
        if bidir:
            directions.append(_direction("reverse", end, "_bidir_reverse", protocol))
    intervals = []
    for block in doc.get("intervals") or []:
        for key, name in (("sum", first), ("sum_bidir_reverse", "reverse")):
            s = block.get(key)
            if isinstance(s, dict):
                intervals.append(Iperf3Interval(
                    name, _f(s.get("start")), _f(s.get("end")),
                    _f(s.get("bits_per_second")), _f(s.get("bytes")),
                    _i(s.get("retransmits")), _i(s.get("packets")), bool(s.get("omitted")),
                ))
    cpu = {k: float(v) for k, v in (end.get("cpu_utilization_percent") or {}).items()
           if isinstance(v, int | float)}
    error = doc.get("error")
    if not directions and error is None:
        raise ParseError(f"{source}: iperf3 JSON without an 'end' summary (run cut short?)")
    return Iperf3Result(
        "json", protocol, _i(test.get("num_streams")), _i(test.get("blksize")),
        _f(test.get("omit")), _f(test.get("duration")), reverse, bidir,
        tuple(directions), tuple(intervals), cpu, start.get("version"),
        str(error) if error is not None else None,
    )


def _direction(
    name: str, end: dict[str, Any], suffix: str, protocol: str | None
) -> Iperf3Direction:
    sent = end.get(f"sum_sent{suffix}") or {}
    received = end.get(f"sum_received{suffix}") or {}
    # UDP: "sum" holds the receiver's loss and jitter (and the packets the sender sent).
    udp = (end.get(f"sum{suffix}") or received) if protocol == "UDP" else {}
    return Iperf3Direction(
        direction=name,
        seconds=_f(sent.get("seconds", received.get("seconds"))),
        sent_bytes=_f(sent.get("bytes")), sent_bps=_f(sent.get("bits_per_second")),
        received_bytes=_f(received.get("bytes")),
        received_bps=_f(received.get("bits_per_second")),
        retransmits=_i(sent.get("retransmits")),
        packets=_i(udp.get("packets")), lost_packets=_i(udp.get("lost_packets")),
        lost_pct=_f(udp.get("lost_percent")), jitter_ms=_f(udp.get("jitter_ms")),
    )


def _f(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _i(value: Any) -> int | None:
    v = _f(value)
    return None if v is None else int(v)


# ---------------------------------------------------------------------- text

_ROW = re.compile(
    r"^\[\s*(?P<id>\w+)\]\s+(?P<a>[\d.]+)-(?P<b>[\d.]+)\s+sec\s+"
    r"(?P<xfer>[\d.]+)\s+(?P<xu>[KMGT]?)Bytes\s+(?P<rate>[\d.]+)\s+(?P<ru>[KMGT]?)bits/sec"
    r"(?:\s+(?P<retr>\d+))?(?P<rest>.*)$"
)


def _parse_text(text: str, source: str) -> Iperf3Result:
    intervals: list[Iperf3Interval] = []
    summary: dict[str, tuple[float, float, float, int | None]] = {}
    in_summary = False
    reverse = "Reverse mode" in text
    name = "reverse" if reverse else "forward"
    has_sum = "[SUM]" in text  # several streams: only their sums count
    for line in text.splitlines():
        if line.startswith("- - -"):
            in_summary = True
            continue
        m = _ROW.match(line.strip())
        if not m or (has_sum and m.group("id") != "SUM"):
            continue
        rate = float(m.group("rate")) * _UNITS[m.group("ru")]
        xfer = float(m.group("xfer")) * _BYTE_UNITS[m.group("xu")]
        retr = int(m.group("retr")) if m.group("retr") else None
        a, b = float(m.group("a")), float(m.group("b"))
        if in_summary:
            role = "receiver" if "receiver" in m.group("rest") else "sender"
            summary[role] = (b - a, xfer, rate, retr)
        else:
            intervals.append(Iperf3Interval(
                name, a, b, rate, xfer, retr, None, "(omitted)" in m.group("rest")))
    if not summary:
        raise ParseError(f"{source}: no sender/receiver summary (not iperf3 output, "
                         "or the run was cut short)")
    sent = summary.get("sender")
    received = summary.get("receiver")
    direction = Iperf3Direction(
        name, sent[0] if sent else (received[0] if received else None),
        sent[1] if sent else None, sent[2] if sent else None,
        received[1] if received else None, received[2] if received else None,
        sent[3] if sent else None,
    )
    # Seconds, as -J's "omit" (the rows need not be 1 s long: -i).
    omitted = sum((i.end or 0.0) - (i.start or 0.0) for i in intervals if i.omitted)
    return Iperf3Result("text", None, None, None, omitted if omitted else None, None,
                        reverse, False, (direction,), tuple(intervals))


def result_rows(result: Iperf3Result) -> list[dict[str, object]]:
    """One row per direction (``vbench parse iperf3``), with the run's CPU figures."""
    rows = []
    for d in result.directions:
        row: dict[str, object] = {"format": result.format, "protocol": result.protocol,
                                  "streams": result.streams, "blksize": result.blksize}
        row.update(asdict(d))
        row["gbps"] = d.gbps
        row["packet_rate"] = d.packet_rate
        row["avg_packet_bytes"] = d.avg_packet_bytes
        row.update({f"cpu_{k}": v for k, v in result.cpu.items()})
        rows.append(row)
    return rows


def _cli_rows(text: str, source: str) -> list[dict[str, object]]:
    return result_rows(parse_iperf3(text, source=source))


register(ToolParser("iperf3", "iperf3 -J JSON (TCP/UDP, -R, --bidir) or its default text report.",
                    _cli_rows))  # fmt: skip
