"""vcbench's answer: operations per second against Little's law.

In a closed loop, N sessions each busy L seconds per operation (its latency plus the
think time) complete at most N / L operations per second. The measured rate on that
line means the sessions spent their time in vCenter's operations; below it, in the
load generator's own loop. A slower vCenter shows as a longer latency and a lower
line, not as a gap to it. In an open loop the question is whether vCenter kept up with
the offered rate. The report draws ops/s over the sessions factor with Little's law
(per point, from the measured latency) over it, on one chart."""

from __future__ import annotations

from vbench.analysis.answer_kit import best_by, factor_of, mean_at, percent, span
from vbench.analysis.verdict import NO_ANSWER, Answer, AnswerChart, Fact
from vbench.analysis.verdict_build import AnswerInputs

OPS = "vcbench.ops_per_s"
IDEAL = "vcbench.littles_ideal_ops_per_s"
SESSIONS = "vcbench.sessions"
IDEAL_LABEL = "Little's law"  # N / (latency + think) per point: HOW_TO_READ says so
HOW_TO_READ = (
    "In a closed loop, N sessions each busy L s per operation (latency plus think time) "
    "complete at most N / L operations per second: Little's law, drawn dashed over the "
    "measured ops/s. On the line, the sessions spent their time in vCenter; below it, in "
    "vbench's own loop (late starts, logins). A slower vCenter shows as a longer latency "
    "and a lower line, not as a gap to it."
)


def vcbench_answer(inputs: AnswerInputs) -> tuple[Answer, ...]:
    params = inputs.stored.scenario.params
    points = inputs.points_with(OPS)
    if not points:
        return (Answer("vcbench", "vCenter operations", "no ops/s recorded", NO_ANSWER,
                       figures=(inputs.figure(None, OPS),)),)
    if str(params.get("loop") or "closed") == "open":
        return (_open_loop(inputs, points),)
    return (_closed_loop(inputs, points),)


def _chart(inputs: AnswerInputs, ideal: str | None) -> AnswerChart:
    return AnswerChart(OPS, x=factor_of(inputs, SESSIONS), ideal=ideal,
                       ideal_label=IDEAL_LABEL if ideal else "",
                       title="ops/s against Little's law" if ideal else "ops/s")


def _closed_loop(inputs: AnswerInputs, points: list[int]) -> Answer:
    best = best_by(inputs, OPS, points)
    assert best is not None  # points_with gave points with values
    ratios, details = [], []
    for p in points:
        ops, ideal = mean_at(inputs, p, OPS), mean_at(inputs, p, IDEAL)
        ratio = ops / ideal if ops is not None and ideal else None
        if ratio is not None:
            ratios.append(ratio)
        details.append(f"{inputs.point_title(p)}: {inputs.figure(p, OPS).value_text()}, "
                       f"Little's law {_ops(ideal)} ({percent(ratio)} of it)")
    head = inputs.figure(best, OPS)
    ideal = mean_at(inputs, best, IDEAL)
    ratio = head.value / ideal if head.value is not None and ideal else None
    where = f" at {inputs.point_title(best)}" if len(points) > 1 else ""
    text = f"{head.value_text()}{where} = {percent(ratio)} of Little's law ({_ops(ideal)})"
    if len(ratios) > 1:
        text += f"; measured / Little's law {span(ratios)} over {len(ratios)} points"
    facts = (Fact("ops/s", head.value_text(), head.value, head.unit),
             Fact("Little's law", _ops(ideal), ideal, "ops/s"),
             Fact("of Little's law", percent(ratio),
                  None if ratio is None else ratio * 100, "%"))
    figures = tuple(inputs.figure(best, m) for m in dict.fromkeys((*inputs.headline, IDEAL)))
    return Answer("vcbench", "vCenter operations against Little's law", text, facts=facts,
                  figures=figures, details=tuple(details) if len(points) > 1 else (),
                  how_to_read=HOW_TO_READ, charts=(_chart(inputs, IDEAL),))


def _offered(inputs: AnswerInputs, point: int) -> float | None:
    """The open loop's rate at ``point``: a factor's level when one sets it, else the
    scenario's ``rate``."""
    scenario = inputs.stored.scenario
    labels = inputs.analysis.figures.points.get(point, {})
    raw: object = scenario.params.get("rate")
    for f in scenario.factors:
        if f.path == "workload.params.rate" and f.name in labels:
            raw = labels[f.name]
    try:
        return float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _open_loop(inputs: AnswerInputs, points: list[int]) -> Answer:
    best = best_by(inputs, OPS, points)
    assert best is not None
    head = inputs.figure(best, OPS)
    target = _offered(inputs, best)
    kept = head.value / target if head.value is not None and target else None
    where = f" at {inputs.point_title(best)}" if len(points) > 1 else ""
    text = f"{head.value_text()} of {_ops(target)} offered ({percent(kept)}){where}"
    details = []
    for p in points:
        ops, rate = mean_at(inputs, p, OPS), _offered(inputs, p)
        share = ops / rate if ops is not None and rate else None
        details.append(f"{inputs.point_title(p)}: {inputs.figure(p, OPS).value_text()} of "
                       f"{_ops(rate)} offered ({percent(share)})")
    figures = tuple(inputs.figure(best, m) for m in inputs.headline)
    return Answer("vcbench", "vCenter operations, open loop", text,
                  facts=(Fact("ops/s", head.value_text(), head.value, head.unit),
                         Fact("offered", _ops(target), target, "ops/s")),
                  figures=figures, details=tuple(details) if len(points) > 1 else (),
                  how_to_read="Operations start at the offered rate whatever vCenter does: "
                  "below 100 % vCenter did not keep up.", charts=(_chart(inputs, None),))


def _ops(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g} ops/s"
