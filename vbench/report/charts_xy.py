"""Charts over a numeric x axis, as inline SVG (see :mod:`.svg`): scaling curves (with
whiskers, an ideal and a limit when asked for), a metric against another metric, and time
series with the steady-state window shaded."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from vbench.report.charts import _FAIL, _domain_attr, add_mark_legend, draw_marks
from vbench.report.svg import (
    DISTURBED,
    INK,
    MUTED,
    PALETTE,
    SMALL,
    Canvas,
    Legend,
    Scale,
    TrialMark,
    domain,
    fitting_labels,
    left_margin,
    tick_texts,
    ticks,
    y_scale,
)

MAX_TRACE_POINTS = 300  # a trace is averaged into this many buckets before drawing
SMALL_TRACE_POINTS = 120  # … in a small multiple
_MAX_LEGEND = 10
_IDEAL = ("#555555", "#999999")


@dataclass(frozen=True)
class Line:
    """One curve: a y (with its whisker ends) per x; None where there is no figure;
    ``marks``: per x, the values of its disturbed trials (diamonds)."""

    name: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    lows: Sequence[float | None] | None = None
    highs: Sequence[float | None] | None = None
    marks: Sequence[Sequence[TrialMark]] | None = None

    def mark_values(self) -> list[float]:
        return [m.value for i, ms in enumerate(self.marks or ())
                if i < len(self.ys) and _finite(self.ys[i]) for m in ms]


def _log_x(xs: Sequence[float]) -> bool:
    pos = [x for x in xs if x > 0]
    return len(pos) == len(xs) and len(xs) >= 3 and max(pos) / min(pos) >= 16


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def line_chart_svg(
    lines: Sequence[Line],
    ylabel: str,
    *,
    chart_id: str,
    xlabel: str = "",
    title: str = "",
    ideal: Sequence[Line] = (),
    threshold: float | None = None,
    legend_title: str = "",
    level_ticks: bool = True,
    threshold_label: str = "QoS limit",
    label_first: Collection[float] = (),
) -> str:
    """Curves with whiskers, dashed grey ideal curves and an optional QoS limit line.

    ``level_ticks``: a tick at every x of the data (factor levels); else round ticks (an x
    that is a measured figure). The y axis holds the ideal and the limit too.
    ``label_first``: levels whose x label is printed before any other (a find-max
    answer's highest pass and lowest fail) when labels would collide."""
    legend = Legend(legend_title)
    for k, ln in enumerate(lines):
        if len(lines) > 1:
            legend.add(ln.name, PALETTE[k % len(PALETTE)], "line")
    for k, ln in enumerate(ideal):
        if k == 0 or len(ideal) <= 3 or len(ideal) == len(lines):
            legend.add(ln.name, _ideal_color(k, ideal, lines), "dash")
    if threshold is not None:
        legend.add(threshold_label, _FAIL, "dash")
    marked = [v for ln in lines for v in ln.mark_values()]
    add_mark_legend(legend, bool(marked))
    canvas = Canvas(width=0.0, height=320.0, left=60.0, right=16.0 + legend.width(),
                    top=26.0 if title else 12.0, bottom=42.0)
    plot_w = 470.0
    ys_all = [v for ln in lines for seq in (ln.ys, ln.lows or (), ln.highs or ())
              for v in seq]
    ys_all += [v for ln in ideal for v in ln.ys]
    ys, marks = y_scale(canvas, [*ys_all, *marked, threshold])
    canvas.left = left_margin(marks)
    canvas.width = canvas.left + plot_w + canvas.right
    all_x = sorted({float(x) for ln in [*lines, *ideal] for x in ln.xs if _finite(x)})
    xs, x_marks = _x_scale(canvas, all_x, level_ticks)
    canvas.title(title)
    canvas.y_axis(ys, marks, ylabel)
    canvas.line(canvas.x0, canvas.y0, canvas.x1, canvas.y0, MUTED, 0.8)
    texts = [f"{x:g}" for x in x_marks] if level_ticks else tick_texts(x_marks)
    first = [i for i, x in enumerate(x_marks) if x in label_first]
    shown = fitting_labels([xs(x) for x in x_marks], texts, first=first)
    for x, text, show in zip(x_marks, texts, shown, strict=True):
        canvas.line(xs(x), canvas.y0, xs(x), canvas.y0 + 4, MUTED, 0.8)
        if show:
            canvas.text(xs(x), canvas.y0 + 15, text, size=SMALL)
    if threshold is not None:
        canvas.line(canvas.x0, ys(threshold), canvas.x1, ys(threshold), _FAIL, 1.3, "5 3")
    for k, ln in enumerate(lines):
        _curve(canvas, ln, xs, ys, PALETTE[k % len(PALETTE)])
    # The ideal last, over the measured curves: dashed, it never hides them, and where
    # a measured curve sits on its ideal the ideal still shows.
    for k, ln in enumerate(ideal):
        pts = [(xs(x), ys(y)) for x, y in zip(ln.xs, ln.ys, strict=True) if _finite(y)]
        canvas.polyline(pts, _ideal_color(k, ideal, lines), 1.1, "5 3")
    canvas.x_label(xlabel)
    canvas.legend(legend)
    return canvas.svg(chart_id, title or ylabel, _domain_attr(marks))


def _ideal_color(k: int, ideal: Sequence[Line], lines: Sequence[Line]) -> str:
    """An ideal per measured curve (Little's law per vCenter) takes its curve's colour,
    dashed; one shared ideal is grey."""
    if len(lines) > 1 and len(ideal) == len(lines):
        return PALETTE[k % len(PALETTE)]
    return _IDEAL[min(k, 1)]


def _x_scale(canvas: Canvas, all_x: list[float], level_ticks: bool
             ) -> tuple[Scale, list[float]]:
    if not all_x:
        return Scale(0.0, 1.0, canvas.x0, canvas.x1), []
    pad = 14.0  # the first and last dots stay off the axes
    if level_ticks and _log_x(all_x):
        return Scale(all_x[0], all_x[-1], canvas.x0 + pad, canvas.x1 - pad, log=True), all_x
    if level_ticks:
        lo, hi = (all_x[0], all_x[-1]) if len(all_x) > 1 else (all_x[0] - 1, all_x[0] + 1)
        return Scale(lo, hi, canvas.x0 + pad, canvas.x1 - pad), all_x
    lo, hi = domain(all_x, zero=False)  # a measured x: its range, not from zero
    marks = ticks(lo - (hi - lo) * 0.04, hi + (hi - lo) * 0.04, 6)
    return Scale(marks[0], marks[-1], canvas.x0, canvas.x1), marks


def _curve(canvas: Canvas, ln: Line, xs: Scale, ys: Scale, color: str) -> None:
    pts = [(i, float(x), float(y)) for i, (x, y) in enumerate(zip(ln.xs, ln.ys, strict=True))
           if _finite(y) and _finite(x)]  # type: ignore[arg-type]
    canvas.polyline([(xs(x), ys(y)) for _, x, y in pts], color, 1.5)
    for i, x, y in pts:
        if ln.lows is not None and ln.highs is not None:
            lo = ln.lows[i] if _finite(ln.lows[i]) else y
            hi = ln.highs[i] if _finite(ln.highs[i]) else y
            if lo != hi:
                canvas.whisker(xs(x), ys(lo), ys(hi), color, 3.0)  # type: ignore[arg-type]
        canvas.dot(xs(x), ys(y), color)
        if ln.marks is not None and i < len(ln.marks):
            draw_marks(canvas, xs(x), ln.marks[i], ys)


@dataclass(frozen=True)
class Trace:
    """One time series: seconds (relative to its trial's start) and values."""

    name: str
    group: int  # colour index (the point)
    t: np.ndarray
    v: np.ndarray


def downsample(t: np.ndarray, v: np.ndarray, buckets: int = MAX_TRACE_POINTS) -> tuple[
    np.ndarray, np.ndarray
]:
    """Bucket means over equal time spans: the shape survives, the SVG stays small."""
    if len(t) <= buckets:
        return t, v
    edges = np.linspace(t.min(), t.max(), buckets + 1)
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, buckets - 1)
    counts = np.bincount(idx, minlength=buckets)
    keep = counts > 0
    mean_t = np.bincount(idx, weights=t, minlength=buckets)[keep] / counts[keep]
    mean_v = np.bincount(idx, weights=v, minlength=buckets)[keep] / counts[keep]
    return mean_t, mean_v


def timeseries_svg(
    traces: Sequence[Trace],
    ylabel: str,
    *,
    chart_id: str,
    window: tuple[float, float] | None,
    group_names: Sequence[str] = (),
    title: str = "",
    small: bool = False,
    settled: float | None = None,
    events: Sequence[tuple[float, str]] = (),
) -> str:
    """Traces overlaid on time since trial start, one colour per point, the steady-state
    window shaded. ``small``: a small multiple (title inside, no legend, fewer ticks).
    ``settled``: where the warm-up detector found the series settled (a dashed line).
    ``events``: disturbances of a trial drawn, (seconds since its start, what): a dotted
    line each (vbench/report/disturbed.py); the time axis is the traces' and the window's,
    an event outside it is drawn at its edge (a task that began half an hour before the
    trial must not squeeze every trace into the chart's last pixels)."""
    groups = sorted({tr.group for tr in traces})
    legend = Legend()
    if not small and 1 < len(groups) <= _MAX_LEGEND and len(group_names) >= len(groups):
        for g in groups:
            legend.add(group_names[g], PALETTE[g % len(PALETTE)], "line")
    if not small and events:
        legend.add("a disturbance in a trial", DISTURBED, "dash")
    height, plot_w = (170.0, 280.0) if small else (280.0, 560.0)
    canvas = Canvas(width=0.0, height=height, left=60.0, right=12.0 + legend.width(),
                    top=22.0 if small or title else 10.0, bottom=36.0 if small else 40.0)
    t_all = [float(x) for tr in traces for x in (tr.t.min(), tr.t.max()) if len(tr.t)]
    v_all = [float(x) for tr in traces for x in (tr.v.min(), tr.v.max()) if len(tr.v)]
    ys, marks = y_scale(canvas, v_all, zero=False)
    texts = tick_texts(marks)
    if small and len(marks) > 2:  # a small multiple: only its range, in the full step
        marks, texts = [marks[0], marks[-1]], [texts[0], texts[-1]]
    canvas.left = left_margin(marks) - (14.0 if small else 0.0)
    canvas.width = canvas.left + plot_w + canvas.right
    lo, hi = (min(t_all), max(t_all)) if t_all else (0.0, 1.0)
    if window is not None:
        lo, hi = min(lo, window[0]), max(hi, window[1])
    if settled is not None:
        lo, hi = min(lo, settled), max(hi, settled)
    x_marks = ticks(lo, hi if hi > lo else lo + 1, 4 if small else 8)
    xs = Scale(x_marks[0], x_marks[-1], canvas.x0, canvas.x1)
    if window is not None:
        canvas.rect(xs(window[0]), canvas.y1, xs(window[1]) - xs(window[0]),
                    canvas.y0 - canvas.y1, "#4c72b0", 0.12)
    canvas.title(title or (ylabel if small else ""))
    canvas.y_axis(ys, marks, "" if small else ylabel, texts)
    canvas.line(canvas.x0, canvas.y0, canvas.x1, canvas.y0, MUTED, 0.8)
    for x, text in zip(x_marks, tick_texts(x_marks), strict=True):
        canvas.text(xs(x), canvas.y0 + 13, text, size=SMALL)
    buckets = SMALL_TRACE_POINTS if small else MAX_TRACE_POINTS
    for tr in traces:
        t, v = downsample(tr.t, tr.v, buckets)
        canvas.polyline_arrays(_px(xs, t), _px(ys, v), PALETTE[tr.group % len(PALETTE)],
                               0.9, opacity=0.85)
    if settled is not None:
        canvas.line(xs(settled), canvas.y0, xs(settled), canvas.y1, INK, 1.0, dash="4 3")
        canvas.text(xs(settled) + 3, canvas.y1 + 10, f"settled {settled:.0f} s",
                    anchor="start", size=SMALL)
    for at, what in events:  # one outside the traces (a task begun before the trial) at
        canvas.event_line(xs(min(max(at, xs.lo), xs.hi)), what)  # their edge: its tooltip says
    canvas.x_label("seconds since the trial's warm-up started" if not small else "seconds")
    canvas.legend(legend)
    return canvas.svg(chart_id, title or ylabel, _domain_attr(marks))


def _px(scale: Scale, values: np.ndarray) -> np.ndarray:
    """Pixels of many values at once (a time series has hundreds)."""
    span = (scale.hi - scale.lo) or 1.0
    return scale.p0 + (np.asarray(values, dtype=float) - scale.lo) / span * (scale.p1 - scale.p0)
