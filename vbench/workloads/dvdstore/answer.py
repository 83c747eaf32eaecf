"""DVD Store's answer: orders per minute of each configuration against native.

The study compares deployments (native, Docker, VMs, Docker in VMs) by the OPM summed
over their instances, as a fraction of native's. The native reference is the baseline
of the scenario's ``normalize`` derived figure on ``opm`` when it declares one (its
ratios carry a CI over trials), else the level named "native" of a factor; with neither,
the driver has no answer of its own and the headline at the best point leads."""

from __future__ import annotations

import re

from vbench.analysis.answer_kit import mean_at, percent
from vbench.analysis.verdict import Answer, AnswerChart, Fact
from vbench.analysis.verdict_build import AnswerInputs

OPM = "opm"
NATIVE = re.compile(r"^native$", re.IGNORECASE)
HOW_TO_READ = (
    "Orders per minute summed over the DVD Store instances of each configuration, as a "
    "fraction of native's at the same other factor levels: 1.0 (100 %) is native, the gap "
    "below it what the configuration costs. Each fraction is a mean over trials with its "
    "95 % CI when the scenario declares the normalised figure."
)


def dvdstore_answer(inputs: AnswerInputs) -> tuple[Answer, ...]:
    ratios, name, native = _declared(inputs)
    if name is None:
        ratios, native = _against_native_level(inputs)
    others = {p: v for p, v in ratios.items() if p not in native}
    if not others:
        return ()
    parts = [f"{inputs.point_title(p)} {text}" for p, (_, text) in others.items()]
    base = min(native) if native else None
    ref = (f"native {inputs.figure(base, OPM).value_text()} at {inputs.point_title(base)}"
           if base is not None else "native")
    text = f"OPM against native: {'; '.join(parts[:4])}" + (
        f"; {len(parts) - 4} more below" if len(parts) > 4 else "") + f" (= 100 %: {ref})"
    facts = tuple(Fact(inputs.point_title(p), t, None if r is None else r * 100, "%")
                  for p, (r, t) in others.items())
    figures = tuple(inputs.figure(base, m) for m in inputs.headline
                    if m in inputs.analysis.figures.units) if base is not None else ()
    chart = (AnswerChart(name, ideal="1", ideal_label="native = 1.0",
                         title="OPM normalised to native") if name is not None else
             AnswerChart(OPM, ideal=str(mean_at(inputs, base, OPM)) if base is not None
                         else None, ideal_label="native", title="OPM against native"))
    return (Answer("dvdstore", "DVD Store OPM against native", text, facts=facts,
                   figures=figures, details=tuple(parts[4:]), how_to_read=HOW_TO_READ,
                   charts=(chart,)),)


Ratios = dict[int, tuple[float | None, str]]


def _declared(inputs: AnswerInputs) -> tuple[Ratios, str | None, set[int]]:
    """Per point, the declared normalised OPM (mean, "91.2 % ± 1.3"), its name and the
    baseline's points."""
    derived = inputs.analysis.derived
    spec = next((s for s in derived.specs if s.kind == "normalize" and s.metric == OPM), None)
    if spec is None:
        return {}, None, set()
    points = inputs.analysis.figures.points
    base = {p for p, lab in points.items()
            if all(lab.get(k) == str(v) for k, v in (spec.baseline or {}).items())}
    out: Ratios = {}
    for f in derived.named(spec.name):
        if f.point is None:
            continue
        s = f.summary
        half = f" ± {s.ci_half * 100:.2g} pp" if s.ci_half is not None else ""
        out[f.point] = (s.mean, "no data" if s.mean is None else f"{percent(s.mean)}{half}")
    return out, spec.name, base


def _against_native_level(inputs: AnswerInputs) -> tuple[Ratios, set[int]]:
    """Per point, its mean OPM over native's at the same other factor levels."""
    f = inputs.analysis.figures
    factor = next((k for k in f.factors
                   if any(NATIVE.match(lab.get(k, "")) for lab in f.points.values())), None)
    if factor is None:
        return {}, set()
    native = {p for p, lab in f.points.items() if NATIVE.match(lab.get(factor, ""))}
    out: Ratios = {}
    for p in inputs.points_with(OPM):
        labels = f.points.get(p, {})
        base = next((q for q, lab in f.points.items() if NATIVE.match(lab.get(factor, ""))
                     and all(lab.get(k) == v for k, v in labels.items() if k != factor)),
                    None)
        ours, theirs = mean_at(inputs, p, OPM), (mean_at(inputs, base, OPM)
                                                  if base is not None else None)
        ratio = ours / theirs if ours is not None and theirs else None
        out[p] = (ratio, percent(ratio))
    return out, native
