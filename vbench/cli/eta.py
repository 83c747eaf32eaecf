"""The one estimate of a run's time left that `vbench run` shows, live or in plain lines.

It is made when the first trial starts (the run's set-up is over by then) and learns
from the run itself: the trials not yet finished are estimated as the plan does, scaled
by how long the finished trials took against their own estimate (so a plan 1.7× too
optimistic is corrected after the first trial), minus the time the current trial has
already run, plus the clean-up after the last trial (learned from stored runs, not
scaled: it does not follow the trials' pace).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from vbench.engine.plan import Plan, PlannedPoint


class Eta:
    def __init__(self, plan: Plan, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._overhead = plan.overhead_per_trial
        self._total = plan.trials_seconds  # planned seconds of every trial
        self._finish = plan.finish_seconds  # clean-up after the last trial
        self._planned_done = 0.0  # planned seconds of the trials that finished
        self._spent_done = 0.0  # their wall time
        self._current: tuple[float, float] | None = None  # (started, planned seconds)

    def _planned(self, point: PlannedPoint) -> float:
        return point.trial_seconds + self._overhead

    def start_trial(self, point: PlannedPoint) -> None:
        self._current = (self._clock(), self._planned(point))

    def end_trial(self) -> None:
        if self._current is None:
            return
        started, planned = self._current
        self._planned_done += planned
        self._spent_done += self._clock() - started
        self._current = None

    @property
    def pace(self) -> float:
        """Wall time of the finished trials over their planned time (1 before any)."""
        return self._spent_done / self._planned_done if self._planned_done > 0 else 1.0

    def left(self) -> float:
        """Seconds the run still needs, by this estimate (never below 0)."""
        running = self._clock() - self._current[0] if self._current is not None else 0.0
        trials = max(0.0, (self._total - self._planned_done) * self.pace - running)
        return trials + self._finish
