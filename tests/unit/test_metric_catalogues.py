"""Every driver's and collector's metric catalogue covers what it really produces.

Each test turns real tool output (the shared corpus, the project's vdbench captures) — or,
for drivers that build their figures from their own records, records like theirs —
through the same functions the driver's ``collect`` uses, and requires every sample's
metric to be in the catalogue with the unit the catalogue declares. A driver that starts
making a new figure without declaring it fails here, so QoS and derived-figure names
checked at validate (engine/metric_check.py) cannot drift from what runs store."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.corpus import SHARED, need
from vbench.analysis.catalogue import Catalogue, Metric
from vbench.results.records import Sample, Window

DATA = Path(__file__).resolve().parents[1] / "data"


def _undeclared(entries: Iterable[Metric], samples: Iterable[Sample]) -> list[str]:
    """'metric (unit)' of every sample the catalogue lacks or declares in another unit."""
    c = Catalogue("x", tuple(entries))
    out = set()
    for s in samples:
        m = c.find(s.metric)
        if m is None or (m.unit is not None and m.unit != s.unit):
            out.add(f"{s.metric} ({s.unit}; catalogue: {m.unit if m else 'absent'})")
    return sorted(out)


def _check(entries: Iterable[Metric], samples: list[Sample]) -> None:
    assert samples, "no samples made: the test checks nothing"
    assert _undeclared(entries, samples) == []


def test_fio_catalogue_covers_every_corpus_result() -> None:
    from vbench.parsers.fio import aggregate_guests, guest_samples, parse_fio_json
    from vbench.workloads.fio import FioWorkload

    files = sorted(need(SHARED / "fio").glob("*.json*"))
    samples: list[Sample] = []
    for f in files:
        r = parse_fio_json(f.read_text(errors="replace"), f.name)
        if r.errors or not r.jobs:
            continue
        samples += guest_samples(r, "g1")
        samples += aggregate_guests({"g1": r})
        samples += aggregate_guests({"g1": r, "g2": r})  # the *_median and *_max figures
    assert len(files) >= 5
    _check(FioWorkload.metrics or (), samples)


def test_fio_per_second_log_figures_are_declared() -> None:
    from vbench.workloads.fio import FioWorkload
    from vbench.workloads.fio import logs as fio_logs

    logs = {("iops", 0): [fio_logs.LogRow(100.0 + i, 50.0, "read") for i in range(5)],
            ("lat", 0): [fio_logs.LogRow(100.0 + i, 0.2, "read") for i in range(5)]}
    frame = fio_logs.series_frame("g1", logs)
    _check(FioWorkload.metrics or (), fio_logs.window_samples(frame, "g1"))


def test_a_metric_the_driver_does_not_declare_is_caught() -> None:
    from vbench.workloads.fio import FioWorkload

    assert _undeclared(FioWorkload.metrics or (), [Sample("read_iops", 1.0, "IO/s", "fio"),
                                                   Sample("read_lat_p99", 1.0, "ms", "fio"),
                                                   Sample("total_bw", 1.0, "MB/s", "fio")]) == [
        "read_lat_p99 (ms; catalogue: absent)", "total_bw (MB/s; catalogue: MiB/s)"]


def test_iperf3_catalogue_covers_the_corpus_json() -> None:
    from vbench.workloads.iperf3 import Iperf3Params, Iperf3Workload
    from vbench.workloads.pairs import Pair

    name = "kfirtoledo_CloudPilot_Project__iperf-3.9_baseline_host_target_direct_12.json"
    text = need(SHARED / "netperf_iperf3" / name).read_text()
    w = Iperf3Workload(Iperf3Params())
    per = [s for i in range(2) for s in w.pair_samples(Pair(i, "c1", "s1", "10.0.0.1", 5201 + i),
                                                       text, name)]
    _check(Iperf3Workload.metrics or (), per + w.total_samples(per))


def test_netperf_catalogue_covers_the_corpus_result() -> None:
    from vbench.workloads.netperf import NetperfParams, NetperfWorkload
    from vbench.workloads.pairs import Pair

    # One client's log holds one result, as pair_samples reads it.
    name = "GoogleCloudPlatform_PerfKitBenchmarker__netperf_results.txt"
    text = need(SHARED / "netperf_iperf3" / name).read_text()
    w = NetperfWorkload(NetperfParams())
    per = [s for i in range(2) for s in w.pair_samples(Pair(i, "c1", "s1", "10.0.0.1", 12865),
                                                       text, name)]
    _check(NetperfWorkload.metrics or (), per + w.total_samples(per))


def test_dvdstore_catalogue_covers_the_corpus_console_run() -> None:
    from vbench.parsers.dvdstore import parse_dvdstore
    from vbench.workloads.dvdstore import DvdStoreWorkload, instance_samples, total_samples

    name = "dvdstore_ds21__ds2driver_doc.txt"
    r = parse_dvdstore(need(SHARED / "dvdstore" / name).read_text(), name)
    samples = instance_samples(r, "c1", 0, "db1") + total_samples([r, r])
    _check(DvdStoreWorkload.metrics or (), samples)


def test_vdbench_catalogue_covers_the_recorded_runs() -> None:
    from vbench.parsers.vdbench import parse_flatfile, samples
    from vbench.workloads.vdbench import VdbenchWorkload, combine_guests

    out: list[Sample] = []
    for run in ("sd-three-rates", "fs-nvme-raid5"):
        per = samples(parse_flatfile((DATA / "vdbench" / run / "flatfile.html").read_text()), "g1")
        out += per + combine_guests({"g1": per, "g2": per})
    _check(VdbenchWorkload.metrics or (), out)


def test_redis_catalogue_covers_the_corpus_report_for_its_mix() -> None:
    from vbench.parsers.redis_benchmark import parse_redis_benchmark
    from vbench.workloads.redis_scaleout import RedisScaleout
    from vbench.workloads.redis_scaleout.metrics import ClientFigures, samples_for
    from vbench.workloads.redis_scaleout.params import RedisParams
    from vbench.workloads.redis_scaleout.topology import Host, place

    name = "microsoft_VirtualClient__RedisBenchmarkResults.txt"
    tests = {t.test.lower(): t for t in parse_redis_benchmark(
        need(SHARED / "redis_memtier" / name).read_text(), name).tests}
    p = RedisParams(servers=2, clients=4, mix={"get": 75, "set": 25}, connections=4)
    layout = place(p, [Host("h3", "10.0.0.3")], [Host("h2", "10.0.0.2")],
                   [Host("h1", "10.0.0.1")])
    figures = [ClientFigures(c, tests[c.op]) for c in layout.clients]
    samples = samples_for(p, layout, figures, {"10.0.0.3:7001": 10, "10.0.0.3:7002": 12})
    _check(RedisScaleout.metric_catalogue(p), samples)


def test_cloudstone_catalogue_covers_its_figures() -> None:
    from vbench.workloads.cloudstone import Cloudstone, metrics

    recs = [metrics.OpRecord(t, op, ms, ok, 1000)
            for t, op, ms, ok in [(10.5, "A", 10, True), (11, "B", 20, False), (12, "A", 5, True)]]
    figs = metrics.op_figures(recs, 10, 20, {"A": 0.5, "B": 0.5}, 2.0, 5.0)
    check = metrics.LoadCheck(0.5, 1, False, ())
    samples = metrics.instance_samples(0, "g1", figs, check)
    samples += metrics.aggregate_samples([figs, figs], [check, check])
    _check(Cloudstone.metrics or (), samples)


def test_vcbench_catalogue_covers_its_figures() -> None:
    from vbench.workloads.vcbench import VcbenchWorkload, metrics
    from vbench.workloads.vcbench.params import DEFAULT_MIX

    rows = [metrics.Row("power_on", 0, "vc1", "vm1", 10.0, 11.0 + i, True, None, None)
            for i in range(3)]
    rows.append(metrics.Row("clone_full", 0, "vc1", "vm1", 10.0, 12.5, False, "Fault", "x"))
    samples = metrics.steady_samples(rows, 10.0, 20.0, sessions=2, think_time=0.0,
                                     mix=DEFAULT_MIX)
    samples.append(metrics.Sample("vcbench.late_starts", 0.0, "ops", metrics.SOURCE))
    _check(VcbenchWorkload.metrics or (), samples)


def test_content_library_catalogue_follows_the_steps() -> None:
    from vbench.workloads.content_library import ContentLibraryWorkload, batch_samples
    from vbench.workloads.content_library.ops import Batch, OpRecord
    from vbench.workloads.content_library.params import ContentLibraryParams

    params = ContentLibraryParams.model_validate({"steps": [
        {"op": "create_library", "library": "src"},
        {"op": "import", "library": "src", "label": "up"},
        {"op": "sync", "library": "src"}]})
    recs = (OpRecord("up", "import", 0, 1.0, 2.0, 1000, 0.01),)
    samples = batch_samples(Batch("up", "import", 1.0, 2.0, recs))
    samples += batch_samples(Batch("sync", "sync", 1.0, 1.5, (OpRecord("sync", "sync", 0, 1.0,
                                                                       1.5),),
                                   (("items", 7.0, "items"),)))
    _check(ContentLibraryWorkload.metric_catalogue(params), samples)


def test_esxtop_catalogue_covers_a_real_capture() -> None:
    from vbench.collectors.esxtop import BASE_COUNTERS, Esxtop, EsxtopOptions, tidy_frame
    from vbench.collectors.esxtop.figures import host_figures
    from vbench.parsers.esxtop import EsxtopReader

    path = need(SHARED / "esxtop" / "rach-sharp_esxtopd__esxtop-data.csv")
    with EsxtopReader(path, ["cpu", "virtual-disk", *BASE_COUNTERS], require_match=False) as r:
        frame = tidy_frame(r)
    assert len(frame)
    names = {Esxtop.metric_name(o, i, c) for o, i, c in zip(
        frame["object"], frame["instance"], frame["counter"], strict=True)}
    samples = [Sample(n, 1.0, "%", "esxtop", "esx1") for n in names]
    window = Window(float(frame["time"].min()) - 60, float(frame["time"].max()) + 60)
    samples += host_figures("esxtop", "esx1", frame, window, 5.0)
    _check(Esxtop.metric_catalogue(EsxtopOptions()), samples)


def test_sysstat_catalogue_covers_a_real_sadf_capture() -> None:
    from vbench.collectors.guest_sysstat import GuestSysstat, SysstatOptions
    from vbench.collectors.guest_sysstat.figures import guest_figures
    from vbench.parsers.sysstat import parse_sysstat_json

    text = need(SHARED / "sysstat" / "sysstat_sysstat__expected.sadf-j").read_text()
    frame = parse_sysstat_json(text)[0].frame
    names = {GuestSysstat.metric_name(o, i, c) for o, i, c in zip(
        frame["object"], frame["instance"], frame["counter"], strict=True)}
    samples = [Sample(n, 1.0, "", "guest_sysstat", "g1") for n in names]
    window = Window(float(frame["time"].min()) - 60, float(frame["time"].max()) + 60)
    samples += guest_figures("guest_sysstat", "g1", frame, window, 1.0, 2.0)
    samples += [Sample("collector_cpu", 1.0, "%", "s", "g1"), Sample("guest_cpus", 2.0, "CPUs",
                                                                      "s", "g1")]
    _check(GuestSysstat.metric_catalogue(SysstatOptions()), samples)


def test_collectors_derived_figures_are_declared() -> None:
    from vbench.collectors.derived import METRICS, combined_figures

    per = [Sample("host_cpu_util", 40.0, "%", "esxtop", "esx1"),
           Sample("host_cores_used", 3.0, "cores", "esxtop", "esx1")]
    work = [Sample("total_iops", 9000.0, "IO/s", "fio")]
    _check(METRICS, combined_figures(per, work, ["total_iops"]))


@pytest.mark.parametrize("driver", ["fio", "iperf3", "netperf", "dvdstore", "vdbench",
                                    "cloudstone", "vcbench"])
def test_every_declared_headline_metric_is_in_the_catalogue(driver: str) -> None:
    from vbench.workloads.base import get_driver

    cls = get_driver(driver)
    c = Catalogue(driver, cls.metrics or ())
    assert [m for m in cls.headline_metrics if c.find(m) is None] == []
