"""The steady-state schedule: SNIA PTS rounds until the last ``window`` are steady.

A round is one trial of every point, in the plan's order (the PTS runs its whole test
matrix once per round). After each complete round from the ``window``-th on, the rule
(vbench/analysis/steady_state.py) judges the deciding points' rounds from the run's
stored figures; the rounds stop when every deciding point is steady, or at
``max_rounds`` ("steady state not reached"). The decision reads the store, so a resumed
run counts the rounds it already has and goes on from there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vbench.analysis.findmax import Outlook
from vbench.analysis.run_analysis import load_analysis
from vbench.analysis.steady_state import SteadyState, judge, rounds_of, rule_of
from vbench.engine.plan import Plan, PlannedPoint
from vbench.engine.schedule import Schedule, Step
from vbench.results.store import Store

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs


class SteadyStateSchedule(Schedule):
    """Rounds of every point until steady, or the cap (module docstring)."""

    def __init__(self, plan: Plan, store: Store, run_id: str,
                 done: Iterable[tuple[int, int]] = ()) -> None:
        rule = rule_of(plan.scenario.steady_state)
        assert rule is not None, "a steady-state schedule needs steady_state:"
        self.rule, self.store, self.run_id = rule, store, run_id
        self.points: list[PlannedPoint] = list(plan.points)
        # build_plan refuses an `at:` no point has: with no deciding point the rounds
        # would stop at `window` claiming steady state.
        assert any(rule.decides(p.labels) for p in self.points), "no deciding point"
        self._done = set(done)
        self.round = 1 + _complete_rounds(self.points, self._done)
        self._pos = 0  # the next point of the current round
        self.states: dict[int, SteadyState] = {}
        self.stopped = False

    def next(self) -> Step | None:
        while not self.stopped:
            if self._pos >= len(self.points):
                self._end_round()
                continue
            point = self.points[self._pos]
            self._pos += 1
            if (point.index, self.round) not in self._done:
                return Step(point, self.round)
        return None

    def _end_round(self) -> None:
        """A round is complete: judge it, then stop or start the next."""
        if self.round >= self.rule.window:
            self.states = self.judged()
            deciding = [s for p, s in self.states.items() if self._decides(p)]
            # No deciding round has a figure of the metric: more rounds cannot help.
            blind = all(v is None for s in deciding for v in s.rounds)
            if (all(s.reached for s in deciding) or blind
                    or self.round >= self.rule.max_rounds):
                self.stopped = True
                return
        self.round += 1
        self._pos = 0

    def _decides(self, index: int) -> bool:
        point = next(p for p in self.points if p.index == index)
        return self.rule.decides(point.labels)

    def judged(self) -> dict[int, SteadyState]:
        """The rule's reading of every point's stored rounds so far."""
        figures = load_analysis(self.store, self.run_id).figures
        return {p.index: judge(rounds_of(figures.trial_values(p.index, self.rule.metric),
                                         self.round), self.rule)
                for p in self.points}

    def outlook(self) -> Outlook:
        """Trials still possible from the one just handed out: the rest of the window's
        rounds as the fewest, up to the cap as the most."""
        n = len(self.points)
        left_now = n - self._pos + 1
        fewest = left_now + n * max(0, self.rule.window - self.round)
        most = left_now + n * max(0, self.rule.max_rounds - self.round)
        return Outlook((0, 0), (fewest, most))

    def describe(self) -> dict[str, Any]:
        r = self.rule
        doc: dict[str, Any] = {"kind": "steady_state", "metric": r.metric, "window": r.window,
                               "max_excursion": r.max_excursion, "max_slope": r.max_slope,
                               "max_rounds": r.max_rounds}
        if r.at:
            doc["at"] = dict(r.at)
        if self._done:
            doc["already_done"] = len(self._done)
        return doc

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        from vbench.analysis.steady_answer import steady_answers

        return steady_answers(inputs)


def _complete_rounds(points: list[PlannedPoint], done: set[tuple[int, int]]) -> int:
    """Rounds a resumed run completed at every point (its next round starts after)."""
    r = 0
    while points and all((p.index, r + 1) in done for p in points):
        r += 1
    return r
