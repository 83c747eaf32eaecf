"""What `vbench run` says while it runs: one estimate of the time left, and plain lines
(cron, CI) with the time, the 1-based point and its factor values, the trial, its status,
its headline figure and the time left."""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from vbench.cli.eta import Eta
from vbench.cli.progress import RichProgress
from vbench.config.load import load_scenario
from vbench.engine.plan import Plan, build_plan
from vbench.results.records import PhaseTimes, Sample, TrialResult

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plan() -> Plan:
    return build_plan(load_scenario(ROOT / "examples" / "quickstart.yaml"))  # 2 points × 3


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_eta_starts_at_the_plan_and_learns_the_runs_pace(plan: Plan) -> None:
    plan = dataclasses.replace(plan, setup_seconds=7.0, finish_seconds=5.0)
    clock = Clock()
    eta = Eta(plan, clock)  # made as the first trial starts: the set-up is behind
    assert eta.left() == pytest.approx(plan.trials_seconds + 5.0)
    per_trial = plan.trials_seconds / plan.n_trials
    eta.start_trial(plan.points[0])
    clock.now += per_trial / 2
    assert eta.left() == pytest.approx(plan.trials_seconds - per_trial / 2 + 5.0)
    clock.now += per_trial * 1.2  # the first trial took 1.7 × its estimate
    eta.end_trial()
    assert eta.pace == pytest.approx(1.7)
    # The clean-up is not scaled by the trials' pace.
    assert eta.left() == pytest.approx((plan.n_trials - 1) * per_trial * 1.7 + 5.0)


def _result(point: int, trial: int, status: str = "ok", error: str | None = None) -> TrialResult:
    samples = (Sample("total_iops", 12345.0, "IO/s", "fio"),
               Sample("total_iops", 6000.0, "IO/s", "fio", guest="guest1"))
    return TrialResult(point, trial, status, PhaseTimes(), samples if status == "ok" else (),
                       error)


def test_plain_lines_carry_time_labels_figure_and_one_eta(
    plan: Plan, capsys: pytest.CaptureFixture[str]
) -> None:
    progress = RichProgress(Console(file=io.StringIO()))  # not a terminal: plain lines
    assert not progress.live
    progress.start_run(plan)
    second = plan.points[1]
    progress.start_trial(second, 2)
    progress.end_trial(_result(second.index, 2))
    progress.start_trial(second, 3)
    progress.end_trial(_result(second.index, 3, "failed", "ssh: connection refused"))
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d point 2/2 \[bs=64k\] trial 2/3: ok · "
        r"total_iops 12,345 IO/s · run left ≈ .+", lines[0]), lines[0]
    assert "point 2/2 [bs=64k] trial 3/3: failed — ssh: connection refused · run left" in lines[1]
    assert lines[0].count("left") == 1


def test_live_display_shows_one_estimate_of_the_time_left(plan: Plan) -> None:
    from rich.progress import TimeRemainingColumn

    out = io.StringIO()
    progress = RichProgress(Console(file=out, force_terminal=True, width=120))
    progress.start_run(plan)
    try:
        assert progress._progress is not None
        # rich's own estimate (from the bar's rate) disagreed with the plan's: only ours.
        assert not [c for c in progress._progress.columns if isinstance(c, TimeRemainingColumn)]
        progress.start_trial(plan.points[0], 1)
        task = progress._progress.tasks[0]
        assert "point 1/2 [bs=4k] trial 1/3" in task.description
        assert task.fields["left"] != "?"
    finally:
        progress.end_run()


def test_a_trial_line_names_the_workloads_that_failed_in_it(
    plan: Plan, capsys: pytest.CaptureFixture[str]
) -> None:
    # A `workloads:` trial stays ok when one workload fails (<name>.ok = 0): its line said
    # only "ok · writer.total_iops …" (the first headline the trial still had).
    tile = (("tile", "2"),)
    samples = (Sample("writer.total_iops", 1990.0, "IO/s", "fio"),
               Sample("writer.ok", 1.0, "", "vbench", None, (("tile", "1"),)),
               Sample("writer.ok", 1.0, "", "vbench", None, tile),
               Sample("cache.ok", 1.0, "", "vbench", None, (("tile", "1"),)),
               Sample("cache.ok", 0.0, "", "vbench", None, tile),
               Sample("cache.ok", 0.5, "", "vbench"), Sample("writer.ok", 1.0, "", "vbench"))
    progress = RichProgress(Console(file=io.StringIO()))
    progress.start_run(plan)
    progress.start_trial(plan.points[0], 1)
    progress.end_trial(TrialResult(0, 1, "ok", PhaseTimes(), samples))
    untiled = (Sample("cache.ok", 0.0, "", "vbench"), Sample("writer.ok", 1.0, "", "vbench"))
    progress.start_trial(plan.points[0], 2)
    progress.end_trial(TrialResult(0, 2, "ok", PhaseTimes(), untiled))
    lines = capsys.readouterr().err.splitlines()
    assert ": ok · cache-2 failed · run left" in lines[0], lines[0]
    assert ": ok · cache failed · run left" in lines[1], lines[1]
    out = io.StringIO()
    live = RichProgress(Console(file=out, force_terminal=True, width=120))
    live.start_run(plan)
    try:
        live.start_trial(plan.points[0], 1)
        live.end_trial(TrialResult(0, 1, "ok", PhaseTimes(), samples))
    finally:
        live.end_run()
    assert "trial 1: cache-2 failed" in out.getvalue()
