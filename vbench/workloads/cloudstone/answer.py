"""CloudStone's answer: the load at which a run is valid by Faban's criteria, and its
throughput.

Faban counts a run only when (1) the achieved operation mix is within the tolerance of
the mix the transition matrix requires, (2) every operation meets its response-time
limits, and (3) the load generator kept up (here: Locust's CPU and users). The answer is
the best throughput among the valid points, with each point's three verdicts beside it,
and two kinds of chart first on the page: the achieved mix against the required one per
operation, and each operation's response time against its QoS limit, at the answer's
point (the best point when none is valid)."""

from __future__ import annotations

from collections.abc import Sequence

from vbench.analysis.answer_kit import best_by, labelled_means, mean_at
from vbench.analysis.qos import QosCheck
from vbench.analysis.verdict import NO_ANSWER, Answer, AnswerChart, Fact
from vbench.analysis.verdict_build import AnswerInputs

OPS = "ops_per_sec"
OP_LABEL = "operation"
HOW_TO_READ = (
    "Faban's validity criteria: a point counts only when the achieved operation mix is "
    "within ±{tol:g} percentage points of the mix the transition matrix requires, every "
    "operation meets its response-time limits (QoS), and the load generator kept up. "
    "The answer is the highest throughput among the points that pass all three."
)


def cloudstone_answer(inputs: AnswerInputs) -> tuple[Answer, ...]:
    params = inputs.stored.scenario.params
    if str(params.get("profile") or "olio") != "olio":
        return ()  # a fixed request rate has no mix to judge: the default answer leads
    tol = float(params.get("mix_tolerance") or 2.0)
    points = inputs.points_with(OPS)
    if not points:
        return (Answer("cloudstone", "CloudStone", "no throughput recorded", NO_ANSWER,
                       figures=(inputs.figure(None, OPS),)),)
    verdicts = {p: _point(inputs, p, tol) for p in points}
    valid = [p for p in points if not verdicts[p][1]]
    best = best_by(inputs, OPS, valid)
    shown = best if best is not None else best_by(inputs, OPS, points)
    assert shown is not None
    head = inputs.figure(shown, OPS)
    where = f" at {inputs.point_title(shown)}" if len(points) > 1 else ""
    if best is not None:
        text = f"{head.value_text()}{where}: valid ({verdicts[best][0]})"
        status, ok = "valid", True
    else:
        text = (f"no valid point: {len(points)} of {len(points)} fail Faban's criteria; "
                f"best {head.value_text()}{where} is {verdicts[shown][0]}")
        status, ok = "invalid", False
    details = tuple(f"{inputs.point_title(p)}: {inputs.figure(p, OPS).value_text()} · "
                    f"{verdicts[p][0]}" for p in points) if len(points) > 1 else ()
    facts = (Fact("valid points", f"{len(valid)} of {len(points)}", float(len(valid))),
             Fact(OPS, head.value_text(), head.value, head.unit),
             Fact("mix tolerance", f"±{tol:g} pp", tol, "pp"))
    figures = tuple(inputs.figure(shown, m) for m in inputs.headline)
    return (Answer("cloudstone", "CloudStone validity (Faban)", text, status, facts,
                   figures, details, HOW_TO_READ.format(tol=tol), ok=ok,
                   charts=_charts(inputs, shown, tol)),)


def _point(inputs: AnswerInputs, point: int, tol: float) -> tuple[str, bool]:
    """("mix valid · QoS pass 8/8 · load generator kept up", failed?) at ``point``."""
    figures = inputs.analysis.figures
    mix = labelled_means(figures, point, "mix", OP_LABEL)
    required = labelled_means(figures, point, "mix_required", OP_LABEL)
    outside = labelled_means(figures, point, "mix_outside_tolerance", OP_LABEL)
    off = [op for op, v in outside.items() if v]
    parts, bad = [], False
    if not outside:
        parts.append("mix not recorded")
        bad = True
    elif off:
        shown = ", ".join(f"{op} {_pct(mix.get(op))} vs {_pct(required.get(op))} required"
                          for op in off[:3])
        parts.append(f"mix INVALID: {len(off)} of {len(outside)} operations outside "
                     f"±{tol:g} pp ({shown})")
        bad = True
    else:
        parts.append(f"mix valid: {len(outside)} operations within ±{tol:g} pp")
    checks = [c for c in inputs.analysis.qos.checks if c.point == point]
    failed = [c for c in checks if not c.passed]
    if checks:
        parts.append(f"QoS {'FAIL' if failed else 'pass'} {len(checks) - len(failed)}/"
                     f"{len(checks)}" + (f" ({_qos_text(failed)})" if failed else ""))
        bad = bad or bool(failed)
    saturated = mean_at(inputs, point, "client_saturated")
    if saturated:
        parts.append("load generator SATURATED")
        bad = True
    elif saturated is not None:
        parts.append("load generator kept up")
    return " · ".join(parts), bad


def _qos_text(failed: Sequence[QosCheck]) -> str:
    first = failed[0]
    value = "no data" if first.value is None else f"{first.value:.4g} {first.unit}".strip()
    more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
    subject = ", ".join(first.subject.values())
    return f"{first.metric} {subject} {value} vs {first.op} {first.threshold:g}{more}"


def _charts(inputs: AnswerInputs, point: int, tol: float) -> tuple[AnswerChart, ...]:
    where = inputs.point_title(point)
    out = [AnswerChart("mix", ideal="mix_required", ideal_label=f"required mix (±{tol:g} pp)",
                       title=f"achieved vs required mix at {where}", by=OP_LABEL,
                       point=point, flag="mix_outside_tolerance")]
    metrics = dict.fromkeys(c.metric for c in inputs.analysis.qos.checks
                            if c.point == point and OP_LABEL in c.subject)
    out += [AnswerChart(m, ideal="qos", ideal_label="QoS limit", by=OP_LABEL, point=point,
                        title=f"{m} per operation against its QoS limit at {where}")
            for m in metrics]
    return tuple(out)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} %"
