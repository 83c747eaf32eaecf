"""The adaptive-repeat schedule (vbench/engine/adaptive.py) against a real store: the
minimum first (in the scenario's order), then trials only where the target is not met,
never more than max, a budget of trials honoured, and a resumed schedule counting the
trials already stored. Trial values are fed in as the engine would store them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.engine.adaptive import AdaptiveSchedule
from vbench.engine.plan import Plan, build_plan
from vbench.engine.schedule import make_schedule
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

SCENARIO = """version: 1
name: adaptive
topology:
  storage: {{count: 1}}
workload:
  driver: fio
  params: {{rw: randread, size: 8m, ioengine: psync, direct: false}}
factors:
  bs: [4k, 16k, 64k]
repeat: {{min: 3, max: 8, target: {{ci_half_width: 2%}}, metrics: [total_iops]}}
phases: {{steady: 1s}}
{extra}"""

# Point 0 repeats itself, point 1 swings ±20 % (never meets ±2 %), point 2 is noisy at
# first and settles (meets the target after two added trials, at 5).
VALUES: dict[int, Callable[[int], float]] = {
    0: lambda t: 1000.0,
    1: lambda t: 1000.0 * (1.2 if t % 2 else 0.8),
    2: lambda t: 1000.0 * (1.01 if t == 1 else 0.99 if t == 2 else 1.0),
}


def _plan(tmp_path: Path, extra: str = "") -> Plan:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(extra=extra))
    return build_plan(load_scenario(path))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path}/r.db", tmp_path) as s:
        yield s


def _start(store: Store, plan: Plan, run_id: str = "20270101-000000-adpt") -> str:
    store.create_run(RunInfo(run_id=run_id, scenario_name="adaptive", started=0.0,
                             scenario=plan.scenario.model_dump(mode="json"),
                             headline=("total_iops",)))
    store.add_points(run_id, [(p.index, p.labels) for p in plan.points])
    return run_id


def _run(schedule: AdaptiveSchedule, store: Store, run_id: str, stop_after: float = math.inf,
         seconds: float = 10.0) -> list[tuple[int, int]]:
    """Run the schedule as the engine does (next → store → finished); every trial takes
    ``seconds`` by its stored phase marks."""
    ran: list[tuple[int, int]] = []
    while len(ran) < stop_after and (step := schedule.next()) is not None:
        p, t = step.point.index, step.trial
        sample = Sample("total_iops", VALUES[p](t), "IO/s", "fio")
        start = 1000.0 * len(ran)
        phases = PhaseTimes(prepare_start=start, teardown_end=start + seconds)
        result = TrialResult(p, t, "ok", phases, (sample,), None)
        store.record_trial(run_id, result)
        schedule.finished(result)
        ran.append((p, t))
    return ran


def _counts(ran: list[tuple[int, int]]) -> dict[int, int]:
    return {p: sum(1 for q, _ in ran if q == p) for p in sorted({p for p, _ in ran})}


def _schedule(plan: Plan, store: Store, run_id: str, **kw: object) -> AdaptiveSchedule:
    return AdaptiveSchedule(plan, store, run_id, **kw)  # type: ignore[arg-type]


def test_trials_go_only_where_the_target_is_not_met_and_never_past_max(
    tmp_path: Path, store: Store
) -> None:
    plan = _plan(tmp_path)
    rid = _start(store, plan)
    ran = _run(_schedule(plan, store, rid), store, rid)
    assert ran[:9] == [(p, t) for p in range(3) for t in (1, 2, 3)]  # the minimum first
    counts = _counts(ran)
    assert counts == {0: 3, 1: 8, 2: 5}, counts
    # Trial numbers of a point follow on from its last one.
    assert sorted(t for p, t in ran if p == 1) == list(range(1, 9))


def test_the_point_nearest_its_target_gets_the_added_trials_first(
    tmp_path: Path, store: Store
) -> None:
    plan = _plan(tmp_path)
    rid = _start(store, plan)
    ran = _run(_schedule(plan, store, rid), store, rid)
    added = [p for p, _ in ran[9:]]
    # Point 2 can reach ±2 % by max, point 1 cannot: 2's trials come before 1's.
    assert added.index(2) < added.index(1)
    assert max(i for i, p in enumerate(added) if p == 2) < max(
        i for i, p in enumerate(added) if p == 1)


def test_a_trial_budget_caps_the_run_and_the_outlook(tmp_path: Path, store: Store) -> None:
    plan = _plan(tmp_path, "budget: {trials: 11}\n")
    assert plan.trials_span == (9, 11)
    rid = _start(store, plan)
    schedule = _schedule(plan, store, rid)
    first = schedule.next()
    # The first trial handed out: all 9 of the minimum still to run, at most 11 in all.
    assert first is not None and schedule.outlook().trials == (9, 11)
    schedule = _schedule(plan, store, rid)
    ran = _run(schedule, store, rid)
    assert len(ran) == 11 and schedule.budget_spent


def test_a_time_budget_stops_adding_trials_once_the_trials_took_it(
    tmp_path: Path, store: Store
) -> None:
    plan = _plan(tmp_path, "budget: {time: 2m}\n")  # 12 trials of 10 s
    rid = _start(store, plan)
    schedule = _schedule(plan, store, rid)
    ran = _run(schedule, store, rid, seconds=10.0)
    assert len(ran) == 12 and schedule.budget_spent
    assert _counts(ran)[0] == 3  # the met point got nothing; the minimum always runs


def test_random_order_shuffles_the_minimum_with_its_seed(tmp_path: Path, store: Store) -> None:
    plan = _plan(tmp_path, "settings: {order: random, seed: 7}\n")
    rid = _start(store, plan)
    schedule = make_schedule(plan, seed=None, search=_context(plan, store, rid))
    assert isinstance(schedule, AdaptiveSchedule)
    ran = _run(schedule, store, rid)
    first = ran[:9]
    assert sorted(first) == [(p, t) for p in range(3) for t in (1, 2, 3)] and first != sorted(first)
    doc = schedule.describe()
    assert doc["kind"] == "adaptive" and doc["seed"] == 7 and doc["max"] == 8


def test_a_resumed_schedule_counts_the_stored_trials(tmp_path: Path, store: Store) -> None:
    plan = _plan(tmp_path)
    rid = _start(store, plan)
    before = _run(_schedule(plan, store, rid), store, rid, stop_after=11)  # 2 added ones
    done = {(p, t) for p, t in before}
    rest = _run(_schedule(plan, store, rid, done=done), store, rid)
    assert rest and not done & set(rest)
    counts = _counts([*before, *rest])
    assert counts == {0: 3, 1: 8, 2: 5}, counts


def _context(plan: Plan, store: Store, rid: str):  # type: ignore[no-untyped-def]
    from vbench.config.load import Loaded
    from vbench.engine.schedule import SearchContext

    return SearchContext(Loaded(plan.scenario, None), None, store, rid)  # type: ignore[arg-type]


def test_under_a_time_budget_the_plans_trial_range_and_time_agree(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "budget: {time: 40s}\n")
    per_trial = plan.trials_seconds / plan.n_trials
    fewest, most = plan.trials_span
    # The trials that start before 40 s of trials are spent (the last may overrun).
    assert (fewest, most) == (9, max(9, math.ceil(40 / per_trial)))
    assert most < 24  # the budget, not max 8 × 3 points, bounds the range
    fixed = plan.setup_seconds + plan.finish_seconds
    assert plan.seconds_span[1] == pytest.approx(fixed + most * per_trial)


def test_a_trial_budget_below_the_minimum_is_warned(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "budget: {trials: 5}\n")
    (note,) = [f for f in plan.findings if f.path == "budget.trials"]
    assert note.level == "warning" and note.message.startswith(
        "budget.trials 5 is below the minimum's 9 trials (3 points × min 3)")
    assert not [f for f in _plan(tmp_path, "budget: {trials: 9}\n").findings
                if f.path == "budget.trials"]


def test_a_budget_without_an_adaptive_repeat_is_refused_at_the_budget(tmp_path: Path) -> None:
    from vbench.errors import ConfigValidationError

    path = tmp_path / "s.yaml"
    text = SCENARIO.format(extra="budget: {trials: 2}\n").replace(
        "repeat: {min: 3, max: 8, target: {ci_half_width: 2%}, metrics: [total_iops]}", "repeat: 4")
    path.write_text(text)
    with pytest.raises(ConfigValidationError) as exc:
        load_scenario(path)
    assert [str(i) for i in exc.value.issues] == [
        f"{path}:12:9: budget: a budget needs an adaptive repeat (repeat: {{min, max, "
        "target}); repeat: 4 runs a fixed count"]


def test_an_adaptive_minimum_below_3_is_refused(tmp_path: Path) -> None:
    from vbench.errors import ConfigValidationError

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(extra="").replace("min: 3", "min: 2"))
    with pytest.raises(ConfigValidationError) as exc:
        load_scenario(path)
    (issue,) = [str(i) for i in exc.value.issues]
    assert "repeat.min:" in issue and "3" in issue
