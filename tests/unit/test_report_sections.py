"""The HTML report's study sections: summary badges, QoS, derived figures, scaling
curves, testbed tables, time series, several runs, warnings and reproducibility."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.figures import scenario_hash
from vbench.report.build import check_regression, render_report, report_data
from vbench.report.html import render_html
from vbench.report.series import read_series
from vbench.results.store import Store

HOSTILE = "<script>alert(\"x\")</script>"


def section(html: str, name: str) -> str:
    m = re.search(rf'<section id="{name}">(.*?)</section>', html, re.DOTALL)
    assert m, f"section {name} missing"
    return m.group(1)


def curve_scenario(**extra: object) -> dict[str, object]:
    return scenario_doc(
        "scale", {"vms": ["1", "2", "4", "8"], "mode": ["native", "vm"]},
        report={"headline": ["ops", "lat"], "charts": [], "error_bars": "ci"},
        derived=[
            {"name": "speedup", "kind": "speedup", "metric": "ops",
             "baseline": {"vms": "1"}, "ideal": "vms"},
            {"name": "rel", "kind": "normalize", "metric": "ops",
             "baseline": {"mode": "native"}},
        ],
        qos=[{"metric": "lat", "op": "<=", "threshold": 10.0, "unit": "ms"},
             {"name": HOSTILE, "metric": "ops", "op": ">=", "threshold": 1, "stat": "p90"}],
        collectors=[{"kind": "esxtop", "interval": 5.0, "targets": [], "options": {}}],
        **extra,
    )


TESTBED = {
    "vcenter": {"version": "8.0.2", "build": 22617221},
    "hosts": [{"name": "esx-01", "model": "PowerEdge R750", "cpu_model": "Xeon Gold 6338",
               "memory_gb": 512, "build": 22380479,
               "nics": [{"device": "vmnic0", "speed_mbps": 25000}]}],
    "datastores": [{"name": "vsanDatastore", "type": "vsan", "capacity_gb": 15360}],
    "vms": [{"name": HOSTILE, "vcpus": 2, "memory_mb": 4096}],
}


def write_curve(store: Store, run_id: str, started: float, k: float = 1.0,
                run_dir: str | None = None) -> str:
    pts = []
    for mode, eff in (("native", 1.0), ("vm", 0.96)):
        for v in (1, 2, 4, 8):
            base = 1000.0 * v * (0.9 ** (v.bit_length() - 1)) * eff * k
            pts.append(({"vms": str(v), "mode": mode},
                        {"ops": [base * f for f in (0.99, 1.0, 1.01)],
                         "lat": [1.5 * v * f for f in (0.99, 1.0, 1.01)]}))
    env = {"controller": {"command": "vbench run scale.yaml --lab lab.yaml --tag nightly"},
           "guests": {"vm1": {"clock_offset_s": 1.25}, "vm2": {"clock_offset_s": 0.001}}}
    return add_run(store, run_id, pts, scenario=curve_scenario(), started=started,
                   testbed=TESTBED, environment=env, run_dir=run_dir)


@pytest.fixture(scope="module")
def curve(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Store, Path]:
    tmp = tmp_path_factory.mktemp("curve")
    store = Store.open(f"sqlite:///{tmp}/c.db", tmp)
    run_dir = tmp / "run"
    write_curve(store, "20270101-000000-00000001", T0, k=1.1)
    write_curve(store, "20270102-000000-00000002", T0 + 86400, run_dir=str(run_dir))
    html = render_report(store, ["20270102-000000-00000002"], "html", baseline="last")
    yield html, store, run_dir
    store.close()


def test_summary_badges_state_the_verdicts(curve: tuple[str, Store, Path]) -> None:
    summary = section(curve[0], "summary")
    badges = dict(re.findall(r'badge-label">([^<]+)</span> <span class="badge-text">([^<]+)<',
                             summary))
    assert badges["run"] == "ok" and badges["trials"] == "24/24 ok"
    assert badges["QoS"].startswith("fail (")
    assert badges["regression"].endswith("found")
    # vms=8 has the most ops/s but fails its latency criterion: never called best.
    assert "ops (ops/s)" in summary and "ops/s at vms=4, mode=native" in summary
    assert "points failing QoS are not called best" in summary


def test_qos_section_lists_checks_and_draws_limits(curve: tuple[str, Store, Path]) -> None:
    qos = section(curve[0], "qos")
    assert qos.count('<tr class="fail">') == 2  # lat 12 ms at vms=8, both modes
    assert qos.count('<tr class="pass">') == 14
    assert qos.count("<svg ") == 2 and "QoS limit" in qos
    assert HOSTILE not in curve[0] and "&lt;script&gt;alert(&#34;x&#34;)" in qos


def test_scaling_curves_show_only_a_declared_ideal(curve: tuple[str, Store, Path]) -> None:
    charts = section(curve[0], "summary")
    caption = re.findall(r"<figcaption>(.*?)</figcaption>", charts, re.DOTALL)[0]
    assert "line = mean per point" in caption
    # vms here only labels the points (it sets no topology count): no linear ideal.
    assert "ideal" not in caption
    assert "95 % confidence interval" in caption  # report.error_bars: ci
    derived = section(curve[0], "derived")
    assert "ideal speedup" in derived and "baseline = 1.0" in derived
    assert "of ideal" in derived and "81.0 %" in derived  # 0.9^3 * 8 / 8


def test_testbed_tables_for_hosts_datastores_and_vms(curve: tuple[str, Store, Path]) -> None:
    env = section(curve[0], "environment")
    for title in ("Hosts", "Datastores", "Virtual machines", "vSphere"):
        assert f"<caption>{title}</caption>" in env
    assert "PowerEdge R750" in env
    # A host's NICs are a table of their own, a row per NIC naming its host: the host
    # row stays one line high.
    nics = re.search(r"<caption>Hosts: nics</caption>(.*?)</table>", env, re.DOTALL)
    assert nics and "<th>name</th><th>device</th><th>speed_mbps</th>" in nics.group(1)
    assert "<td>esx-01</td><td>vmnic0</td><td>25000</td>" in nics.group(1)
    hosts = re.search(r"<caption>Hosts</caption>(.*?)</table>", env, re.DOTALL)
    assert hosts and "vmnic0" not in hosts.group(1)
    assert "&lt;script&gt;" in env


def test_warnings_and_reproducibility(curve: tuple[str, Store, Path]) -> None:
    html, store, _ = curve
    warnings = section(html, "warnings")
    assert "Clock of guest vm1 is +1.250 s off" in warnings and "vm2" not in warnings
    assert "Collector esxtop produced no sample in this run." in warnings
    repro = section(html, "reproduce")
    run = store.get_run("20270102-000000-00000002")
    assert scenario_hash(run.scenario) in repro
    assert "vbench run scale.yaml --lab lab.yaml --tag nightly" in repro
    assert "vbench report 20270102-000000-00000002 -o report.html" in repro
    regression = section(html, "regression")
    assert "against the last compatible run 20270101-000000-00000001" in regression


def test_time_series_from_parquet_beside_the_run(curve: tuple[str, Store, Path]) -> None:
    _, store, run_dir = curve
    series = run_dir / "series"
    series.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in range(8):
        for t in range(3):
            start = T0 + 86400 + 100 * (p * 3 + t)
            ts = start + np.arange(0, 71, 1.0)
            rows.append(pd.DataFrame({"ts": ts, "metric": "cpu_used", "value": 50 + p,
                                      "unit": "%", "host": "esx-01"}))
    pd.concat(rows).to_parquet(series / "esxtop.parquet")
    (series / "broken.parquet").write_text("not parquet")
    frame, problems = read_series(run_dir)
    assert frame is not None and len(frame) == 8 * 3 * 71
    assert "broken.parquet unreadable" in problems[0]
    html = render_html(report_data(store, "20270102-000000-00000002"))
    ts = section(html, "timeseries")
    assert ts.count("<svg ") == 1 and "steady-state window" in ts
    assert "cpu_used from esxtop" in ts and "mean over its 3 traces" in ts
    assert "broken.parquet unreadable" in section(html, "warnings")


def test_no_time_series_section_without_files(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/x.db", tmp_path) as store:
        add_run(store, "r1", [({}, {"ops": [1.0, 2.0]})], run_dir=str(tmp_path / "nothing"))
        html = render_html(report_data(store, "r1"))
    assert 'id="timeseries"' not in html and 'id="qos"' not in html


def test_several_runs_are_overlaid_and_compared(curve: tuple[str, Store, Path]) -> None:
    _, store, _ = curve
    html = render_report(store, ["20270102-000000-00000002", "20270101-000000-00000001"],
                         "html")
    cmp = section(html, "comparison")
    assert cmp.count("<svg ") == 4  # ops, lat, speedup, rel
    assert "20270101-000000-00000001 against 20270102-000000-00000002" in cmp
    assert "Same testbed and environment facts." in cmp
    assert "worse" in cmp or "better" in cmp
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_grouped_bars_for_two_categorical_factors(tmp_path: Path) -> None:
    sc = scenario_doc("grid", {"bs": ["4k", "64k"], "rw": ["read", "write"]})
    with Store.open(f"sqlite:///{tmp_path}/g.db", tmp_path) as store:
        pts = [({"bs": b, "rw": r}, {"ops": [1.0 + i, 1.1 + i]})
               for i, (b, r) in enumerate([("4k", "read"), ("4k", "write"),
                                           ("64k", "read"), ("64k", "write")])]
        add_run(store, "g1", pts, scenario=sc)
        reg = check_regression(store, "g1")
        html = render_html(report_data(store, "g1", regression=reg))
    caption = re.findall(r"<figcaption>(.*?)</figcaption>", section(html, "summary"), re.S)[0]
    assert "bars grouped by bs, one colour per rw" in caption
    assert "not checked (no baseline)" in section(html, "summary")


def test_hundreds_of_series_are_capped_with_a_note(curve: tuple[str, Store, Path]) -> None:
    from vbench.report.html import MAX_SERIES_CHARTS

    _, store, run_dir = curve
    series = run_dir / "series"
    series.mkdir(parents=True, exist_ok=True)
    n = MAX_SERIES_CHARTS + 12
    ts = T0 + 86400 + np.arange(0, 10, 1.0)
    frame = pd.concat(
        pd.DataFrame({"ts": ts, "metric": f"m{i:03d}", "value": ts - T0 + i, "unit": "%"})
        for i in range(n)
    )
    frame.to_parquet(series / "wide.parquet")
    stored, _ = read_series(run_dir)  # the fixture's run may hold other series too
    assert stored is not None
    total = stored["metric"].nunique()
    assert total >= n
    html = render_html(report_data(store, "20270102-000000-00000002"))
    assert section(html, "timeseries").count("<svg ") == MAX_SERIES_CHARTS
    note = f"{total} time series; the first {MAX_SERIES_CHARTS} by name are charted"
    assert note in section(html, "warnings")
