"""Derived figures declared in a scenario: normalised to a baseline point, speedup of one
point over another (with the ideal), expressions over metrics, geometric means.

Derived figures are computed per trial wherever that is defined, so that they get the
same statistics (mean, CI, cv) as measured metrics:

- ``normalize`` and ``speedup``: each trial's value at the point divided by the
  *mean* of the baseline point. The interval therefore shows the spread of the point,
  not of the baseline (the baseline's own spread is in its own row).
- ``expr``/``ratio``: the expression over the values of one trial.
- ``geomean`` over ``metrics``: per trial. ``geomean`` of one metric ``across`` a
  factor: the geometric mean of the point means of each level (one figure per group
  of the other factors; no interval, as trials of different points are not paired).

The baseline of a point is the point with the same labels except for the factors named
in ``baseline``: ``baseline: {deployment: native}`` normalises every instance count to
the native configuration with that instance count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vbench.analysis import expr as ex
from vbench.analysis.figures import RunFigures, Values, better, present
from vbench.analysis.stats import DEFAULT_CV_THRESHOLD, Summary, summarize
from vbench.config.scenario import Derived, Scenario


@dataclass(frozen=True)
class DerivedFigure:
    """One derived figure at one point (``point`` None: a figure across points)."""

    name: str
    kind: str
    unit: str
    better: str
    point: int | None
    labels: Mapping[str, str]
    values: Values
    summary: Summary
    ideal: float | None = None
    reference: str = ""  # what it is relative to, for captions


@dataclass(frozen=True)
class DerivedResult:
    specs: tuple[Derived, ...]
    figures: tuple[DerivedFigure, ...]
    problems: tuple[str, ...]
    extended: RunFigures = field(repr=False)  # the run's figures plus point-level derived

    def named(self, name: str) -> list[DerivedFigure]:
        return [f for f in self.figures if f.name == name]

    def names(self) -> list[str]:
        return list(dict.fromkeys(f.name for f in self.figures))


def parse_specs(scenario: Mapping[str, Any]) -> tuple[list[Derived], list[str]]:
    """The stored scenario's ``derived`` entries as models; unreadable ones as problems
    (a run stored by another vbench version may hold a shape this one refuses)."""
    specs, problems = [], []
    for i, raw in enumerate(scenario.get("derived") or []):
        try:
            specs.append(Derived.model_validate(raw))
        except ValueError as exc:
            problems.append(f"derived[{i}] ignored: {_first_error(exc)}")
    return specs, problems


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    return str(exc)


def _numeric(text: str | None) -> float | None:
    try:
        f = float(str(text))
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _mean(values: Values) -> float | None:
    xs = present(values)
    return math.fsum(xs) / len(xs) if xs else None


def _matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == str(v) for k, v in selector.items())


def baseline_point(
    figures: RunFigures, point: int, selector: Mapping[str, str]
) -> int | None:
    """The point with ``point``'s labels, the factors of ``selector`` set to its levels."""
    want = {**figures.points.get(point, {}), **{k: str(v) for k, v in selector.items()}}
    for p, labels in figures.points.items():
        if dict(labels) == want:
            return p
    # Labels a lab profile records (profile=…, the profile's labels) follow the factor
    # level that selects the profile: then only the scenario's factors must match.
    declared = list((figures.scenario.get("factors") or {}).keys())
    for p, labels in figures.points.items():
        if declared and all(labels.get(k) == want.get(k) for k in declared):
            return p
    return None


class _Builder:
    def __init__(
        self, figures: RunFigures, cv_threshold: float, overrides: Mapping[str, str]
    ) -> None:
        self.f = figures
        self.cv = cv_threshold
        self.overrides = overrides
        self.out: list[DerivedFigure] = []
        self.problems: list[str] = []

    def add_series(self, spec: Derived, series: dict[int, tuple[Values, float | None, str]],
                   direction: str) -> None:
        extra = {(p, spec.name): vals for p, (vals, _i, _r) in series.items()}
        self.f = self.f.with_values(extra, {spec.name: spec.unit})
        for p, (vals, ideal, ref) in sorted(series.items()):
            self.out.append(DerivedFigure(
                name=spec.name, kind=spec.kind, unit=spec.unit, better=direction, point=p,
                labels=dict(self.f.points.get(p, {})), values=vals,
                summary=summarize(list(vals.values()), self.cv), ideal=ideal, reference=ref,
            ))

    def direction(self, spec: Derived, source: str | None) -> str:
        if spec.better:
            return spec.better
        if source is not None:
            return better(source, self.f.units.get(source, ""), self.overrides)
        return better(spec.name, spec.unit, self.overrides)

    def known(self, spec: Derived, names: Sequence[str]) -> bool:
        have = {m for _, m in self.f.values}
        missing = [n for n in names if n not in have]
        if missing:
            self.problems.append(
                f"derived {spec.name}: no data for {', '.join(missing)} in this run"
            )
        return not missing

    def factors_known(self, spec: Derived, selector: Mapping[str, str] | None) -> bool:
        unknown = [k for k in (selector or {}) if k not in self.f.factors]
        if unknown:
            self.problems.append(f"derived {spec.name}: no factor {', '.join(unknown)}")
        return not unknown


def _relative(b: _Builder, spec: Derived) -> dict[int, tuple[Values, float | None, str]]:
    """normalize and speedup: trial values over the baseline point's mean."""
    assert spec.metric is not None and spec.baseline is not None
    selector = spec.baseline
    base_text = ", ".join(f"{k}={v}" for k, v in selector.items())
    series: dict[int, tuple[Values, float | None, str]] = {}
    for p, labels in b.f.points.items():
        if spec.kind == "speedup" and spec.target is not None and not _matches(
            labels, spec.target
        ):
            continue
        base = baseline_point(b.f, p, selector)
        if base is None:
            b.problems.append(f"derived {spec.name}: no baseline point ({base_text}) for "
                              f"{b.f.title(p)}")
            continue
        base_mean = _mean(b.f.trial_values(base, spec.metric))
        vals = b.f.trial_values(p, spec.metric)
        scaled: Values = {
            t: (v / base_mean if v is not None and base_mean else None) for t, v in vals.items()
        }
        ideal = None
        if spec.kind == "speedup" and spec.ideal is not None:
            # The baseline point of a scaling curve is its own reference: ideal 1.
            ideal = 1.0 if base == p else _ideal(b, spec, p, base)
        series[p] = (scaled, ideal, f"relative to {base_text} (= 1.0)")
    return series


def _ideal(b: _Builder, spec: Derived, point: int, base: int) -> float | None:
    if spec.ideal is None:
        return None
    if isinstance(spec.ideal, int | float):
        return float(spec.ideal)
    here = _numeric(b.f.points.get(point, {}).get(spec.ideal))
    there = _numeric(b.f.points.get(base, {}).get(spec.ideal))
    if here is None or not there:
        return None
    return here / there


def _expression(b: _Builder, spec: Derived) -> dict[int, tuple[Values, float | None, str]]:
    assert spec.expr is not None
    try:
        tree = ex.parse(spec.expr)
    except ex.ExprError as exc:
        b.problems.append(f"derived {spec.name}: {exc}")
        return {}
    refs = sorted(ex.names(tree))
    if not b.known(spec, refs):
        return {}
    series: dict[int, tuple[Values, float | None, str]] = {}
    for p in b.f.points:
        per_name = {n: b.f.trial_values(p, n) for n in refs}
        trials = sorted({t for vals in per_name.values() for t in vals})
        if not trials:
            continue
        vals = {t: ex.evaluate(tree, {n: per_name[n].get(t) for n in refs}) for t in trials}
        series[p] = (vals, None, spec.expr)
    return series


def _geomean(xs: Sequence[float | None]) -> float | None:
    if not xs or any(x is None or x <= 0 for x in xs):
        return None
    return math.exp(math.fsum(math.log(x) for x in xs if x is not None) / len(xs))


def _geomean_metrics(b: _Builder, spec: Derived) -> dict[int, tuple[Values, float | None, str]]:
    if not b.known(spec, spec.metrics):
        return {}
    series: dict[int, tuple[Values, float | None, str]] = {}
    for p in b.f.points:
        per = [b.f.trial_values(p, m) for m in spec.metrics]
        trials = sorted({t for vals in per for t in vals})
        if trials:
            vals = {t: _geomean([v.get(t) for v in per]) for t in trials}
            series[p] = (vals, None, "geometric mean of " + ", ".join(spec.metrics))
    return series


def _geomean_across(b: _Builder, spec: Derived) -> None:
    """One figure per group of the other factors: the geomean of the level means."""
    assert spec.metric is not None and spec.across is not None
    if not b.known(spec, [spec.metric]) or not b.factors_known(spec, {spec.across: ""}):
        return
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for p, labels in b.f.points.items():
        key = tuple((k, v) for k, v in labels.items() if k != spec.across)
        groups.setdefault(key, []).append(p)
    direction = b.direction(spec, spec.metric)
    for key, members in groups.items():
        means = [_mean(b.f.trial_values(p, spec.metric)) for p in sorted(members)]
        value = _geomean(means)
        ns = [len(present(b.f.trial_values(p, spec.metric))) for p in members]
        n = min(ns) if value is not None else 0
        summary = Summary(n, value, value, None, value, value, None, None, None, False, None)
        b.out.append(DerivedFigure(
            name=spec.name, kind=spec.kind, unit=spec.unit, better=direction, point=None,
            labels=dict(key), values={}, summary=summary,
            reference=f"geometric mean of {spec.metric} over the {len(members)} levels of "
                      f"{spec.across}",
        ))


def compute_derived(
    figures: RunFigures,
    specs: Sequence[Derived],
    *,
    cv_threshold: float = DEFAULT_CV_THRESHOLD,
    better_overrides: Mapping[str, str] | None = None,
) -> DerivedResult:
    """Compute ``specs`` in order (a later one may use an earlier one's name)."""
    b = _Builder(figures, cv_threshold, better_overrides or {})
    for spec in specs:
        if spec.kind in ("normalize", "speedup"):
            assert spec.metric is not None
            if b.known(spec, [spec.metric]) and b.factors_known(spec, spec.baseline):
                b.add_series(spec, _relative(b, spec), b.direction(spec, spec.metric))
        elif spec.kind in ("ratio", "expr"):
            b.add_series(spec, _expression(b, spec), b.direction(spec, None))
        elif spec.across:
            _geomean_across(b, spec)
        else:
            b.add_series(spec, _geomean_metrics(b, spec), b.direction(spec, spec.metrics[0]))
    unique = list(dict.fromkeys(b.problems))
    return DerivedResult(tuple(specs), tuple(b.out), tuple(unique), b.f)


# ------------------------------------------------------------------ validation


def _level_issues(
    scenario: Scenario, selector: Mapping[str, Any] | None, path: tuple[Any, ...]
) -> list[tuple[tuple[Any, ...], str]]:
    out = []
    for factor, level in (selector or {}).items():
        if factor not in scenario.factors:
            known = ", ".join(scenario.factors) or "none"
            out.append(((*path, factor), f"no factor {factor!r} (factors: {known})"))
            continue
        labels = scenario.factors[factor].level_labels()
        wanted = level if isinstance(level, list) else [level]
        for w in wanted:
            if str(w) not in labels:
                out.append(((*path, factor),
                            f"factor {factor!r} has no level {w!r} (levels: {', '.join(labels)})"))
    return out


def check_derived(scenario: Scenario) -> list[tuple[tuple[Any, ...], str]]:
    """Mistakes in ``derived`` found before a run: (path in the scenario, message)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    seen: set[str] = set()
    for i, d in enumerate(scenario.derived):
        here = ("derived", i)
        if d.name in seen:
            out.append(((*here, "name"), f"derived figure {d.name!r} is declared twice"))
        seen.add(d.name)
        out += _level_issues(scenario, d.baseline, (*here, "baseline"))
        out += _level_issues(scenario, d.target, (*here, "target"))
        if d.across and d.across not in scenario.factors:
            out.append(((*here, "across"), f"no factor {d.across!r}"))
        if isinstance(d.ideal, str) and d.ideal not in scenario.factors:
            out.append(((*here, "ideal"), f"no factor {d.ideal!r} holding the ideal"))
        if d.expr is not None:
            try:
                ex.parse(d.expr)
            except ex.ExprError as exc:
                out.append(((*here, "expr"), str(exc)))
    return out
