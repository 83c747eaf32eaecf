"""Trial totals of the iperf3, netperf and dvdstore drivers (pure): summed or averaged
over the instances, and missing (None) when one instance lacks the figure, never a
partial sum that would read as a lower throughput."""

from __future__ import annotations

from vbench.parsers.dvdstore import DsFinal, DsResult
from vbench.results.records import Sample
from vbench.workloads.dvdstore import total_samples as dvdstore_totals
from vbench.workloads.iperf3 import Iperf3Params, Iperf3Workload
from vbench.workloads.netperf import NetperfParams, NetperfWorkload


def _s(metric: str, value: float | None, instance: int, source: str, unit: str = "") -> Sample:
    return Sample(metric, value, unit, source, "c1", (("instance", str(instance)),))


def _total(samples: list[Sample], metric: str) -> float | None:
    found = [x.value for x in samples if x.metric == metric and not x.labels and x.guest is None]
    assert len(found) == 1, f"{metric}: {found}"
    return found[0]


def test_iperf3_totals_sum_every_instance() -> None:
    w = Iperf3Workload(Iperf3Params())
    per = [_s("gbps", 2.0, 0, "iperf3"), _s("gbps", 3.0, 1, "iperf3"),
           _s("client_cpu_pct", 50.0, 0, "iperf3"), _s("client_cpu_pct", 30.0, 1, "iperf3"),
           _s("server_cpu_pct", 20.0, 0, "iperf3"), _s("server_cpu_pct", 20.0, 1, "iperf3")]
    out = w.total_samples(per)
    assert _total(out, "gbps") == 5.0
    assert _total(out, "client_cpu_pct") == 40.0
    assert _total(out, "iperf3_cores_used") == 1.2
    assert _total(out, "gbps_per_core") == 5.0 / 1.2


def test_iperf3_total_is_missing_when_one_instance_has_no_figure() -> None:
    w = Iperf3Workload(Iperf3Params())
    per = [_s("gbps", 2.0, 0, "iperf3"), _s("gbps", None, 1, "iperf3"),
           _s("client_cpu_pct", 50.0, 0, "iperf3"), _s("client_cpu_pct", None, 1, "iperf3"),
           _s("server_cpu_pct", 20.0, 0, "iperf3"), _s("server_cpu_pct", 20.0, 1, "iperf3")]
    out = w.total_samples(per)
    assert _total(out, "gbps") is None
    assert _total(out, "client_cpu_pct") is None
    assert _total(out, "iperf3_cores_used") is None
    assert _total(out, "gbps_per_core") is None
    assert _total(out, "server_cpu_pct") == 20.0


def test_netperf_total_is_missing_when_one_instance_did_not_report_it() -> None:
    w = NetperfWorkload(NetperfParams())
    per = [_s("gbps", 2.0, 0, "netperf"), _s("gbps", 3.0, 1, "netperf"),
           _s("p99_latency_us", 80.0, 0, "netperf")]  # instance 1 printed -1: not measured
    out = w.total_samples(per)
    assert _total(out, "gbps") == 5.0
    assert _total(out, "p99_latency_us_max") is None
    assert not [x for x in out if x.metric == "transactions_per_sec"]  # nobody reported it


def _ds(orders: int, rt: float | None, opm: float = 600.0) -> DsResult:
    final = DsFinal(60.0, orders, opm, 40.0 if rt is not None else None, rt, 0, 0.0)
    return DsResult((), True, True, final)


def test_dvdstore_response_time_total_needs_every_instance() -> None:
    both = dvdstore_totals([_ds(100, 10.0), _ds(300, 20.0)])
    assert _total(both, "rt_avg_ms") == (100 * 10.0 + 300 * 20.0) / 400
    assert _total(both, "rt_max_ms") == 40.0
    assert _total(both, "opm") == 1200.0
    one_missing = dvdstore_totals([_ds(100, 10.0), _ds(300, None)])
    assert _total(one_missing, "rt_avg_ms") is None
    assert _total(one_missing, "rt_max_ms") is None
    assert _total(one_missing, "opm") == 1200.0
