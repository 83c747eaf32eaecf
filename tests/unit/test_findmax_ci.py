"""Find-max with an adaptive repeat: a level is decided when its verdict is certain under
the confidence interval (more trials, one at a time, only while the threshold lies in
the interval, up to max), not after a fixed count; the run and its replays agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis_runs import add_run, scenario_doc
from vbench.analysis.findmax import RETRY, FindMax, SearchParams, replay
from vbench.analysis.findmax_qos import level_certainty, level_outcomes, search_params
from vbench.analysis.run_analysis import load_analysis
from vbench.config.findmax import SearchSpec
from vbench.config.scenario import QosCriterion
from vbench.results.store import Store

IOPS = QosCriterion(name="iops", metric="iops", op="<=", threshold=400.0)
CI = SearchParams(min=100, max=800, step=100, trials=3, verify_trials=0,
                  decide_by_ci=True, max_trials=6)


def test_an_adaptive_repeat_makes_the_search_decide_by_the_interval() -> None:
    spec = SearchSpec.model_validate({"factor": "rate", "min": 1, "max": 100})
    fixed = search_params(spec, 3)
    assert not fixed.decide_by_ci and fixed.noisy_retries == 2  # the spec's own retries
    adaptive = search_params(spec, 3, 12)
    assert adaptive.decide_by_ci and adaptive.trials == 3 and adaptive.max_trials == 12
    # α = 5 % spent over the level's 10 possible looks (3..12 trials), as adaptive repeat.
    assert adaptive.ci_confidence == pytest.approx(1 - 0.05 / 10)


def test_an_uncertain_level_takes_one_trial_at_a_time_up_to_max_then_is_noisy() -> None:
    search = FindMax(CI)
    req = search.next()
    assert req is not None and (req.level, req.trials) == (100, 3)
    search.record(100, [True] * 3, True, certain=False)
    for n in (4, 5, 6):
        req = search.next()
        assert req is not None and (req.level, req.trials, req.reason) == (100, 1, RETRY)
        search.record(100, [True] * n, True, certain=False)
    req = search.next()
    assert req is not None and req.level != 100  # at max (6): decided, reported noisy
    assert search.levels[100].noisy and len(search.levels[100].verdicts) == 6


def test_a_certain_level_is_decided_after_its_first_trials_even_if_they_disagree() -> None:
    search = FindMax(CI)
    search.next()
    search.record(100, [True, False, True], True, certain=True)
    req = search.next()
    assert req is not None and req.level == 200 and req.trials == 3
    # Without the interval (a fixed repeat), disagreeing trials are retried as before.
    plain = FindMax(SearchParams(min=100, max=800, step=100, trials=3, verify_trials=0))
    plain.next()
    plain.record(100, [True, False, True], True)
    req = plain.next()
    assert req is not None and (req.level, req.reason) == (100, RETRY)


def test_a_replay_asks_for_the_same_added_trials_as_the_run() -> None:
    # Level 100: uncertain after 3 and 4 trials, certain after 5; 200 certain at 3.
    outcomes = {100.0: [(True, True, False)] * 4 + [(True, True, True)],
                200.0: [(True, True, True)] * 2}
    search, pending, have = replay(CI, outcomes)
    assert len(search.levels[100].verdicts) == 5 and search.levels[100].certain
    assert pending is not None and (pending.level, pending.trials) == (200, 3) and have == 2


def _figures(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = Store.open(None, tmp_path)
    add_run(
        store, "r1",
        [({"rate": "300"}, {"iops": [300.0, 301.0, 299.0]}),  # far below 400: certain
         ({"rate": "400"}, {"iops": [396.0, 404.0, 399.0, 401.0]}),  # at the threshold
         ({"rate": "500"}, {"iops": [420.0, 390.0, 430.0]})],  # one trial passes
        scenario=scenario_doc("fm", factors={}),
    )
    return load_analysis(store, "r1").figures


def test_certainty_is_the_threshold_outside_the_interval_of_the_mean(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    ok3 = [(0, "ok"), (1, "ok"), (2, "ok")]
    # One value has no interval; two or more close to each other far from 400 do.
    assert level_certainty(figures, [IOPS], 0, ok3, 0.95) == [False, True, True]
    # Means of 400 ± a few: the threshold stays inside the interval.
    assert level_certainty(figures, [IOPS], 1, [*ok3, (3, "ok")], 0.95) == [False] * 4
    # Trials that disagree (390 passes, 420 and 430 fail): mean 413, 95 % interval ±52,
    # which holds 400: not certain yet.
    assert level_certainty(figures, [IOPS], 2, ok3, 0.95)[-1] is False
    # A stricter confidence widens the interval: less is certain.
    assert level_certainty(figures, [IOPS], 0, ok3[:2], 0.9999) == [False, False]


def test_a_criterion_on_a_percentile_is_certain_when_the_trials_agree(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    p90 = QosCriterion(name="p90", metric="iops", op="<=", threshold=400.0, stat="p90")
    ok3 = [(0, "ok"), (1, "ok"), (2, "ok")]
    assert level_certainty(figures, [p90], 0, ok3, 0.95) == [True, True, True]
    assert level_certainty(figures, [p90], 2, ok3, 0.95) == [True, False, False]


def test_the_search_is_told_the_certainty_only_under_an_adaptive_repeat(
    tmp_path: Path,
) -> None:
    figures = _figures(tmp_path)
    ok3 = [(0, "ok"), (1, "ok"), (2, "ok")]
    plain = SearchParams(min=100, max=800)
    assert level_outcomes(figures, [IOPS], 0, ok3, 0.0, plain) == [(True, True)] * 3
    assert level_outcomes(figures, [IOPS], 0, ok3, 0.0, CI) == [
        (True, True, False), (True, True, True), (True, True, True)]


def test_the_outlook_counts_every_level_up_to_max_trials_as_the_most() -> None:
    fixed = FindMax(SearchParams(min=100, max=800, step=100, trials=3, verify_trials=0))
    adaptive = FindMax(CI)  # the same search, up to 6 trials a level
    a, b = fixed.outlook(), adaptive.outlook()
    assert b.trials[0] == a.trials[0]  # every level certain after its first 3
    assert b.trials[1] == a.trials[1] + 3 * b.levels[1]  # every level uncertain to 6


def test_the_plan_says_a_level_takes_min_to_max_trials(tmp_path: Path) -> None:
    from vbench.cli.run_cmds import _search_text
    from vbench.config.load import load_scenario
    from vbench.engine.plan import build_plan

    path = tmp_path / "s.yaml"
    text = ("version: 1\nname: fm\ntopology:\n  storage: {count: 1}\nworkload:\n"
            "  driver: fio\n  params: {rw: randread, size: 8m}\nphases: {steady: 1s}\n"
            "qos:\n  - {metric: total_iops, op: '<=', threshold: 400}\n"
            "search: {factor: rate_iops, min: 50, max: 800}\n")
    path.write_text(text + "repeat: {min: 3, max: 8, target: {ci_half_width: 5%}}\n")
    assert "3–8 trials per level (more while its verdict is uncertain)" in _search_text(
        build_plan(load_scenario(path)))
    path.write_text(text + "repeat: 2\n")
    assert ", 2 trials per level: " in _search_text(build_plan(load_scenario(path)))


def test_one_criterion_certain_to_fail_decides_the_level_whatever_the_others(
    tmp_path: Path,
) -> None:
    # At 750 IO/s against a 400 cap the level fails whatever its latency does: a
    # latency criterion still uncertain (its mean near its threshold) must not keep the
    # level asking for trials, nor get it reported noisy at max. Its passing is certain
    # only when every criterion is certain to hold.
    store = Store.open(None, tmp_path)
    add_run(
        store, "r1",
        [({"rate": "750"}, {"iops": [749.0, 751.0, 750.0], "lat": [9.0, 11.0, 10.5]}),
         ({"rate": "300"}, {"iops": [300.0, 301.0, 299.0], "lat": [9.0, 11.0, 10.5]})],
        scenario=scenario_doc("fm", factors={}),
    )
    figures = load_analysis(store, "r1").figures
    lat = QosCriterion(name="lat", metric="lat", op="<=", threshold=10.0)
    ok3 = [(0, "ok"), (1, "ok"), (2, "ok")]
    assert level_certainty(figures, [lat], 0, ok3, 0.95)[-1] is False  # alone: uncertain
    assert level_certainty(figures, [IOPS, lat], 0, ok3, 0.95) == [False, True, True]
    # Below the cap the latency decides: not certain while it is not.
    assert level_certainty(figures, [IOPS, lat], 1, ok3, 0.95) == [False, False, False]


def test_the_plans_points_and_estimate_speak_of_the_search_not_of_a_target(
    tmp_path: Path,
) -> None:
    from vbench.cli.run_cmds import _plan_text
    from vbench.config.load import load_scenario
    from vbench.engine.plan import build_plan

    path = tmp_path / "s.yaml"
    path.write_text(
        "version: 1\nname: fm\ntopology:\n  storage: {count: 1}\nworkload:\n"
        "  driver: fio\n  params: {rw: randread, size: 8m}\nphases: {steady: 1s}\n"
        "qos:\n  - {metric: total_iops, op: '<=', threshold: 400}\n"
        "search: {factor: rate_iops, min: 50, max: 800, trials: 2}\n"
        "repeat: {min: 3, max: 8, target: {ci_half_width: 5%}}\n")
    text = _plan_text(build_plan(load_scenario(path)))
    point = next(line for line in text.splitlines() if line.startswith("  phases:"))
    # A level runs search.trials (2), then one at a time while uncertain, up to max: no
    # confidence target is sought and the repeat's min (3) is not its first count.
    assert point.endswith("; 2–8 trials per level (more while its verdict is uncertain)")
    # The most already counts every level still uncertain at max: no 'if no level is noisy'.
    assert "if no level is noisy" not in text


def test_the_reports_trial_count_is_the_trials_each_level_took() -> None:
    import pandas as pd

    from vbench.report.data import ReportData, ReportView

    # Run 20261127-063504 (local lab, repeat {min 3, max 6}, search.trials 2): levels took
    # 2 to 7 trials (a noisy level's 6, then its verification); the header said '3–6
    # trials per point (until the confidence target)', which no level took nor sought.
    took = {0: 2, 1: 3, 2: 7}
    trials = [{"point": p, "trial": t, "status": "ok"}
              for p, n in took.items() for t in range(1, n + 1)]
    trials.append({"point": 1, "trial": 4, "status": "interrupted"})  # measured nothing
    run = {"run_id": "r", "status": "ok", "scenario": {
        "repeat": {"min": 3, "max": 6, "target": {"ci_half_width": 0.05}},
        "search": {"factor": "rate", "min": 50, "max": 800, "trials": 2}}}
    points = [{"point": p, "labels": {"rate": str(50 * (p + 1))}} for p in took]
    view = ReportView(ReportData(run=run, points=points, trials=trials,
                                 samples=pd.DataFrame()))
    assert view.trials_text == "2–7 trials per level (more while its verdict was uncertain)"
