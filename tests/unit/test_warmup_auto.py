"""``phases.warmup: auto``: the detector that ends a warm-up live (MSER-5 on the
observations so far, at least SETTLED_BATCHES flat batches after the cut, else the cap), the
scenario key, the driver check, fio's status snapshots, and the per-trial report line."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from vbench.analysis.warmup import (
    BATCH,
    SETTLED_BATCHES,
    auto_warmup_lines,
    auto_warmups,
    observation_interval,
    warmup_end,
)
from vbench.config.load import load_scenario
from vbench.config.scenario import Phases
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError
from vbench.workloads.fio.warmup import Rates, Snapshot, snapshots


def _ended_at(series: list[float], cap: int) -> tuple[int, object]:
    """Feed the detector one observation at a time, as the driver does."""
    for n in range(1, len(series) + 1):
        answer = warmup_end(series[:n], n >= cap)
        if answer.end:
            return n, answer
    raise AssertionError("the cap must end it")


def _noisy(rng: random.Random, level: float, cv: float) -> float:
    return level * (1 + rng.gauss(0, cv))


def test_a_series_settled_from_the_start_ends_after_the_fewest_observations() -> None:
    rng = random.Random(1)
    series = [_noisy(rng, 1000, 0.02) for _ in range(200)]
    n, answer = _ended_at(series, 200)
    # 40 at the earliest (8 batches after the cut); a batch or two more when MSER cuts
    # a little in or the short fit wobbles.
    assert SETTLED_BATCHES * BATCH <= n <= SETTLED_BATCHES * BATCH + 3 * BATCH
    assert answer.settled_at is not None and answer.settled_at <= 2 * BATCH


@pytest.mark.parametrize("seed", range(20))
def test_an_exponential_warm_up_ends_after_the_transient_not_before(seed: int) -> None:
    # 50 % low at first, closing with a time constant of 8 observations: within 1 % of
    # the level from about observation 26 on.
    rng = random.Random(seed)
    series = [_noisy(rng, 1000 * (1 - 0.5 * math.exp(-i / 8)), 0.02) for i in range(300)]
    n, answer = _ended_at(series, 300)
    assert answer.settled_at is not None
    assert n - answer.settled_at >= SETTLED_BATCHES * BATCH
    # What is measured after the warm-up ends sits at the settled level (±2 %).
    after = series[n:n + 60]
    assert abs(sum(after) / len(after) - 1000) / 1000 < 0.02, (n, answer)
    assert n < 100  # and the warm-up did not run to anything like the cap


@pytest.mark.parametrize("seed", range(20))
def test_a_slow_rise_is_not_taken_for_noise(seed: int) -> None:
    # 40 % low at first, closing with a time constant of 30 observations, 3 % noise: a
    # rise a short window cannot tell from noise. Ending at 4 batches after MSER's cut
    # (the first version of this rule) left up to 8 % of bias in the minute after the
    # warm-up; 8 flat batches leave it within 1.5 %.
    rng = random.Random(seed)
    series = [_noisy(rng, 1000 * (1 - 0.4 * math.exp(-i / 30)), 0.03) for i in range(400)]
    n, _answer = _ended_at(series, 400)
    after = series[n:n + 60]
    assert abs(sum(after) / len(after) - 1000) / 1000 < 0.015, n


def test_a_step_ends_the_warm_up_only_once_enough_follows_the_step() -> None:
    # Half the rate for the first 12 observations (a cache filling), then the level.
    rng = random.Random(3)
    series = [_noisy(rng, 500 if i < 12 else 1000, 0.01) for i in range(300)]
    n, answer = _ended_at(series, 300)
    assert answer.settled_at is not None and 10 <= answer.settled_at <= 15
    assert n >= answer.settled_at + SETTLED_BATCHES * BATCH
    # The detector cannot foresee a step after it ended: a flat start ends long before.
    late = [_noisy(rng, 500 if i < 150 else 1000, 0.01) for i in range(300)]
    assert _ended_at(late, 300)[0] < 100


def test_a_drifting_series_runs_to_the_cap_and_says_it_did_not_settle() -> None:
    rng = random.Random(4)
    series = [_noisy(rng, 1000 + 10 * i, 0.005) for i in range(200)]
    n, answer = _ended_at(series, 120)
    assert n == 120
    assert answer.settled_at is None
    assert answer.reason.startswith("the cap: not settled (not settled: the series keeps")


def test_too_few_observations_at_the_cap_is_the_cap_too() -> None:
    answer = warmup_end([100.0] * 7, True)
    assert answer.end and answer.settled_at is None
    assert "too short: 7 values" in answer.reason


def test_observations_are_per_second_unless_the_cap_is_short() -> None:
    # Room for 80 observations in the cap: twice the 40 the rule can end on.
    assert observation_interval(300) == 1.0
    assert observation_interval(80) == 1.0
    assert observation_interval(40) == 0.5
    assert observation_interval(5) == 0.25  # the finest


def test_the_scenario_key_takes_auto_and_a_cap_only_with_it() -> None:
    ph = Phases.model_validate({"warmup": "auto", "warmup_cap": "90s", "steady": "1m"})
    assert ph.auto_warmup and ph.planned_warmup == 90.0
    assert Phases.model_validate({"warmup": "auto", "steady": 1}).planned_warmup == 300.0
    fixed = Phases.model_validate({"warmup": "30s", "steady": 1})
    assert not fixed.auto_warmup and fixed.planned_warmup == 30.0
    with pytest.raises(ValueError, match="warmup_cap: is read only with warmup: auto"):
        Phases.model_validate({"warmup": "30s", "warmup_cap": "1m", "steady": 1})
    with pytest.raises(ValueError, match="'soon' is not a duration"):
        Phases.model_validate({"warmup": "soon", "steady": 1})


SCENARIO = """version: 1
name: auto
topology:
  g: {{count: 1}}
workload:
  driver: {driver}
  params: {params}
phases: {{warmup: auto, warmup_cap: 40s, steady: 2s}}
"""


def test_fio_plans_an_automatic_warm_up_at_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(driver="fio", params="{rw: randread, size: 8m}"))
    plan = build_plan(load_scenario(path))
    point = plan.points[0]
    assert point.auto_warmup and point.warmup == 40.0
    assert point.trial_seconds >= 42.0


def test_a_driver_that_cannot_end_its_warm_up_is_refused_at_phases_warmup(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(driver="iperf3", params="{}"))
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(path))
    msg = str(exc.value)
    assert "s.yaml:8:18" in msg, msg  # the value `auto`
    assert "auto needs a driver that reads its own throughput while it runs (fio); the " \
           "iperf3 driver cannot end its warm-up early: give a duration" in msg


def _status(runtime_ms: int, read: int, write: int, jobs: int = 1) -> str:
    doc = {"fio version": "fio-3.33", "timestamp_ms": 1,
           "jobs": [{"jobname": f"j{i}", "job_runtime": runtime_ms,
                     "read": {"total_ios": read}, "write": {"total_ios": write},
                     "trim": {"total_ios": 0}} for i in range(jobs)]}
    return json.dumps(doc, indent=2) + "\n"


def test_whole_status_snapshots_are_read_and_a_torn_one_left_for_next_time() -> None:
    whole = _status(1000, 100, 50) + _status(2000, 210, 90, jobs=2)
    torn = _status(3000, 999, 999)[:-40]
    found, used = snapshots(whole + torn)
    assert found == [Snapshot(1.0, 150), Snapshot(2.0, 600)]
    # The torn document is read again, whole, next time: from the end of the last one.
    assert (whole + torn).encode()[used:].strip() == torn.encode().strip()
    assert snapshots("fio: starting\n") == ([], 0)


def test_rates_sum_each_guests_kth_interval_on_fios_clock() -> None:
    rates = Rates(["a", "b"])
    rates.add("a", [Snapshot(0.25, 100), Snapshot(0.5, 200), Snapshot(0.75, 300)])
    rates.add("b", [Snapshot(0.25, 50)])
    assert rates.series() == [] and rates.runtime() == 0.25  # b has no interval yet
    rates.add("b", [Snapshot(0.5, 100), Snapshot(0.5, 100)])  # a repeated time: skipped
    assert rates.series() == [pytest.approx(400 + 200)]
    rates.add("b", [Snapshot(0.75, 150)])
    assert rates.series() == [pytest.approx(600), pytest.approx(600)]
    assert rates.runtime() == 0.75


def test_each_trials_warm_up_is_read_from_its_phase_marks_and_the_cap_flagged() -> None:
    trials = [
        {"point": 0, "trial": 1, "phases": {"warmup_start": 100.0, "steady_start": 124.2}},
        {"point": 0, "trial": 2, "phases": {"warmup_start": 200.0, "steady_start": 260.3}},
        {"point": 1, "trial": 1, "phases": {"warmup_start": 300.0, "steady_start": 321.0}},
        {"point": 1, "trial": 2, "phases": {"warmup_start": 400.0}},  # failed in warm-up
    ]
    found = auto_warmups(trials, 60.0)
    assert [(a.point, a.trial, a.capped) for a in found] == [
        (0, 1, False), (0, 2, True), (1, 1, False)]
    lines = auto_warmup_lines(found, 60.0, {0: "bs=4k", 1: "bs=64k"})
    assert lines == [
        "warm-up (auto, cap 60 s) at bs=4k: trial 1 24.2 s, trial 2 60.3 s (the cap: not "
        "settled)",
        "warm-up (auto, cap 60 s) at bs=64k: trial 1 21.0 s",
    ]


def test_the_chart_draws_the_observations_the_settling_point_and_the_end() -> None:
    from vbench.report.warmup_chart import warmup_svg

    doc = {"interval_s": 0.5, "cap_s": 60, "settled_at": 12, "reason": "settled",
           "iops": [500.0] * 12 + [1000.0] * 40}
    svg = warmup_svg(doc, "automatic warm-up at bs=4k, trial 1", "c1")
    assert svg.count("<polyline") == 1  # the observations
    assert svg.count('stroke-dasharray="5 3"') == 1  # where MSER-5 found it settled
    assert "settled 6.0 s" in svg  # observation 12 at 0.5 s each
    capped = warmup_svg({**doc, "settled_at": None}, "t", "c2")
    assert "stroke-dasharray" not in capped and "settled" not in capped


def test_the_kept_observations_are_read_back_from_the_trials_raw_directory(
    tmp_path: Path,
) -> None:
    from vbench.analysis.warmup import AUTO_WARMUP_FILE
    from vbench.report.warmup_chart import kept_warmup

    (tmp_path / "raw" / "2-3").mkdir(parents=True)
    (tmp_path / "raw" / "2-3" / AUTO_WARMUP_FILE).write_text(json.dumps(
        {"interval_s": 1.0, "settled_at": 0, "iops": [1.0, 2.0]}))
    assert kept_warmup(tmp_path, 2, 3) == {"interval_s": 1.0, "settled_at": 0,
                                           "iops": [1.0, 2.0]}
    assert kept_warmup(tmp_path, 2, 4) is None and kept_warmup(None, 2, 3) is None


def test_a_warm_up_the_detector_ended_near_the_cap_is_not_called_capped() -> None:
    # Cap 10 s at 0.25 s: the rule's 40 observations take the whole cap on fio's clock,
    # and the phase marks add fio's start and stop (~1.3 s on the local lab): 11.2 s of
    # marks for a warm-up the detector ended 'settled'. The observations kept beside the
    # trial say how it ended; the marks only guess when none were kept.
    trials = [
        {"point": 0, "trial": 1, "phases": {"warmup_start": 100.0, "steady_start": 111.2}},
        {"point": 0, "trial": 2, "phases": {"warmup_start": 200.0, "steady_start": 211.3}},
        {"point": 0, "trial": 3, "phases": {"warmup_start": 300.0, "steady_start": 311.4}},
    ]
    found = auto_warmups(trials, 10.0, settled={(0, 1): True, (0, 2): False})
    assert [a.capped for a in found] == [False, True, True]


def test_a_cap_too_short_for_the_detector_is_refused_at_warmup_cap(tmp_path: Path) -> None:
    # 40 observations at 0.25 s at the finest: under a 10 s cap the detector could never
    # end a warm-up, and every trial would say 'the cap: not settled'.
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(driver="fio", params="{rw: randread, size: 8m}")
                    .replace("warmup_cap: 40s", "warmup_cap: 8s"))
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(path))
    msg = str(exc.value)
    assert "s.yaml:8:" in msg and "phases.warmup_cap" in msg, msg
    assert "8 s is too short for warmup: auto: the detector ends a warm-up on 40 " \
           "observations at the earliest (10 s at the finest interval); give at least " \
           "10s, or a fixed warm-up" in msg
    path.write_text(path.read_text().replace("warmup_cap: 8s", "warmup_cap: 10s"))
    assert build_plan(load_scenario(path)).points[0].warmup == 10.0


def test_the_learned_overhead_of_an_automatic_warm_up_run_counts_the_warm_up_it_took() -> None:
    # A trial of cap 300 s whose detector ended its warm-up after 16 s: 16 + 3 s of
    # phases and 4 s of vbench's own work (prepare, collect, teardown). Against the cap
    # its overhead was -280 s, clamped to none: the plan's estimate forgot the 4 s.
    from vbench.engine.estimate import learned_from
    from vbench.results.store import RunRow, TrialRow

    run = RunRow("r", "s", "ok", 1000.0, 1100.0, (), {"phases": {
        "warmup": "auto", "warmup_cap": 300, "steady": 3, "cooldown": 0}}, {}, None, {},
        None, None, "1", 1, 2, 0)
    trials = [TrialRow(0, n, "ok", None, {
        "prepare_start": t, "warmup_start": t + 1.5, "steady_start": t + 17.5,
        "teardown_end": t + 23.0}, t, t + 23.0) for n, t in ((1, 1001.0), (2, 1030.0))]
    learned = learned_from([(run, trials)])
    assert learned is not None and learned.per_trial == pytest.approx(4.0)


def test_the_plan_shows_the_warm_up_fio_before_the_measured_one(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(driver="fio", params="{rw: randread, size: 8m}"))
    commands = build_plan(load_scenario(path)).points[0].commands
    steps = [c.step for c in commands]
    assert steps.index("warm-up") == steps.index("run") - 1, steps
    warm = commands[steps.index("warm-up")]
    # The cap of 40 s leaves room for 80 observations at 0.5 s.
    assert "--status-interval=500ms" in warm.argv and warm.files == ("warmup.fio",)
    assert warm.background


def test_the_runs_first_line_gives_an_adaptive_runs_time_as_a_range(tmp_path: Path) -> None:
    # 'running 1 point × 3–5 trials (estimated 1m52s)' (run 20261127-063657): the time
    # of the fewest trials only, where plan said 'estimated 1m52s–3m4s'.
    from vbench.cli.progress import _run_text
    from vbench.config.types import format_duration

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(driver="fio", params="{rw: randread, size: 8m}")
                    + "repeat: {min: 3, max: 5, target: {ci_half_width: 5%}}\n")
    plan = build_plan(load_scenario(path))
    lo, hi = (format_duration(s) for s in plan.seconds_span)
    assert lo != hi
    assert _run_text(plan) == f"running 1 point × 3–5 trials (estimated {lo}–{hi})"


def test_a_job_files_own_ramp_time_does_not_run_again_after_an_automatic_warm_up() -> None:
    # A job file with ramp_time=3 under warmup: auto: its measured fio ramped 3 s more
    # after the detector's warm-up (fio.json 'ramp_time': '3', local lab), so the trial's
    # steady window (collectors, marks) lay in fio's ramp. Both fios get ramp_time=0.
    from vbench.workloads.fio.jobs import adapt_user_job

    text = adapt_user_job("[j]\nrw=randread\nramp_time=3\n", 0.0, 5, "/w/d", no_ramp=True)
    ramps = [line for line in text.splitlines() if line.startswith("ramp_time=")]
    assert ramps[-1] == "ramp_time=0"  # fio takes a section's last value
    # A fixed warm-up of 0 s keeps what the file says (as documented).
    assert "ramp_time=0" not in adapt_user_job("[j]\nramp_time=3\n", 0.0, 5, "/w/d")
