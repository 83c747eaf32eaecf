"""Compare two runs: significance (Mann–Whitney U, or CI overlap with few trials),
points matched by labels, testbed differences, and the CLI output (golden files)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy import stats as sp

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.compare import (
    CompareRow,
    capped_metrics,
    compare_figures,
    min_effects,
    min_p_value,
    qos_caps,
    significance,
)
from vbench.analysis.direction import directions_of, to_stored
from vbench.analysis.figures import fact_differences
from vbench.analysis.run_analysis import load_figures
from vbench.analysis.stats import summarize
from vbench.cli import cli
from vbench.results.store import Store
from vbench.workloads.fio import FioWorkload

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("VBENCH_UPDATE_GOLDEN") == "1"


def exact_mwu_p(a: list[float], b: list[float]) -> float:
    """Two-sided exact p-value by enumerating every split of the pooled values."""
    pooled = a + b

    def u(xs: list[float], ys: list[float]) -> float:
        return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in xs for y in ys)

    centre = len(a) * len(b) / 2
    observed = abs(u(a, b) - centre)
    hits = total = 0
    for idx in itertools.combinations(range(len(pooled)), len(a)):
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(len(pooled)) if i not in idx]
        total += 1
        hits += abs(u(xs, ys) - centre) >= observed - 1e-12
    return hits / total


def test_mann_whitney_p_value_matches_exact_enumeration() -> None:
    a = [101.0, 103.0, 99.0, 104.0, 102.0]
    b = [95.0, 97.0, 96.0, 100.0, 94.0]
    sig = significance(a, b)
    assert sig.method == "mann-whitney"
    assert sig.p_value == pytest.approx(exact_mwu_p(a, b))
    assert sig.significant is True and sig.p_value < 0.05
    close = significance(a, [100.0, 102.0, 98.0, 105.0, 101.0])
    assert close.significant is False and close.text == "not significant"


def test_smallest_reachable_p_value() -> None:
    assert min_p_value(3, 3) == pytest.approx(0.1)  # 2 / C(6, 3)
    assert min_p_value(4, 4) == pytest.approx(2 / 70)
    assert min_p_value(3, 3) == pytest.approx(exact_mwu_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]))


def test_three_trials_fall_back_to_confidence_intervals() -> None:
    a, b = [100.0, 101.0, 102.0], [110.0, 111.0, 112.0]
    sig = significance(a, b)
    assert sig.method == "ci-overlap" and sig.significant is True
    # Independent: the SciPy t-intervals are disjoint.
    ia = sp.t.interval(0.95, 2, loc=sp.tmean(a), scale=sp.sem(a))
    ib = sp.t.interval(0.95, 2, loc=sp.tmean(b), scale=sp.sem(b))
    assert ia[1] < ib[0]
    wide = significance(a, [99.0, 108.0, 112.0])
    assert wide.method == "ci-overlap" and wide.significant is False
    assert "cannot reach α = 0.05 with 3 vs 3" in wide.reason


def test_one_trial_cannot_tell() -> None:
    sig = significance([1.0], [2.0, 3.0])
    assert sig.significant is None and sig.text == "cannot tell" and sig.method == "none"


def test_identical_samples_are_not_significant() -> None:
    sig = significance([5.0] * 6, [5.0] * 6)
    assert sig.significant is False and sig.p_value == 1.0


def _store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path}/golden.db", tmp_path)


def _two_runs(store: Store) -> tuple[str, str]:
    sc = scenario_doc("golden", {"bs": ["4k", "64k"]}, report={"headline": ["ops", "lat"]},
                      derived=[{"name": "rel", "kind": "normalize", "metric": "ops",
                                "baseline": {"bs": "4k"}}])
    env_a = {"controller": {"command": "vbench run golden.yaml"},
             "guests": {"vm1": {"kernel": "Linux 6.1.0", "vcpus": 4, "cpu_model": "Xeon"}}}
    env_b = {"controller": {"command": "vbench run golden.yaml"},
             "guests": {"vm1": {"kernel": "Linux 6.5.0", "vcpus": 8, "cpu_model": "Xeon"}}}
    a = add_run(store, "20270101-020000-aaaaaaaa", [
        ({"bs": "4k"}, {"ops": [1000.0, 1010.0, 990.0, 1005.0, 995.0],
                        "lat": [2.0, 2.1, 1.9, 2.0, 2.0]}),
        ({"bs": "64k"}, {"ops": [300.0, 310.0, 305.0, 290.0, 295.0],
                         "lat": [8.0, 8.2, 7.9, 8.1, 8.0]}),
        ({"bs": "1m"}, {"ops": [50.0, 51.0]}),
    ], scenario=sc, started=T0, environment=env_a,
        testbed={"hosts": [{"name": "esx1", "model": "R750", "build": 100}]})
    b = add_run(store, "20270102-020000-bbbbbbbb", [
        ({"bs": "64k"}, {"ops": [301.0, 309.0, 304.0, 292.0, 296.0],
                         "lat": [8.0, 8.1, 8.0, 8.1, 7.9]}),
        ({"bs": "4k"}, {"ops": [900.0, 905.0, 910.0, 895.0, 899.0],
                        "lat": [2.3, 2.4, 2.2, 2.3, 2.3]}),
    ], scenario=sc, started=T0 + 86400, environment=env_b,
        testbed={"hosts": [{"name": "esx1", "model": "R750", "build": 200}]})
    return a, b


def test_points_are_matched_by_labels_and_differences_listed(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, b = _two_runs(store)
        fa, fb = load_figures(store, a), load_figures(store, b)
    res = compare_figures(fa, fb, ["ops", "lat"])
    rows = {(r.title, r.metric): r for r in res.rows}
    assert rows[("bs=4k", "ops")].ratio == pytest.approx(901.8 / 1000.0)
    assert rows[("bs=4k", "ops")].verdict == "worse"
    assert rows[("bs=4k", "lat")].verdict == "worse"  # latency up: lower is better
    assert rows[("bs=64k", "ops")].verdict == "same"  # +0.13 %: within the minimum effect
    assert res.only_a == ("bs=1m",) and res.only_b == ()
    diffs = {d.key: (d.a, d.b, d.hardware) for d in res.differences}
    assert diffs["testbed.hosts[esx1].build"] == ("100", "200", False)
    assert diffs["guest[vm1].vcpus"] == ("4", "8", True)
    assert diffs["guest[vm1].kernel"] == ("Linux 6.1.0", "Linux 6.5.0", False)
    assert res.hardware_differs
    assert not fact_differences(fa.run, fa.run)


def _round(obj: object) -> object:
    if isinstance(obj, float):
        return float(f"{obj:.10g}")
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v) for v in obj]
    return obj


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from the golden file (VBENCH_UPDATE_GOLDEN=1 to accept)"
    )


def test_compare_cli_text_matches_golden_file(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, b = _two_runs(store)
    url = f"sqlite:///{tmp_path}/golden.db"
    out = CliRunner().invoke(cli, ["compare", a, b, "--store", url])
    assert out.exit_code == 0, out.output
    _golden("compare.txt", out.output)
    assert "same     within ±3 %" in out.output and "testbeds differ (3 facts" in out.output


def test_compare_cli_json_matches_golden_file(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, b = _two_runs(store)
    url = f"sqlite:///{tmp_path}/golden.db"
    out = CliRunner().invoke(cli, ["compare", a[:12], b, "--store", url, "--json",
                                   "--metric", "ops", "--metric", "rel"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    # Ten significant digits: stable across SciPy and platform last-bit differences.
    rounded = json.dumps(_round(doc), indent=2, sort_keys=True)
    _golden("compare.json", rounded + "\n")
    rel = [r for r in doc["rows"] if r["metric"] == "rel"]
    assert [r["point"] for r in rel] == ["bs=4k", "bs=64k"]
    assert math.isclose(rel[1]["b"]["mean"], 300.4 / 901.8)


def test_vm_names_carrying_the_run_id_are_the_same_vm() -> None:
    def run(run_id: str, vcpus: int) -> dict[str, object]:
        return {"run_id": run_id, "testbed": {"vms": [
            {"name": f"vbench-{run_id}-web1", "vcpus": vcpus, "ip": f"10.0.0.{vcpus}"}]}}

    assert fact_differences(run("r1", 2), run("r2", 2)) == []  # ip is volatile
    [diff] = fact_differences(run("r1", 2), run("r2", 4))
    assert diff.key == "testbed.vms[vbench-RUN-web1].vcpus" and diff.hardware


def _row(a: list[float], b: list[float], **kw: object) -> CompareRow:
    fields: dict[str, object] = {"labels": {}, "title": "rate_iops=400", "metric": "total_iops",
                                 "unit": "IO/s", "better": "higher"} | kw
    return CompareRow(**fields, a=summarize(a), b=summarize(b),  # type: ignore[arg-type]
                      sig=significance(a, b))


def test_a_significant_change_within_the_minimum_effect_is_the_same() -> None:
    # Issue 22: 400.3 vs 399.9 IO/s (0.1 %) was 'worse' because the 95 % CIs were disjoint.
    a, b = [400.30, 400.31, 400.29], [399.90, 399.91, 399.89]
    row = _row(a, b)
    assert row.sig.significant is True
    assert row.verdict == "same" and row.reason.startswith("within ±3 %")
    assert _row(a, [388.0, 388.1, 387.9]).verdict == "worse"  # -3.1 %: beyond it
    assert _row(a, b, min_effect=0.0).verdict == "worse"  # a scenario may ask for any change
    assert _row([100.0, 101.0, 99.0], [90.0, 150.0, 30.0]).verdict == "not significant"


def test_a_metric_without_direction_changes_but_is_never_better_or_worse() -> None:
    row = _row([0.05, 0.051, 0.049], [0.09, 0.091, 0.089], metric="client_cpu",
               unit="fraction", better="none")
    assert row.verdict == "changed"


def test_a_qos_capped_metric_is_not_compared_as_performance() -> None:
    scenario = {"qos": [{"name": "total under 400 IO/s", "metric": "total_iops", "op": "<=",
                         "threshold": 400},
                        {"metric": "read_clat_p99_max", "op": "<=", "threshold": 50}]}
    d = directions_of({"scenario": scenario, "metrics": to_stored(FioWorkload.metrics or ())})
    caps = qos_caps(scenario, d)
    # The latency bound is the metric's own better direction: a limit, not a cap.
    assert caps == {"total_iops": "QoS 'total under 400 IO/s': total_iops <= 400"}
    row = _row([380.0, 381.0, 379.0], [300.0, 301.0, 299.0], capped=caps["total_iops"])
    assert row.verdict == "capped" and row.reason.startswith("capped: QoS")


def test_the_scenario_sets_the_minimum_effect_per_metric(tmp_path: Path) -> None:
    assert min_effects({"report": {"min_effect": {"ops": 0.2, "bad": "x"}}}) == {"ops": 0.2}
    with _store(tmp_path) as store:
        a, b = _two_runs(store)
        fa, fb = load_figures(store, a), load_figures(store, b)
    # ops at bs=4k: 1000 -> 901.8 (-9.8 %), significant: worse by default, same within 20 %.
    before = compare_figures(fa, fb, ["ops"])
    assert next(r.verdict for r in before.rows) == "worse"
    scenario = {**fa.scenario, "report": {"min_effect": {"ops": 0.2}}}
    wide = dataclasses.replace(fa, run={**fa.run, "scenario": scenario})
    assert next(r.verdict for r in compare_figures(wide, fb, ["ops"]).rows) == "same"


def test_a_rate_capped_search_level_is_not_compared_as_performance() -> None:
    # fio-findmax-local: a search over rate_iops; at each level the IOPS are the setting.
    scenario = {"workload": {"driver": "fio", "params": {"rw": "randread"}},
                "search": {"factor": "rate_iops", "min": 50, "max": 1600}}
    d = directions_of({"scenario": scenario, "metrics": to_stored(FioWorkload.metrics or ())})
    caps = capped_metrics(scenario, d, ["total_iops", "read_iops", "read_clat_p99"])
    assert caps == {"total_iops": "rate_iops caps it (searched factor rate_iops)",
                    "read_iops": "rate_iops caps it (searched factor rate_iops)"}
    fixed = {"workload": {"driver": "fio", "params": {"jobs": [{"rate_iops": 400}]}}}
    assert "total_iops" in capped_metrics(fixed, d, ["total_iops"])
    free = {"workload": {"driver": "fio", "params": {"rw": "randread"}}}
    assert capped_metrics(free, d, ["total_iops"]) == {}
    # Throttled on one side only (a nightly's stand-in for a slower system): compared.
    assert capped_metrics(fixed, d, ["total_iops"], others=[free]) == {}
    assert "total_iops" in capped_metrics(scenario, d, ["total_iops"], others=[scenario])
