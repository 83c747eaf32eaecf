"""The ``iperf3`` workload driver: network throughput between guest pairs.

One ``iperf3 -s -1`` per client instance on a ``servers`` guest, one ``iperf3 -c … -J``
per instance on a ``clients`` guest (pairing and directories:
:mod:`vbench.workloads.pairs`). The warm-up
is iperf3's own ``--omit`` (its intervals are flagged and left out of the summary), the
steady state is ``-t``. Figures per instance and summed: Gbps (receiver side),
retransmits, packets/s and average packet size (UDP: iperf3 counts datagrams; for TCP
the guest's NIC counters are the source), client and server CPU as iperf3 measures its
own process (% of one core), and ``gbps_per_core`` = Gbps ÷ the cores iperf3 used on
both ends. With esxtop running, the collectors' ``cpu_efficiency`` divides the same Gbps
by the host cores used (hypervisor + VMs), as the LRO study does.

User documentation: ``drivers/iperf3/README.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, field_validator

from vbench.analysis.catalogue import Metric, metric, same_unit
from vbench.errors import GuestError
from vbench.parsers.iperf3 import parse_iperf3
from vbench.results.records import Sample
from vbench.workloads.base import Finding, register
from vbench.workloads.pairs import (
    CLIENTS,
    SERVERS,
    Pair,
    PairParams,
    PairWorkload,
    size_bytes,
)  # fmt: skip

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest

SOURCE = "iperf3"
_RATE = r"^\d+(\.\d+)?[KMG]?(/\d+)?$"


class Iperf3Params(PairParams):
    protocol: Literal["tcp", "udp"] = Field("tcp", description="-u for udp")
    streams: int = Field(1, ge=1, le=128, description="parallel streams per client (-P)")
    length: str | None = Field(None, description=(
        "buffer (TCP) or datagram (UDP) size, -l: 256, 16K, 64K … (default: iperf3's)"))
    bitrate: str | None = Field(None, pattern=_RATE, description=(
        "target rate per stream, -b: 10G, 500M, 0 for unlimited (UDP default is 1M)"))
    direction: Literal["forward", "reverse", "bidir"] = Field("forward", description=(
        "forward: client sends; reverse (-R): server sends; bidir: both at once (--bidir)"))
    interval: float = Field(1.0, gt=0, le=60, description="seconds between interval reports (-i)")
    window: str | None = Field(None, description="socket buffer size, -w: 256K, 4M …")
    mss: int | None = Field(None, ge=88, le=65535, description="TCP maximum segment size (-M)")
    zerocopy: bool = Field(False, description="-Z: sendfile() instead of write()")
    no_delay: bool = Field(False, description="-N: TCP_NODELAY")
    congestion: str | None = Field(None, pattern=r"^[a-z0-9_]{1,16}$",
                                   description="TCP congestion control algorithm (-C)")

    @field_validator("length", "window", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        if v is None:
            return v
        size_bytes(v)  # raises ValueError with the expected shape
        return str(v).upper()


@register
class Iperf3Workload(PairWorkload):
    name: ClassVar[str] = "iperf3"
    docs: ClassVar[tuple[str, ...]] = ("drivers/iperf3/README.md",)
    Params: ClassVar[type[Iperf3Params]] = Iperf3Params
    tool: ClassVar[str] = "iperf3"
    result_name: ClassVar[str] = "json"
    required_tools: ClassVar[dict[str, tuple[str, ...]]] = {SERVERS: ("iperf3",),
                                                            CLIENTS: ("iperf3",)}
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "gbps", "gbps_per_core", "retransmits", "client_cpu_pct", "server_cpu_pct",
        "packet_rate", "avg_packet_bytes",
    )
    metrics: ClassVar[tuple[Metric, ...]] = (
        # A target bitrate (-b) caps the throughput.
        metric("gbps", "Gbps", "higher", capped_by=("bitrate",)),
        metric("retransmits", "count", "lower"),
        # CPU busy on each end: the cost of the throughput (gbps_per_core scores it).
        *same_unit(("client_cpu_pct", "server_cpu_pct"), "%", "none"),
        metric("lost_pct", "%", "lower"),
        metric("iperf3_cores_used", "cores", "none"),
        metric("gbps_per_core", "Gbps/core", "higher"),
        metric("packet_rate", "packets/s", "higher", capped_by=("bitrate",)),
        metric("avg_packet_bytes", "B", "none"),
        metric("jitter_ms", "ms", "lower"),
    )  # fmt: skip

    params: Iperf3Params

    @classmethod
    def findings(cls, params: Iperf3Params) -> list[Finding]:  # type: ignore[override]
        out = []
        if params.protocol == "udp" and params.bitrate is None:
            out.append(Finding("warning", "bitrate", (
                "UDP without a bitrate sends iperf3's default 1 Mbit/s per stream; "
                "set bitrate (0 for unlimited) to measure throughput")))
        if params.protocol == "udp" and (params.mss or params.congestion or params.no_delay):
            out.append(Finding("error", "protocol",
                               "mss, congestion and no_delay apply to TCP only"))
        return out

    def server_argv(self, pair: Pair, d: str) -> list[str]:
        return ["iperf3", "-s", "-1", "-B", pair.address, "-p", str(pair.port)]

    def client_argv(self, pair: Pair, d: str, warmup: float, steady: float) -> list[str]:
        p = self.params
        argv = ["iperf3", "-c", pair.address, "-p", str(pair.port),
                "-t", str(max(1, math.ceil(steady))), "-O", str(math.ceil(warmup)),
                "-P", str(p.streams), "-i", f"{p.interval:g}", "-J",
                "--logfile", f"{d}/client-{pair.index}.json"]
        if p.protocol == "udp":
            argv.append("-u")
        if p.bitrate is not None:
            argv += ["-b", p.bitrate]
        if p.length is not None:
            argv += ["-l", p.length]
        if p.window is not None:
            argv += ["-w", p.window]
        if p.mss is not None:
            argv += ["-M", str(p.mss)]
        if p.congestion is not None:
            argv += ["-C", p.congestion]
        argv += {"forward": [], "reverse": ["-R"], "bidir": ["--bidir"]}[p.direction]
        argv += (["-Z"] if p.zerocopy else []) + (["-N"] if p.no_delay else [])
        return argv

    def check_guest(self, guest: Guest, role: str) -> None:
        super().check_guest(guest, role)
        if self.params.direction == "bidir" and role == CLIENTS:
            help_text = guest.run(["iperf3", "--help"], timeout=30, check=False)
            if "--bidir" not in help_text.stdout + help_text.stderr:
                raise GuestError(guest.name, "direction: bidir needs iperf3 3.7 or later")

    def pair_samples(self, pair: Pair, text: str, source: str) -> list[Sample]:
        r = parse_iperf3(text, source)
        if r.error is not None:
            raise GuestError(pair.client, f"iperf3 client {pair.index}: {r.error}")
        inst = (("instance", str(pair.index)),)

        def s(metric: str, value: float | None, unit: str,
              labels: tuple[tuple[str, str], ...] = ()) -> Sample:
            return Sample(metric, value, unit, SOURCE, pair.client, inst + labels)

        out = [s("gbps", r.total_gbps(), "Gbps"), s("retransmits", _f(r.retransmits()), "count"),
               s("client_cpu_pct", r.cpu.get("host_total"), "%"),
               s("server_cpu_pct", r.cpu.get("remote_total"), "%")]
        for d in r.directions:
            lab = (("direction", d.direction),)
            out.append(s("gbps", d.gbps, "Gbps", lab))
            if d.packets is not None:
                out += [s("packet_rate", d.packet_rate, "packets/s", lab),
                        s("avg_packet_bytes", d.avg_packet_bytes, "B", lab),
                        s("lost_pct", d.lost_pct, "%", lab), s("jitter_ms", d.jitter_ms, "ms", lab)]
        return out

    def total_samples(self, per_pair: Sequence[Sample]) -> list[Sample]:
        """Summed (Gbps, retransmits, packets/s) or averaged (CPU) over the instances;
        a figure missing for one instance leaves the total missing, never a partial sum."""
        instances = {x.label_dict()["instance"] for x in per_pair}

        def vals(metric: str, direction: str | None = None) -> list[float] | None:
            got = {x.label_dict()["instance"]: x.value for x in per_pair if x.metric == metric
                   and x.label_dict().get("direction") == direction}
            if not got or set(got) != instances or None in got.values():
                return None
            return [v for v in got.values() if v is not None]

        gbps = vals("gbps")
        total = sum(gbps) if gbps else None
        out = [Sample("gbps", total, "Gbps", SOURCE)]
        directions = sorted({x.label_dict()["direction"] for x in per_pair
                             if "direction" in x.label_dict()})
        for d in directions:
            out.append(Sample("gbps", _sum(vals("gbps", d)), "Gbps", SOURCE,
                              labels=(("direction", d),)))
        out.append(Sample("retransmits", _sum(vals("retransmits")), "count", SOURCE))
        client, server = vals("client_cpu_pct"), vals("server_cpu_pct")
        out += [Sample("client_cpu_pct", _mean(client), "%", SOURCE),
                Sample("server_cpu_pct", _mean(server), "%", SOURCE)]
        cores = (sum(client) + sum(server)) / 100 if client and server else None
        out.append(Sample("iperf3_cores_used", cores, "cores", SOURCE))
        out.append(Sample("gbps_per_core", total / cores if total is not None and cores else None,
                          "Gbps/core", SOURCE))
        per_direction = [(vals("packet_rate", d), vals("gbps", d)) for d in directions]
        if any(r is not None for r, _ in per_direction):
            complete = all(r is not None and g is not None for r, g in per_direction)
            rate = sum(sum(r or ()) for r, _ in per_direction) if complete else None
            bytes_per_s = sum(sum(g or ()) for _, g in per_direction) * 1e9 / 8
            out += [Sample("packet_rate", rate, "packets/s", SOURCE),
                    Sample("avg_packet_bytes", bytes_per_s / rate if rate else None, "B", SOURCE)]
        return out


def _f(v: int | None) -> float | None:
    return None if v is None else float(v)


def _sum(values: list[float] | None) -> float | None:
    return sum(values) if values else None


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None
