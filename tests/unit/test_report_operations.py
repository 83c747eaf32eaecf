"""The per-operation report section from a stored run: operation × (ops/s, latency mean
± 95 % CI over trials, p95, p99, max, failures) per point, the latency bar chart, and the
failures per fault type with the messages the driver left beside its raw log; absent for
runs whose samples carry no ``op`` label (or only per-process breakdowns)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.report.build import render_run_report, report_data
from vbench.report.chartplan import ChartIds
from vbench.report.ops_section import operation_figures, ops_section
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

# point -> op -> per-trial (ops/s, mean latency s, p95, p99, max)
FIGS = {
    0: {"PowerOn": [(10.0, 0.7, 0.9, 1.0, 1.1), (12.0, 0.8, 1.0, 1.2, 1.5),
                    (11.0, 0.9, 1.1, 1.4, 1.3)],
        "CloneVm": [(4.0, 1.0, 1.2, 1.3, 1.4), (5.0, 1.2, 1.4, 1.5, 1.9),
                    (6.0, 1.1, 1.3, 1.4, 1.6)]},
    1: {"PowerOn": [(20.0, 1.4, 1.8, 2.0, 2.2), (22.0, 1.6, 2.0, 2.4, 2.6),
                    (21.0, 1.5, 1.9, 2.2, 2.3)]},
}
NAMES = ("op_ops_per_s", "op_latency_avg", "op_latency_p95", "op_latency_p99",
         "op_latency_max")
UNITS = {"op_ops_per_s": "ops/s", "failures": "ops"}
# (point, trial, op, fault, count)
FAILURES = [(0, 0, "CloneVm", "DuplicateName", 2.0), (0, 1, "CloneVm", "DuplicateName", 1.0),
            (0, 1, "PowerOn", "InvalidPowerState", 1.0)]
MESSAGES = {"DuplicateName": ["The name 'vb-1' already exists.", "<b>x</b> exists"],
            "InvalidPowerState": ["The attempted operation cannot be performed"]}


def _labelled() -> list[tuple[int, int, str, dict[str, str], float]]:
    out = []
    for p, ops in FIGS.items():
        for op, trials in ops.items():
            for t, values in enumerate(trials):
                out += [(p, t, f"vcbench.{n}", {"op": op}, v)
                        for n, v in zip(NAMES, values, strict=True)]
    out += [(p, t, "vcbench.failures", {"op": op, "fault": f}, n)
            for p, t, op, f, n in FAILURES]
    out.append((0, 3, "vcbench.op_latency_avg", {"op": "PowerOn"}, 99.0))
    return out


def _store_run(tmp_path: Path) -> tuple[Store, str]:
    """Stored as the engine stores a vcbench run: per trial the aggregate figures and
    the labelled ones (units as the driver gives them), a raw dir with the messages."""
    store = Store.open(None, tmp_path)
    run_dir = tmp_path / "run"
    for t, faults in ((0, {"DuplicateName": MESSAGES["DuplicateName"][:1]}),
                      (1, {"DuplicateName": MESSAGES["DuplicateName"][1:],
                           "InvalidPowerState": MESSAGES["InvalidPowerState"]})):
        raw = run_dir / "raw" / f"0-{t}"
        raw.mkdir(parents=True)
        (raw / "window.json").write_text(json.dumps({"faults": faults}))
    sc = scenario_doc("vcb", factors={"sessions": ["32", "64"]}, repeat=4,
                      report={"headline": ["vcbench.ops_per_s"], "charts": [],
                              "error_bars": "ci"})
    run_id = "run-ops"
    store.create_run(RunInfo(run_id=run_id, scenario_name="vcb", started=T0, scenario=sc,
                             run_dir=str(run_dir)))
    store.add_points(run_id, [(0, {"sessions": "32"}), (1, {"sessions": "64"})])
    labelled = _labelled()
    for p, n in ((0, 4), (1, 3)):
        for t in range(n):
            start = T0 + 100 * (4 * p + t)
            samples = [Sample("vcbench.ops_per_s", 15.0 + t, "ops/s", "vcbench"),
                       Sample("vcbench.failed", 1.0, "ops", "vcbench")]
            samples += [Sample(m, v, UNITS.get(m.split(".")[-1], "s"), "vcbench", None,
                               tuple(sorted(lab.items())))
                        for pp, tt, m, lab, v in labelled if (pp, tt) == (p, t)]
            bad = (p, t) == (0, 3)  # a failed trial: its figures must not reach the table
            store.record_trial(run_id, TrialResult(
                p, t, "failed" if bad else "ok",
                PhaseTimes(start, start, start + 10, start + 70, start + 70, start + 71),
                tuple(samples), "boom" if bad else None))
    store.finish_run(run_id, "ok", T0 + 3600)
    return store, run_id


def _ci_half(xs: list[float]) -> float:
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)


def test_operation_table_per_point_with_ci_percentiles_and_failures(tmp_path: Path) -> None:
    store, run_id = _store_run(tmp_path)
    data = report_data(store, run_id)
    p0, p1 = operation_figures(data.samples, {0: "sessions=32", 1: "sessions=64"},
                               data.run["run_dir"])
    assert (p0.title, p0.trials, p1.trials) == ("sessions=32", 3, 3)
    assert [o.op for o in p0.ops] == ["CloneVm", "PowerOn"]
    clone, power = p0.ops
    lat = [v[1] for v in FIGS[0]["PowerOn"]]
    assert power.latency.n == 3  # the failed trial's 99 s is left out
    assert power.latency.mean == pytest.approx(0.8)
    assert power.latency.ci_half == pytest.approx(_ci_half(lat))
    assert power.ops.mean == pytest.approx(11.0)
    assert power.p95.mean == pytest.approx(1.0) and power.p99.mean == pytest.approx(1.2)
    assert power.max.max == pytest.approx(1.5)  # the highest of the trials' max
    assert (clone.failures, power.failures) == (3.0, 1.0)
    assert p1.ops[0].failures == 0.0  # the driver counts failures: none is 0, not "—"
    assert p0.units["latency"] == "s" and p0.units["ops"] == "ops/s"
    dup, inv = p0.faults
    assert (dup.fault, dup.count, dup.by_op) == ("DuplicateName", 3.0, (("CloneVm", 3.0),))
    assert dup.messages == tuple(sorted(MESSAGES["DuplicateName"]))
    assert (inv.fault, inv.count, inv.messages) == (
        "InvalidPowerState", 1.0, tuple(MESSAGES["InvalidPowerState"]))
    assert p1.faults == ()

    view = ops_section([p0, p1], ChartIds(), "ci")
    assert view is not None
    row = next(r for r in view["points"][0]["rows"] if r["op"] == "PowerOn")
    assert row["latency"] == f"0.8000 ± {_ci_half(lat):.4f} s"
    assert (row["p95"], row["p99"], row["max"], row["failures"]) == (
        "1.000 s", "1.200 s", "1.500 s", "1")
    assert "<svg" in view["chart"] and "confidence interval" in view["error_bars"]


def test_html_report_has_the_operations_section_with_escaped_messages(tmp_path: Path) -> None:
    store, run_id = _store_run(tmp_path)
    html = render_run_report(store, run_id, tmp_path / "report.html").read_text()
    assert 'id="operations"' in html and 'href="#operations"' in html
    assert "Mean latency per operation" in html and "Failures per fault type" in html
    assert "The name &#39;vb-1&#39; already exists." in html
    assert "&lt;b&gt;x&lt;/b&gt; exists" in html and "<b>x</b>" not in html
    assert "No failed operation." in html  # sessions=64


def test_no_operations_section_without_op_labels(tmp_path: Path) -> None:
    store = Store.open(None, tmp_path)
    # Per-process breakdowns ({op, process}, as redis stores them) are not per-operation
    # aggregates; nor is a run with no labels at all.
    labelled = [(0, t, "latency_avg", {"op": "GET", "process": "c1"}, 1.0) for t in range(2)]
    run_id = add_run(store, "run-plain", [({}, {"ops": [100.0, 110.0]})], labelled=labelled)
    data = report_data(store, run_id)
    assert operation_figures(data.samples, {0: "all"}) == []
    assert ops_section([], ChartIds()) is None
    html = render_run_report(store, run_id, tmp_path / "report.html").read_text()
    assert 'id="operations"' not in html and 'href="#operations"' not in html
