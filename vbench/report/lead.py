"""The charts a report leads with: one per headline figure, drawn as ``report.charts``
asks for it (every entry naming that figure, in order) or else chosen from the factors;
then the entries for other figures. Nothing a scenario asks for is dropped without a
warning saying why.

Ideal lines are drawn only where they mean something: a derived figure's own ideal
(a speedup's), and linear scaling when the x axis is a factor that sets how many
workers, VMs or clients run (``topology.<group>.count``) — or when a chart entry asks
for it with ``ideal: linear``. ``ideal: none`` removes any.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.analysis.answer_kit import labelled_means
from vbench.analysis.run_analysis import RunAnalysis
from vbench.analysis.scaling_answer import count_factors
from vbench.analysis.verdict import Answer, AnswerChart
from vbench.report.chartplan import (
    ChartIds,
    Series,
    caption,
    chart,
    derived_charts,
    derived_series,
    draw_series,
    explicit_charts,
    metric_series,
    qos_bar,
    scaled,
)
from vbench.report.charts import Bar, bar_chart_svg
from vbench.report.data import ReportView, fmt_pct
from vbench.report.shown import MetricChoice


@dataclass(frozen=True)
class LeadCharts:
    headline: list[dict[str, Any]]  # one or more per headline figure, in headline order
    extra: list[dict[str, Any]]  # report.charts entries for other figures
    derived_in_headline: set[str]  # derived figures charted with the headline
    problems: list[str]


def _ci_text(series: Series) -> str:
    rel = [s.ci_half_rel for _, s in series.rows if s is not None and s.ci_half_rel is not None]
    if not rel:
        return "no 95 % CI (fewer than 2 trials)"
    return f"95 % CI half-width {fmt_pct(min(rel))}–{fmt_pct(max(rel))} of the mean " \
           "(see the results table)"


def lead_charts(view: ReportView, analysis: RunAnalysis, choice: MetricChoice,
                ids: ChartIds, mode: str, overrides: Mapping[str, str]) -> LeadCharts:
    derived = analysis.derived
    derived_names = set(derived.names())
    specs = view.data.stored.scenario.charts
    counts = count_factors(view.scenario)
    template = view.scenario.get("label")

    def lookup(name: str) -> Series | None:
        figs = [f for f in derived.named(name) if f.point is not None]
        if figs:
            return derived_series(figs)
        return metric_series(view, name, overrides) if name in view.units else None

    asked = list(dict.fromkeys(view.data.headline_metrics)) or list(view.headline)
    lead = [m for m in asked if (m in view.headline and m in choice.shown)
            or m in derived_names]
    answers = view.data.verdicted().answers  # computed once (read from verdict.json)
    charts, problems = answer_charts(view, answers, lookup, ids, mode, counts)
    answered = {c["metric"] for c in charts}
    # An entry drawing an answer chart's figure over the same factor is that chart
    # (without the ideal the answer draws over it): drawn once.
    same = {(c.metric, c.x) for a in answers for c in a.charts}
    labelled = answer_levels(view, answers)
    specs = [c for c in specs if (c.get("metric"), c.get("x")) not in same]
    for name in lead:
        mine = [c for c in specs if c.get("metric") == name]
        if name in answered and not mine:
            continue  # the answer's chart is this figure's chart
        # An entry over a factor (or none) is this figure's chart; one against another
        # metric (latency vs IOPS) is drawn beside it.
        beside = [c for c in mine if c.get("x_metric")
                  or (c.get("x") and c.get("x") not in view.factors)]
        instead = [c for c in mine if c not in beside]
        if not instead:
            charts += _figure_chart(view, analysis, name, lookup, ids, mode, counts,
                                    template, labelled)
        drawn, why = explicit_charts([*instead, *beside], lookup, view.factors, ids, mode,
                                     view.window_text, counts=counts,
                                     extra=_ci_text if name in view.units else None)
        charts += [{**c, "metric": name} for c in drawn]
        problems += why
    others = [c for c in specs if c.get("metric") not in lead]
    extra, why = explicit_charts(others, lookup, view.factors, ids, mode, view.window_text,
                                 counts=counts)
    return LeadCharts(charts, extra, {n for n in lead if n in derived_names},
                      problems + why)


def answer_charts(view: ReportView, answers: Sequence[Answer],
                  lookup: Callable[[str], Series | None], ids: ChartIds, mode: str,
                  counts: Collection[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The charts the study's answer is read from (its plugin declares them with the
    answer: vcbench's ops/s with Little's law over it), first on the page; a chart
    whose figure has no data is said to be left out, never silently dropped."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for spec in (c for a in answers for c in a.charts):
        if spec.by is not None:
            drawn = _labelled_chart(view, spec, ids)
            if drawn is None:
                problems.append(f"the answer's chart of {spec.metric} by {spec.by}: no data; "
                                "left out")
            else:
                out.append(drawn)
            continue
        series = lookup(spec.metric)
        if series is None:
            problems.append(f"the answer's chart of {spec.metric}: no data; left out")
            continue
        ideal: str | None = spec.ideal if spec.ideal in ("linear", "none") else None
        level = _number(spec.ideal)  # one reference for every point (native = 1.0)
        if spec.ideal and ideal is None and level is None:
            series = _with_ideal(series, lookup(spec.ideal), spec.ideal_label)
            if series.ideals is None:
                problems.append(f"the answer's chart of {spec.metric}: no data for its "
                                f"ideal {spec.ideal}; drawn without it")
        shown = scaled(series)
        if level is not None and shown.unit != series.unit:
            level = None if not shown.rows else _rescale(series, shown, level)
        x = spec.x if spec.x in view.factors else None
        svg, shows = draw_series(shown, view.factors, ids, mode=mode, x=x,
                                 prefer="line" if x else "bar", title=spec.title,
                                 ideal=ideal, counts=counts, reference=level,
                                 reference_label=spec.ideal_label if level is not None
                                 else "")
        cap = caption(shown, shows, mode, _ci_text(series), view.window_text)
        out.append({**chart(svg, cap, spec.title or spec.metric, "answer"),
                    "metric": spec.metric})
    return out, problems


def _labelled_chart(view: ReportView, spec: AnswerChart, ids: ChartIds
                    ) -> dict[str, Any] | None:
    """A bar per value of the label ``spec.by`` at ``spec.point``: against each bar's QoS
    limit (``ideal: qos``, coloured pass/fail), or against another metric's value for
    the same label (the required mix), coloured by ``spec.flag``."""
    if spec.point is None:
        return None
    analysis = view.data.analyzed()
    title = spec.title or f"{spec.metric} by {spec.by}"
    if spec.ideal == "qos":
        checks = [c for c in analysis.qos.checks
                  if c.metric == spec.metric and c.point == spec.point and spec.by in c.subject]
        if not checks:
            return None
        unit = checks[0].unit
        ylabel = f"{spec.metric} ({checks[0].stat})" + (f" [{unit}]" if unit else "")
        drawn = qos_bar(checks, [c.subject[str(spec.by)] for c in checks], ylabel, ids, title)
        return {**drawn, "kind": "answer", "metric": spec.metric}
    figures = analysis.figures
    values = labelled_means(figures, spec.point, spec.metric, spec.by)
    if not any(v is not None for v in values.values()):
        return None
    names = list(values)
    refs = labelled_means(figures, spec.point, spec.ideal, spec.by) if spec.ideal else {}
    flags = labelled_means(figures, spec.point, spec.flag, spec.by) if spec.flag else {}
    unit = view.units.get(spec.metric, "")
    bars = [Bar(n, values[n], None, None) for n in names]
    passed = [None if flags.get(n) is None else not flags[n] for n in names]
    svg = bar_chart_svg(bars, f"{spec.metric} ({unit})" if unit else spec.metric,
                        chart_id=ids.next(), xlabel=spec.by, title=title,
                        thresholds=[refs.get(n) for n in names] if refs else None,
                        passed=passed if flags else None, limit_label=spec.ideal_label)
    where = figures.title(spec.point)
    cap = (f"{spec.metric} per {spec.by} at {where}: bar = mean over the point's successful "
           f"trials" + (f"; dashed = {spec.ideal_label} ({spec.ideal})" if refs else "")
           + ("; green = within tolerance, red = outside" if flags else "") + ".")
    return {**chart(svg, cap, title, "answer"), "metric": spec.metric}


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _rescale(series: Series, shown: Series, value: float) -> float | None:
    """``value`` in the unit ``scaled`` chose for ``shown`` (ms → s divides by 1,000)."""
    pairs = [(a.mean, b.mean) for (_, a), (_, b) in zip(series.rows, shown.rows, strict=True)
             if a is not None and b is not None and a.mean and b.mean is not None]
    return value * pairs[0][1] / pairs[0][0] if pairs else None


def _with_ideal(series: Series, ideal: Series | None, label: str) -> Series:
    """``series`` with the mean of ``ideal`` at each of its points as its ideals."""
    if ideal is None:
        return series
    at = {p: s.mean for p, (_, s) in zip(ideal.points, ideal.rows, strict=False)
          if s is not None and s.n}
    values = [at.get(p) for p in series.points]
    if all(v is None for v in values):
        return series
    return dataclasses.replace(series, ideals=values, ideal_name=label or "ideal")


def _figure_chart(view: ReportView, analysis: RunAnalysis, name: str,
                  lookup: Callable[[str], Series | None], ids: ChartIds, mode: str,
                  counts: Collection[str], template: Any,
                  labelled: Mapping[str, Collection[float]]) -> list[dict[str, Any]]:
    """The chart of one headline figure that no ``report.charts`` entry draws."""
    if name not in view.units:  # a derived figure: its own chart (normalised bars, …)
        return [{**c, "metric": name} for c in derived_charts(
            analysis.derived, view.factors, ids, mode, view.window_text, template=template,
            names=[name])]
    series = lookup(name)
    assert series is not None  # a headline metric with data always has a series
    shown = scaled(series)
    svg, shows = draw_series(shown, view.factors, ids, mode=mode, counts=counts,
                             template=str(template) if template else None,
                             labelled=labelled)
    cap = caption(shown, shows, mode, _ci_text(series), view.window_text)
    return [{**chart(svg, cap, series.name, "headline"), "metric": series.name}]


def answer_levels(view: ReportView, answers: Sequence[Answer]) -> dict[str, set[float]]:
    """Search factor -> the levels a find-max answer names (its highest pass and lowest
    fail): the x labels a chart over that factor prints first."""
    factor = (view.scenario.get("search") or {}).get("factor")
    if not factor:
        return {}
    levels = {f.value for a in answers if a.kind == "find-max"
              for f in a.facts if f.label in ("highest pass", "lowest fail")
              and f.value is not None}
    return {str(factor): levels}
