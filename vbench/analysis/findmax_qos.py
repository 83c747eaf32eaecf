"""Pass/fail of one find-max level from stored figures, trial by trial.

A trial passes when its status is ok and every selected QoS criterion holds on that
trial's own figure. A level (its first k trials) passes when at most
``max_failure_rate`` of them failed (status) and every criterion holds on the
criterion's ``stat`` over its ok trials — the same verdict the QoS table of the
report gives for that point. A figure that is missing is a fail: it cannot show the
criterion holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.analysis.figures import RunFigures, convert
from vbench.analysis.qos import combine, criterion_name, holds
from vbench.config.findmax import SearchSpec
from vbench.config.scenario import QosCriterion

if TYPE_CHECKING:  # the search itself: imported when a search is planned or run
    from vbench.analysis.findmax import SearchParams


@dataclass(frozen=True)
class CriterionValue:
    """One criterion (one subject) at one level: its value over the level's ok trials."""

    name: str
    op: str
    threshold: float
    unit: str
    value: float | None
    passed: bool


def search_params(spec: SearchSpec, repeat: int, most: int | None = None) -> SearchParams:
    """The search's parameters. ``most``: an adaptive repeat's max (``repeat: {min, max,
    target}``): a level runs ``min`` trials (or ``search.trials``) and is decided there
    when its verdict is certain (:func:`level_certainty`); while it is not, one more
    trial, up to ``max`` (this replaces ``noisy_retries``). The certainty is judged at
    the adaptive repeat's stricter decision confidence (α spent over the level's looks,
    vbench/analysis/adaptive.py), so stopping early does not make it a coin toss."""
    from vbench.analysis.adaptive import ALPHA
    from vbench.analysis.findmax import SearchParams

    trials = spec.trials or repeat
    retries = spec.noisy_retries if most is None else 0
    looks = max(1, (most or trials) - trials + 1)
    return SearchParams(
        min=spec.min,
        max=spec.max,
        start=spec.start,
        step=spec.step,
        integer=bool(spec.integer),
        trials=trials,
        noisy_retries=retries,
        verify_trials=spec.verify_trials,
        gap=spec.stop.gap,
        max_levels=spec.stop.max_levels,
        max_time=spec.stop.max_time,
        decide_by_ci=most is not None,
        max_trials=max(most or 0, trials),
        ci_confidence=1.0 - ALPHA / looks,
    )


def selected_criteria(spec: SearchSpec, qos: Sequence[QosCriterion]) -> list[QosCriterion]:
    """The criteria the search decides on: those named, or all of the scenario's."""
    if not spec.criteria:
        return list(qos)
    return [c for c in qos if criterion_name(c) in spec.criteria]


def check_search(scenario: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Mistakes in ``search`` found before a run: (path in the scenario, message)."""
    spec: SearchSpec | None = scenario.search
    if spec is None:
        return []
    out: list[tuple[tuple[Any, ...], str]] = []
    names = [criterion_name(c) for c in scenario.qos]
    for i, name in enumerate(spec.criteria):
        if name not in names:
            known = ", ".join(names) or "none"
            out.append((("search", "criteria", i),
                        f"no qos criterion named {name!r} (criteria: {known})"))
    if not scenario.qos and spec.max_failure_rate >= 1:
        out.append((("search",), "nothing can fail: add qos criteria or lower max_failure_rate"))
    if spec.factor in scenario.factors:
        out.append((("search", "factor"),
                    f"{spec.factor!r} is also a factor: the search sets its levels itself"))
    paths = [(("search", "path"), spec.path or f"workload.params.{spec.factor}")]
    paths += [(("search", "also", i), p) for i, p in enumerate(spec.also)]
    for where, path in paths:
        if path.split(".")[0] in ("factors", "zip", "exclude", "version", "name", "search"):
            out.append((where, f"a search level cannot change {path.split('.')[0]}"))
    counts = [p for _w, p in paths if p.startswith("topology.") and p.endswith(".count")]
    if spec.integer is False and counts:
        out.append((("search", "integer"), "a group's count is a whole number"))
    return out


def _subjects(where: Mapping[str, str | list[str]]) -> list[dict[str, str]]:
    keys = list(where)
    options = [v if isinstance(v, list) else [v] for v in where.values()]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*options)]


def _applies(labels: Mapping[str, str], at: Mapping[str, str | list[str]]) -> bool:
    return all(
        labels.get(k) in ([str(x) for x in v] if isinstance(v, list) else [str(v)])
        for k, v in at.items()
    )


def criterion_values(
    figures: RunFigures, criteria: Sequence[QosCriterion], point: int, trials: Sequence[int]
) -> list[CriterionValue]:
    """Every criterion (and subject) applying at ``point``, over ``trials`` (ok ones)."""
    out: list[CriterionValue] = []
    labels = figures.points.get(point, {})
    for c in criteria:
        if not _applies(labels, c.at):
            continue
        data_unit = figures.units.get(c.metric, "")
        unit = c.unit if c.unit is not None else data_unit
        for subject in _subjects(c.where):
            per_trial = figures.labelled(point, c.metric, subject)
            xs = [per_trial[t] for t in trials if per_trial.get(t) is not None]
            value = None
            if xs:
                value = convert(combine(xs, c.stat), data_unit, unit)  # type: ignore[arg-type]
            name = criterion_name(c)
            if subject:
                name += " [" + ", ".join(f"{k}={v}" for k, v in subject.items()) + "]"
            ok = value is not None and holds(value, c.op, c.threshold)
            out.append(CriterionValue(name, c.op, c.threshold, unit, value, ok))
    return out


def level_verdicts(
    figures: RunFigures,
    criteria: Sequence[QosCriterion],
    point: int,
    trials: Sequence[tuple[int, str]],
    max_failure_rate: float,
) -> list[tuple[bool, bool]]:
    """Per trial (in the order given: (trial number, status)), its own verdict and the
    level's verdict over the trials up to and including it."""
    out: list[tuple[bool, bool]] = []
    for k, (trial, status) in enumerate(trials):
        ok_self = status == "ok" and all(
            v.passed for v in criterion_values(figures, criteria, point, [trial])
        )
        upto = trials[: k + 1]
        failed = sum(1 for _t, s in upto if s != "ok")
        ok_trials = [t for t, s in upto if s == "ok"]
        level_ok = failed <= max_failure_rate * len(upto) and bool(ok_trials) and all(
            v.passed for v in criterion_values(figures, criteria, point, ok_trials)
        )
        out.append((ok_self, level_ok))
    return out


def level_certainty(
    figures: RunFigures,
    criteria: Sequence[QosCriterion],
    point: int,
    trials: Sequence[tuple[int, str]],
    confidence: float,
) -> list[bool]:
    """Per trial (in the order given), whether the level's verdict over the trials up to
    and including it is certain: for every criterion on the ``mean``, the threshold lies
    outside the mean's Student-t interval at ``confidence`` (one value, or a threshold
    inside the interval: not certain); a criterion on another stat (median, a
    percentile, min, max) has no such interval and is certain when the ok trials' own
    verdicts on it agree. The level's verdict is certain when one criterion is certain
    to fail (more trials cannot make the level pass) or every one is certain to hold.
    A missing figure is a certain fail (more trials of a figure the tool does not report
    cannot show it holds), and so are trials none of which is ok (the failure rate
    decides)."""
    applying = [c for c in criteria if _applies(figures.points.get(point, {}), c.at)]
    out = []
    for k in range(len(trials)):
        ok = [t for t, s in trials[: k + 1] if s == "ok"]
        known = [_certain(figures, c, point, ok, confidence) for c in applying] if ok else []
        out.append(not ok or False in known or None not in known)
    return out


def mean_certain(values: Sequence[float], threshold: float, confidence: float) -> bool:
    """The threshold lies outside the Student-t interval of the mean of ``values`` at
    ``confidence`` (one value has no interval: not certain)."""
    from vbench.analysis.stats import t_quantile

    n = len(values)
    if n < 2:
        return False
    mean = sum(values) / n
    sd = (sum((x - mean) ** 2 for x in values) / (n - 1)) ** 0.5
    half = t_quantile(n, confidence) * sd / n ** 0.5
    return not mean - half <= threshold <= mean + half


def _certain(figures: RunFigures, c: QosCriterion, point: int, trials: Sequence[int],
             confidence: float) -> bool | None:
    """The criterion's verdict over ``trials`` when it is certain (True: it holds for
    every subject; False: it fails for one), None while it is not."""
    data_unit = figures.units.get(c.metric, "")
    unit = c.unit if c.unit is not None else data_unit
    known: list[bool | None] = []
    for subject in _subjects(c.where):
        per_trial = figures.labelled(point, c.metric, subject)
        xs = [convert(per_trial[t], data_unit, unit) for t in trials
              if per_trial.get(t) is not None]
        values = [x for x in xs if x is not None]
        if not values:
            return False  # a missing figure: a certain fail
        if c.stat != "mean":
            sides = {holds(x, c.op, c.threshold) for x in values}
            known.append(sides.pop() if len(sides) == 1 else None)
        elif mean_certain(values, c.threshold, confidence):
            mean = sum(values) / len(values)
            known.append(holds(mean, c.op, c.threshold))
        else:
            known.append(None)
    return False if False in known else (None if None in known else True)


def level_outcomes(
    figures: RunFigures,
    criteria: Sequence[QosCriterion],
    point: int,
    trials: Sequence[tuple[int, str]],
    max_failure_rate: float,
    params: SearchParams,
) -> list[tuple[bool, ...]]:
    """What the search is told of a level, per trial: :func:`level_verdicts`, and under
    ``decide_by_ci`` whether each verdict is certain (:func:`level_certainty`). The run
    and every replay of it (``--resume``, the report) read it here, so they agree."""
    verdicts = level_verdicts(figures, criteria, point, trials, max_failure_rate)
    if not params.decide_by_ci:
        return list(verdicts)
    certain = level_certainty(figures, criteria, point, trials, params.ci_confidence)
    return [(*v, c) for v, c in zip(verdicts, certain, strict=True)]
