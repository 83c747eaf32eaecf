"""The ``netperf`` workload driver: netperf between guest pairs (the LRO study).

One ``netserver -D`` per client instance on a ``servers`` guest and one ``netperf``
per instance on a ``clients`` guest (pairing: :mod:`vbench.workloads.pairs`).
netperf has no warm-up option, so a warm-up of ``phases.warmup`` is a netperf run of its
own (kept in the raw outputs, not measured), then the measured run of ``phases.steady``.
Results are asked for with ``-o SELECTORS`` and read by :mod:`vbench.parsers.netperf`.

netperf is not in Debian's main archive: where a lab's guests have it (or a build of it,
``netperf``/``netserver`` parameters), this runs it. vbench's own tests run the driver
against a *replay* of recorded netperf output (see ``drivers/netperf/README.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from vbench.analysis import catalogue as mc
from vbench.errors import GuestError
from vbench.parsers.netperf import parse_netperf
from vbench.results.records import Sample
from vbench.workloads.base import Finding, register
from vbench.workloads.pairs import (
    CLIENTS,
    SERVERS,
    Pair,
    PairParams,
    PairWorkload,
    size_bytes,
)

SOURCE = "netperf"
DEFAULT_SELECTORS = (
    "THROUGHPUT", "THROUGHPUT_UNITS", "ELAPSED_TIME", "LOCAL_CPU_UTIL", "REMOTE_CPU_UTIL",
    "MEAN_LATENCY", "P50_LATENCY", "P90_LATENCY", "P99_LATENCY",
    "LOCAL_TRANSPORT_RETRANS", "REMOTE_TRANSPORT_RETRANS",
)  # fmt: skip
_PATH = r"^[A-Za-z0-9_./+-]+$"
# Figures taken per instance: selector -> (metric, unit).
FIGURES = {
    "P50_LATENCY": ("p50_latency_us", "us"), "P90_LATENCY": ("p90_latency_us", "us"),
    "P99_LATENCY": ("p99_latency_us", "us"), "MEAN_LATENCY": ("mean_latency_us", "us"),
    "LOCAL_CPU_UTIL": ("client_cpu_pct", "%"), "REMOTE_CPU_UTIL": ("server_cpu_pct", "%"),
    "LOCAL_TRANSPORT_RETRANS": ("retransmits", "count"),
}  # fmt: skip


class NetperfParams(PairParams):
    port: int = Field(12865, ge=1024, le=65000, description=(
        "first netserver control port; client instance i uses port + i"))
    test: Literal["TCP_STREAM", "TCP_MAERTS", "TCP_RR", "TCP_CRR", "UDP_STREAM", "UDP_RR",
                  "omni"] = Field("TCP_STREAM", description="netperf -t")
    message_size: str | None = Field(None, description=(
        "send size for STREAM tests (-m): 256, 16K, 64K …"))
    request_response: str | None = Field(None, pattern=r"^\d+[KM]?(,\d+[KM]?)?$", description=(
        "request,response sizes for RR tests (-r): 1,1 or 64,1K"))
    cpu: bool = Field(True, description="measure CPU on both ends (-c -C)")
    selectors: list[str] = Field(default_factory=lambda: list(DEFAULT_SELECTORS),
                                 description="omni output selectors asked for with -o")
    netperf: str = Field("netperf", pattern=_PATH, description="the netperf command (or path)")
    netserver: str = Field("netserver", pattern=_PATH,
                           description="the netserver command (or path)")


@register
class NetperfWorkload(PairWorkload):
    name: ClassVar[str] = "netperf"
    docs: ClassVar[tuple[str, ...]] = ("drivers/netperf/README.md",)
    Params: ClassVar[type[NetperfParams]] = NetperfParams
    tool: ClassVar[str] = "netperf"
    result_name: ClassVar[str] = "log"  # netperf prints its result: the process log
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "gbps", "transactions_per_sec", "p99_latency_us_max", "client_cpu_pct", "server_cpu_pct",
    )
    metrics: ClassVar[tuple[mc.Metric, ...]] = (
        mc.metric("gbps", "Gbps", "higher"), mc.metric("transactions_per_sec", "trans/s", "higher"),
        *mc.same_unit(("<pct>_latency_us", "<pct>_latency_us_max"), "us", "lower",
                      pct=("p50", "p90", "p99")),
        mc.metric("mean_latency_us", "us", "lower"),
        # CPU busy on each end: the cost of the throughput, read beside it, not a score.
        *mc.same_unit(("client_cpu_pct", "server_cpu_pct"), "%", "none"),
        mc.metric("retransmits", "count", "lower"),
    )  # fmt: skip

    params: NetperfParams

    @classmethod
    def findings(cls, params: NetperfParams) -> list[Finding]:  # type: ignore[override]
        out = []
        bad = [s for s in params.selectors if not s.isidentifier() or s.upper() != s]
        if bad:
            out.append(Finding("error", "selectors", f"not omni selectors: {', '.join(bad)}"))
        if params.message_size is not None:
            try:
                size_bytes(params.message_size)
            except ValueError as exc:
                out.append(Finding("error", "message_size", str(exc)))
        if params.message_size and "RR" in params.test:
            out.append(Finding("error", "message_size",
                               "request/response tests take request_response, not message_size"))
        return out

    def tools(self) -> dict[str, tuple[str, ...]]:
        return {SERVERS: (self.params.netserver,), CLIENTS: (self.params.netperf,)}

    def server_argv(self, pair: Pair, d: str) -> list[str]:
        return [self.params.netserver, "-D", "-L", pair.address, "-p", str(pair.port)]

    def client_argv(self, pair: Pair, d: str, warmup: float, steady: float) -> list[str]:
        p = self.params
        argv = [p.netperf, "-H", pair.address, "-p", str(pair.port), "-t", p.test,
                "-l", f"{max(1, round(steady))}"]
        if p.cpu:
            argv += ["-c", "-C"]
        argv += ["--", "-o", ",".join(p.selectors)]
        if p.message_size is not None:
            argv += ["-m", p.message_size]
        if p.request_response is not None:
            argv += ["-r", p.request_response]
        return argv

    def warmup_argv(self, pair: Pair, d: str, warmup: float) -> list[str] | None:
        return self.client_argv(pair, d, 0.0, warmup)

    def pair_samples(self, pair: Pair, text: str, source: str) -> list[Sample]:
        results = parse_netperf(text, source)
        if len(results) != 1:
            raise GuestError(pair.client, f"{source}: {len(results)} results, expected one")
        r = results[0]
        inst = (("instance", str(pair.index)),)

        def s(metric: str, value: float | None, unit: str) -> Sample:
            return Sample(metric, value, unit, SOURCE, pair.client, inst)

        out = []
        if r.gbps() is not None:
            out.append(s("gbps", r.gbps(), "Gbps"))
        elif r.units is not None and r.units.lower().startswith("trans"):
            out.append(s("transactions_per_sec", r.throughput, "trans/s"))
        for key, (metric, unit) in FIGURES.items():
            value = r.number(key)
            # netperf prints -1 for a figure it did not measure.
            if value is not None and value >= 0:
                out.append(s(metric, value, unit))
        return out

    def total_samples(self, per_pair: Sequence[Sample]) -> list[Sample]:
        """Summed, worst or averaged over the instances; a figure that some instances
        report and others do not stays missing (``None``), never a partial total."""
        instances = {x.label_dict()["instance"] for x in per_pair}

        def vals(metric: str) -> list[float] | None:
            got = {x.label_dict()["instance"]: x.value for x in per_pair
                   if x.metric == metric and x.value is not None}
            return list(got.values()) if set(got) == instances else None

        def reported(metric: str) -> bool:  # by any instance
            return any(x.metric == metric for x in per_pair)

        out = []
        for metric, unit in (("gbps", "Gbps"), ("transactions_per_sec", "trans/s"),
                             ("retransmits", "count")):
            if reported(metric):
                v = vals(metric)
                out.append(Sample(metric, sum(v) if v else None, unit, SOURCE))
        for metric in ("p50_latency_us", "p90_latency_us", "p99_latency_us"):
            if reported(metric):  # the worst instance: a percentile does not average
                v = vals(metric)
                out.append(Sample(f"{metric}_max", max(v) if v else None, "us", SOURCE))
        for metric in ("mean_latency_us", "client_cpu_pct", "server_cpu_pct"):
            if reported(metric):
                v = vals(metric)
                unit = "us" if metric.endswith("_us") else "%"
                out.append(Sample(metric, sum(v) / len(v) if v else None, unit, SOURCE))
        return out
