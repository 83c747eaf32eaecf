"""A report a reviewer can read: a read-only fio run shows no table of zeros, no second
copy of a figure, latencies in µs, bytes in GiB, times as times, one-line testbed rows
and no chart of a flat series; the default fio headline compares like with like."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from vbench.report.data import ReportData
from vbench.report.html import render_html

T0 = 1_795_452_866.0
METRICS = {  # metric: (unit, value at iodepth 1, 4, 16)
    "total_iops": ("IO/s", (219_193.0, 216_350.0, 217_274.0)),
    "read_iops": ("IO/s", (219_193.0, 216_350.0, 217_274.0)),
    "write_iops": ("IO/s", (0.0, 0.0, 0.0)),
    "trim_io_bytes": ("B", (0.0, 0.0, 0.0)),
    "read_io_bytes": ("B", (2_694_340_608.0, 2_659_409_920.0, 2_670_813_184.0)),
    "read_clat_mean": ("ms", (0.000483, 0.01434, 0.06952)),
    "read_clat_p99": ("ms", (0.00049, 0.01632, 0.0937)),
    "read_clat_p99_max": ("ms", (0.00049, 0.01632, 0.0937)),
}
HEADLINE = ("total_iops", "read_clat_mean", "read_clat_p99_max", "write_iops")


def read_only_run() -> ReportData:
    points = [{"point": p, "labels": {"iodepth": str(q)}} for p, q in enumerate((1, 4, 16))]
    trials, rows = [], []
    for p in range(3):
        for t in range(2):
            start = T0 + (p * 2 + t) * 100
            trials.append({"point": p, "trial": t, "status": "ok", "error": None,
                           "phases": {"warmup_start": start, "steady_start": start + 1,
                                      "steady_end": start + 4, "cooldown_end": start + 5},
                           "started": start, "ended": start + 5})
            for m, (unit, values) in METRICS.items():
                rows.append({"point": p, "trial": t, "metric": m, "unit": unit,
                             "value": values[p] * (1 + 0.01 * t), "guest": None,
                             "labels": "{}", "source": "fio", "window_start": start + 1,
                             "window_end": start + 4})
    run = {
        "run_id": "r-noise", "scenario_name": "oio", "status": "ok", "started": T0,
        "ended": T0 + 600, "tags": [],
        "scenario": {"phases": {"warmup": 1, "steady": 3, "cooldown": 1}, "repeat": 2,
                     "workload": {"driver": "fio"}},
        "environment": {"controller": {"hostname": "ctl", "recorded_at": T0 - 5.5}},
        "testbed": {"hosts": [{
            "name": "esx-01", "model": "R750",
            "nics": [{"device": "vmnic0", "speed_mbps": 25000},
                     {"device": "vmnic1", "speed_mbps": 25000}],
            "storage_adapters": [{"device": "vmhba0", "model": "PVSCSI"}],
        }]},
    }
    ts = np.arange(T0, T0 + 600, 1.0)
    series = pd.DataFrame({
        "metric": np.repeat(["cpu_user", "swap_in", "mem_total", "disk_util"], len(ts)),
        "value": np.concatenate([50 + np.sin(ts), np.zeros(len(ts)), np.full(len(ts), 16.0),
                                 np.cos(ts) + 5]),
        "ts": np.tile(ts, 4), "point": np.nan, "trial": np.nan,
        "unit": np.repeat(["%", "1/s", "GiB", "%"], len(ts)), "source": "sysstat",
        "entity": "guest1",
    })
    return ReportData(run=run, points=points, trials=trials, samples=pd.DataFrame(rows),
                      headline_metrics=HEADLINE, series=series)


@pytest.fixture(scope="module")
def html() -> str:
    return render_html(read_only_run())


def section(html: str, name: str) -> str:
    m = re.search(rf'<section id="{name}">(.*?)</section>', html, re.DOTALL)
    assert m, f"section {name} missing"
    return m.group(1)


def tables(html: str) -> dict[str, str]:
    """Results tables by metric: caption unit and body."""
    found = re.findall(r"<caption>([\w.]+)(?: \(([^)]*)\))? — mean(.*?)</table>",
                       section(html, "results"), re.DOTALL)
    return {m: f"{unit}|{body}" for m, unit, body in found}


def test_zero_and_duplicate_metrics_have_no_table_and_are_listed(html: str) -> None:
    shown = tables(html)
    assert "write_iops" not in shown and "trim_io_bytes" not in shown
    # With one guest the worst guest's p99 is the p99: one table, the headline's name.
    assert "read_clat_p99_max" in shown and "read_clat_p99" not in shown
    assert "read_iops" not in shown  # = total_iops in a read-only run
    assert set(shown) == {"total_iops", "read_io_bytes", "read_clat_mean",
                          "read_clat_p99_max"}
    note = re.search(r'<p class="note hidden-metrics">(.*?)</p>', html, re.DOTALL)
    assert note, "hidden metrics are listed"
    text = note.group(1)
    assert "zero at every point: write_iops, trim_io_bytes" in text
    assert "read_clat_p99 (= read_clat_p99_max)" in text
    assert "read_iops (= total_iops)" in text
    # Hidden from the headline too: no zero-IOPS write row or chart.
    summary = section(html, "summary")
    assert "write_iops" not in summary


def test_each_table_reads_in_its_own_unit(html: str) -> None:
    shown = tables(html)
    assert shown["read_clat_mean"].startswith("µs|")
    assert "0.4830–0.4878 µs" in shown["read_clat_mean"]
    assert "69.87 ± 4.42 µs" in shown["read_clat_mean"]
    assert "0.000483" not in html  # never the raw milliseconds
    assert shown["read_io_bytes"].startswith("GiB|") and "2.509" in shown["read_io_bytes"]
    assert shown["total_iops"].startswith("k IO/s|") and "219.2" in shown["total_iops"]
    headline = re.search(r'<table class="results headline-figures">(.*?)</table>', html,
                         re.DOTALL)
    assert headline and "read_clat_mean (µs)" in headline.group(1)
    assert "k IO/s at iodepth=1" in headline.group(1)


def test_headline_charts_scale_their_axis(html: str) -> None:
    charts = re.findall(r"<figure>\s*(<svg.*?</svg>)", section(html, "summary"), re.DOTALL)
    assert len(charts) == 3  # total_iops, read_clat_mean, read_clat_p99_max; not write_iops
    assert "read_clat_mean (µs)" in charts[1] and "total_iops (k IO/s)" in charts[0]


def test_a_moment_reads_as_a_time(html: str) -> None:
    env = section(html, "environment")
    assert "1,795,452,860" not in env and "1795452860" not in env
    assert re.search(r"<td>controller\.recorded_at</td><td>2026-\d\d-\d\d \d\d:\d\d:\d\d", env)


def test_testbed_host_rows_hold_no_nested_lists(html: str) -> None:
    env = section(html, "environment")
    hosts = re.search(r"<caption>Hosts</caption>\s*<thead><tr>(.*?)</tr>", env, re.DOTALL)
    assert hosts and re.findall(r"<th>(.*?)</th>", hosts.group(1)) == ["name", "model"]
    assert "<caption>Hosts: nics</caption>" in env
    assert "<caption>Hosts: storage adapters</caption>" in env
    assert env.count("<td>esx-01</td><td>vmnic") == 2


def test_flat_series_are_named_not_charted(html: str) -> None:
    ts = section(html, "timeseries")
    titles = re.findall(r"<title>(.*?)</title>", ts)
    assert titles == ["cpu_user (%)", "disk_util (%)"]
    assert "zero throughout: swap_in" in ts and "constant: mem_total" in ts
    assert 'class="chart-grid small"' in ts  # one grid of small multiples


def test_the_default_fio_headline_pairs_completion_latencies() -> None:
    from vbench.workloads.fio import FioWorkload

    head = FioWorkload.headline_metrics
    latencies = [m for m in head if "lat" in m]
    assert latencies and all("_clat_" in m for m in latencies), head
    for d in ("read", "write"):
        assert f"{d}_clat_mean" in head and f"{d}_clat_p99_max" in head


def test_a_family_of_hidden_metrics_is_written_once() -> None:
    from vbench.report.shown import families

    names = [f"trim_clat_p{p}" for p in (50, 95, 99)] + ["write_iops", "write_clat_mean"]
    assert families(names) == "trim_clat_{p50, p95, p99}, write_iops, write_clat_mean"
    many = [f"net-dev(eth0)\\counter{i:02d}" for i in range(8)]
    assert families(many) == "net-dev(eth0)\\* (8)"


def test_runs_compared_read_in_the_same_scaled_units() -> None:
    import dataclasses

    data = read_only_run()
    other = dataclasses.replace(read_only_run(), run={**data.run, "run_id": "r-other"})
    html = render_html(dataclasses.replace(data, others=(other,)))
    cmp = section(html, "comparison")
    assert "total_iops (k IO/s)" in cmp and "read_clat_mean (µs)" in cmp
    assert "total_iops in k IO/s: one bar per run" in cmp
