"""Adaptive repetitions: when a point has enough trials for its confidence target.

A scenario's ``repeat: {min, max, target: {ci_half_width}}`` runs ``min`` trials of
every point, then adds trials one at a time while the 95 % confidence interval of any
target metric is wider (half-width relative to the mean) than the target, up to
``max``. This module is the pure rule; the engine's schedule (engine/adaptive.py)
feeds it each point's trial values, and the verdict reads the same rule back from
the stored trials, so the run, its resume and every report agree.

Sequential stopping bias, and the correction used
-------------------------------------------------
Looking at the interval after every trial and stopping the first time it looks narrow
enough ("optional stopping") favours samples whose spread happened to come out small,
so the ordinary 95 % interval reported for such a point covers the true mean less
often than 95 %. The rule here guards against that in two ways:

- a fixed minimum (``min``, at least 3) before the first look, so the spread is never
  judged from two values;
- a stricter interval for the *decision* than for the report: the stop is decided with
  the Student-t quantile at confidence ``1 − α / L`` — α = 5 % spent evenly over the
  ``L = max − min + 1`` looks the point may have (Bonferroni) — while the report shows
  the ordinary 95 % interval. A point therefore stops only when even the widened
  interval is within the target; the reported interval, narrower still, is within it
  too. bench/adaptive_repeat.py measures the coverage this gives (docs/performance.md).

``met`` in :class:`PointProgress` is judged on the reported (95 %) interval, which is
what the user reads. Before ``max`` it also needs the stricter decision interval (a
point cut short by the budget or Ctrl-C while only its 95 % interval is within the
target is not met: stopping there would be the optional stopping the correction
guards against). At ``max`` the stop no longer depends on the data, so the reported
95 % interval alone decides: the stricter level is only for stopping *early*.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vbench.analysis.stats import CONFIDENCE, t_quantile

ALPHA = 1.0 - CONFIDENCE


@dataclass(frozen=True)
class RepeatRule:
    """``repeat: {min, max, target: {ci_half_width}}`` as the rule reads it."""

    min: int
    max: int
    target: float  # relative CI half-width, e.g. 0.05
    metrics: tuple[str, ...] = ()  # () = the run's headline metrics
    require: bool = False
    spend_alpha: bool = True  # False: decide at 95 % too (no correction; the bench compares)

    @property
    def looks(self) -> int:
        """How many times a point's interval may be judged (after min, ..., max trials)."""
        return self.max - self.min + 1

    @property
    def decision_confidence(self) -> float:
        """The confidence of the interval the stop is decided with (see module doc)."""
        return 1.0 - ALPHA / self.looks if self.spend_alpha else CONFIDENCE


def rule_of(repeat: object) -> RepeatRule | None:
    """The rule of a (stored or validated) scenario's ``repeat``; None for a fixed count."""
    if not isinstance(repeat, Mapping):
        doc = getattr(repeat, "model_dump", None)
        if doc is None:
            return None
        repeat = doc()
    assert isinstance(repeat, Mapping)
    target = repeat.get("target") or {}
    width = target.get("ci_half_width") if isinstance(target, Mapping) else None
    if width is None:
        return None
    return RepeatRule(
        min=int(repeat.get("min", 3)),
        max=int(repeat.get("max", 12)),
        target=float(width),
        metrics=tuple(str(m) for m in repeat.get("metrics") or ()),
        require=bool(repeat.get("require", False)),
    )


def target_metrics(rule: RepeatRule, headline: Sequence[str], measured: Iterable[str]) -> list[str]:
    """The metrics held to the target: the listed ones, else the run's headline metrics,
    else (a run without a headline) every metric measured at the point."""
    if rule.metrics:
        return list(rule.metrics)
    return list(headline) or sorted(set(measured))


def _finite(values: Iterable[float | None]) -> list[float]:
    out = []
    for v in values:
        if v is not None and math.isfinite(float(v)):
            out.append(float(v))
    return out


def rel_half_width(values: Sequence[float | None], confidence: float = CONFIDENCE) -> float | None:
    """Half-width of the Student-t interval of the mean, as a fraction of |mean|; None
    with fewer than two values; inf when the mean is zero and the values differ."""
    xs = _finite(values)
    n = len(xs)
    if n < 2:
        return None
    mean = math.fsum(xs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    if sd == 0:
        return 0.0
    if mean == 0:
        return math.inf
    return t_quantile(n, confidence) * sd / math.sqrt(n) / abs(mean)


def measured(series: Mapping[str, Sequence[float | None]]) -> dict[str, Sequence[float | None]]:
    """The target metrics the point has a value of: a metric it never reported (a write
    latency of a read-only job) cannot be made precise by more trials, so it does not
    hold the point back — unless no target metric has a value at all."""
    return {m: v for m, v in series.items() if _finite(v)}


def satisfied(rule: RepeatRule, series: Mapping[str, Sequence[float | None]]) -> bool:
    """True when every measured target metric's decision interval is within the target
    (a point that measured none of them is not precise: False)."""
    have = measured(series)
    if not have:
        return False
    for values in have.values():
        w = rel_half_width(values, rule.decision_confidence)
        if w is None or w > rule.target:
            return False
    return True


def wants_more(rule: RepeatRule, trials: int, series: Mapping[str, Sequence[float | None]]) -> bool:
    """Whether a point that has run ``trials`` trials (any status) gets another one."""
    if trials < rule.min:
        return True
    if trials >= rule.max:
        return False
    return not satisfied(rule, series)


@dataclass(frozen=True)
class PointProgress:
    """How a point fared against the target: trials taken, met or not, the widest
    reported (95 %) half-width among the target metrics and which metric it was."""

    trials: int
    met: bool
    widest: float | None  # relative half-width of the worst target metric
    metric: str | None
    at_max: bool
    stopped_early: bool = False  # the run ended (budget, Ctrl-C) before the rule did
    target: float | None = None
    stop_level: float | None = None  # the decision interval's confidence

    def text(self) -> str:
        width = "no interval" if self.widest is None else f"±{self.widest * 100:.1f} %"
        if (not self.met and self.widest is not None and self.target is not None
                and self.widest <= self.target and self.stop_level is not None):
            # Within the target as reported, but not at the stricter stop level.
            width += f" (±{self.target * 100:g} % not yet held at {self.stop_level * 100:.1f} %)"
        if self.met:
            return f"met after {self.trials}"
        if self.at_max:
            return f"not met at max {self.trials}: {width}"
        why = "budget spent" if self.stopped_early else "stopped"
        return f"not met after {self.trials} ({why}): {width}"


def progress(
    rule: RepeatRule, trials: int, series: Mapping[str, Sequence[float | None]],
    *, stopped_early: bool = False,
) -> PointProgress:
    """The point's standing against ``rule`` (reported 95 % intervals)."""
    widest: float | None = None
    metric: str | None = None
    have = measured(series)
    missing = not have
    for name, values in have.items():
        w = rel_half_width(values)
        if w is None:
            missing = True
            widest, metric = (widest, metric) if widest is not None else (None, name)
            continue
        if widest is None or w > widest:
            widest, metric = w, name
    within = not missing and widest is not None and widest <= rule.target
    # At max the stop was not chosen by the data: the reported interval is the judge.
    met = within and (trials >= rule.max or satisfied(rule, series))
    return PointProgress(
        trials=trials, met=met, widest=widest, metric=metric,
        at_max=trials >= rule.max, stopped_early=stopped_early and trials < rule.max,
        target=rule.target, stop_level=rule.decision_confidence,
    )


def gain(rule: RepeatRule, trials: int, series: Mapping[str, Sequence[float | None]]) -> float:
    """What one more trial buys at this point, for spending a budget where it buys most:
    1 / the trials it still needs (its widest decision half-width shrinking as 1/√n), so
    the points nearest their target come first; a point that cannot reach the target by
    ``max`` ranks below every point that can (1 / the trials it would need); 0 for a
    point that is done; the minimum is never traded away (inf)."""
    if not wants_more(rule, trials, series):
        return 0.0
    if trials < rule.min:
        return math.inf
    widths = [rel_half_width(v, rule.decision_confidence) for v in measured(series).values()]
    worst = max((math.inf if w is None else w for w in widths), default=math.inf)
    if not math.isfinite(worst):
        return 1.0 / (rule.max + 1)
    needed = trials * (worst / rule.target) ** 2
    if needed > rule.max:
        return 1.0 / needed
    return 1.0 / max(1.0, needed - trials)
