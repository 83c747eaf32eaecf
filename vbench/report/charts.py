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
from collections.abc import Sequence
from dataclasses import dataclass

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


def _draw(ax: Axes, bars: Sequence[Bar]) -> list[float]:
    """Bars, min–max whiskers and "no data" marks; returns the means drawn."""
    xs = [i for i, b in enumerate(bars) if b.has_data]
    means = [float(bars[i].mean) for i in xs]  # type: ignore[arg-type]
    rects = ax.bar(xs, means, color=_BAR_COLOR, width=0.65)
    if xs:
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
    bars: Sequence[Bar], ylabel: str, *, chart_id: str, xlabel: str = "", title: str = ""
) -> str:
    """A bar per point, whiskers from ``low`` to ``high``; returns inline SVG text.

    ``chart_id`` (an HTML id: letters, digits, ``-``) becomes the root element's id and
    prefixes every inner id, so that several charts can live in one page.
    """
    n = len(bars)
    rotate = n > _MANY_POINTS or any(len(b.label) > 14 for b in bars)
    size = (max(5.0, min(16.0, 1.2 + 0.55 * n)), 4.4 if rotate else 3.6)
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "vbench", "font.size": 9}):
        # An Agg canvas of our own, not pyplot: no GUI and no global backend switch
        # for a caller that uses pyplot itself.
        fig = Figure(figsize=size)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        _style(ax, bars, _draw(ax, bars), rotate)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return clean_svg(buf.getvalue(), chart_id)
