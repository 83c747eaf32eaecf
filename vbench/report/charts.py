"""Charts as inline SVG (matplotlib, Agg-family backend, no pyplot global state).

The SVG is cleaned for embedding in an HTML page: no XML prolog, no DOCTYPE, no RDF
metadata and no namespace URLs, so a report holds no external reference at all.
Text stays text (``svg.fonttype = none``): smaller files, selectable labels, and
matplotlib escapes it like any XML text.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_PROLOG = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*", re.IGNORECASE)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_ID = re.compile(r'(\sid=)"([^"]*)"')
_REF = re.compile(r'((?:xlink:)?href="|url\()#')
_BAR_COLOR = "#4c72b0"
_PASS = "#2e7d32"
_FAIL = "#b00020"
# A colour-blind-safe qualitative palette (Okabe–Ito, then greys).
_PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
            "#f0e442", "#000000", "#777777", "#bbbbbb")  # fmt: skip
_RC = {"svg.fonttype": "none", "svg.hashsalt": "vbench", "font.size": 9}
_MANY_POINTS = 6  # rotate tick labels beyond this
_LABEL_BARS_UP_TO = 12
_MAX_TICK_LABEL = 28  # print the mean on each bar up to this many points


@dataclass(frozen=True)
class Bar:
    """One bar: a point's mean with the whiskers' ends (None when no data)."""

    label: str
    mean: float | None
    low: float | None
    high: float | None

    @property
    def has_data(self) -> bool:
        return self.mean is not None and math.isfinite(self.mean)


def clean_svg(svg: str, prefix: str) -> str:
    """Make matplotlib's SVG document embeddable inline in HTML5.

    Element ids get ``prefix`` (matplotlib numbers them the same way in every figure),
    and its catch-all ``*{...}`` style is scoped to this chart.
    """
    svg = _PROLOG.sub("", svg)
    svg = _METADATA.sub("", svg)
    # HTML5 puts <svg> in the SVG namespace (and maps xlink:href) by itself.
    svg = _XMLNS.sub("", svg).strip()
    svg = _ID.sub(lambda m: f'{m.group(1)}"{prefix}-{m.group(2)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}#{prefix}-", svg)
    svg = svg.replace("*{", f"#{prefix} *{{", 1)
    return svg.replace("<svg ", f'<svg id="{prefix}" class="chart" ', 1)


def _value_label(x: float) -> str:
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(a)))}f}" if a else "0"


def _short(label: str) -> str:
    """Tick labels stay readable; the tables carry the full point labels."""
    return label if len(label) <= _MAX_TICK_LABEL else label[: _MAX_TICK_LABEL - 1] + "…"


def _whiskers(bars: Sequence[Bar]) -> tuple[list[float], list[float]]:
    """Distances from each mean down to ``low`` and up to ``high`` (0 when unknown)."""
    below = [b.mean - b.low if b.low is not None else 0.0 for b in bars]  # type: ignore[operator]
    above = [b.high - b.mean if b.high is not None else 0.0 for b in bars]  # type: ignore[operator]
    return below, above


def _draw(ax: Axes, bars: Sequence[Bar], colors: Sequence[str] | None = None) -> list[float]:
    """Bars, whiskers and "no data" marks; returns the means drawn."""
    xs = [i for i, b in enumerate(bars) if b.has_data]
    means = [float(bars[i].mean) for i in xs]  # type: ignore[arg-type]
    color: Any = [colors[i] for i in xs] if colors is not None else _BAR_COLOR
    rects = ax.bar(xs, means, color=color, width=0.65)
    if any(bars[i].low is not None or bars[i].high is not None for i in xs):
        below, above = _whiskers([bars[i] for i in xs])
        ax.errorbar(xs, means, yerr=[below, above], fmt="none", ecolor="#222222", capsize=4)
        if len(bars) <= _LABEL_BARS_UP_TO:
            # Inside the bar: above it the label would collide with the whisker.
            top = max((abs(m) for m in means), default=0.0)
            labels = [_value_label(m) if abs(m) >= 0.15 * top else "" for m in means]
            ax.bar_label(rects, labels=labels, label_type="center", color="white", fontsize=7)
    for i, b in enumerate(bars):
        if not b.has_data:
            ax.text(i, 0, "no data", rotation=90, ha="center", va="bottom", color="#b00020")
    return means


def _style(ax: Axes, bars: Sequence[Bar], means: list[float], rotate: bool) -> None:
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels(
        [_short(b.label) for b in bars],
        rotation=40 if rotate else 0,
        ha="right" if rotate else "center",
    )
    ax.set_xlim(-0.6, len(bars) - 0.4)
    if all(m >= 0 for m in means):
        ax.set_ylim(bottom=0)  # throughput-like figures: bars must start at zero
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


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

    ``chart_id`` (an HTML id: letters, digits, ``-``) becomes the root element's id and
    prefixes every inner id, so that several charts can live in one page.
    ``reference`` draws a dashed line across the chart (1.0 for normalised figures);
    ``thresholds`` a limit per bar (QoS), with bars coloured by ``passed``.
    """
    n = len(bars)
    rotate = n > _MANY_POINTS or any(len(b.label) > 14 for b in bars)
    size = (max(5.0, min(16.0, 1.2 + 0.55 * n)), 4.4 if rotate else 3.6)
    with chart_figure(size) as (fig, ax):
        colors = None
        if passed is not None:
            colors = [_PASS if ok else _FAIL if ok is False else _BAR_COLOR for ok in passed]
        _style(ax, bars, _draw(ax, bars, colors), rotate)
        if reference is not None:
            ax.axhline(reference, color="#444444", linestyle="--", linewidth=1,
                       label=reference_label or None)
        if thresholds is not None:
            _threshold_marks(ax, thresholds, limit_label)
        if reference_label or thresholds is not None:
            ax.legend(loc="best", fontsize=7, frameon=False)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        return finish(fig, chart_id)


def _threshold_marks(ax: Axes, thresholds: Sequence[float | None], label: str) -> None:
    """A dashed segment over each bar at its limit (one line when all are equal): red
    for a QoS limit, grey for anything else (an ideal)."""
    known = [t for t in thresholds if t is not None]
    if not known:
        return
    color = _FAIL if "QoS" in label else "#555555"
    if len(set(known)) == 1:
        ax.axhline(known[0], color=color, linestyle="--", linewidth=1.2, label=label)
        return
    first = True
    for i, t in enumerate(thresholds):
        if t is None:
            continue
        ax.hlines(t, i - 0.42, i + 0.42, colors=color, linestyles="--", linewidth=1.5,
                  label=label if first else None)
        first = False


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
    n_cat, n_ser = len(categories), max(1, len(series))
    width = 0.8 / n_ser
    rotate = n_cat > _MANY_POINTS or any(len(c) > 14 for c in categories)
    size = (max(5.0, min(16.0, 1.6 + 0.35 * n_cat * n_ser)), 4.4 if rotate else 3.8)
    with chart_figure(size) as (fig, ax):
        means: list[float] = []
        for k, (name, bars) in enumerate(series):
            offset = (k - (n_ser - 1) / 2) * width
            xs = [i + offset for i, b in enumerate(bars) if b.has_data]
            ms = [float(b.mean) for b in bars if b.has_data]  # type: ignore[arg-type]
            ax.bar(xs, ms, width=width * 0.95, label=_short(name), color=_PALETTE[k % 10])
            if xs:
                below, above = _whiskers([b for b in bars if b.has_data])
                ax.errorbar(xs, ms, yerr=[below, above], fmt="none", ecolor="#222222",
                            capsize=2)
            for i, b in enumerate(bars):
                if not b.has_data:
                    ax.text(i + offset, 0, "no data", rotation=90, ha="center", va="bottom",
                            color=_FAIL, fontsize=6)
            means += ms
        ax.set_xticks(range(n_cat))
        ax.set_xticklabels([_short(c) for c in categories], rotation=40 if rotate else 0,
                           ha="right" if rotate else "center")
        if all(m >= 0 for m in means):
            ax.set_ylim(bottom=0)
        if reference is not None:
            ax.axhline(reference, color="#444444", linestyle="--", linewidth=1,
                       label=reference_label or None)
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.legend(title=legend_title or None, fontsize=7, title_fontsize=7, frameon=False,
                  loc="best")
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        return finish(fig, chart_id)


@contextmanager
def chart_figure(size: tuple[float, float]) -> Iterator[tuple[Figure, Axes]]:
    """A figure on its own Agg canvas with the report's style."""
    with rc_context(_RC):
        # An Agg canvas of our own, not pyplot: no GUI and no global backend switch
        # for a caller that uses pyplot itself.
        fig = Figure(figsize=size)
        FigureCanvasAgg(fig)
        yield fig, fig.add_subplot()


def finish(fig: Figure, chart_id: str, *, tight: bool = True) -> str:
    """The figure as inline SVG (call inside :func:`chart_figure`)."""
    if tight:
        fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return clean_svg(buf.getvalue(), chart_id)
