"""QoS criteria: per point, per operation, on any statistic over trials, with units."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from scipy import stats as sp

from vbench.analysis.figures import RunFigures, build_figures, convert
from vbench.analysis.qos import check_qos, criterion_name, evaluate_qos
from vbench.config.scenario import QosCriterion, Scenario

# CloudStone-like: two points (users), per-operation response times in ms.
OPS = {"HomePage": (180.0, 420.0), "TagSearch": (240.0, 480.0), "AddEvent": (450.0, 900.0)}
TRIALS = {"500": [0.9, 1.0, 1.1], "1500": [1.0, 1.1, 1.3]}


def cloudstone() -> RunFigures:
    rows, trials, points = [], [], []
    for p, (users, scale) in enumerate(TRIALS.items()):
        points.append({"point": p, "labels": {"users": users}})
        for t, k in enumerate(scale):
            trials.append({"point": p, "trial": t, "status": "ok"})
            factor = k * (1.0 if users == "500" else 1.2)
            for op, (avg, p95) in OPS.items():
                for metric, value in (("rt_avg", avg), ("rt_p95", p95)):
                    rows.append({"point": p, "trial": t, "guest": None, "metric": metric,
                                 "value": value * factor, "unit": "ms", "source": "faban",
                                 "labels": json.dumps({"operation": op})})
            rows.append({"point": p, "trial": t, "guest": None, "metric": "ops",
                         "value": 1000.0 * k, "unit": "ops/s", "source": "faban",
                         "labels": "{}"})
    run = {"run_id": "r", "scenario": {"factors": {"users": {}}}}
    return build_figures(run, points, trials, pd.DataFrame(rows))


FIG = cloudstone()


def test_one_check_per_operation_and_point_with_per_operation_limits() -> None:
    criteria = [
        QosCriterion(metric="rt_avg", where={"operation": ["HomePage", "TagSearch"]},
                     op="<=", threshold=250),
        QosCriterion(metric="rt_avg", where={"operation": "AddEvent"}, op="<=", threshold=500),
    ]
    res = evaluate_qos(FIG, criteria)
    assert len(res.checks) == 6
    status = {(c.subject["operation"], c.point_title): c.status for c in res.checks}
    assert status[("HomePage", "users=500")] == "pass"  # 180 ms
    assert status[("TagSearch", "users=500")] == "pass"  # 240 ms
    assert status[("TagSearch", "users=1500")] == "fail"  # 240 * 1.2 * 1.133 ms
    assert status[("AddEvent", "users=500")] == "pass"
    assert status[("AddEvent", "users=1500")] == "fail"
    assert not res.passed and len(res.failures) == 2
    assert res.criteria == ("rt_avg [operation=HomePage|TagSearch] mean ≤ 250",
                            "rt_avg [operation=AddEvent] mean ≤ 500")
    assert "2 of 6 checks did not pass" in res.verdict()


@pytest.mark.parametrize("stat", ["mean", "median", "min", "max", "p90", "p99.9", "p50"])
def test_statistic_over_trials_matches_scipy(stat: str) -> None:
    crit = QosCriterion(metric="ops", op=">=", threshold=0, stat=stat)
    check = evaluate_qos(FIG, [crit]).checks[1]  # users=1500: 1000, 1100, 1300
    xs = [1000.0, 1100.0, 1300.0]
    expected = {
        "mean": sp.tmean(xs), "median": sp.scoreatpercentile(xs, 50), "min": sp.tmin(xs),
        "max": sp.tmax(xs), "p90": sp.scoreatpercentile(xs, 90),
        "p99.9": sp.scoreatpercentile(xs, 99.9), "p50": sp.scoreatpercentile(xs, 50),
    }[stat]
    assert check.value == pytest.approx(expected)
    assert check.n == 3 and check.passed


def test_threshold_unit_is_converted() -> None:
    crit = QosCriterion(metric="rt_p95", where={"operation": "HomePage"}, op="<=",
                        threshold=0.5, unit="s")
    checks = evaluate_qos(FIG, [crit]).checks
    assert checks[0].unit == "s" and checks[0].value == pytest.approx(0.42)
    assert [c.status for c in checks] == ["pass", "fail"]  # 0.42 s, then 0.5712 s
    assert convert(250.0, "ms", "s") == 0.25
    assert convert(1.0, "GiB/s", "MiB/s") == 1024.0
    assert convert(1.0, "ms", "MiB/s") is None


def test_incompatible_unit_is_an_error_not_a_pass() -> None:
    crit = QosCriterion(metric="ops", op=">=", threshold=1, unit="ms")
    res = evaluate_qos(FIG, [crit])
    assert {c.status for c in res.checks} == {"error"}
    assert "unit mismatch" in res.checks[0].message and not res.passed


def test_missing_metric_fails_as_missing() -> None:
    res = evaluate_qos(FIG, [QosCriterion(metric="nope", op="<=", threshold=1)])
    assert [c.status for c in res.checks] == ["missing", "missing"]
    assert not res.passed
    assert "no metric 'nope'" in res.problems[0]


def test_at_restricts_the_points() -> None:
    crit = QosCriterion(metric="ops", op=">=", threshold=1050, at={"users": "1500"})
    res = evaluate_qos(FIG, [crit])
    assert [c.point_title for c in res.checks] == ["users=1500"]
    assert res.passed  # mean 1133 ops/s


def test_strict_and_inclusive_comparisons_at_the_limit() -> None:
    def status(op: str) -> str:
        crit = QosCriterion(metric="ops", op=op, threshold=900, stat="min", at={"users": "500"})
        return evaluate_qos(FIG, [crit]).checks[0].status  # min over 900, 1000, 1100 = 900

    assert [status(op) for op in ("<", "<=", ">", ">=")] == ["fail", "pass", "fail", "pass"]


def test_no_criteria_passes_trivially() -> None:
    res = evaluate_qos(FIG, [])
    assert res.passed and not res.declared and res.verdict() == "no QoS criteria declared"


def test_names_and_static_checks() -> None:
    c = QosCriterion(name="HomePage p95", metric="rt_p95", op="<=", threshold=500)
    assert criterion_name(c) == "HomePage p95"
    assert criterion_name(QosCriterion(metric="m", op=">=", threshold=2.5, unit="s",
                                       stat="p95")) == "m p95 ≥ 2.5 s"
    sc = Scenario.model_validate({
        "version": 1, "name": "s", "topology": {"g": {}}, "workload": {"driver": "fio"},
        "factors": {"users": ["500"]}, "phases": {"steady": 1},
        "qos": [{"metric": "m", "op": "<=", "threshold": 1, "at": {"users": "700"}},
                {"metric": "m", "op": "<=", "threshold": 1, "at": {"vms": "1"},
                 "where": {"operation": []}}],
    })
    found = {".".join(map(str, p)): m for p, m in check_qos(sc)}
    assert "no level '700'" in found["qos.0.at.users"]
    assert "no factor 'vms'" in found["qos.1.at.vms"]
    assert "selects nothing" in found["qos.1.where.operation"]
    with pytest.raises(ValueError, match="stat"):
        QosCriterion(metric="m", op="<=", threshold=1, stat="p101")
