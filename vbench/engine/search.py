"""The find-max schedule: one search (vbench/analysis/findmax.py) per combination of the
other factors, run one after the other.

Each level is a point of the run, created the first time the search asks for it
(labels: the combination plus ``<factor>=<level>``) and stored like any other point.
After a level's trials, its verdicts are read back from the store (the run's own
figures, derived figures and collector figures), so the search decides on exactly
what the report shows. A resumed run replays the stored levels through the same
search (``replay``) and goes on from the first trial that is missing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vbench.analysis.findmax import NOTHING_LEFT, FindMax, Outlook, Request, replay
from vbench.analysis.findmax_qos import level_outcomes, search_params, selected_criteria
from vbench.analysis.run_analysis import load_analysis
from vbench.config.findmax import SearchSpec
from vbench.config.lab import Lab
from vbench.config.load import Loaded
from vbench.config.matrix import PointSpec, expand
from vbench.config.resolve import bind_roles
from vbench.config.scenario import Scenario
from vbench.config.search import level_spec, start_level
from vbench.engine.plan import (
    Plan,
    PlannedPoint,
    _groups,
    _plan_point,
    get_driver_located,
    with_profile_labels,
)
from vbench.engine.schedule import Schedule, Step
from vbench.results.records import TrialResult
from vbench.results.store import Store

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs


@dataclass
class _Combo:
    """One search: a combination of the other factors and its levels' points."""

    base: PointSpec
    search: FindMax
    points: dict[float, PlannedPoint] = field(default_factory=dict)
    request: Request | None = None
    left: int = 0  # trials of the current request still to run
    elapsed_before: float = 0.0  # seconds spent by an earlier, interrupted session
    started: float | None = None


class SearchSchedule(Schedule):
    def __init__(
        self,
        plan: Plan,
        scenario: Loaded[Scenario],
        lab: Loaded[Lab] | None,
        store: Store,
        run_id: str,
        *,
        resume: bool = False,
    ) -> None:
        spec = plan.scenario.search
        assert spec is not None
        self.plan, self.store, self.run_id = plan, store, run_id
        self.spec: SearchSpec = spec
        self.src, self.lab = scenario.source, lab
        self.params = search_params(spec, plan.repeat, plan.repeat_max)
        self.criteria = selected_criteria(spec, plan.scenario.qos)
        self._driver = get_driver_located(plan.scenario, self.src)
        self._roles = bind_roles(
            plan.scenario, self._driver.roles, self.src, self._driver.optional_roles
        )
        bases = expand(plan.scenario, self.src)
        self.combos = [_Combo(b, FindMax(self.params)) for b in bases]
        start = start_level(spec)
        for combo, point in zip(self.combos, plan.points, strict=True):
            combo.points[start] = point
        self._next_index = len(plan.points)
        self._i = 0
        self._done: dict[int, list[tuple[int, str]]] = {}  # point -> (trial, status) run
        if resume:
            self._resume()

    # -- Schedule --------------------------------------------------------------------------
    def next(self) -> Step | None:
        while self._i < len(self.combos):
            combo = self.combos[self._i]
            if combo.started is None:
                combo.started = time.monotonic()
            if combo.request is not None and combo.left == 0:
                self._record(combo)
            if combo.request is None:
                combo.request = combo.search.next(self._elapsed(combo))
                combo.left = combo.request.trials if combo.request else 0
            if combo.request is None:
                self._i += 1
                continue
            point = self._point(combo, combo.request.level)
            combo.left -= 1
            return Step(point, self._trials_at(point.index) + 1)
        return None

    def finished(self, result: TrialResult) -> None:
        self._done.setdefault(result.point, []).append((result.trial, result.status))

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """Per search: the bracket, its gap, the binding criterion and the path, with the
        headline figures at the highest pass (vbench/analysis/findmax_answer.py)."""
        from vbench.analysis.findmax_answer import findmax_answers

        return findmax_answers(inputs)

    def outlook(self) -> Outlook:
        """The levels and trials the searches may still run: the one under way from its
        current request (the trial just handed out included), the later ones whole."""
        total = NOTHING_LEFT
        for combo in self.combos[self._i:]:
            req = combo.request
            total += combo.search.outlook(req.trials - combo.left - 1 if req else 0)
        return total

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "findmax",
            "factor": self.spec.factor,
            "path": self.spec.path or f"workload.params.{self.spec.factor}",
            "searches": len(self.combos),
            "params": self.params.__dict__,
        }

    # -- levels ----------------------------------------------------------------------------
    def _trials_at(self, point: int) -> int:
        return len(self._done.get(point, []))

    def _point(self, combo: _Combo, level: float) -> PlannedPoint:
        if level in combo.points:
            return combo.points[level]
        point = self._plan_level(combo, level, self._next_index)
        self._next_index += 1
        combo.points[level] = point
        return point

    def _plan_level(self, combo: _Combo, level: float, index: int) -> PlannedPoint:
        spec = level_spec(self.plan.scenario, self.src, combo.base, level, index)
        point = _plan_point(spec, self._driver, self._roles, _groups(spec, self.lab))
        # Labelled like the start level (its profile too): one search, one combination.
        return with_profile_labels(point, spec, self.lab)

    def _record(self, combo: _Combo) -> None:
        """The level's trials have run: tell the search every verdict so far."""
        req = combo.request
        assert req is not None
        point = combo.points[req.level]
        verdicts = self._verdicts(point.index)
        last = verdicts[-1]
        combo.search.record(req.level, [v[0] for v in verdicts], last[1],
                            last[2] if len(last) > 2 else None)
        combo.request = None

    def _verdicts(self, point: int) -> list[tuple[bool, ...]]:
        figures = load_analysis(self.store, self.run_id).figures
        trials = sorted(self._done.get(point, []))
        return level_outcomes(
            figures, self.criteria, point, trials, self.spec.max_failure_rate, self.params
        )

    def _elapsed(self, combo: _Combo) -> float:
        assert combo.started is not None
        return combo.elapsed_before + time.monotonic() - combo.started

    # -- resume ----------------------------------------------------------------------------
    def _resume(self) -> None:
        """Rebuild every search from the stored points and trials of this run."""
        rows = self.store.trials(self.run_id)
        self._done = {}
        seconds: dict[int, float] = {}
        for t in rows:
            if t.status == "interrupted":
                continue  # run again: an interrupted trial measured nothing whole
            self._done.setdefault(t.point, []).append((t.trial, t.status))
            if t.started is not None and t.ended is not None:
                seconds[t.point] = seconds.get(t.point, 0.0) + (t.ended - t.started)
        labels = {p.point: p.labels for p in self.store.points(self.run_id)}
        for combo in self.combos:
            self._resume_combo(combo, labels, seconds)
        self._next_index = max([self._next_index - 1, *labels]) + 1

    def _resume_combo(
        self, combo: _Combo, labels: Mapping[int, Mapping[str, str]], seconds: Mapping[int, float]
    ) -> None:
        factor = self.spec.factor
        # The combination's labels as its points carry them (a lab profile's included).
        start = next(iter(combo.points.values()))
        want = {k: v for k, v in start.labels.items() if k != factor}
        mine = {
            pid: float(lab[factor])
            for pid, lab in labels.items()
            if factor in lab and {k: v for k, v in lab.items() if k != factor} == want
        }
        outcomes: dict[float, Sequence[tuple[bool, ...]]] = {}
        for pid, level in mine.items():
            if pid in self._done:
                outcomes[level] = self._verdicts(pid)
            if level not in combo.points:
                combo.points[level] = self._plan_level(combo, level, pid)
        combo.search, pending, have = replay(self.params, outcomes)
        combo.request, combo.left = pending, (pending.trials - have if pending else 0)
        combo.elapsed_before = sum(seconds.get(pid, 0.0) for pid in mine)

