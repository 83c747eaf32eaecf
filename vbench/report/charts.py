"""Bar charts as inline SVG (see :mod:`.svg`): a bar per point, or bars grouped by one
factor and coloured by another; whiskers from ``low`` to ``high``; reference lines and
per-bar limits. The value axis always holds every mark drawn, limits included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vbench.report.disturbed import MARK_LABEL
from vbench.report.svg import (
    DISTURBED,
    FONT,
    INK,
    MUTED,
    PALETTE,
    SMALL,
    Canvas,
    Legend,
    TrialMark,
    left_margin,
    short,
    text_width,
    y_scale,
)

_BAR_COLOR = "#4c72b0"
_PASS = "#2e7d32"
_FAIL = "#b00020"
_PALETTE = PALETTE
_LABEL_BARS_UP_TO = 12  # print the mean inside each bar up to this many bars
_ROTATE = 35.0


@dataclass(frozen=True)
class Bar:
    """One bar: a point's mean with the whiskers' ends (None when no data), and the
    values of its disturbed trials (drawn as diamonds over it)."""

    label: str
    mean: float | None
    low: float | None
    high: float | None
    marks: tuple[TrialMark, ...] = ()

    @property
    def has_data(self) -> bool:
        return self.mean is not None and math.isfinite(self.mean)


def _short(label: str) -> str:
    return short(label)


def mark_values(bars: Sequence[Bar]) -> list[float]:
    """The disturbed trials' values: the value axis holds them too."""
    return [m.value for b in bars if b.has_data for m in b.marks]


def add_mark_legend(legend: Legend, marked: bool) -> None:
    if marked:
        legend.add(MARK_LABEL, DISTURBED, "diamond")


def draw_marks(canvas: Canvas, x: float, marks: Sequence[TrialMark], ys: object,
               spread: float = 6.0) -> None:
    """Each disturbed trial's value at ``x`` (several side by side)."""
    for i, m in enumerate(marks):
        canvas.diamond(x + (i - (len(marks) - 1) / 2) * spread,
                       ys(m.value), label=m.label, value=m.value)  # type: ignore[operator]


def value_label(x: float) -> str:
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(a)))}f}" if a else "0"


def _category_canvas(labels: Sequence[str], band: float, legend: Legend, top: float
                     ) -> tuple[Canvas, bool]:
    """A canvas wide enough for ``len(labels)`` bands; tick labels turn when they would
    collide."""
    widest = max((text_width(short(lab), SMALL) for lab in labels), default=0.0)
    rotate = widest > band * 0.92
    drop = widest * math.sin(math.radians(_ROTATE)) + 8 if rotate else 0.0
    bottom = 38.0 + drop
    plot_w = max(470.0, band * len(labels))
    right = 16.0 + legend.width()
    canvas = Canvas(width=0.0, height=300.0 + drop, left=60.0, right=right, top=top,
                    bottom=bottom)
    canvas.width = canvas.left + plot_w + right
    return canvas, rotate


def _finish_axes(canvas: Canvas, marks: list[float], plot_w: float,
                 labels: Sequence[str] = (), rotate: bool = False) -> None:
    """Fix the left margin to the widest tick label (and to the first turned category
    label, which reaches left of its bar), keeping the plot width."""
    canvas.left = left_margin(marks)
    if rotate and labels:
        reach = text_width(short(labels[0]), SMALL) * math.cos(math.radians(_ROTATE))
        canvas.left = max(canvas.left, reach - plot_w / len(labels) / 2 + 8)
    canvas.width = canvas.left + plot_w + canvas.right


def _x_labels(canvas: Canvas, labels: Sequence[str], centres: Sequence[float],
              rotate: bool) -> None:
    for lab, x in zip(labels, centres, strict=True):
        if rotate:
            canvas.text(x + 3, canvas.y0 + 12, short(lab), anchor="end", size=SMALL,
                        rotate=-_ROTATE)
        else:
            canvas.text(x, canvas.y0 + 14, short(lab), size=SMALL)


def _no_data(canvas: Canvas, x: float, base: float, size: float = SMALL) -> None:
    canvas.text(x + 3, base - 4, "no data", anchor="start", size=size, color=_FAIL,
                rotate=-90)


def _bar(canvas: Canvas, x: float, w: float, b: Bar, ys: object, base: float, color: str,
         label: bool) -> None:
    y = ys(b.mean)  # type: ignore[operator]
    canvas.rect(x - w / 2, min(y, base), w, abs(base - y), color)
    if b.low is not None or b.high is not None:
        lo = ys(b.low if b.low is not None else b.mean)  # type: ignore[operator]
        hi = ys(b.high if b.high is not None else b.mean)  # type: ignore[operator]
        canvas.whisker(x, lo, hi, cap=min(4.0, w / 3))
    if label and abs(base - y) >= 16 and w >= 22:
        canvas.text(x, (y + base) / 2 + 3.5, value_label(float(b.mean)),  # type: ignore[arg-type]
                    size=min(SMALL, w / 3.2), color="#ffffff")
    elif label and w >= 22 and y <= base:
        # Too short to hold its figure (14 ms against a 500 ms limit): the figure sits
        # above the bar (and its whisker), so a short bar still reads as a number.
        top = min(y, ys(b.high)) if b.high is not None else y  # type: ignore[operator]
        canvas.text(x, top - 4, value_label(float(b.mean)),  # type: ignore[arg-type]
                    size=min(SMALL, w / 3.2), color=INK)


def bar_chart_svg(
    bars: Sequence[Bar],
    ylabel: str,
    *,
    chart_id: str,
    xlabel: str = "",
    title: str = "",
    reference: float | None = None,
    reference_label: str = "",
    thresholds: Sequence[float | None] | None = None,
    passed: Sequence[bool | None] | None = None,
    limit_label: str = "QoS limit",
) -> str:
    """A bar per point, whiskers from ``low`` to ``high``; returns inline SVG text.

    ``chart_id`` (an HTML id: letters, digits, ``-``) becomes the root element's id.
    ``reference`` draws a dashed line across the chart (1.0 for normalised figures);
    ``thresholds`` a limit per bar (QoS, or an ideal), with bars coloured by ``passed``.
    """
    legend = Legend()
    limit_color = _FAIL if "QoS" in limit_label else MUTED
    if reference is not None:
        legend.add(reference_label or "reference", "#444444", "dash")
    known = [t for t in thresholds or () if t is not None]
    if known:
        legend.add(limit_label, limit_color, "dash")
    marked = mark_values(bars)
    add_mark_legend(legend, bool(marked))
    n = len(bars)
    band = 58.0 if n <= 8 else 40.0 if n <= 20 else 26.0
    canvas, rotate = _category_canvas([b.label for b in bars], band,
                                      legend, 26.0 if title else 12.0)
    plot_w = canvas.x1 - canvas.x0
    values = [v for b in bars if b.has_data for v in (b.mean, b.low, b.high)]
    ys, marks = y_scale(canvas, [*values, *marked, reference, *known])
    _finish_axes(canvas, marks, plot_w, [b.label for b in bars], rotate)
    canvas.title(title)
    canvas.y_axis(ys, marks, ylabel)
    base = ys(min(max(0.0, marks[0]), marks[-1]))
    step = plot_w / max(1, n)
    centres = [canvas.x0 + step * (i + 0.5) for i in range(n)]
    for i, (b, x) in enumerate(zip(bars, centres, strict=True)):
        if not b.has_data:
            _no_data(canvas, x, base)
            continue
        ok = passed[i] if passed is not None else None
        color = _PASS if ok else _FAIL if ok is False else _BAR_COLOR
        _bar(canvas, x, step * 0.65, b, ys, base, color, n <= _LABEL_BARS_UP_TO)
        draw_marks(canvas, x, b.marks, ys)
    canvas.line(canvas.x0, base, canvas.x1, base, MUTED, 0.8)
    if reference is not None:
        canvas.line(canvas.x0, ys(reference), canvas.x1, ys(reference), "#444444", 1.0, "5 3")
    if known and len(set(known)) == 1:
        canvas.line(canvas.x0, ys(known[0]), canvas.x1, ys(known[0]), limit_color, 1.3, "5 3")
    elif known:
        for t, x in zip(thresholds or (), centres, strict=True):
            if t is not None:
                canvas.line(x - step * 0.42, ys(t), x + step * 0.42, ys(t), limit_color, 1.6,
                            "5 3")
    _x_labels(canvas, [b.label for b in bars], centres, rotate)
    canvas.x_label(xlabel)
    canvas.legend(legend)
    return canvas.svg(chart_id, title or ylabel, _domain_attr(marks))


def grouped_bar_chart_svg(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[Bar]]],
    ylabel: str,
    *,
    chart_id: str,
    xlabel: str = "",
    title: str = "",
    legend_title: str = "",
    reference: float | None = None,
    reference_label: str = "",
) -> str:
    """Bars grouped by category, one colour per series (each series has one Bar per
    category, in order); whiskers as in :func:`bar_chart_svg`."""
    legend = Legend(legend_title)
    for k, (name, _) in enumerate(series):
        legend.add(name, PALETTE[k % len(PALETTE)], "box")
    if reference is not None:
        legend.add(reference_label or "reference", "#444444", "dash")
    marked = [v for _, bars in series for v in mark_values(bars)]
    add_mark_legend(legend, bool(marked))
    n_ser = max(1, len(series))
    band = max(40.0, min(120.0, 16.0 * n_ser + 14.0))
    canvas, rotate = _category_canvas(categories, band, legend, 26.0 if title else 12.0)
    plot_w = canvas.x1 - canvas.x0
    values = [v for _, bars in series for b in bars if b.has_data
              for v in (b.mean, b.low, b.high)]
    ys, marks = y_scale(canvas, [*values, *marked, reference])
    _finish_axes(canvas, marks, plot_w, categories, rotate)
    canvas.title(title)
    canvas.y_axis(ys, marks, ylabel)
    base = ys(min(max(0.0, marks[0]), marks[-1]))
    step = plot_w / max(1, len(categories))
    width = step * 0.8 / n_ser
    centres = [canvas.x0 + step * (i + 0.5) for i in range(len(categories))]
    for k, (_, bars) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        for b, c in zip(bars, centres, strict=False):
            x = c + (k - (n_ser - 1) / 2) * width
            if b.has_data:
                _bar(canvas, x, width * 0.92, b, ys, base, color, False)
                draw_marks(canvas, x, b.marks, ys, min(6.0, width / 3))
            else:
                _no_data(canvas, x, base, 8.0)
    canvas.line(canvas.x0, base, canvas.x1, base, MUTED, 0.8)
    if reference is not None:
        canvas.line(canvas.x0, ys(reference), canvas.x1, ys(reference), "#444444", 1.0, "5 3")
    _x_labels(canvas, categories, centres, rotate)
    canvas.x_label(xlabel)
    canvas.legend(legend)
    return canvas.svg(chart_id, title or ylabel, _domain_attr(marks))


def _domain_attr(marks: Sequence[float]) -> str:
    """The value axis range on the root element: what a test (or a script) can read
    without parsing the drawing."""
    return f' data-y-min="{marks[0]:g}" data-y-max="{marks[-1]:g}"'


__all__ = ["FONT", "Bar", "bar_chart_svg", "grouped_bar_chart_svg", "value_label"]
