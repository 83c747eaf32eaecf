"""What an adaptive ``repeat`` did, as the verdict shows it: per point the trials it
took and whether it met the confidence target ("met after 5", "not met at max 12:
±7.4 %"), and for the run whether every point did.

Read back from the stored run with the same rule the schedule applied
(vbench/analysis/adaptive.py), so a resumed run, ``show`` and every report agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vbench.analysis.adaptive import RepeatRule, progress, rule_of, target_metrics
from vbench.analysis.verdict import PointRepeat, RepeatView

if TYPE_CHECKING:
    from vbench.analysis.verdict_build import AnswerInputs


def rule_text(rule: RepeatRule, metrics: list[str]) -> str:
    on = ", ".join(metrics) if metrics else "the headline metrics"
    return (f"{rule.min}–{rule.max} trials per point until the 95 % CI is within "
            f"±{rule.target * 100:g} % on {on}")


def _counts(trials: list[Mapping[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for t in trials:
        if t.get("status") != "interrupted":
            p = int(t["point"])
            counts[p] = counts.get(p, 0) + 1
    return counts


def repeat_view(inputs: AnswerInputs) -> RepeatView | None:
    """None for a fixed ``repeat`` (and for a find-max search, whose levels decide their
    own trials)."""
    scenario = inputs.run.get("scenario") or {}
    rule = rule_of(scenario.get("repeat"))
    if rule is None or scenario.get("search"):
        return None
    figures = inputs.analysis.figures
    counts = _counts(list(inputs.trials))
    ended_early = inputs.run.get("status") != "running"
    points = []
    for index in sorted({int(p["point"]) for p in inputs.points}):
        names = target_metrics(rule, inputs.headline, (m for p, m in figures.values if p == index))
        series = {m: list(figures.trial_values(index, m).values()) for m in names}
        pr = progress(rule, counts.get(index, 0), series, stopped_early=ended_early)
        text = pr.text()
        if not pr.met and not pr.at_max and inputs.run.get("status") != "ok":
            text = text.replace("(budget spent)", "(run ended)")
        points.append(PointRepeat(index, inputs.point_title(index), pr.trials, pr.met, text))
    missed = sum(1 for p in points if not p.met)
    target = f"±{rule.target * 100:g} %"
    text = (f"every point met {target}" if not missed else
            f"{missed} of {len(points)} point{'s' if len(points) != 1 else ''} did not meet "
            f"{target}")
    return RepeatView(rule_text(rule, list(rule.metrics) or list(inputs.headline)),
                      missed == 0, rule.require, text, tuple(points))
