"""One run's verdict: what every output of a run (terminal, HTML, Markdown, JSON, JUnit,
``show``, ``history``, ``compare``) says about it, computed once.

A :class:`Verdict` holds the run's status and exit code, the study's answer(s) — what the
study set out to find, as its schedule or workload driver declares it (see
:mod:`vbench.analysis.verdict_build` for the hook) — the headline figures (each with unit,
n, confidence interval and window, or an explicit "no data: reason"), the QoS verdict
*as it reads for this schedule* (a find-max search whose upper levels fail is the search
working, not a QoS failure), the noise, the warnings, whether the figures come from a
simulated lab, and what the run created and removed in vSphere.

It is frozen, plain data: it is stored as ``verdict.json`` in the run directory and read
back with :func:`verdict_from_json`, so a report needs no driver code. Renderers only
format it; none of them decides anything about a run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERDICT_VERSION = 1
VERDICT_FILE = "verdict.json"

# Answer statuses a renderer colours: a study that answered, one that did not.
ANSWERED = "answered"
NO_ANSWER = "no answer"


# Stored units a reader does not need spelled out: how every output shows them instead
# (a fraction as a percentage, a count or a ratio as a bare number).
PLAIN_UNITS: dict[str, tuple[float, str]] = {
    "fraction": (100.0, "%"), "count": (1.0, ""), "ratio": (1.0, "")}


def decimals_for(x: float) -> int:
    """Decimals that show about four significant figures, none for large numbers (the
    reports' rule: a mean and its ± are both printed with the mean's)."""
    a = abs(x)
    if a == 0 or a >= 1000:
        return 0
    return min(6, max(0, 3 - math.floor(math.log10(a))))


def _fmt(x: float | None, decimals: int | None = None) -> str:
    """About four significant figures (or ``decimals``), thousands separated."""
    if x is None or not math.isfinite(x):
        return "—"
    if decimals is None and 0 < abs(x) < 1e-6:
        return f"{x:.3g}"
    return f"{x:,.{decimals_for(x) if decimals is None else decimals}f}"


@dataclass(frozen=True)
class Figure:
    """One headline figure: the mean over the trials of one point, with its unit, its
    number of trials, its 95 % CI and its measured window — or ``missing`` saying why
    there is no value (never a 0 made up for it)."""

    metric: str
    value: float | None
    unit: str = ""
    n: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    window: str | None = None  # "60 s steady-state window"
    where: str | None = None  # the point it was measured at ("rate_iops=387")
    direction: str | None = None  # "higher" | "lower" | None (not ranked)
    missing: str | None = None  # why there is no value
    simulated: bool = False  # measured on a simulated lab (vcsim)
    noisy: bool = False

    @property
    def ci_half(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2

    def value_text(self) -> str:
        """``387.2 ± 1.3 IO/s`` (just the mean with one trial); ``no data: why``."""
        if self.value is None:
            return f"no data: {self.missing or 'no value recorded'}"
        half = self.ci_half
        factor, unit = PLAIN_UNITS.get(self.unit, (1.0, self.unit))
        mean = self.value * factor
        # The ± with the mean's decimals, as every table prints it (399.8 ± 0.7 IO/s).
        places = decimals_for(mean) if abs(mean) >= 1e-6 else None
        text = (_fmt(mean) if half is None
                else f"{_fmt(mean, places)} ± {_fmt(half * factor, places)}")
        return f"{text} {unit}".rstrip()

    def text(self) -> str:
        """The figure as every output prints it: value, n, where, and the simulated-lab
        flag beside it."""
        if self.value is None:
            return f"{self.metric}: {self.value_text()}"
        parts = [f"n={self.n}"]
        if self.where:
            parts.append(f"at {self.where}")
        if self.noisy:
            parts.append("noisy")
        sim = " [simulated lab]" if self.simulated else ""
        return f"{self.metric}: {self.value_text()} ({', '.join(parts)}){sim}"


@dataclass(frozen=True)
class Fact:
    """One labelled part of an answer: "highest pass" = "387"."""

    label: str
    text: str
    value: float | None = None
    unit: str = ""


@dataclass(frozen=True)
class AnswerChart:
    """A chart an answer is read from, drawn by the report from the run's stored figures
    (so a report needs no driver code): ``metric`` over the factor ``x`` (None: a bar
    per point), with ``ideal`` drawn over the measured curve — ``"linear"`` (scaling in
    proportion to ``x`` from its smallest level) or the name of a metric whose mean at
    each point is the ideal there (vcbench: Little's law) — labelled ``ideal_label``.

    With ``by`` (a sample label, CloudStone's ``operation``): one bar per value of that
    label at the stored point ``point``; ``ideal`` then names the metric giving each
    bar's reference (the required mix) or is ``"qos"`` (each bar against its QoS limit),
    and ``flag`` a metric whose value 1 marks a bar as failing (outside tolerance)."""

    metric: str
    x: str | None = None
    ideal: str | None = None
    ideal_label: str = "ideal"
    title: str = ""
    by: str | None = None
    point: int | None = None
    flag: str | None = None


@dataclass(frozen=True)
class Answer:
    """The study's answer, as its schedule or workload driver declares it.

    ``text`` is the one line that leads every output; ``facts`` its parts (for tables
    and JSON); ``figures`` the headline figures the answer rests on (find-max: at the
    highest pass; the default: at the best point); ``details`` further lines (a search's
    path, its binding criterion); ``how_to_read`` one sentence for a reader who does not
    know the study; ``qos_expected`` names the points (stored indexes) whose QoS failures
    are how the study answers (a search's levels above its answer), not a verdict on the
    run."""

    kind: str  # "find-max", "best point", or what a driver names it
    title: str
    text: str
    status: str = ANSWERED  # ANSWERED, NO_ANSWER, or the study's own ("converged", …)
    facts: tuple[Fact, ...] = ()
    figures: tuple[Figure, ...] = ()
    details: tuple[str, ...] = ()
    how_to_read: str = ""
    qos_expected: tuple[int, ...] = ()
    ok: bool | None = None  # the answer is a good one (None: the study does not judge)
    charts: tuple[AnswerChart, ...] = ()  # what the report draws first, beside the answer

    def line(self) -> str:
        return f"{self.title}: {self.text}"


@dataclass(frozen=True)
class QosView:
    """The QoS verdict as it reads for this run's schedule.

    ``status``: "pass", "fail", "none" (no criterion declared), or "bracket" (a search:
    the failures are its levels above the answer)."""

    status: str
    text: str
    checks: int = 0
    failed: int = 0  # every check that did not pass, expected by the answer or not
    unexpected: tuple[str, ...] = ()  # failures that are not the study's own answer

    @property
    def bad(self) -> bool:
        return self.status == "fail"


@dataclass(frozen=True)
class Effects:
    """What the run created in vSphere and what it removed, per kind ("vm", "library",
    "library item", …), from the run's journal; what is left is what cleanup must do."""

    created: Mapping[str, int] = field(default_factory=dict)
    removed: Mapping[str, int] = field(default_factory=dict)
    kept: Mapping[str, int] = field(default_factory=dict)
    left: Mapping[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.created or self.removed or self.kept or self.left)

    def text(self) -> str:
        """``created 2 libraries, 4 library items, 2 VMs; removed all`` and so on."""
        if self.empty:
            return "created nothing in vSphere"
        made = _counts(self.created)
        parts = [f"created {made or 'nothing'}"]
        removed = sum(self.removed.values())
        if removed and removed == sum(self.created.values()) and not self.left:
            parts.append("removed all of it")
        elif removed:
            parts.append(f"removed {_counts(self.removed)}")
        if self.kept:
            parts.append(f"kept {_counts(self.kept)} (keep: true)")
        if self.left:
            parts.append(f"LEFT {_counts(self.left)} (vbench cleanup removes them)")
        return "; ".join(parts)


def _plural(n: int, kind: str) -> str:
    if n == 1:
        return f"1 {kind}"
    return f"{n} {kind[:-1]}ies" if kind.endswith("y") else f"{n} {kind}s"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(_plural(n, kind) for kind, n in counts.items() if n)


@dataclass(frozen=True)
class PointRepeat:
    """One point under an adaptive ``repeat``: its trials and whether it met the target."""

    point: int
    title: str
    trials: int
    met: bool
    text: str  # "met after 5", "not met at max 12: ±7.4 %"


@dataclass(frozen=True)
class RepeatView:
    """An adaptive ``repeat`` as the run met it (vbench/analysis/adaptive_view.py)."""

    rule: str  # "3–12 trials until ±5 % (95 % CI) on total_iops"
    met: bool  # every point met its target
    require: bool  # a missed target fails the run (exit 1)
    text: str  # "every point met ±5 %" / "1 of 4 points did not meet ±5 %"
    points: tuple[PointRepeat, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """Everything a run's outputs say about it (see the module docstring)."""

    run_id: str
    scenario: str
    title: str
    status: str  # the run's: ok, failed, interrupted, running …
    exit_code: int | None  # None: not known (a run under way, never an invented 0)
    exit_reason: str  # why it exits non-zero ("" for 0)
    answers: tuple[Answer, ...]
    headline: tuple[Figure, ...]
    qos: QosView
    noise: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    simulated: str | None = None  # "simulated vCenter (vcsim): sim" when it is
    effects: Effects | None = None
    version: int = VERDICT_VERSION
    repeat: RepeatView | None = None  # an adaptive repeat: trials and targets per point

    @property
    def answer(self) -> Answer | None:
        """The study's answer that leads (the schedule's before the driver's)."""
        return self.answers[0] if self.answers else None

    def headline_names(self) -> tuple[str, ...]:
        return tuple(f.metric for f in self.headline)

    def lines(self) -> list[str]:
        """The verdict as plain lines, answer first (terminal, Markdown, ``show``)."""
        out = [a.line() for a in self.answers]
        for a in self.answers:
            out.extend(f"  {d}" for d in a.details)
        if self.simulated:
            out.append(f"SIMULATED LAB: {self.simulated}: the figures show the simulator, "
                       "not a real vSphere")
        out.extend(f"  {f.text()}" for f in self.headline)
        out.append(f"QoS: {self.qos.text}")
        if self.noise:
            out.append(f"noise: {len(self.noise)} noisy headline figure"
                       f"{'s' if len(self.noise) != 1 else ''}")
        if self.effects is not None:
            out.append(f"vSphere: {self.effects.text()}")
        out.extend(repeat_lines(self.repeat))
        return out


def repeat_lines(r: RepeatView | None) -> list[str]:
    """``trials: …`` and one line per point (empty for a fixed repeat)."""
    if r is None:
        return []
    return [f"trials: {r.text} — {r.rule}", *(f"  {p.title}: {p.text}" for p in r.points)]


# ------------------------------------------------------------------------ JSON


def verdict_to_json(v: Verdict) -> dict[str, Any]:
    """The verdict as a JSON document (what ``verdict.json`` and ``--json`` hold)."""
    doc = asdict(v)
    doc["answer"] = doc["answers"][0] if doc["answers"] else None
    return doc


def _figure(d: Mapping[str, Any]) -> Figure:
    return Figure(**{k: d.get(k) for k in Figure.__dataclass_fields__ if k in d})


def _answer(d: Mapping[str, Any]) -> Answer:
    facts = tuple(Fact(**f) for f in d.get("facts") or ())
    figures = tuple(_figure(f) for f in d.get("figures") or ())
    rest = {k: d[k] for k in ("status", "how_to_read", "ok") if k in d}
    rest["qos_expected"] = tuple(int(p) for p in d.get("qos_expected") or ())
    charts = tuple(AnswerChart(**c) for c in d.get("charts") or ())
    return Answer(str(d["kind"]), str(d["title"]), str(d["text"]), facts=facts,
                  figures=figures, details=tuple(d.get("details") or ()), charts=charts,
                  **rest)


def verdict_from_json(doc: Mapping[str, Any]) -> Verdict | None:
    """A stored verdict; None when it is of another version or not one (the caller then
    computes it again from the stored run)."""
    if not isinstance(doc, Mapping) or doc.get("version") != VERDICT_VERSION:
        return None
    try:
        q = doc["qos"]
        eff = doc.get("effects")
        return Verdict(
            run_id=str(doc["run_id"]), scenario=str(doc["scenario"]), title=str(doc["title"]),
            status=str(doc["status"]),
            exit_code=None if doc["exit_code"] is None else int(doc["exit_code"]),
            exit_reason=str(doc.get("exit_reason") or ""),
            answers=tuple(_answer(a) for a in doc.get("answers") or ()),
            headline=tuple(_figure(f) for f in doc.get("headline") or ()),
            qos=QosView(str(q["status"]), str(q["text"]), int(q.get("checks") or 0),
                        int(q.get("failed") or 0), tuple(q.get("unexpected") or ())),
            noise=tuple(doc.get("noise") or ()), warnings=tuple(doc.get("warnings") or ()),
            simulated=doc.get("simulated"),
            effects=Effects(**{k: dict(eff.get(k) or {}) for k in
                               ("created", "removed", "kept", "left")}) if eff else None,
            repeat=_repeat(doc.get("repeat")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _repeat(d: Any) -> RepeatView | None:
    if not isinstance(d, Mapping):
        return None
    points = tuple(PointRepeat(**p) for p in d.get("points") or ())
    return RepeatView(str(d["rule"]), bool(d["met"]), bool(d["require"]), str(d["text"]), points)


def headline_set(figures: Sequence[Figure]) -> list[str]:
    """The names of a headline, in order (what tests hold every output to)."""
    return [f.metric for f in figures]


def read_stored(run_dir: str | Path | None, status: str | None = None) -> Verdict | None:
    """The verdict stored in a run directory, when it is of this version and was made
    for the run's current ``status`` (a run settled by cleanup since is computed again)."""
    if not run_dir:
        return None
    try:
        doc = json.loads((Path(run_dir) / VERDICT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    v = verdict_from_json(doc)
    if v is None or (status is not None and v.status != status):
        return None
    return v
