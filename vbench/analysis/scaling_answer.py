"""The answer of a scaling study: speedup and efficiency against the ideal.

A study scales when a factor sets how many workers, VMs or clients run (a path
``topology.<group>.count``, or levels that set one): the question is how close the
throughput comes to growing in proportion. Per combination of the other factors, the
first higher-is-better headline figure at each level is divided by its value at the
smallest level (the speedup) and by the ideal (level ÷ smallest level: the efficiency).
A scenario that declares a ``speedup`` derived figure with an ideal (the Redis
scale-out: eight servers against one, ideal 8) is answered from it, with its CI. The
report draws the figure over the count with linear scaling dashed over it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from vbench.analysis.answer_kit import mean_at
from vbench.analysis.verdict import Answer, AnswerChart, Fact
from vbench.analysis.verdict_build import AnswerInputs

COUNT_PATH = re.compile(r"^topology\.[^.]+\.count$")
HELD = 0.9  # efficiency that still counts as scaling
HOW_TO_READ = (
    "Speedup = the figure at a level ÷ the figure at the smallest level; ideal = level ÷ "
    "smallest level (linear scaling, dashed over the measured curve); efficiency = "
    "speedup ÷ ideal. 100 % is perfect scaling; the level where efficiency falls is "
    "where the shared resource saturates."
)


def count_factors(scenario: Mapping[str, Any]) -> set[str]:
    """Factors whose levels set a topology group's size: how many workers, VMs or
    clients run. Against such a factor, linear scaling is a meaningful ideal."""
    out = set()
    for name, raw in (scenario.get("factors") or {}).items():
        if not isinstance(raw, Mapping):
            continue
        paths = [str(raw.get("path") or "")]
        for level in raw.get("levels") or ():
            if isinstance(level, Mapping):
                paths.extend(str(k) for k in (level.get("set") or {}))
        if any(COUNT_PATH.match(p) for p in paths):
            out.add(str(name))
    return out


def scaling_answers(inputs: AnswerInputs) -> tuple[Answer, ...]:
    """The scaling answer of a run, when it is a scaling study (else none)."""
    declared = _declared(inputs)
    if declared is not None:
        return (declared,)
    counted = _over_count(inputs)
    return (counted,) if counted is not None else ()


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def _num(text: str | None) -> float | None:
    try:
        x = float(str(text))
    except ValueError:
        return None
    return x if math.isfinite(x) and x > 0 else None


def _over_count(inputs: AnswerInputs) -> Answer | None:
    f = inputs.analysis.figures
    factor = next((c for c in f.factors if c in count_factors(f.scenario)
                   and len({_num(lab.get(c)) for lab in f.points.values()} - {None}) >= 2),
                  None)
    metric = next((m for m in inputs.headline if inputs.direction(m) == "higher"
                   and inputs.points_with(m)), None)
    if factor is None or metric is None:
        return None
    groups: dict[tuple[tuple[str, str], ...], dict[float, int]] = {}
    for p in inputs.points_with(metric):
        labels = f.points.get(p, {})
        level = _num(labels.get(factor))
        if level is not None:
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != factor))
            groups.setdefault(rest, {})[level] = p
    rows = [r for g, levels in groups.items() if (r := _group(inputs, metric, g, levels))]
    if not rows:
        return None
    # Lead with the combination that scales furthest (largest top speedup).
    lead = max(rows, key=lambda r: (r["top"][0], r["top"][1]))
    n0, (top, speedup, ideal) = lead["n0"], lead["top"]
    combo = f" [{lead['name']}]" if lead["name"] else ""
    text = (f"{metric} at {factor}={top:g}: speedup {speedup:.3g}× over {factor}={n0:g} "
            f"against ideal {ideal:g}× (efficiency {_pct(speedup / ideal)}){combo}")
    if lead["held"] is not None:
        text += f"; efficiency ≥ {_pct(HELD)} up to {factor}={lead['held']:g}"
    facts = (Fact("speedup", f"{speedup:.3g}×", speedup), Fact("ideal", f"{ideal:g}×", ideal),
             Fact("efficiency", f"{_pct(speedup / ideal)}", 100 * speedup / ideal, "%"))
    figures = tuple(inputs.figure(lead["point"], m) for m in inputs.headline)
    return Answer("scaling", f"scaling over {factor}", text, facts=facts, figures=figures,
                  details=tuple(r["line"] for r in rows), how_to_read=HOW_TO_READ,
                  charts=(AnswerChart(metric, x=factor, ideal="linear",
                                      ideal_label="ideal linear scaling",
                                      title=f"{metric}: speedup against linear scaling"),))


def _group(inputs: AnswerInputs, metric: str, combo: Sequence[tuple[str, str]],
           levels: Mapping[float, int]) -> dict[str, Any] | None:
    """Speedup and efficiency of one combination of the other factors over the count."""
    ordered = sorted(levels)
    n0 = ordered[0]
    y0 = mean_at(inputs, levels[n0], metric)
    if not y0 or len(ordered) < 2:
        return None
    steps, held, top = [], None, None
    scaling = True  # efficiency held at every level so far
    for n in ordered[1:]:
        y = mean_at(inputs, levels[n], metric)
        if y is None:
            steps.append(f"{n:g}: no data")
            scaling = False
            continue
        speedup, ideal = y / y0, n / n0
        steps.append(f"{n:g}: {speedup:.3g}× of {ideal:g}× ({_pct(speedup / ideal)})")
        scaling = scaling and speedup / ideal >= HELD
        held = n if scaling else held
        top = (n, speedup, ideal)
    if top is None:
        return None
    name = ", ".join(f"{k}={v}" for k, v in combo)
    line = (f"{name + ': ' if name else ''}speedup over {n0:g} → " + "; ".join(steps))
    return {"name": name, "n0": n0, "top": top, "held": held, "line": line,
            "point": levels[top[0]]}


def _declared(inputs: AnswerInputs) -> Answer | None:
    """From the scenario's ``speedup`` derived figures that carry an ideal."""
    derived = inputs.analysis.derived
    spec = next((s for s in derived.specs if s.kind == "speedup"), None)
    if spec is None:
        return None
    figs = [x for x in derived.named(spec.name) if x.point is not None
            and x.ideal is not None and x.summary.mean is not None]
    if not figs:
        return None
    lines = []
    for x in figs:
        s = x.summary
        half = f" ± {s.ci_half:.2g}" if s.ci_half is not None else ""
        lines.append(f"{inputs.point_title(x.point or 0)}: speedup {s.mean:.3g}×{half} "
                     f"against ideal {x.ideal:g}× (efficiency {_pct(s.mean / x.ideal)})")
    best = max(figs, key=lambda x: (x.summary.mean or 0.0) / (x.ideal or 1.0))
    text = lines[figs.index(best)] if len(figs) == 1 else (
        f"{len(figs)} points; best {lines[figs.index(best)]}")
    eff = (best.summary.mean or 0.0) / (best.ideal or 1.0)
    facts = (Fact("speedup", f"{best.summary.mean:.3g}×", best.summary.mean),
             Fact("ideal", f"{best.ideal:g}×", best.ideal),
             Fact("efficiency", f"{_pct(eff)}", 100 * eff, "%"))
    return Answer("scaling", f"{spec.name} of {spec.metric}", text, facts=facts,
                  figures=tuple(inputs.figure(best.point, m) for m in inputs.headline),
                  details=tuple(lines) if len(figs) > 1 else (), how_to_read=HOW_TO_READ,
                  charts=(AnswerChart(spec.name, title=f"{spec.name} against its ideal"),))
