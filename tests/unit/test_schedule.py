"""Schedules: the matrix in sequence or shuffled with a recorded seed, resuming without
repeating what is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.engine.plan import Plan, build_plan
from vbench.engine.schedule import MatrixSchedule, Step, make_schedule

SCENARIO = """version: 1
name: sched
topology:
  storage:
    count: 1
workload:
  driver: fio
  params: {{rw: randread, size: 8m, ioengine: psync, direct: false}}
factors:
  bs: [4k, 16k, 64k]
repeat: 3
phases: {{steady: 1s}}
{extra}"""


def _plan(tmp_path: Path, extra: str = "") -> Plan:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(extra=extra))
    return build_plan(load_scenario(path))


def _drain(schedule: MatrixSchedule) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    while (step := schedule.next()) is not None:
        assert isinstance(step, Step)
        out.append((step.point.index, step.trial))
    return out


def test_sequential_order_is_point_after_point(tmp_path: Path) -> None:
    schedule = make_schedule(_plan(tmp_path))
    assert _drain(schedule) == [(p, t) for p in range(3) for t in (1, 2, 3)]  # type: ignore[arg-type]
    assert schedule.describe() == {"kind": "matrix", "order": "sequential"}


def test_random_order_is_a_reproducible_permutation(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "settings: {order: random, seed: 42}\n")
    first = make_schedule(plan)
    order = _drain(first)  # type: ignore[arg-type]
    assert sorted(order) == [(p, t) for p in range(3) for t in (1, 2, 3)]
    assert order != sorted(order)
    assert _drain(make_schedule(plan)) == order  # type: ignore[arg-type]
    doc = first.describe()
    assert doc["seed"] == 42 and doc["sequence"] == [list(x) for x in order]


def test_random_order_without_a_seed_draws_and_records_one(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "settings: {order: random}\n")
    schedule = make_schedule(plan)
    seed = schedule.describe()["seed"]
    assert isinstance(seed, int)
    replay = MatrixSchedule(plan.points, plan.repeat, order="random", seed=seed)
    assert _drain(replay) == _drain(schedule)  # type: ignore[arg-type]


def test_done_trials_are_not_repeated(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "settings: {order: random, seed: 3}\n")
    done = {(0, 1), (0, 2), (1, 3)}
    schedule = make_schedule(plan, done=done)
    left = _drain(schedule)  # type: ignore[arg-type]
    assert not done & set(left) and len(left) == 9 - 3
    assert schedule.describe()["already_done"] == 3


def test_unknown_order_is_rejected(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    with pytest.raises(ValueError, match="unknown order"):
        MatrixSchedule(plan.points, 1, order="zigzag")


def test_a_resumed_random_order_keeps_the_seed_it_drew(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "settings: {order: random}\n")
    first = make_schedule(plan)
    drawn = first.describe()
    done = set(map(tuple, drawn["sequence"][:4]))
    resumed = make_schedule(plan, done=done, seed=drawn["seed"])
    doc = resumed.describe()
    # The recorded order is the one the first session ran; the rest follows it.
    assert doc["seed"] == drawn["seed"] and doc["sequence"] == drawn["sequence"]
    assert _drain(resumed) == [tuple(x) for x in drawn["sequence"][4:]]  # type: ignore[arg-type]
    # A seed the scenario gives wins over a stored one.
    fixed = _plan(tmp_path, "settings: {order: random, seed: 42}\n")
    assert make_schedule(fixed, seed=7).describe()["seed"] == 42
