"""The find-max search's answer (the search schedule's ``answer`` hook): per search, the
bracket — highest pass, lowest fail, the gap between them — whether it converged, the
criterion that binds at the lowest fail and the path of levels, with the headline
figures measured at the highest pass. Levels above the highest pass fail QoS by design:
they are where the search found the limit, so the verdict does not call them a failed
run."""

from __future__ import annotations

from collections.abc import Mapping

from vbench.analysis.findmax import level_label
from vbench.analysis.findmax_search import FindMaxReport, findmax_reports
from vbench.analysis.verdict import NO_ANSWER, Answer, Fact
from vbench.analysis.verdict_build import AnswerInputs

HOW_TO_READ = (
    "The highest level of {factor} at which every QoS criterion held is the answer; the "
    "lowest level at which one failed bounds it from above, and the true limit lies in "
    "the gap between them. Failing levels above the answer are the search at work."
)


def findmax_answers(inputs: AnswerInputs) -> tuple[Answer, ...]:
    """One answer per search of the run (none when its scenario has no ``search``)."""
    reports = findmax_reports(inputs.run, inputs.points, inputs.trials,
                              inputs.analysis.figures)
    return tuple(_answer(inputs, r) for r in reports)


def _points_of(inputs: AnswerInputs, r: FindMaxReport) -> dict[str, int]:
    """Level label -> stored point index, for the levels of this search's combination."""
    out = {}
    for p in inputs.points:
        labels = {str(k): str(v) for k, v in (p.get("labels") or {}).items()}
        if r.factor in labels and all(labels.get(k) == v for k, v in r.combination.items()):
            out[labels[r.factor]] = int(p["point"])
    return out


def _answer(inputs: AnswerInputs, r: FindMaxReport) -> Answer:
    o = r.outcome
    points = _points_of(inputs, r)
    hp, lf = o.highest_pass, o.lowest_fail
    hp_point = points.get(level_label(hp, r.integer)) if hp is not None else None
    above = tuple(sorted(p for label, p in points.items()
                         if hp is not None and float(label) > hp))
    # The headline at the answer; without a passing level there is no such point.
    figures = tuple(inputs.figure(hp_point, m) if hp_point is not None
                    else inputs.figure(None, m, missing="no level passed QoS")
                    for m in inputs.headline)
    bind = r.binding()
    facts = [
        Fact("highest pass", r.fmt(hp), hp), Fact("lowest fail", r.fmt(lf), lf),
        Fact("gap", "—" if o.gap is None else f"{r.fmt(o.gap)} ({o.gap_percent:.1f} %)",
             o.gap_percent, "%"),
        Fact("status", r.status),
        Fact("levels", str(len(o.levels)), float(len(o.levels))),
        Fact("trials", str(o.trials), float(o.trials)),
    ]
    if bind:
        facts.append(Fact("binding", ", ".join(bind)))
    details = [_path_line(r)]
    if bind:
        details.append(f"binding at {r.fmt(lf)}: {', '.join(bind)}")
    if o.noisy:
        details.append(f"noisy levels: {', '.join(r.fmt(x) for x in o.noisy)}")
    if hp is None and lf is None:
        return Answer("find-max", r.title, "no level finished: no bracket yet", NO_ANSWER,
                      how_to_read=HOW_TO_READ.format(factor=r.factor))
    return Answer(
        kind="find-max", title=r.title, text=_text(r), status=r.status,
        facts=tuple(facts), figures=figures, details=tuple(details),
        how_to_read=HOW_TO_READ.format(factor=r.factor), qos_expected=above,
        ok=hp is not None,
    )


def _text(r: FindMaxReport) -> str:
    """``highest pass 387 · lowest fail 400 · gap 13 (3.2 %) · converged``; the levels,
    trials and time go to the facts and the path."""
    o = r.outcome
    gap = "—" if o.gap is None else f"{r.fmt(o.gap)} ({o.gap_percent:.1f} %)"
    return (f"highest pass {r.fmt(o.highest_pass)} · lowest fail {r.fmt(o.lowest_fail)} · "
            f"gap {gap} · {r.status}")


def _path_line(r: FindMaxReport) -> str:
    marks: Mapping[bool | None, str] = {True: "pass", False: "FAIL", None: "…"}
    steps = [f"{r.fmt(row.level)} {marks[row.passed]}{' (noisy)' if row.noisy else ''}"
             for row in r.path]
    return (f"path: {' → '.join(steps)} ({len(r.outcome.levels)} levels, "
            f"{r.outcome.trials} trials)")
