"""A find-max level's verdicts from stored figures: each trial on its own, the level over
its trials so far (the criterion's stat), failed trials against max_failure_rate, a
missing figure failing, and criteria applying only where `at` says."""

from __future__ import annotations

from pathlib import Path

from tests.analysis_runs import add_run, scenario_doc
from vbench.analysis.findmax_qos import criterion_values, level_verdicts
from vbench.analysis.run_analysis import load_analysis
from vbench.config.scenario import QosCriterion
from vbench.results.store import Store

LAT = QosCriterion(name="lat", metric="lat", op="<=", threshold=100.0)


def _figures(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = Store.open(None, tmp_path)
    add_run(
        store, "r1",
        [({"users": "10"}, {"lat": [50.0, 150.0, 60.0]}),
         ({"users": "20"}, {"lat": [50.0, 50.0]}),
         ({"users": "30"}, {"lat": [None]})],
        scenario=scenario_doc("fm", factors={}),
        failed=[(1, 1)],
    )
    return load_analysis(store, "r1").figures


def test_each_trial_and_the_level_so_far(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    got = level_verdicts(figures, [LAT], 0, [(0, "ok"), (1, "ok"), (2, "ok")], 0.0)
    # Trial 1 alone fails (150 ms) but the mean over trials 0-1 is 100 ms: still a pass.
    assert got == [(True, True), (False, True), (True, True)]
    [value] = criterion_values(figures, [LAT], 0, [0, 1, 2])
    assert value.value is not None and abs(value.value - 260 / 3) < 1e-9 and value.passed


def test_failed_trials_count_against_the_failure_rate(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    trials = [(0, "ok"), (1, "failed")]
    assert level_verdicts(figures, [LAT], 1, trials, 0.0) == [(True, True), (False, False)]
    assert level_verdicts(figures, [LAT], 1, trials, 0.5) == [(True, True), (False, True)]


def test_a_missing_figure_fails_the_level(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    assert level_verdicts(figures, [LAT], 2, [(0, "ok")], 0.0) == [(False, False)]


def test_a_criterion_applies_only_where_at_says(tmp_path: Path) -> None:
    figures = _figures(tmp_path)
    elsewhere = QosCriterion(metric="lat", op="<=", threshold=1.0, at={"users": "20"})
    assert level_verdicts(figures, [elsewhere], 0, [(0, "ok")], 0.0) == [(True, True)]
    assert level_verdicts(figures, [elsewhere], 1, [(0, "ok")], 0.0) == [(False, False)]
