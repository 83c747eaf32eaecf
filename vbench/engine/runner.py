"""Execute a plan: for every point and trial, prepare → warm-up → steady → cool-down →
collect → teardown, with phase timestamps, cancellation and guaranteed cleanup."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vbench.collectors.runtime import CollectorFailed, CollectorRuntime, TrialCollectors
from vbench.engine.plan import Plan, PlannedPoint
from vbench.engine.schedule import PointHook, Schedule, make_schedule
from vbench.errors import (
    EXIT_INTERRUPTED,
    EXIT_LAB,
    EXIT_OK,
    Interrupted,
    VbenchError,
)
from vbench.guest.fanout import on_each
from vbench.guest.ssh import GuestPool
from vbench.results.records import PhaseTimes, Sample, TrialResult
from vbench.results.rundir import RunDir
from vbench.results.store import Store
from vbench.vsphere.resources import VSphereResources
from vbench.workloads.base import TrialContext

if TYPE_CHECKING:
    from vbench.analysis.findmax import Outlook

_PHASE_ORDER = ("prepare", "warmup", "steady", "cooldown", "collect", "teardown")


class ProgressSink:
    """What the engine reports while it runs (the CLI draws it; tests may record it)."""

    def start_run(self, plan: Plan) -> None: ...
    def start_trial(self, point: PlannedPoint, trial: int) -> None: ...
    def phase(self, name: str, seconds: float | None) -> None: ...
    def end_trial(self, result: TrialResult) -> None: ...
    def end_run(self) -> None: ...
    def outlook(self, outlook: Outlook) -> None:
        """Before a trial of a schedule that decides as it runs (a find-max search): the
        levels and trials it may still run, that trial included."""

    def notice(self, message: str) -> None:
        """A line about the run's set-up or clean-up (provisioning, warnings)."""


@dataclass
class RunOutcome:
    run_id: str
    status: str  # ok | failed | interrupted
    results: list[TrialResult] = field(default_factory=list)
    exit_code: int = EXIT_OK

    @property
    def failed(self) -> list[TrialResult]:
        return [r for r in self.results if r.status != "ok"]


class Engine:
    def __init__(
        self,
        plan: Plan,
        pool: GuestPool,
        store: Store,
        rundir: RunDir,
        run_id: str,
        *,
        fail_fast: bool = False,
        progress: ProgressSink | None = None,
        cancel: threading.Event | None = None,
        collectors: CollectorRuntime | None = None,
        schedule: Schedule | None = None,
        point_hooks: Sequence[PointHook] = (),
        resources: Callable[[PlannedPoint], VSphereResources | None] | None = None,
        trial_check: Callable[[PlannedPoint, TrialResult], TrialResult | None] | None = None,
    ) -> None:
        self.plan, self.pool, self.store, self.rundir = plan, pool, store, rundir
        self.collectors = collectors
        # The vCenter resources of a point (its profile's vCenter): engine/vsphere_run.py.
        self.resources = resources
        # Which point and trial run next (vbench/engine/schedule.py); default: the matrix.
        self.schedule = schedule or make_schedule(plan)
        self.point_hooks = tuple(point_hooks)
        # After each trial: the trial as kept, or None to run it again (engine/hygiene.py).
        self.trial_check = trial_check
        self.run_id = run_id
        self.fail_fast = fail_fast
        self.progress = progress or ProgressSink()
        self.cancel = cancel or threading.Event()

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> RunOutcome:
        outcome = RunOutcome(self.run_id, "ok")
        self.progress.start_run(self.plan)
        stored = {p.index for p in self.plan.points}  # points the session recorded
        hooks = _PointHooks(self.point_hooks, self.rundir)
        error: BaseException | None = None
        try:
            while not self.cancel.is_set():
                step = self.schedule.next()
                if step is None:
                    break
                outlook = self.schedule.outlook()
                if outlook is not None:
                    self.progress.outlook(outlook)
                point, trial = step.point, step.trial
                if point.index not in stored:  # a point a search schedule just created
                    self.store.add_points(self.run_id, [(point.index, point.labels)])
                    stored.add(point.index)
                try:
                    hooks.move_to(point)
                except Interrupted:
                    if not self.cancel.is_set():
                        raise
                    break  # Ctrl-C while a point's VMs were made: an interrupted run
                result = self._checked(point, trial, self._trial(point, trial))
                outcome.results.append(result)
                self.store.record_trial(self.run_id, result)
                self.progress.end_trial(result)
                self.schedule.finished(result)
                if result.status != "ok" and self.fail_fast:
                    if result.status == "failed":
                        self.rundir.log("fail_fast", level="error", point=point.index,
                                        trial=trial)
                    break
        except BaseException as exc:
            error = exc
            raise
        finally:
            if error is None and self.cancel.is_set():
                error = Interrupted("interrupted by the user")
            try:
                hooks.leave(error)
            finally:
                self._cleanup_guests()
                self.progress.end_run()
        if self.cancel.is_set():
            outcome.status, outcome.exit_code = "interrupted", EXIT_INTERRUPTED
        elif outcome.failed:
            outcome.status, outcome.exit_code = "failed", EXIT_LAB
        return outcome

    def _checked(self, point: PlannedPoint, trial: int, result: TrialResult) -> TrialResult:
        """The trial as the trial check keeps it, run again while it asks (a disturbed
        trial under `disturbance: retry`); only the kept attempt is stored, and the files
        of the others are set aside (``attempts/``), not read as the kept one's."""
        attempt = 0
        while self.trial_check is not None and not self.cancel.is_set():
            kept = self.trial_check(point, result)
            if kept is not None:
                return kept
            attempt += 1
            aside = self.rundir.set_aside(point.index, trial, attempt)
            self.rundir.log("trial_retry", point=point.index, trial=trial,
                            set_aside=str(aside.relative_to(self.rundir.path)))
            result = self._trial(point, trial)
        return result

    # -- one trial -------------------------------------------------------------------------
    def _trial(self, point: PlannedPoint, trial: int) -> TrialResult:
        marks: dict[str, float] = {}
        trial_cancel = threading.Event()
        timed_out = threading.Event()
        watchdog = self._watchdog(point, trial_cancel, timed_out)
        ctx = self._context(point, trial, marks, trial_cancel)
        self.progress.start_trial(point, trial)
        self.rundir.log("trial_start", point=point.index, trial=trial, labels=point.labels)
        samples: list[Sample] = []
        error: str | None = None
        status = "ok"
        # Collectors start before warm-up and stop after cool-down (vbench/collectors).
        coll = self.collectors.trial(ctx, point) if self.collectors else None
        coll_samples: list[Sample] = []
        try:
            samples = self._measure(point, ctx, marks, (trial_cancel, timed_out), coll,
                                    coll_samples)
        except _Cancelled as exc:
            status = "interrupted" if self.cancel.is_set() else "failed"
            error = str(exc)
        except VbenchError as exc:
            status, error = "failed", str(exc)
            if self.cancel.is_set():
                # The driver saw its processes killed because the user interrupted.
                status, error = "interrupted", f"interrupted by the user ({exc})"
        except Exception as exc:  # a driver bug must not lose the run
            status, error = "failed", f"internal error: {type(exc).__name__}: {exc}"
            self.rundir.log("trial_traceback", level="error", traceback=traceback.format_exc())
        finally:
            watchdog.cancel()
            if status != "ok":
                self._waiting_for(f"keeping what trial {trial} measured", ctx)
                samples = self._salvage(point, ctx)
            if coll is not None and not coll.stopped:
                # Keep what the collectors measured before the trial failed.
                coll_samples.extend(coll.stop(_phase_times(marks)))
            self.progress.phase("teardown", None)
            self._waiting_for("tearing the trial down", ctx)
            error = self._teardown(point, ctx, error)
            marks["teardown_end"] = time.time()
        if error and status == "ok":
            status = "failed"
        return self._result(point, trial, status, marks, [*samples, *coll_samples], error)

    def _measure(
        self,
        point: PlannedPoint,
        ctx: TrialContext,
        marks: dict[str, float],
        events: tuple[threading.Event, threading.Event],
        coll: TrialCollectors | None,
        coll_samples: list[Sample],
    ) -> list[Sample]:
        """Prepare, the measured phases, cool-down and collect: the workload's samples.
        The collectors' go to ``coll_samples`` as soon as they stop, so a trial that
        fails after that keeps them. ``events``: the trial's cancel and timed-out."""
        trial_cancel, timed_out = events
        self._phase(marks, "prepare", "prepare_start", None)
        point.workload.prepare(ctx)
        self._raise_if_cancelled(trial_cancel, timed_out)
        if coll is not None:
            coll.start()
            self._collectors_ok(coll)
        point.workload.run(ctx)
        self._raise_if_cancelled(trial_cancel, timed_out)
        marks.setdefault("steady_end", time.time())
        self._phase(marks, "cooldown", None, point.cooldown)
        if trial_cancel.wait(point.cooldown):
            self._raise_if_cancelled(trial_cancel, timed_out)
        marks["cooldown_end"] = time.time()
        self.progress.phase("collect", None)
        if coll is not None:
            coll_samples.extend(coll.stop(_phase_times(marks)))
            self._collectors_ok(coll)
        samples = point.workload.collect(ctx)
        if coll is not None:
            coll_samples.extend(coll.derived(samples, point.workload.headline_metrics))
        return samples

    def _result(
        self,
        point: PlannedPoint,
        trial: int,
        status: str,
        marks: dict[str, float],
        samples: list[Sample],
        error: str | None,
    ) -> TrialResult:
        """The trial's result, logged (trial_end)."""
        result = TrialResult(
            point=point.index,
            trial=trial,
            status=status,
            phases=_phase_times(marks),
            samples=tuple(samples),
            error=error,
        )
        self.rundir.log(
            "trial_end",
            level="info" if status == "ok" else "error",
            point=point.index,
            trial=trial,
            status=status,
            error=error,
            samples=len(samples),
            phases=result.phases.as_dict(),
        )
        return result

    def _collectors_ok(self, coll: TrialCollectors) -> None:
        """Show collector failures; a required collector's failure fails the trial."""
        for message in coll.failures():
            if message not in coll.shown:
                coll.shown.add(message)
                self.progress.notice(f"collector failed: {message}")
        if coll.required_failure:
            raise CollectorFailed("collectors", coll.required_failure)

    def _context(
        self, point: PlannedPoint, trial: int, marks: dict[str, float], cancel: threading.Event
    ) -> TrialContext:
        guests = {role: [self.pool.get(n) for n in names] for role, names in point.guests.items()}
        groups: dict[str, list[str]] = {}
        for role, names in point.guests.items():
            groups.setdefault(point.roles.get(role, role), []).extend(names)

        def mark(name: str) -> None:
            key = name if name.endswith(("_start", "_end")) else f"{name}_start"
            marks[key] = time.time()
            # In the run log too: whoever watches a run (tests, tail -f) sees the phase begin.
            self.rundir.log("phase_mark", mark=key, point=point.index, trial=trial)
            phase = {"warmup_start": "warmup", "steady_start": "steady"}.get(key)
            if phase:
                self.progress.phase(phase, point.warmup if phase == "warmup" else point.steady)

        def workload_window(start: float, end: float) -> None:
            marks["workload_start"], marks["workload_end"] = start, end
            wall = marks.get("steady_end", time.time()) - marks.get("steady_start", start)
            self.rundir.log("workload_window", point=point.index, trial=trial,
                            seconds=round(end - start, 6), wall_seconds=round(wall, 6))

        return TrialContext(
            run_id=self.run_id,
            point=point.index,
            trial=trial,
            labels=point.labels,
            warmup=point.warmup,
            steady=point.steady,
            cooldown=point.cooldown,
            guests=guests,
            raw_dir=self.rundir.raw_dir(point.index, trial),
            cancel=cancel,
            mark=mark,
            log=self.rundir.log,
            max_parallel=self.plan.scenario.settings.max_parallel,
            groups=groups,
            vsphere=self.resources(point) if self.resources is not None else None,
            workload_window=workload_window,
            auto_warmup=point.auto_warmup,
        )

    def _watchdog(
        self, point: PlannedPoint, trial_cancel: threading.Event, timed_out: threading.Event
    ) -> _Watchdog:
        limit = self.plan.scenario.settings.trial_timeout
        expected = point.trial_seconds
        budget = expected + (limit if limit is not None else max(120.0, expected))
        return _Watchdog(budget, self.cancel, trial_cancel, timed_out)

    def _phase(
        self, marks: dict[str, float], name: str, key: str | None, secs: float | None
    ) -> None:
        if key:
            marks[key] = time.time()
        self.progress.phase(name, secs)

    @staticmethod
    def _raise_if_cancelled(cancel: threading.Event, timed_out: threading.Event) -> None:
        if timed_out.is_set():
            raise _Cancelled("trial timed out (settings.trial_timeout); remote processes killed")
        if cancel.is_set():
            raise _Cancelled("interrupted by the user")

    def _salvage(self, point: PlannedPoint, ctx: TrialContext) -> list[Sample]:
        """Keep whatever a failed trial measured (raw files, partial figures)."""
        try:
            return point.workload.collect(ctx)
        except Exception as exc:  # partial output is expected to be unparseable at times
            self.rundir.log(
                "salvage_failed",
                level="warning",
                point=point.index,
                trial=ctx.trial,
                error=str(exc),
            )
            return []

    def _waiting_for(self, what: str, ctx: TrialContext) -> None:
        """After Ctrl-C, say what the run still waits for, and on which guests."""
        if self.cancel.is_set():
            names = ", ".join(g.name for g in ctx.all_guests()) or "no guest"
            self.progress.notice(f"interrupted: {what} on {names}")

    def _teardown(self, point: PlannedPoint, ctx: TrialContext, error: str | None) -> str | None:
        try:
            point.workload.teardown(ctx)
        except Exception as exc:
            self.rundir.log("teardown_failed", level="error", error=str(exc))
            error = error or f"teardown failed: {exc}"
        # Every guest at once: each kill may take its TERM grace.
        for guest, exc in on_each(ctx.all_guests(), lambda g: g.kill_all()):
            if not isinstance(exc, VbenchError):
                raise exc
            self.rundir.log("kill_failed", level="error", guest=guest.name, error=str(exc))
        return error

    def _cleanup_guests(self) -> None:
        """Remove the run's scratch directory from every guest (best effort, logged)."""

        def clean(guest: Any) -> None:
            guest.kill_all()
            guest.remove(f"{guest.spec.workdir.rstrip('/')}/{self.run_id}")

        # Guests of VMs destroyed between points (or never needed) are no longer there.
        names = [n for n in self.plan.node_names() if n in self.pool.names]
        if self.cancel.is_set() and names:
            self.progress.notice("interrupted: removing the run's scratch directories on "
                                 + ", ".join(names))
        for name, exc in on_each(names, lambda n: clean(self.pool.get(n))):
            if not isinstance(exc, VbenchError):
                raise exc
            self.rundir.log("cleanup_failed", level="error", guest=name, error=str(exc))


class _Cancelled(Exception):
    pass


class _PointHooks:
    """Enters and exits the point hooks as the schedule moves between points."""

    def __init__(self, hooks: Sequence[PointHook], rundir: RunDir) -> None:
        self.hooks, self.rundir = hooks, rundir
        self.current: PlannedPoint | None = None
        self.entered: list[PointHook] = []

    def move_to(self, point: PlannedPoint) -> None:
        if self.current is not None and self.current.index == point.index:
            return
        self.leave(None)
        self.current = point
        for hook in self.hooks:
            try:
                hook.enter(point)
            except BaseException as exc:
                self.leave(exc)
                raise
            self.entered.append(hook)

    def leave(self, error: BaseException | None) -> None:
        """Exit the hooks of the current point (reverse order). An exit's own error is
        raised only when nothing else is already ending the run."""
        point, hooks = self.current, self.entered
        self.current, self.entered = None, []
        if point is None:
            return
        first: BaseException | None = None
        for hook in reversed(hooks):
            try:
                hook.exit(point, error)
            except Exception as exc:
                self.rundir.log("point_exit_failed", level="error", point=point.index,
                                error=str(exc))
                first = first or exc
        if first is not None and error is None:
            raise first


class _Watchdog:
    """Sets the trial's cancel event on a user interrupt or when the time budget is spent."""

    def __init__(
        self,
        budget: float,
        run_cancel: threading.Event,
        trial_cancel: threading.Event,
        timed_out: threading.Event,
    ) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(budget, run_cancel, trial_cancel, timed_out), daemon=True
        )
        self._thread.start()

    def _watch(
        self,
        budget: float,
        run_cancel: threading.Event,
        trial_cancel: threading.Event,
        timed_out: threading.Event,
    ) -> None:
        deadline = time.monotonic() + budget
        while not self._stop.wait(0.1):
            if run_cancel.is_set():
                trial_cancel.set()
                return
            if time.monotonic() > deadline:
                timed_out.set()
                trial_cancel.set()
                return

    def cancel(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


def _phase_times(marks: dict[str, float]) -> PhaseTimes:
    return PhaseTimes(
        prepare_start=marks.get("prepare_start"),
        warmup_start=marks.get("warmup_start"),
        steady_start=marks.get("steady_start"),
        steady_end=marks.get("steady_end"),
        cooldown_end=marks.get("cooldown_end"),
        teardown_end=marks.get("teardown_end"),
        workload_start=marks.get("workload_start"),
        workload_end=marks.get("workload_end"),
    )


Callback = Callable[[str], None]
