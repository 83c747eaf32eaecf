"""The one estimate of a run's time left that `vbench run` shows, live or in plain lines.

It is made when the first trial starts (the run's set-up is over by then) and learns
from the run itself: the trials not yet finished are estimated as the plan does, scaled
by how long the finished trials took against their own estimate (so a plan 1.7× too
optimistic is corrected after the first trial), minus the time the current trial has
already run, plus the clean-up after the last trial (learned from stored runs, not
scaled: it does not follow the trials' pace).

A find-max search chooses its levels as it runs, so the plan does not know how many
trials are left: before each trial the search says how many it may still run (fewest,
most: :meth:`vbench.analysis.findmax.FindMax.outlook`), and those trials are estimated
as the current one, at the run's pace, giving a range.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from vbench.engine.plan import Plan, PlannedPoint


class Eta:
    def __init__(self, plan: Plan, clock: Callable[[], float] = time.monotonic, *,
                 skipped: int = 0) -> None:
        """``skipped``: trials of the plan a resumed run kept and does not run again."""
        self._clock = clock
        self._overhead = plan.overhead_per_trial
        # Planned seconds of every trial to run (the kept ones at the mean trial's time).
        per_trial = plan.trials_seconds / plan.n_trials if plan.n_trials else 0.0
        self._total = max(0.0, plan.trials_seconds - skipped * per_trial)
        self._finish = plan.finish_seconds  # clean-up after the last trial
        self._planned_done = 0.0  # planned seconds of the trials that finished
        self._spent_done = 0.0  # their wall time
        self._current: tuple[float, float] | None = None  # (started, planned seconds)
        self._search: tuple[int, int] | None = None  # a search: trials left, this one in
        self._search_trial = 0.0  # a search: planned seconds of each of its trials

    def _planned(self, point: PlannedPoint) -> float:
        return point.trial_seconds + self._overhead

    def start_trial(self, point: PlannedPoint, trials_left: tuple[int, int] | None = None
                    ) -> None:
        """A trial starts; a search says how many trials it may still run, this one
        included (fewest, most)."""
        self._current = (self._clock(), self._planned(point))
        self._search = trials_left
        self._search_trial = self._planned(point)

    def end_trial(self) -> None:
        if self._current is None:
            return
        started, planned = self._current
        self._planned_done += planned
        self._spent_done += self._clock() - started
        self._current = None
        if self._search is not None:  # until the search says more: one trial fewer
            self._search = (max(0, self._search[0] - 1), max(0, self._search[1] - 1))

    @property
    def pace(self) -> float:
        """Wall time of the finished trials over their planned time (1 before any)."""
        return self._spent_done / self._planned_done if self._planned_done > 0 else 1.0

    def left(self) -> float:
        """Seconds the run still needs, by this estimate (never below 0); a search: at
        most."""
        return self.left_range()[1]

    def left_range(self) -> tuple[float, float]:
        """Seconds the run still needs (fewest, most): the same twice but for a search."""
        running = self._clock() - self._current[0] if self._current is not None else 0.0
        if self._search is None:
            planned = (self._total - self._planned_done, self._total - self._planned_done)
        else:  # every trial the search may run takes what its last one was planned to
            planned = (self._search[0] * self._search_trial,
                       self._search[1] * self._search_trial)
        lo, hi = (max(0.0, s * self.pace - running) + self._finish for s in planned)
        return lo, hi
