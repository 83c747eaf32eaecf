"""Charts over a numeric x axis, as inline SVG: scaling curves (with the ideal) and time
series (with the steady-state window shaded). Same conventions as :mod:`.charts`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from vbench.report.charts import _FAIL, _PALETTE, _short, chart_figure, finish

MAX_TRACE_POINTS = 300  # a trace is averaged into this many buckets before drawing
_MAX_LEGEND = 10


@dataclass(frozen=True)
class Line:
    """One curve: a y (with its whisker ends) per x; None where there is no figure."""

    name: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    lows: Sequence[float | None] | None = None
    highs: Sequence[float | None] | None = None


def _log_x(xs: Sequence[float]) -> bool:
    pos = [x for x in xs if x > 0]
    return len(pos) == len(xs) and len(xs) >= 3 and max(pos) / min(pos) >= 16


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
) -> str:
    """Curves with whiskers, dashed grey ideal curves and an optional QoS limit line."""
    all_x = sorted({float(x) for ln in [*lines, *ideal] for x in ln.xs})
    with chart_figure((6.4, 3.9)) as (fig, ax):
        for k, ln in enumerate(lines):
            color = _PALETTE[k % len(_PALETTE)]
            pts = [(x, y, i) for i, (x, y) in enumerate(zip(ln.xs, ln.ys, strict=True))
                   if y is not None and math.isfinite(y)]
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            ax.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.4, color=color,
                    label=_short(ln.name) if len(lines) > 1 else None)
            if ln.lows is not None and ln.highs is not None:
                lo = [y - (ln.lows[i] if ln.lows[i] is not None else y) for _, y, i in pts]
                hi = [(ln.highs[i] if ln.highs[i] is not None else y) - y for _, y, i in pts]
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor=color, capsize=3,
                            linewidth=0.9)
        for k, ln in enumerate(ideal):
            pts = [(x, y) for x, y in zip(ln.xs, ln.ys, strict=True) if y is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="--",
                        color="#666666" if k == 0 else "#999999", linewidth=1,
                        label=ln.name if k == 0 or len(ideal) <= 3 else None)
        if threshold is not None:
            ax.axhline(threshold, color=_FAIL, linestyle="--", linewidth=1.2, label="QoS limit")
        if _log_x(all_x):
            ax.set_xscale("log", base=2)
        ax.set_xticks(all_x)
        ax.set_xticklabels([f"{x:g}" for x in all_x])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(color="#e4e4e4", linewidth=0.6)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(title=legend_title or None, fontsize=7, title_fontsize=7, frameon=False)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        return finish(fig, chart_id)


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
) -> str:
    """Traces overlaid on time since trial start, one colour per point, the steady-state
    window shaded."""
    with chart_figure((7.2, 3.2)) as (fig, ax):
        if window is not None:
            ax.axvspan(window[0], window[1], color="#4c72b0", alpha=0.10, linewidth=0)
        # One collection for all traces: a report may hold dozens of these charts, and
        # one artist draws far faster than one line per trace.
        segs = [np.column_stack(downsample(tr.t, tr.v)) for tr in traces]
        colors = [_PALETTE[tr.group % len(_PALETTE)] for tr in traces]
        ax.add_collection(LineCollection(segs, colors=colors, linewidths=0.8, alpha=0.85))
        ax.autoscale_view()
        groups = sorted({tr.group for tr in traces})
        if 1 < len(groups) <= _MAX_LEGEND and len(group_names) >= len(groups):
            handles = [Line2D([], [], color=_PALETTE[g % len(_PALETTE)], linewidth=1.2)
                       for g in groups]
            ax.legend(handles, [_short(group_names[g]) for g in groups], fontsize=7,
                      frameon=False, loc="best")
        ax.xaxis.set_major_locator(MaxNLocator(8))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_xlabel("seconds since the trial's warm-up started")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        # Fixed margins instead of tight_layout: measurably faster for many charts.
        fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.16)
        return finish(fig, chart_id, tight=False)
