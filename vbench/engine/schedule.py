"""Schedules: which point and which trial the engine runs next.

``Engine.run`` asks its schedule for the next :class:`Step` (a planned point and a
trial number), runs that trial, stores it, and feeds the finished
:class:`~vbench.results.records.TrialResult` back with :meth:`Schedule.finished`
before asking again. ``None`` ends the run. Two schedules exist:

- :class:`MatrixSchedule` — every point × ``repeat`` trials. ``settings.order:
  sequential`` (the default) runs them point after point, trials 1..N; ``random``
  shuffles every (point, trial) pair with ``settings.seed`` (drawn at random when not
  given) so that drift in the lab is not confounded with a factor. The seed and the
  resulting order are recorded under ``schedule`` in the run's ``plan.json``, so the
  order can be reproduced with ``settings.seed``.
- a search schedule (``vbench.engine.search``) chooses its next level from the
  results fed back; its points are created while it runs (the engine records each new
  point in the store before its first trial).

A schedule may be told which (point, trial) pairs are already complete (``done``), so
that a resumed run does not repeat them.

Point hooks (for per-point lab changes)
---------------------------------------
``Engine(..., point_hooks=[...])`` takes objects with two methods::

    def enter(self, point: PlannedPoint) -> None: ...
    def exit(self, point: PlannedPoint, error: BaseException | None) -> None: ...

``enter`` is called before the first trial of a point whenever the schedule moves to a
different point (with a random order that can be before every trial); ``exit`` is
called for the point being left, before the next point's ``enter``, and once at the
end of the run on every exit path (normal end, ``fail_fast``, Ctrl-C/SIGTERM, an
exception), with the exception that ends the run or ``None``. Hooks are entered in
list order and exited in reverse order. When an ``enter`` raises, the hooks already
entered for that point are exited with that error and the run ends with it (the CLI
maps a :class:`~vbench.errors.LabError` to exit 3). An exception raised by ``exit``
is logged and does not hide the run's own outcome, except at the end of a run that
had no error of its own, where it is raised.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from vbench.config.lab import Lab
from vbench.config.load import Loaded
from vbench.config.scenario import Scenario
from vbench.engine.plan import Plan, PlannedPoint
from vbench.results.records import TrialResult
from vbench.results.store import Store

if TYPE_CHECKING:
    from vbench.analysis.findmax import Outlook
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs


@dataclass(frozen=True)
class Step:
    """One trial to run: the point and the trial number within that point (1-based)."""

    point: PlannedPoint
    trial: int


class PointHook(Protocol):
    """Called when the schedule enters and leaves a point (see the module docstring)."""

    def enter(self, point: PlannedPoint) -> None: ...

    def exit(self, point: PlannedPoint, error: BaseException | None) -> None: ...


class Schedule(ABC):
    """Decides the next trial; sees every finished trial."""

    @abstractmethod
    def next(self) -> Step | None:
        """The next trial to run, or None when the schedule is complete."""

    def finished(self, result: TrialResult) -> None:  # noqa: B027 - optional to override
        """A trial of a step this schedule returned has finished (any status)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What to record in plan.json so the schedule can be understood and reproduced."""

    def outlook(self) -> Outlook | None:
        """What a schedule that decides as it runs may still run, from the trial it just
        handed out (included); None: the plan's points × repeat say it."""
        return None

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """The study's answer as this schedule reads a stored run (a search: its bracket);
        none by default (then the driver's, else the headline at the best point). A
        classmethod: a stored run is answered without running anything
        (vbench/analysis/verdict_build.py)."""
        return ()


@dataclass(frozen=True)
class SearchContext:
    """What a search schedule reads besides the plan: levels are planned from the loaded
    scenario and lab, and decided from the run's stored figures."""

    scenario: Loaded[Scenario]
    lab: Loaded[Lab] | None
    store: Store
    run_id: str
    resume: bool = False


class MatrixSchedule(Schedule):
    """Every point × ``repeat`` trials, sequential or shuffled with a recorded seed."""

    def __init__(
        self,
        points: Sequence[PlannedPoint],
        repeat: int,
        *,
        order: str = "sequential",
        seed: int | None = None,
        done: Iterable[tuple[int, int]] = (),
    ) -> None:
        if order not in ("sequential", "random"):
            raise ValueError(f"unknown order {order!r} (sequential or random)")
        self.order = order
        self.seed = seed if seed is not None or order == "sequential" else new_seed()
        steps = [Step(p, t) for p in points for t in range(1, repeat + 1)]
        if order == "random":
            random.Random(self.seed).shuffle(steps)
        self._all = steps
        skip = set(done)
        self._todo = [s for s in steps if (s.point.index, s.trial) not in skip]
        self._skipped = len(steps) - len(self._todo)
        self._pos = 0

    def next(self) -> Step | None:
        if self._pos >= len(self._todo):
            return None
        step = self._todo[self._pos]
        self._pos += 1
        return step

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """A scaling study (a factor sets a topology group's count, or a declared speedup
        with its ideal): speedup and efficiency against the ideal; else none."""
        from vbench.analysis.scaling_answer import scaling_answers

        return scaling_answers(inputs)

    def describe(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": "matrix", "order": self.order}
        if self.order == "random":
            doc["seed"] = self.seed
            doc["sequence"] = [[s.point.index, s.trial] for s in self._all]
        if self._skipped:
            doc["already_done"] = self._skipped
        return doc


def schedule_class(scenario: Mapping[str, Any]) -> type[Schedule]:
    """The schedule a (stored) scenario ran with: its find-max search, else the matrix."""
    if scenario.get("search"):
        from vbench.engine.search import SearchSchedule

        return SearchSchedule
    if scenario.get("steady_state"):
        from vbench.engine.steady import SteadyStateSchedule

        return SteadyStateSchedule
    return MatrixSchedule


def make_schedule(
    plan: Plan,
    done: Iterable[tuple[int, int]] = (),
    *,
    seed: int | None = None,
    search: SearchContext | None = None,
) -> Schedule:
    """The schedule the scenario asks for: its find-max ``search`` (which needs the
    loaded scenario, lab, store and run: ``search``), else every point × repeat in
    ``settings.order``. ``done``: (point, trial) pairs a resumed matrix run skips;
    ``seed``: the seed a resumed random order drew before (``settings.seed`` wins)."""
    if plan.scenario.steady_state is not None and search is not None:
        # steady_state: rounds of every point until the SNIA PTS rule holds.
        from vbench.engine.steady import SteadyStateSchedule

        return SteadyStateSchedule(plan, search.store, search.run_id, done=done)
    if plan.scenario.search is not None:
        if search is None:
            raise ValueError("a find-max scenario needs its store and run to schedule")
        from vbench.engine.search import SearchSchedule

        return SearchSchedule(plan, search.scenario, search.lab, search.store, search.run_id,
                              resume=search.resume)
    settings = plan.scenario.settings
    if plan.repeat_max is not None and search is not None:
        # repeat: {min, max, target}: trials added where the target is not met yet.
        from vbench.engine.adaptive import AdaptiveSchedule

        return AdaptiveSchedule(
            plan, search.store, search.run_id, order=settings.order,
            seed=settings.seed if settings.seed is not None else seed, done=done,
        )
    return MatrixSchedule(
        plan.points, plan.repeat, order=settings.order,
        seed=settings.seed if settings.seed is not None else seed, done=done,
    )


def new_seed() -> int:
    """A fresh seed for a random order (recorded, so the order can be replayed)."""
    return random.SystemRandom().randrange(1, 2**31)


def prepare_resume(store: Store, run_id: str, scenario_doc: dict[str, Any]) -> set[tuple[int, int]]:
    """The (point, trial) pairs of a stored run that a resumed run does not repeat (every
    trial that finished, ok or failed; an interrupted one runs again). Refuses a run whose
    stored scenario differs from ``scenario_doc``: its points would not mean the same."""
    import json

    from vbench.errors import ConfigError

    run = store.get_run(run_id)
    stored = json.loads(json.dumps(run.scenario or {}, sort_keys=True, default=str))
    given = json.loads(json.dumps(scenario_doc, sort_keys=True, default=str))
    if stored != given:
        differ = sorted(k for k in {*stored, *given} if stored.get(k) != given.get(k))
        raise ConfigError(
            f"run {run.run_id} was made with another scenario (differs in: "
            f"{', '.join(differ)}); resume it with the scenario it was started with"
        )
    return {(t.point, t.trial) for t in store.trials(run.run_id) if t.status != "interrupted"}
