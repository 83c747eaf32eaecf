"""Regression checks for nightly runs: choosing the baseline, judging the change, and
the exit status of `vbench run --check-regression` / `--fail-on-qos`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.regression import resolve_baseline
from vbench.engine.finish import Verdicts, verdicts
from vbench.errors import EXIT_LAB, EXIT_OK, EXIT_QOS, ConfigError
from vbench.report.build import check_regression, report_data
from vbench.results.store import Store

DAY = 86400.0
GOOD = {"ops": [1000.0, 1004.0, 996.0, 1002.0, 998.0, 1001.0, 999.0, 1000.0],
        "lat": [2.0, 2.02, 1.98, 2.01, 1.99, 2.0, 2.0, 2.0]}


def scaled(factor: float, lat: float = 1.0) -> dict[str, list[float]]:
    return {"ops": [v * factor for v in GOOD["ops"]], "lat": [v * lat for v in GOOD["lat"]]}


SC = scenario_doc("nightly", {"bs": ["4k"]}, report={"headline": ["ops", "lat"]})


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(f"sqlite:///{tmp_path}/r.db", tmp_path) as s:
        yield s


def night(store: Store, day: int, values: dict[str, list[float]], **kw: object) -> str:
    run_id = f"2027010{day}-020000-0000000{day}"
    kw.setdefault("scenario", SC)
    add_run(store, run_id, [({"bs": "4k"}, values)], started=T0 + day * DAY, **kw)  # type: ignore[arg-type]
    return run_id


def test_last_is_the_newest_earlier_compatible_completed_run(store: Store) -> None:
    first = night(store, 1, GOOD)
    night(store, 2, GOOD, status="failed")
    night(store, 3, GOOD, environment={"guests": {"vm": {"vcpus": 64}}})  # other hardware
    night(store, 4, GOOD, scenario={**SC, "phases": {"warmup": 0, "steady": 5, "cooldown": 0}})
    newer_build = night(store, 5, GOOD, testbed={"hosts": [{"name": "h", "build": 2}]})
    current = night(store, 6, GOOD, testbed={"hosts": [{"name": "h", "build": 3}]})
    night(store, 7, GOOD)  # later than the run checked: never its baseline
    run = store.get_run(current)
    choice = resolve_baseline(store, run, "last")
    assert choice is not None and choice.run_ids == (newer_build,)
    pooled = resolve_baseline(store, run, "last:3")
    assert pooled is not None and pooled.run_ids == (newer_build, first)  # only 2 qualify
    assert resolve_baseline(store, store.get_run(first), "last") is None


def test_auto_prefers_the_baseline_that_was_set(store: Store) -> None:
    first = night(store, 1, GOOD)
    night(store, 2, GOOD)
    current = night(store, 3, GOOD)
    run = store.get_run(current)
    assert resolve_baseline(store, run, "auto").run_ids == ("20270102-020000-00000002",)
    store.set_baseline(first, note="after the BIOS change")
    choice = resolve_baseline(store, run, "auto")
    assert choice.run_ids == (first,) and "after the BIOS change" in choice.description
    assert store.clear_baseline("nightly") == 1
    assert resolve_baseline(store, run, "auto").run_ids == ("20270102-020000-00000002",)


def test_tags_and_run_ids(store: Store) -> None:
    tagged = night(store, 1, GOOD, tags=("golden",))
    night(store, 2, GOOD)
    current = night(store, 3, GOOD)
    run = store.get_run(current)
    assert resolve_baseline(store, run, "tag:golden").run_ids == (tagged,)
    assert resolve_baseline(store, run, "golden").run_ids == (tagged,)  # bare word: a tag
    assert resolve_baseline(store, run, tagged[:10]).run_ids == (tagged,)  # id prefix
    assert resolve_baseline(store, run, "tag:nothing") is None
    with pytest.raises(ConfigError, match="no such run id"):
        resolve_baseline(store, run, "nothing-like-it")
    with pytest.raises(ConfigError, match="is the run being checked"):
        resolve_baseline(store, run, current)


def test_significant_drop_beyond_min_effect_is_a_regression(store: Store) -> None:
    night(store, 1, GOOD)
    current = night(store, 2, scaled(0.9, lat=1.2))
    res = check_regression(store, current, "last")
    by_metric = {c.metric: c for c in res.checks}
    assert by_metric["ops"].status == "regression"
    assert by_metric["ops"].change == pytest.approx(-0.1)
    assert by_metric["ops"].sig.method == "mann-whitney" and by_metric["ops"].sig.significant
    assert by_metric["lat"].status == "regression"  # latency up 20 %
    assert res.regressed and "REGRESSION in 2 of 2 checks" in res.verdict()


def test_small_or_favourable_changes_are_not_regressions(store: Store) -> None:
    night(store, 1, GOOD)
    small = night(store, 2, scaled(0.97))  # significant, but below the 5 % minimum effect
    res = check_regression(store, small, "last")
    assert {c.status for c in res.checks} == {"ok"}
    better = night(store, 3, scaled(1.2, lat=0.8))
    res = check_regression(store, better, "last:1")
    assert {c.status for c in res.checks} == {"improved"}
    assert not res.regressed
    res = check_regression(store, small, "last", min_effect=0.01)
    assert [c.status for c in res.checks if c.metric == "ops"] == ["regression"]


def test_three_trials_use_ci_overlap_and_pooling_helps(store: Store) -> None:
    few = {"ops": [1000.0, 1010.0, 990.0]}
    for day in (1, 2, 3):
        night(store, day, few)
    current = night(store, 4, {"ops": [930.0, 935.0, 925.0]})
    one = check_regression(store, current, "last", metrics=["ops"])
    assert one.checks[0].sig.method == "ci-overlap"
    assert one.checks[0].status == "regression"  # intervals disjoint, -7 %
    pooled = check_regression(store, current, "last:3", metrics=["ops"])
    assert pooled.checks[0].baseline.n == 9
    assert pooled.checks[0].sig.method == "mann-whitney"  # 9 vs 3 can reach α
    assert pooled.checks[0].status == "regression"


def test_first_run_has_no_baseline_and_does_not_fail(store: Store) -> None:
    current = night(store, 1, GOOD)
    res = check_regression(store, current)
    assert res.skipped and not res.regressed
    assert "no earlier compatible run" in res.verdict()


def _verdicts(store: Store, run_id: str, spec: str | None, fail_on_qos: bool,
              exit_code: int) -> Verdicts:
    return verdicts(store, report_data(store, run_id), spec, fail_on_qos, exit_code)


def test_exit_status_of_a_nightly_run(store: Store) -> None:
    qos = [{"metric": "lat", "op": "<=", "threshold": 2.1}]
    night(store, 1, GOOD, scenario={**SC, "qos": qos})
    bad = night(store, 2, scaled(0.9, lat=1.2), scenario={**SC, "qos": qos})
    assert _verdicts(store, bad, None, False, EXIT_OK).exit_code == EXIT_OK
    fails_qos = _verdicts(store, bad, None, True, EXIT_OK)
    assert fails_qos.exit_code == EXIT_QOS and "QoS FAIL" in fails_qos.text
    regressed = _verdicts(store, bad, "last", False, EXIT_OK)
    assert regressed.exit_code == EXIT_QOS and "REGRESSION" in regressed.text
    assert regressed.regression is not None and regressed.regression.regressed
    # A run whose trials failed keeps its own exit status.
    assert _verdicts(store, bad, "last", True, EXIT_LAB).exit_code == EXIT_LAB
    first = "20270101-020000-00000001"
    assert _verdicts(store, first, "auto", True, EXIT_OK).exit_code == EXIT_OK
