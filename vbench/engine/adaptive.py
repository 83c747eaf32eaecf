"""The adaptive-repeat schedule: ``repeat: {min, max, target}`` and ``budget:``.

First every point's ``min`` trials, in the scenario's order (sequential, or shuffled
with the recorded seed: the matrix schedule runs them). Then, one trial at a time, the
point where one more trial buys the most (vbench/analysis/adaptive.py ``gain``: the
point nearest its confidence target first, a point that cannot reach it by ``max``
last), until no point wants more, or the ``budget`` (trials in the run, or the time
its trials took) is spent. The decision reads the run's stored figures after every
trial, so a resumed run counts the trials it already has and goes on from there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vbench.analysis.adaptive import gain, rule_of, target_metrics
from vbench.analysis.findmax import Outlook
from vbench.analysis.run_analysis import load_analysis
from vbench.config.repeat import Budget
from vbench.engine.plan import Plan, PlannedPoint
from vbench.engine.schedule import MatrixSchedule, Schedule, Step
from vbench.results.records import TrialResult
from vbench.results.store import Store

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs


class AdaptiveSchedule(Schedule):
    """Min trials of every point, then trials where they buy most (module docstring)."""

    def __init__(
        self,
        plan: Plan,
        store: Store,
        run_id: str,
        *,
        order: str = "sequential",
        seed: int | None = None,
        done: Iterable[tuple[int, int]] = (),
    ) -> None:
        rule = rule_of(plan.scenario.repeat)
        assert rule is not None, "an adaptive schedule needs repeat: {min, max, target}"
        self.rule, self.plan, self.store, self.run_id = rule, plan, store, run_id
        self.budget: Budget | None = plan.scenario.budget
        self.first = MatrixSchedule(plan.points, rule.min, order=order, seed=seed, done=done)
        self._points = {p.index: p for p in plan.points}
        self.budget_spent = False
        self._counts: dict[int, int] = {}
        self._pending: Step | None = None

    # -- Schedule --------------------------------------------------------------------------
    def next(self) -> Step | None:
        step = self.first.next()
        if step is not None:
            self._pending = step
            return step
        self._pending = self._added()
        return self._pending

    def finished(self, result: TrialResult) -> None:
        self.first.finished(result)

    def outlook(self) -> Outlook:
        """The trials still possible, from the one just handed out (included): the
        minimum's left as the fewest, every point up to max (within the budget) as the
        most; no new levels (a matrix has its points)."""
        counts = self._stored_counts()
        if self._pending is not None:
            key = self._pending.point.index
            counts[key] = max(counts.get(key, 0), self._pending.trial - 1)
        fewest = sum(max(0, self.rule.min - counts.get(i, 0)) for i in self._points)
        most = sum(max(0, self.rule.max - counts.get(i, 0)) for i in self._points)
        if self.budget is not None and self.budget.trials is not None:
            room = max(0, self.budget.trials - sum(counts.values()))
            most = max(fewest, min(most, room))
        return Outlook((0, 0), (fewest, most))

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        return MatrixSchedule.answer(inputs)

    def describe(self) -> dict[str, Any]:
        doc = self.first.describe()
        doc.update(kind="adaptive", min=self.rule.min, max=self.rule.max,
                   target=self.rule.target, stop_confidence=round(self.rule.decision_confidence, 5))
        if self.budget is not None:
            doc["budget"] = self.budget.model_dump(exclude_none=True)
        return doc

    # -- added trials ----------------------------------------------------------------------
    def _stored_counts(self) -> dict[int, int]:
        """Finished trials (any status but interrupted) per point, as stored."""
        counts: dict[int, int] = {}
        for t in self.store.trials(self.run_id):
            if t.status != "interrupted":
                counts[t.point] = counts.get(t.point, 0) + 1
        return counts

    def _spent(self) -> bool:
        """The budget is spent: the run's trials (all of them, a resumed run's earlier
        ones too), or the time those trials took."""
        if self.budget is None:
            return False
        rows = [t for t in self.store.trials(self.run_id) if t.status != "interrupted"]
        if self.budget.trials is not None and len(rows) >= self.budget.trials:
            return True
        took = sum(t.ended - t.started for t in rows
                   if t.started is not None and t.ended is not None)
        return self.budget.time is not None and took >= self.budget.time

    def _added(self) -> Step | None:
        """The next added trial: the point with the largest gain, None when none wants
        more or the budget is spent."""
        counts = self._stored_counts()
        figures = load_analysis(self.store, self.run_id).figures
        headline = [str(m) for m in figures.run.get("headline") or ()]
        best: tuple[float, int] | None = None
        for index in sorted(self._points):
            names = target_metrics(self.rule, headline,
                                   (m for p, m in figures.values if p == index))
            series = {m: list(figures.trial_values(index, m).values()) for m in names}
            g = gain(self.rule, counts.get(index, 0), series)
            if g > 0 and (best is None or g > best[0]):
                best = (g, index)
        if best is None:
            return None
        if self._spent():
            self.budget_spent = True
            return None
        point: PlannedPoint = self._points[best[1]]
        return Step(point, _next_trial(self.store, self.run_id, point.index))


def _next_trial(store: Store, run_id: str, point: int) -> int:
    """The trial number after the point's highest stored one (an interrupted trial's
    number is reused: it measured nothing whole)."""
    numbers = [t.trial for t in store.trials(run_id)
               if t.point == point and t.status != "interrupted"]
    return max(numbers, default=0) + 1
