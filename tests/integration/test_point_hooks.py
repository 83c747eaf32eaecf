"""The engine's schedule seam with real fio on the local sshd guests: trials run in the
schedule's order and point hooks are entered and exited on every path."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import write_lab, write_scenario
from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import PlannedPoint, build_plan
from vbench.engine.runner import Engine, RunOutcome
from vbench.engine.schedule import make_schedule
from vbench.errors import LabError
from vbench.guest.labspec import guest_spec
from vbench.guest.ssh import GuestPool
from vbench.results.records import RunInfo
from vbench.results.rundir import RunDir, new_run_id
from vbench.results.store import Store

pytestmark = pytest.mark.integration


class Recorder:
    def __init__(self, fail_enter_at: int | None = None, on_enter=None) -> None:  # type: ignore[no-untyped-def]
        self.events: list[tuple[str, int, str | None]] = []
        self.fail_enter_at = fail_enter_at
        self.on_enter = on_enter

    def enter(self, point: PlannedPoint) -> None:
        self.events.append(("enter", point.index, None))
        if self.on_enter is not None:
            self.on_enter(point)
        if point.index == self.fail_enter_at:
            raise LabError("profile", "cannot switch")

    def exit(self, point: PlannedPoint, error: BaseException | None) -> None:
        self.events.append(("exit", point.index, type(error).__name__ if error else None))


def _engine(tmp: Path, guests: LocalGuests, extra: str, **kw) -> tuple[Engine, Store]:  # type: ignore[no-untyped-def]
    lab = load_lab(write_lab(tmp / "lab.yaml", guests))
    plan = build_plan(
        load_scenario(write_scenario(tmp / "s.yaml", groups=1, warmup="0s", extra=extra)), lab
    )
    pool = GuestPool([guest_spec(lab.model, n) for n in plan.node_names()])
    store = Store.open(None, tmp / "results")
    run_id = new_run_id()
    store.create_run(RunInfo(run_id=run_id, scenario_name=plan.scenario.name,
                             started=time.time()))
    store.add_points(run_id, [(p.index, p.labels) for p in plan.points])
    rundir = RunDir(tmp / "results", run_id)
    return Engine(plan, pool, store, rundir, run_id, schedule=make_schedule(plan), **kw), store


def _run(engine: Engine) -> RunOutcome:
    try:
        return engine.run()
    finally:
        engine.pool.close()


def test_random_order_runs_every_trial_and_hooks_follow_the_points(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    hook = Recorder()
    engine, store = _engine(tmp_path, local_guests, "settings: {order: random, seed: 5}\n",
                            point_hooks=[hook])
    order = engine.schedule.describe()["sequence"]
    outcome = _run(engine)
    assert outcome.status == "ok"
    assert [[r.point, r.trial] for r in outcome.results] == order
    assert len(store.trials(outcome.run_id)) == 4
    # Every change of point exits the old point before entering the new one.
    expected: list[tuple[str, int, str | None]] = []
    current = None
    for point, _trial in order:
        if point != current:
            if current is not None:
                expected.append(("exit", current, None))
            expected.append(("enter", point, None))
            current = point
    expected.append(("exit", current, None))  # type: ignore[arg-type]
    assert hook.events == expected


def test_ctrl_c_exits_the_current_point_with_the_interrupt(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    cancel = threading.Event()
    hook = Recorder(on_enter=lambda p: cancel.set() if p.index == 1 else None)
    engine, store = _engine(tmp_path, local_guests, "", point_hooks=[hook], cancel=cancel)
    outcome = _run(engine)
    assert outcome.status == "interrupted"
    assert [(r.point, r.status) for r in outcome.results][:2] == [(0, "ok"), (0, "ok")]
    assert hook.events[-1] == ("exit", 1, "Interrupted")
    assert [(t.point, t.status) for t in store.trials(outcome.run_id)][:2] == [(0, "ok")] * 2


def test_a_failing_enter_exits_entered_hooks_and_ends_the_run(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    first, second = Recorder(), Recorder(fail_enter_at=1)
    engine, store = _engine(tmp_path, local_guests, "", point_hooks=[first, second])
    with pytest.raises(LabError, match="cannot switch"):
        _run(engine)
    assert first.events[-2:] == [("enter", 1, None), ("exit", 1, "LabError")]
    # The failing hook was not entered, so it is not exited for point 1.
    assert second.events[-1] == ("enter", 1, None)
    assert [t.point for t in store.trials(engine.run_id)] == [0, 0]


def test_cleanup_of_a_hook_whose_undo_fails_says_one_line(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    from vbench.engine.hooks import HookJournal, undo_pending

    lab = load_lab(write_lab(tmp_path / "lab.yaml", local_guests,
                             {"wan": {"address": local_guests[0].address}}))
    undo = ["sh", "-c", "echo starting >&2; echo 'no such qdisc' >&2; exit 2"]
    HookJournal(tmp_path).append({"id": "p0-latency-1", "point": 0, "factor": "latency",
                                  "level": "5ms", "node": "wan", "run": ["true"],
                                  "undo": undo, "timeout": 30, "state": "applied"})
    done, errors = undo_pending(lab.model, tmp_path)
    assert done == []
    [line] = errors
    assert "\n" not in line and line.startswith("hook latency=5ms on node wan: ")
    assert line.endswith("exited 2: no such qdisc")
    assert HookJournal(tmp_path).pending()[0]["state"] == "undo_failed"


def test_an_attempt_run_again_is_set_aside_not_read_as_the_kept_one(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    """A trial check asking for the trial again (a disturbed trial under `disturbance:
    retry`): the kept attempt's raw files are the only ones in raw/0-1/; the first
    attempt's are under attempts/0-1.1/ (a file only it wrote — the esxtop capture of a
    host its VM left, here a marker — was read as the kept attempt's before)."""
    from vbench.results.records import TrialResult

    seen: list[int] = []

    def check(point: PlannedPoint, result: TrialResult) -> TrialResult | None:
        seen.append(result.trial)
        if len(seen) > 1:
            return result
        (engine.rundir.raw_dir(point.index, result.trial) / "first-only.txt").write_text("x")
        return None

    engine, store = _engine(tmp_path, local_guests, "", trial_check=check)
    outcome = _run(engine)
    assert outcome.status == "ok" and seen[:2] == [1, 1]
    run_dir = engine.rundir.path
    kept = run_dir / "raw" / "0-1"
    assert not (kept / "first-only.txt").exists()
    assert (run_dir / "attempts" / "0-1.1" / "raw" / "first-only.txt").is_file()
    # Both attempts measured with fio: each has its own files.
    assert sorted(p.name for p in kept.rglob("*.json")) == sorted(
        p.name for p in (run_dir / "attempts" / "0-1.1" / "raw").rglob("*.json"))
    # Only the kept attempt is stored: one row per trial of the 2 x 2 plan.
    assert sorted((t.point, t.trial) for t in store.trials(outcome.run_id)) == [
        (0, 1), (0, 2), (1, 1), (1, 2)]
    retry = [json.loads(x) for x in (run_dir / "log.jsonl").read_text().splitlines()
             if '"trial_retry"' in x]
    assert retry[0]["set_aside"] == "attempts/0-1.1"
