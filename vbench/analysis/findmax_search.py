"""A find-max run's searches, replayed from the stored verdicts: the bracket each reached
(highest pass, lowest fail, gap), its path of levels and each criterion against each
level. Pure (vbench/analysis/findmax.py replays the search), so an interrupted run shows
the bracket it had reached; the report (vbench/report/findmax.py) and the run's answer
(vbench/analysis/findmax_answer.py) both read it from here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.analysis.adaptive import rule_of
from vbench.analysis.figures import RunFigures
from vbench.analysis.findmax import MAX_TIME, RUNNING, FindMax, SearchOutcome, replay
from vbench.analysis.findmax_qos import (
    CriterionValue,
    criterion_values,
    level_outcomes,
    search_params,
    selected_criteria,
)
from vbench.config.findmax import SearchSpec
from vbench.config.scenario import QosCriterion


@dataclass(frozen=True)
class PathRow:
    order: int
    level: float
    step: float | None
    reason: str
    passed: bool | None
    noisy: bool
    trials: int
    verified: bool


@dataclass(frozen=True)
class FindMaxReport:
    """One search (one combination of the other factors)."""

    factor: str
    combination: Mapping[str, str]
    status: str  # converged, max passes, …; "interrupted" when the run ended mid-search
    outcome: SearchOutcome
    seconds: float | None
    path: tuple[PathRow, ...]
    criteria: Mapping[float, tuple[CriterionValue, ...]]  # level -> criteria there
    integer: bool
    sizes: bool = False  # the bounds were sizes (bs: 4k..1m): levels shown as 64k, 1m

    @property
    def title(self) -> str:
        combo = ", ".join(f"{k}={v}" for k, v in self.combination.items())
        return f"find-max {self.factor}" + (f" [{combo}]" if combo else "")

    def fmt(self, level: float | None) -> str:
        if level is None:
            return "—"
        if self.sizes:
            from vbench.config.levels import size_text

            return size_text(round(level))
        return str(int(level)) if self.integer else f"{level:.4g}"

    def answer(self) -> str:
        o = self.outcome
        gap = "—" if o.gap is None else f"{self.fmt(o.gap)} ({o.gap_percent:.1f} %)"
        took = "" if self.seconds is None else f", {_duration(self.seconds)}"
        noisy = f"; noisy levels: {', '.join(self.fmt(x) for x in o.noisy)}" if o.noisy else ""
        return (
            f"highest pass {self.fmt(o.highest_pass)} · lowest fail {self.fmt(o.lowest_fail)}"
            f" · gap {gap} · {len(o.levels)} levels, {o.trials} trials{took} · {self.status}"
            f"{noisy}"
        )

    def binding(self) -> list[str]:
        """The criteria failing at the lowest fail: the ones that bind."""
        lf = self.outcome.lowest_fail
        if lf is None:
            return []
        return [c.name for c in self.criteria.get(lf, ()) if not c.passed]


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def findmax_reports(
    run: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
    figures: RunFigures,
) -> list[FindMaxReport]:
    """Every search of a stored run (none when its scenario has no ``search``)."""
    scenario = run.get("scenario") or {}
    raw = scenario.get("search")
    if not raw:
        return []
    try:
        spec = SearchSpec.model_validate(raw)
        qos = [QosCriterion.model_validate(q) for q in scenario.get("qos") or []]
    except ValueError:  # a shape another version stored
        return []
    rule = rule_of(scenario.get("repeat"))  # an adaptive repeat: its min and max
    repeat = rule.min if rule is not None else int(scenario.get("repeat") or 1)
    params = search_params(spec, repeat, rule.max if rule is not None else None)
    criteria = selected_criteria(spec, qos)
    by_combo: dict[tuple[tuple[str, str], ...], dict[float, int]] = {}
    for p in points:
        labels = {str(k): str(v) for k, v in (p.get("labels") or {}).items()}
        if spec.factor not in labels:
            continue
        combo = tuple(sorted((k, v) for k, v in labels.items() if k != spec.factor))
        by_combo.setdefault(combo, {})[float(labels[spec.factor])] = int(p["point"])
    runs: dict[int, list[tuple[int, str]]] = {}
    spans: dict[int, list[float]] = {}  # point -> seconds of each of its trials
    for t in trials:
        if t.get("status") == "interrupted":
            continue
        pid = int(t["point"])
        runs.setdefault(pid, []).append((int(t["trial"]), str(t.get("status"))))
        if t.get("started") is not None and t.get("ended") is not None:
            spans.setdefault(pid, []).append(float(t["ended"]) - float(t["started"]))
    out = []
    for combo, levels in by_combo.items():
        outcomes = {
            lv: level_outcomes(figures, criteria, pid, sorted(runs[pid]),
                               spec.max_failure_rate, params)
            for lv, pid in levels.items() if runs.get(pid)
        }
        search, pending, _have = replay(params, outcomes)
        # The time of its trials, as the engine counts max_time: a resumed search does
        # not count the pause between its sessions.
        times = [x for pid in levels.values() for x in spans.get(pid, [])]
        values = {
            lv: tuple(criterion_values(
                figures, criteria, pid, [t for t, s in sorted(runs.get(pid, [])) if s == "ok"]
            ))
            for lv, pid in levels.items()
        }
        # A replay knows no clock: a search the run ended itself stopped on max_time.
        cut = pending is not None and run.get("status") != "ok"
        if pending is not None and not cut:
            search.status = MAX_TIME
        out.append(_report(spec, dict(combo), search, cut, times, values))
    return out


def _report(
    spec: SearchSpec,
    combo: dict[str, str],
    search: FindMax,
    interrupted: bool,
    times: list[float],
    values: Mapping[float, tuple[CriterionValue, ...]],
) -> FindMaxReport:
    outcome = search.outcome()
    status = "interrupted: bracket so far" if interrupted or outcome.status == RUNNING \
        else outcome.status
    path = tuple(
        PathRow(lv.order, lv.level, lv.step, lv.reason, lv.passed, lv.noisy,
                len(lv.verdicts), lv.verified)
        for lv in outcome.levels
    )
    return FindMaxReport(
        factor=spec.factor,
        combination=combo,
        status=status,
        outcome=outcome,
        seconds=sum(times) if times else None,
        path=path,
        criteria=values,
        integer=bool(spec.integer),
        sizes=spec.sizes,
    )
