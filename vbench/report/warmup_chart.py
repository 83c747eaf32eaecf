"""The chart of an automatic warm-up (``phases.warmup: auto``): what the detector saw in
one trial — the workload's rate at every observation — with where MSER-5 found it
settled (dashed) and where the warm-up ended (solid), from the observations the driver
kept beside the trial's raw outputs (``raw/<point>-<trial>/``, vbench/analysis/warmup.py
``AUTO_WARMUP_FILE``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.analysis.warmup import AUTO_WARMUP_FILE
from vbench.report.svg import (
    INK,
    MUTED,
    PALETTE,
    SMALL,
    Canvas,
    Scale,
    left_margin,
    tick_texts,
    y_scale,
)

if TYPE_CHECKING:
    from vbench.report.data import ReportData

MOST_CHARTS = 4  # the first trial of the first points: enough to see what it did


def kept_warmup(run_dir: str | Path | None, point: int, trial: int) -> dict[str, Any] | None:
    """The observations an automatic warm-up kept for one trial (None: none kept)."""
    if not run_dir:
        return None
    path = Path(run_dir) / "raw" / f"{point}-{trial}" / AUTO_WARMUP_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("iops") else None


def warmup_svg(doc: dict[str, Any], title: str, chart_id: str) -> str:
    """The observations over seconds since the warm-up started, the settling point and
    the end."""
    step = float(doc.get("interval_s") or 1.0)
    values = [float(v) for v in doc["iops"]]
    end = len(values) * step
    canvas = Canvas(width=0.0, height=240.0, left=60.0, right=16.0, top=24.0, bottom=40.0)
    ys, marks = y_scale(canvas, values)
    canvas.left = left_margin(marks)
    canvas.width = canvas.left + 520.0 + canvas.right
    xs = Scale(0.0, max(end, step), canvas.x0, canvas.x1)
    canvas.title(title)
    canvas.y_axis(ys, marks, "IO/s", tick_texts(marks))
    canvas.line(canvas.x0, canvas.y0, canvas.x1, canvas.y0, MUTED, 0.8)
    canvas.polyline([(xs((i + 1) * step), ys(v)) for i, v in enumerate(values)], PALETTE[0], 1.2)
    settled = doc.get("settled_at")
    if isinstance(settled, int):
        x = xs(settled * step)
        canvas.line(x, canvas.y1, x, canvas.y0, PALETTE[3], 1.2, dash="5 3")
        canvas.text(x + 3, canvas.y1 + 10, f"settled {settled * step:.1f} s", anchor="start",
                    size=SMALL, color=PALETTE[3])
    canvas.line(xs(end), canvas.y1, xs(end), canvas.y0, INK, 1.2)
    canvas.x_label("seconds since the warm-up started (the steady window follows the end)")
    return canvas.svg(chart_id, title)


def warmup_charts(data: ReportData, next_id: Callable[[], str]) -> list[dict[str, Any]]:
    """The first ok trial's automatic warm-up at each of the first points (none for a
    run without ``phases.warmup: auto``)."""
    from markupsafe import Markup

    from vbench.config.warmup import auto_cap

    cap = auto_cap((data.run.get("scenario") or {}).get("phases"))
    if cap is None:
        return []
    firsts: dict[int, int] = {}
    for t in sorted(data.trials, key=lambda t: (int(t["point"]), int(t["trial"]))):
        if t.get("status") == "ok":
            firsts.setdefault(int(t["point"]), int(t["trial"]))
    out = []
    for point, trial in list(firsts.items())[:MOST_CHARTS]:
        doc = kept_warmup(data.run.get("run_dir"), point, trial)
        if doc is None:
            continue
        title = f"automatic warm-up at {data.analysis.figures.title(point)}, trial {trial}"
        cap_text = f"{cap:g} s"
        cap_note = (f"it ran to the cap of {cap_text}: not settled ({doc.get('reason')})"
                    if doc.get("settled_at") is None
                    else f"MSER-5 found it settled at the dashed line (cap {cap_text})")
        caption = (f"{title}: the rate at every observation ({doc.get('interval_s')} s) of "
                   f"the warm-up; {cap_note}; the solid line is where the warm-up ended "
                   "and the measured window began.")
        out.append({"svg": Markup(warmup_svg(doc, title, next_id())), "caption": caption,
                    "title": title, "kind": "warmup_auto"})
    return out
