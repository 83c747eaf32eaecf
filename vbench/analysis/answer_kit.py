"""Small helpers the workload drivers' ``answer`` hooks share (a plugin never imports
another plugin, so what two of them need lives here, below them): a figure's mean at a
point, the factor whose levels are a figure, a measured-against-reference ratio line."""

from __future__ import annotations

import math
import statistics

from vbench.analysis.figures import RunFigures, parse_labels, present
from vbench.analysis.verdict_build import AnswerInputs


def mean_at(inputs: AnswerInputs, point: int, metric: str) -> float | None:
    """The mean of ``metric`` over ``point``'s successful trials (None: no value)."""
    values = present(inputs.analysis.figures.trial_values(point, metric))
    if not values:
        return None
    m = statistics.fmean(values)
    return m if math.isfinite(m) else None


def factor_of(inputs: AnswerInputs, metric: str) -> str | None:
    """The varying factor whose level at every point equals ``metric`` there (vcbench's
    ``sessions`` factor and its ``vcbench.sessions`` figure): the x axis of the
    answer's chart. None when no factor is that figure."""
    f = inputs.analysis.figures
    points = inputs.points_with(metric)
    for factor in f.factors:
        levels = {f.points.get(p, {}).get(factor) for p in points}
        if len(levels) < 2 or None in levels:
            continue
        if all(_same(f.points[p][factor], mean_at(inputs, p, metric)) for p in points):
            return factor
    return None


def _same(level: str, value: float | None) -> bool:
    try:
        return value is not None and math.isclose(float(level), value, rel_tol=1e-6)
    except ValueError:
        return False


def best_by(inputs: AnswerInputs, metric: str, points: list[int], higher: bool = True
            ) -> int | None:
    """The point of ``points`` with the highest (or lowest) mean of ``metric``."""
    found = [(v, p) for p in points if (v := mean_at(inputs, p, metric)) is not None]
    if not found:
        return None
    return (max if higher else min)(found)[1]


def percent(x: float | None) -> str:
    """``97.6 %`` (three significant figures); ``—`` for none."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x * 100:.3g} %"


def span(values: list[float]) -> str:
    """``96.1–101 %`` over several ratios, one figure for one."""
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return percent(lo) if math.isclose(lo, hi) else f"{percent(lo)[:-2]}–{percent(hi)}"


def labelled_means(figures: RunFigures, point: int, metric: str, label: str
                   ) -> dict[str, float | None]:
    """Per value of the sample label ``label`` (CloudStone's ``operation``), the mean of
    ``metric`` at ``point`` over its successful trials, from the aggregate samples
    (no guest) labelled with ``label`` alone; None where no trial has a value."""
    df = figures.samples
    if df.empty:
        return {}
    rows = df[(df["point"] == point) & (df["metric"] == metric) & df["guest"].isna()]
    acc: dict[str, list[float]] = {}
    for raw, value in zip(rows["labels"], rows["value"], strict=True):
        labels = parse_labels(raw)
        if set(labels) != {label}:
            continue
        mine = acc.setdefault(labels[label], [])
        if value is not None and math.isfinite(float(value)):
            mine.append(float(value))
    return {k: statistics.fmean(v) if v else None for k, v in acc.items()}
