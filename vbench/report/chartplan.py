"""Which charts a report shows, and their captions.

- Headline metrics: a scaling curve when a numeric factor with three or more levels
  varies (one line per level of a second factor; the ideal linear scaling from the
  first point dashed, for higher-is-better figures); grouped bars when two factors
  vary; a bar per point otherwise. Whiskers: min–max or the 95 % CI
  (``report.error_bars``), stated in every caption.
- Derived figures: normalised bars with the 1.0 line; speedup curves (or bars) with
  the ideal; other derived figures as bars.
- QoS: the combined value of each check against its limit, bars coloured pass/fail.
- ``report.charts``: extra charts the scenario asks for, over a factor or, with
  ``x_metric``, against another metric (IOPS vs latency).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from vbench.analysis.derived import DerivedFigure, DerivedResult
from vbench.analysis.direction import way_text
from vbench.analysis.figures import better
from vbench.analysis.qos import QosCheck, QosResult
from vbench.analysis.stats import Summary
from vbench.config.labels import render_label
from vbench.report.charts import Bar, bar_chart_svg, grouped_bar_chart_svg
from vbench.report.charts_xy import Line, line_chart_svg
from vbench.report.data import MISSING, ReportView
from vbench.report.svg import MAX_LABEL, TrialMark
from vbench.report.units import choose

MIN_CURVE_LEVELS = 3
MAX_QOS_SERIES = 6


@dataclass
class ChartIds:
    """Unique element ids across every chart of one page."""

    prefix: str = "vbench-chart"
    n: int = 0

    def next(self) -> str:
        self.n += 1
        return f"{self.prefix}-{self.n - 1}"


def _num(text: str | None) -> float | None:
    try:
        f = float(str(text))
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def varying(points: Sequence[Mapping[str, str]], factors: Sequence[str]) -> list[str]:
    return [f for f in factors if len({p.get(f) for p in points}) > 1]


def numeric_factor(points: Sequence[Mapping[str, str]], factor: str) -> bool:
    levels = {p.get(factor) for p in points}
    return len(levels) >= MIN_CURVE_LEVELS and all(_num(x) is not None for x in levels)


def whiskers(s: Summary | None, mode: str) -> tuple[float | None, float | None]:
    if s is None:
        return None, None
    if mode == "ci":
        return s.ci_low, s.ci_high
    return s.min, s.max


def error_text(mode: str) -> str:
    return ("whiskers = 95 % confidence interval of the mean (Student t)" if mode == "ci"
            else "whiskers = min–max over trials")


@dataclass(frozen=True)
class Series:
    """A figure over the points of a run: per point its labels and summary."""

    name: str
    unit: str
    better: str
    rows: list[tuple[Mapping[str, str], Summary | None]]
    ideals: list[float | None] | None = None
    points: tuple[int | None, ...] = ()  # the point of each row (pairs two series)
    ideal_name: str = ""  # what the ideals are ("Little's law"); default: a speedup's
    # Per row, its disturbed trials' values (vbench/report/disturbed.py), and the
    # captions' sentence about them; () and "" for a run without a disturbed trial.
    marks: tuple[tuple[TrialMark, ...], ...] = ()
    mark_note: str = ""

    def marks_of(self, row: int) -> tuple[TrialMark, ...]:
        return self.marks[row] if row < len(self.marks) else ()


def _n_text(rows: Sequence[tuple[Mapping[str, str], Summary | None]]) -> str:
    ns = [s.n for _, s in rows if s is not None and s.n > 0]
    if not ns:
        return "n = 0"
    return f"n = {min(ns)}" if min(ns) == max(ns) else f"n = {min(ns)}–{max(ns)}"


def _ylabel(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def _group_title(labels: Mapping[str, str], keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={labels.get(k, MISSING)}" for k in keys) or "all"


def _follows(labels: Sequence[Mapping[str, str]], lead: str, key: str) -> bool:
    """Whether the level of ``key`` is known from that of ``lead`` at every point (a
    factor level's lab profile follows the level)."""
    seen: dict[str, str] = {}
    return all(seen.setdefault(lab.get(lead, MISSING), lab.get(key, MISSING))
               == lab.get(key, MISSING) for lab in labels)


def telling_keys(labels: Sequence[Mapping[str, str]]) -> list[str]:
    """The factors that tell points apart, in order, leaving out one whose level follows
    from a factor kept before it."""
    kept: list[str] = []
    for key in dict.fromkeys(k for lab in labels for k in lab):
        if len({lab.get(key, MISSING) for lab in labels}) < 2:
            continue
        if not any(_follows(labels, k, key) for k in kept):
            kept.append(key)
    return kept


def point_legend(labels: Sequence[Mapping[str, str]], titles: Sequence[str]
                 ) -> tuple[str, list[str]]:
    """(legend title, one entry per point): the points' titles when they fit a legend
    as they are (a label template's names), else the levels of the factors telling
    the points apart, named once in the title ("vcenter, sessions": "baseline, 8"),
    so that no two entries are cut into the same text."""
    if len(set(titles)) == len(titles) and all(len(t) <= MAX_LABEL for t in titles):
        return "point", list(titles)
    keys = telling_keys(labels)
    if not keys:
        return "point", list(titles)
    return ", ".join(keys), [", ".join(lab.get(k, MISSING) for k in keys) for lab in labels]


def draw_series(
    series: Series,
    factors: Sequence[str],
    ids: ChartIds,
    *,
    mode: str,
    prefer: str | None = None,
    x: str | None = None,
    reference: float | None = None,
    reference_label: str = "",
    title: str = "",
    template: str | None = None,
    ideal: str | None = None,
    counts: Collection[str] = (),
    labelled: Mapping[str, Collection[float]] | None = None,
) -> tuple[str, str]:
    """Pick the chart for ``series`` and draw it; returns (svg, what the chart shows).
    ``template``: the scenario's point label template, naming the bars of a bar chart.
    ``ideal``: ``linear`` draws linear scaling from the smallest level of ``x``, ``none``
    draws no ideal (not even a derived figure's own); None: linear only when ``x`` is
    one of ``counts`` (factors that set how many workers, VMs or clients run) and the
    figure is higher-is-better, a derived figure's own ideal always. ``labelled``:
    factor -> levels whose x label a curve over that factor prints first."""
    labels = [lab for lab, _ in series.rows]
    # A factor whose level follows another's (a level's lab profile) names nothing new.
    vary = telling_keys([{f: lab.get(f, MISSING) for f in varying(labels, factors)}
                         for lab in labels])
    if x is not None and x not in vary and x in varying(labels, factors):
        vary.append(x)
    if x is None and prefer != "bar":
        x = next((f for f in vary if numeric_factor(labels, f)), None)
        if x is not None and len(vary) > 2:
            x = None  # three varying factors read better as tables and bars
    ylabel = _ylabel(series.name, series.unit)
    declared = series.ideals is not None and ideal != "none"
    linear = series.ideals is None and (ideal == "linear" or (
        ideal is None and x in counts and series.better == "higher"))
    if x is None and len(vary) < 2 and declared:
        return _bars_with_ideal(series, vary, ids, mode, ylabel, title)
    if x is not None and (prefer in (None, "line")):
        return _curve(series, vary, x, ids, mode, ylabel, reference, reference_label, title,
                      linear=linear, declared=declared,
                      first=(labelled or {}).get(x, ()))
    if len(vary) == 2:
        return _grouped(series, vary, ids, mode, ylabel, reference, reference_label, title)
    bars = []
    for i, (lab, s) in enumerate(series.rows):
        low, high = whiskers(s, mode)
        name = " / ".join(lab.get(f, MISSING) for f in vary) or "all"
        if template and lab:
            name = render_label(template, lab)
        bars.append(Bar(name, s.mean if s and s.n else None, low, high, series.marks_of(i)))
    svg = bar_chart_svg(bars, ylabel, chart_id=ids.next(), xlabel=" / ".join(vary),
                        title=title, reference=reference, reference_label=reference_label)
    return svg, "bar = mean per point"


def _bars_with_ideal(series: Series, vary: Sequence[str], ids: ChartIds, mode: str,
                     ylabel: str, title: str) -> tuple[str, str]:
    bars = []
    for i, (lab, s) in enumerate(series.rows):
        low, high = whiskers(s, mode)
        name = " / ".join(lab.get(f, MISSING) for f in vary) or "all"
        bars.append(Bar(name, s.mean if s and s.n else None, low, high, series.marks_of(i)))
    svg = bar_chart_svg(bars, ylabel, chart_id=ids.next(), xlabel=" / ".join(vary),
                        title=title, thresholds=series.ideals, limit_label="ideal")
    return svg, "bar = mean per point; dashed grey = the ideal"


def _grouped(series: Series, vary: Sequence[str], ids: ChartIds, mode: str, ylabel: str,
             reference: float | None, reference_label: str, title: str) -> tuple[str, str]:
    xf, hue = vary[0], vary[1]
    cats = list(dict.fromkeys(lab.get(xf, MISSING) for lab, _ in series.rows))
    hues = list(dict.fromkeys(lab.get(hue, MISSING) for lab, _ in series.rows))
    index = {(lab.get(xf), lab.get(hue)): (s, series.marks_of(i))
             for i, (lab, s) in enumerate(series.rows)}
    groups = []
    for h in hues:
        bars = []
        for c in cats:
            s, marks = index.get((c, h), (None, ()))
            low, high = whiskers(s, mode)
            bars.append(Bar(c, s.mean if s and s.n else None, low, high, marks))
        groups.append((h, bars))
    svg = grouped_bar_chart_svg(cats, groups, ylabel, chart_id=ids.next(), xlabel=xf,
                                legend_title=hue, reference=reference,
                                reference_label=reference_label, title=title)
    return svg, f"bars grouped by {xf}, one colour per {hue}; bar = mean"


def _curve(series: Series, vary: Sequence[str], x: str, ids: ChartIds, mode: str, ylabel: str,
           reference: float | None, reference_label: str, title: str, *, linear: bool,
           declared: bool, first: Collection[float] = ()) -> tuple[str, str]:
    others = telling_keys([{f: lab.get(f, MISSING) for f in vary if f != x}
                           for lab, _ in series.rows]) or [f for f in vary if f != x]
    groups: dict[str, list[int]] = {}
    for i, (lab, _) in enumerate(series.rows):
        # The legend's title names the other factors, entries show their levels.
        name = ", ".join(lab.get(f, MISSING) for f in others) or "all"
        groups.setdefault(name, []).append(i)
    lines, ideal = [], []
    for name, idx in groups.items():
        idx = sorted(idx, key=lambda i: _num(series.rows[i][0].get(x)) or 0.0)
        xs = [_num(series.rows[i][0].get(x)) or 0.0 for i in idx]
        sums = [series.rows[i][1] for i in idx]
        ys = [s.mean if s and s.n else None for s in sums]
        ends = [whiskers(s, mode) for s in sums]
        lines.append(Line(name, xs, ys, [e[0] for e in ends], [e[1] for e in ends],
                          [series.marks_of(i) for i in idx] if series.marks else None))
        if declared or linear:
            ideal.extend(_ideal_line(series, idx, xs, ys, name, len(groups) > 1))
    if ideal and all(list(i.ys) == list(ideal[0].ys) and list(i.xs) == list(ideal[0].xs)
                     for i in ideal):
        ideal = [Line("ideal", ideal[0].xs, ideal[0].ys)]  # the same for every line
    note = "line = mean per point"
    if ideal:
        note += "; dashed = " + (
            series.ideal_name if series.ideals is not None and series.ideal_name
            else "ideal speedup" if series.ideals is not None
            else "ideal linear scaling from the smallest level"
        )
    svg = line_chart_svg(lines, ylabel, chart_id=ids.next(), xlabel=x, ideal=ideal,
                         threshold=reference, title=title, legend_title=", ".join(others),
                         threshold_label=reference_label or "reference", label_first=first)
    if reference is not None:
        note += f"; dashed red line = {reference_label or 'reference'}"
    return svg, note


def _ideal_line(series: Series, idx: list[int], xs: list[float], ys: list[float | None],
                name: str, many: bool) -> list[Line]:
    label = (series.ideal_name if series.ideals is not None and series.ideal_name
             else "ideal") + (f" ({name})" if many else "")
    if series.ideals is not None:
        ideal = [series.ideals[i] for i in idx]
        return [Line(label, xs, ideal)] if any(v is not None for v in ideal) else []
    if not xs or ys[0] is None or xs[0] <= 0:
        return []
    y0, x0 = ys[0], xs[0]
    return [Line(label, xs, [y0 * xv / x0 for xv in xs])]


def scaled(series: Series) -> Series:
    """``series`` in the unit its means read best in (µs rather than 0.004 ms)."""
    sc = choose(series.unit, [s.mean for _, s in series.rows if s is not None])
    if sc.factor == 1.0:
        return dataclasses.replace(series, unit=sc.unit)
    ideals = None if series.ideals is None else [sc.value(v) for v in series.ideals]
    marks = tuple(tuple(dataclasses.replace(m, value=sc.value(m.value)) for m in row)
                  for row in series.marks)
    return dataclasses.replace(series, unit=sc.unit, ideals=ideals, marks=marks,
                               rows=[(lab, sc.summary(s)) for lab, s in series.rows])


def caption(series: Series, shows: str, mode: str, extra: str, window: str) -> str:
    unit = series.unit or "no unit"
    main, _, more = shows.partition("; ")
    notes = "".join(f"; {x}" for x in (more, extra, series.mark_note) if x)
    return (f"{series.name} in {unit} ({way_text(series.better)}): {main} over successful "
            f"trials ({_n_text(series.rows)} per point, {window}); {error_text(mode)}"
            f"{notes}.")


# ------------------------------------------------------------------ builders


def metric_series(view: ReportView, metric: str, overrides: Mapping[str, str]) -> Series:
    unit = view.units.get(metric, "")
    rows = []
    for p in view.points:
        s = view.cell(p.point, metric).summary if p.has_data else None
        rows.append((p.labels, s))
    marks, note = _disturbed_marks(view, metric)
    return Series(metric, unit, better(metric, unit, overrides), rows,
                  points=tuple(p.point for p in view.points), marks=marks, mark_note=note)


def _disturbed_marks(view: ReportView, metric: str
                     ) -> tuple[tuple[tuple[TrialMark, ...], ...], str]:
    """Per point of ``view``, the values of ``metric`` in its disturbed trials."""
    from vbench.report.disturbed import chart_note, of_data, trial_marks

    found = of_data(view.data)
    if not any(p.disturbed for p in found.values()):
        return (), ""
    f = view.data.analyzed().figures
    marks = tuple(trial_marks(found.get(p.point), f.trial_values(p.point, metric), p.title)
                  for p in view.points)
    return marks, chart_note(found, sum(len(m) for m in marks))


def derived_series(figs: Sequence[DerivedFigure]) -> Series:
    first = figs[0]
    rows = [(f.labels, f.summary) for f in figs]
    ideals = [f.ideal for f in figs] if any(f.ideal is not None for f in figs) else None
    return Series(first.name, first.unit, first.better, rows, ideals,
                  points=tuple(f.point for f in figs))


def chart(svg: str, cap: str, title: str, kind: str) -> dict[str, Any]:
    return {"svg": Markup(svg), "caption": cap, "title": title, "kind": kind}


def derived_charts(
    derived: DerivedResult, factors: Sequence[str], ids: ChartIds, mode: str, window: str,
    template: str | None = None, names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """A chart per derived figure (of ``names`` only, when given)."""
    out = []
    for name in derived.names() if names is None else names:
        figs = [f for f in derived.named(name) if f.point is not None]
        if not figs or all(f.summary.n == 0 for f in figs):
            continue
        series = scaled(derived_series(figs))
        kind = figs[0].kind
        ref, ref_label, prefer = None, "", None
        if kind == "normalize":
            ref, ref_label, prefer = 1.0, "baseline = 1.0", "bar"
        svg, shows = draw_series(series, factors, ids, mode=mode, prefer=prefer,
                                 reference=ref, reference_label=ref_label, template=template)
        extra = figs[0].reference
        out.append(chart(svg, caption(series, shows, mode, extra, window), name, kind))
    return out


def qos_charts(qos: QosResult, ids: ChartIds, disturbed: Mapping[str, str] | None = None
               ) -> list[dict[str, Any]]:
    """A bar chart per criterion (per subject, or per point when many subjects);
    ``disturbed``: point title -> its disturbed trials' text (vbench/report/disturbed.py),
    said in the caption of a chart with a bar of that point (a bar is a statistic over
    trials: no trial is drawn)."""
    groups: dict[tuple[str, str], list[QosCheck]] = {}
    for c in qos.checks:
        groups.setdefault((c.metric, c.stat), []).append(c)
    out = []
    for (metric, stat), checks in groups.items():
        subjects = list(dict.fromkeys(c.subject_text for c in checks))
        points = list(dict.fromkeys(c.point_title for c in checks))
        unit = checks[0].unit
        ylabel = _ylabel(f"{metric} ({stat})", "") + (f" [{unit}]" if unit else "")
        if len(subjects) == 1 or len(points) > MAX_QOS_SERIES:
            for subject in subjects:
                mine = [c for c in checks if c.subject_text == subject]
                out.append(qos_bar(mine, [c.point_title for c in mine], ylabel, ids,
                                    f"{metric} {subject}".strip(), disturbed))
        else:
            for point in points:
                mine = [c for c in checks if c.point_title == point]
                out.append(qos_bar(mine, [c.subject_text for c in mine], ylabel, ids,
                                    f"{metric} at {point}", disturbed))
    return out


def qos_bar(checks: Sequence[QosCheck], names: Sequence[str], ylabel: str, ids: ChartIds,
             title: str, disturbed: Mapping[str, str] | None = None) -> dict[str, Any]:
    bars = [Bar(n, c.value, None, None) for n, c in zip(names, checks, strict=True)]
    svg = bar_chart_svg(
        bars, ylabel, chart_id=ids.next(), title=title,
        thresholds=[c.threshold for c in checks],
        passed=[None if c.status in ("missing", "error") else c.passed for c in checks],
    )
    failed = sum(1 for c in checks if not c.passed)
    cap = (f"{title}: bar = {checks[0].stat} over the trials of each point, green = pass, "
           f"red = fail; dashed red = the QoS limit. {failed} of {len(checks)} checks fail.")
    said = [f"{p} ({(disturbed or {})[p]})"
            for p in dict.fromkeys(c.point_title for c in checks) if (disturbed or {}).get(p)]
    if said:
        cap += f" Disturbed trials: {'; '.join(said)}."
    return chart(svg, cap, title, "qos")


@dataclass(frozen=True)
class XYLine:
    """Points of a run as (x, y) pairs of two metrics' means, joined in order of x."""

    name: str
    xs: list[float]
    ys: list[float]
    labels: list[Mapping[str, str]]


def metric_xy(x: Series, y: Series, factors: Sequence[str]) -> list[XYLine]:
    """The data of an x-metric chart (IOPS vs latency, the "hockey stick"): per point
    the mean of each metric; one line per level of the varying factors other than the
    swept one (the numeric factor with the most levels). A point missing either mean is
    left out, never drawn at 0."""
    labels = [lab for lab, _ in y.rows]
    vary = varying(labels, factors)
    numeric = [f for f in vary if numeric_factor(labels, f)]
    sweep = max(numeric, key=lambda f: len({lab.get(f) for lab in labels}), default=None)
    others = [f for f in vary if f != sweep]
    lines: dict[str, list[tuple[float, float, Mapping[str, str]]]] = {}
    # Rows are paired by point: a derived figure may have rows for some points only.
    by_point = all(len(s.points) == len(s.rows) for s in (x, y))
    x_at = dict(zip(_row_keys(x, by_point), (s for _, s in x.rows), strict=True))
    for key, (lab, sy) in zip(_row_keys(y, by_point), y.rows, strict=True):
        sx = x_at.get(key)
        vx = sx.mean if sx is not None and sx.n else None
        vy = sy.mean if sy is not None and sy.n else None
        name = _group_title(lab, others) if others else y.name
        bucket = lines.setdefault(name, [])
        if vx is not None and vy is not None and math.isfinite(vx) and math.isfinite(vy):
            bucket.append((vx, vy, lab))
    out = []
    for name, pts in lines.items():
        pts.sort(key=lambda p: p[0])
        out.append(XYLine(name, [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts]))
    return out


def _row_keys(series: Series, by_point: bool) -> list[object]:
    """What identifies each row's point: its index when both series know it, else its
    labels."""
    if by_point:
        return list(series.points)
    return [tuple(sorted(lab.items())) for lab, _ in series.rows]


def xy_chart(x: Series, y: Series, factors: Sequence[str], ids: ChartIds,
             title: str, window: str) -> dict[str, Any]:
    x, y = scaled(x), scaled(y)
    lines = metric_xy(x, y, factors)
    svg = line_chart_svg([Line(ln.name, ln.xs, ln.ys) for ln in lines], _ylabel(y.name, y.unit),
                         chart_id=ids.next(), xlabel=_ylabel(x.name, x.unit), title=title,
                         level_ticks=False)
    dropped = len(y.rows) - sum(len(ln.xs) for ln in lines)
    cap = (f"{y.name} against {x.name}: one dot per point (means over successful trials, "
           f"{window}), joined in order of {x.name}"
           + (f"; {dropped} points without both figures left out" if dropped else "") + ".")
    return chart(svg, cap, title or f"{y.name} vs {x.name}", "xy")


def explicit_charts(
    specs: Sequence[Mapping[str, Any]],
    lookup: Callable[[str], Series | None],
    factors: Sequence[str],
    ids: ChartIds,
    mode: str,
    window: str,
    *,
    counts: Collection[str] = (),
    extra: Callable[[Series], str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The charts ``report.charts`` asks for, in its order: over a factor ``x``, or
    against a metric (``x_metric``, or an ``x`` that names a metric rather than a
    factor). Nothing asked for is dropped without a line in the returned problems.
    ``extra``: more caption text for a series (its CI range)."""
    out, problems = [], []
    for spec in specs:
        metric = str(spec.get("metric"))
        series = lookup(metric)
        if series is None:
            problems.append(f"report.charts: no data for {metric!r}; chart left out")
            continue
        x = spec.get("x")
        x_metric = spec.get("x_metric") or (x if x and x not in factors else None)
        if x_metric:
            xs = lookup(str(x_metric))
            if xs is None:
                problems.append(f"report.charts: no data for {x_metric!r}"
                                + ("" if spec.get("x_metric") else " (not a factor either)")
                                + "; chart left out")
            else:
                out.append(xy_chart(xs, series, factors, ids, str(spec.get("title") or ""),
                                    window))
            continue
        out.append(_spec_chart(spec, scaled(series), factors, ids, mode, window, counts,
                               extra(series) if extra else "", problems))
    return out, problems


def _spec_chart(spec: Mapping[str, Any], series: Series, factors: Sequence[str],
                ids: ChartIds, mode: str, window: str, counts: Collection[str], more: str,
                problems: list[str]) -> dict[str, Any]:
    metric = series.name
    kind = str(spec.get("kind") or ("line" if spec.get("x") else "bar"))
    x = spec.get("x")
    if kind == "line" and x and not all(_num(lab.get(x)) is not None
                                        for lab, _ in series.rows):
        problems.append(f"report.charts: {metric} over {x}: levels are not numbers; "
                        "drawn as bars")
        x, kind = None, "bar"
    title = str(spec.get("title") or "")
    svg, shows = draw_series(series, factors, ids, mode=mode, prefer=kind,
                             x=x if kind == "line" else None, title=title,
                             ideal=spec.get("ideal"), counts=counts)
    return chart(svg, caption(series, shows, mode, more, window), title or metric, kind)
