"""The SNIA PTS steady-state chart of a steady-state study: every round's value at a
deciding point, the measurement window shaded, the window's mean with the PTS report
form's band (mean ± half the allowed range: 90 % and 110 % of the mean for a 20 % data
excursion), and the least-squares line through the window — the report form's picture."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from vbench.analysis.steady_state import SteadyState, rule_of
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

BAND = "#dd8452"


def steady_svg(state: SteadyState, title: str, unit: str, chart_id: str,
               disturbed: Mapping[int, str] | None = None) -> str:
    """One point's rounds (see the module docstring); ``disturbed``: round (its trial)
    -> what disturbed it, drawn as a diamond over its dot."""
    rounds = [(i + 1, v) for i, v in enumerate(state.rounds) if v is not None]
    w = state.window
    values = [v for _, v in rounds]
    if w is not None:
        values += [w.mean * (1 - state.rule.max_excursion / 2),
                   w.mean * (1 + state.rule.max_excursion / 2)]
    canvas = Canvas(width=0.0, height=280.0, left=60.0, right=16.0, top=24.0, bottom=40.0)
    ys, marks = y_scale(canvas, values, zero=False)
    canvas.left = left_margin(marks)
    canvas.width = canvas.left + 520.0 + canvas.right
    n = max(len(state.rounds), state.rule.window)
    xs = Scale(0.5, n + 0.5, canvas.x0, canvas.x1)
    if w is not None:
        _window(canvas, xs, ys, state)
    canvas.title(title)
    canvas.y_axis(ys, marks, f"{state.rule.metric} ({unit})" if unit else state.rule.metric,
                  tick_texts(marks))
    canvas.line(canvas.x0, canvas.y0, canvas.x1, canvas.y0, MUTED, 0.8)
    step = max(1, n // 12)
    for r in range(1, n + 1, step):
        canvas.text(xs(r), canvas.y0 + 13, str(r), size=SMALL)
    canvas.polyline([(xs(r), ys(v)) for r, v in rounds], PALETTE[0], 1.2)
    for r, v in rounds:
        canvas.dot(xs(r), ys(v), PALETTE[0])
        if r in (disturbed or {}):
            canvas.diamond(xs(r), ys(v), label=(disturbed or {})[r], value=v)
    canvas.x_label("round")
    return canvas.svg(chart_id, title)


def _window(canvas: Canvas, xs: Scale, ys: Scale, state: SteadyState) -> None:
    """The window shaded, its mean, the band of half the allowed range either side (a
    window whose rounds stay inside it meets the range rule) and the fitted line."""
    w = state.window
    assert w is not None
    x0, x1 = xs(w.first - 0.5), xs(w.last + 0.5)
    canvas.rect(x0, canvas.y1, x1 - x0, canvas.y0 - canvas.y1, "#4c72b0", 0.10)
    e = state.rule.max_excursion / 2
    canvas.line(x0, ys(w.mean), x1, ys(w.mean), INK, 1.0)
    for k in (1 - e, 1 + e):
        canvas.line(x0, ys(w.mean * k), x1, ys(w.mean * k), BAND, 1.0, dash="5 3")
    span = w.last - w.first
    canvas.line(xs(w.first), ys(w.intercept), xs(w.last), ys(w.intercept + w.slope * span),
                PALETTE[3], 1.4, dash="2 2")
    canvas.text(x0 + 3, ys(w.mean * (1 + e)) - 4, f"±{e * 100:.0f} %", anchor="start",
                size=SMALL, color=BAND)


def steady_charts(data: ReportData, next_id: Callable[[], str]) -> list[dict[str, Any]]:
    """A chart per deciding point of a steady-state study (none for other runs)."""
    from markupsafe import Markup

    from vbench.analysis.steady_answer import point_states
    from vbench.analysis.verdict_build import AnswerInputs
    from vbench.report.disturbed import of_data

    rule = rule_of((data.run.get("scenario") or {}).get("steady_state"))
    if rule is None:
        return []
    inputs = AnswerInputs(data.run, data.points, data.trials, data.analyzed(),
                          tuple(data.headline_metrics))
    f = inputs.analysis.figures
    unit = f.units.get(rule.metric, "")
    found = of_data(data)
    out = []
    for point, state in point_states(inputs, rule).items():
        if not rule.decides(f.points.get(point, {})):
            continue
        title = f"steady-state rounds of {rule.metric} at {f.title(point)}"
        mine = found.get(point)
        marks = {d.trial: d.note(f.title(point)) for d in (mine.disturbed if mine else ())
                 if d.included}
        cap = (f"{title}: {state.text()}. Shaded: the measurement window "
               f"({rule.window} rounds); solid: its mean; dashed: ±"
               f"{rule.max_excursion * 50:.0f} % of it (the rounds' range may be at most "
               f"{rule.max_excursion * 100:.0f} % of the mean); dotted: the least-squares line "
               f"(may change ≤ {rule.max_slope * 100:.0f} % of the mean across the window)."
               + (f" Diamond: a disturbed round ({mine.text()})." if mine and mine.disturbed
                  else ""))
        out.append({"svg": Markup(steady_svg(state, title, unit, next_id(), marks)),
                    "caption": cap, "title": title, "kind": "steady_state"})
    return out
