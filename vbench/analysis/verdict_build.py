"""Computing a run's :class:`~vbench.analysis.verdict.Verdict` once, from the stored run.

The study's answer is declared by the run's **schedule** and its **workload driver**,
through one hook each, both with this signature::

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]: ...

``Schedule.answer`` (``vbench/engine/schedule.py``; the find-max search answers with
its bracket, one answer per search) and ``Workload.answer`` (``vbench/workloads/base.py``;
e.g. vcbench: ops/s against Little's law) return ``()`` when they have nothing to add.
The engine asks the schedule first, then the driver (``vbench/engine/verdict.py``); the
first answer leads every output. When neither answers, :func:`default_answer` does: the
headline figures at the best point — best by the first headline metric's direction,
among the points that pass their QoS criteria, and no ranking at all for a metric
without a direction.

:class:`AnswerInputs` gives a hook everything it may read of the run (stored records and
the analysis computed once) and the helpers to make :class:`Figure` s the same way the
default does, so every answer's figures carry unit, n, CI, window and the simulated-lab
flag.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vbench.analysis.adaptive_view import repeat_view
from vbench.analysis.aggregate import why_no_figure
from vbench.analysis.direction import directions_of
from vbench.analysis.figures import present
from vbench.analysis.qos import QosResult
from vbench.analysis.run_analysis import RunAnalysis
from vbench.analysis.simulator import is_simulator
from vbench.analysis.stats import summarize
from vbench.analysis.verdict import (
    ANSWERED,
    NO_ANSWER,
    Answer,
    Effects,
    Fact,
    Figure,
    QosView,
    Verdict,
)
from vbench.results.stored import StoredRun

EXIT_BY_STATUS = {"ok": 0, "failed": 3, "interrupted": 130}
MAX_UNRANKED = 12  # points listed when the headline metric has no direction


@dataclass(frozen=True)
class AnswerInputs:
    """What an answer hook reads of a run: its stored records and its analysis (figures,
    derived figures, QoS), each computed once."""

    run: Mapping[str, Any]  # the run record (dataclasses.asdict of the store's row)
    points: Sequence[Mapping[str, Any]]
    trials: Sequence[Mapping[str, Any]]
    analysis: RunAnalysis
    headline: tuple[str, ...]  # the run's headline metrics (stored with it)
    simulated: bool = False
    _window: list[str | None] = field(default_factory=list, repr=False, compare=False)

    @property
    def stored(self) -> StoredRun:
        return StoredRun.of(self.run)

    @property
    def window(self) -> str | None:
        if not self._window:
            self._window.append(window_text(self.run, self.trials))
        return self._window[0]

    def direction(self, metric: str) -> str | None:
        """"higher" or "lower" is better for ``metric``; None: it is not ranked. The run's
        :class:`~vbench.analysis.direction.Directions`, as the report ranks (report.better
        first, then a derived figure's own, then the catalogue)."""
        unit = self.analysis.figures.units.get(metric, "")
        d = directions_of(self.run).of(metric, unit)
        return d if d in ("higher", "lower") else None

    def point_title(self, point: int) -> str:
        return self.analysis.figures.title(point)

    def figure(self, point: int | None, metric: str, *, missing: str | None = None) -> Figure:
        """``metric`` at ``point`` over its successful trials, or why there is none."""
        f = self.analysis.figures
        unit = f.units.get(metric, "")
        where = None if point is None else self.point_title(point)
        values = present(f.trial_values(point, metric)) if point is not None else []
        if not values:
            why = missing or self._why_missing(point, metric)
            return Figure(metric, None, unit, 0, where=where, direction=self.direction(metric),
                          missing=why, simulated=self.simulated)
        cv = self.stored.scenario.cv_threshold
        s = summarize(values, cv_threshold=cv)
        return Figure(metric, s.mean, unit, s.n, s.ci_low, s.ci_high, self.window, where,
                      self.direction(metric), None, self.simulated, s.noisy)

    def _why_missing(self, point: int | None, metric: str) -> str:
        f = self.analysis.figures
        ok = [t for t in self.trials if t.get("status") == "ok"]
        if not ok:
            failed = len(self.trials)
            return f"no trial succeeded ({failed} failed or interrupted)" if failed else \
                "no trial ran"
        if not any(m == metric and present(v) for (_, m), v in f.values.items()):
            pairs = [(int(t["point"]), int(t["trial"])) for t in ok]
            return why_no_figure(f.samples, metric, pairs) or "no trial of the run recorded it"
        if point is None:
            return "no point of the run has a value"
        ok = [t for t in self.trials if int(t["point"]) == point and t.get("status") == "ok"]
        if not ok:
            return f"no successful trial at {self.point_title(point)}"
        return f"not recorded at {self.point_title(point)}"

    def points_with(self, metric: str) -> list[int]:
        f = self.analysis.figures
        return sorted(p for (p, m), v in f.values.items() if m == metric and present(v))

    def qos_failing_points(self) -> set[int]:
        return {c.point for c in self.analysis.qos.failures}


def window_text(run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> str | None:
    """``60 s steady-state window`` (the scenario's), with the measured median when it
    differs by more than 2 %."""
    steady = StoredRun.of(run).scenario.phases.get("steady")
    measured = []
    for t in trials:
        ph = t.get("phases") or {}
        if t.get("status") != "ok":
            continue
        for a, b in (("workload_start", "workload_end"), ("steady_start", "steady_end")):
            if isinstance(ph.get(a), int | float) and isinstance(ph.get(b), int | float):
                measured.append(float(ph[b]) - float(ph[a]))
                break
    med = statistics.median(measured) if measured else None
    if steady is None and med is None:
        return None
    if steady is None:
        return f"{_secs(med)} steady-state window (measured)"
    text = f"{_secs(steady)} steady-state window"
    if med is not None and steady > 0 and abs(med - steady) / steady > 0.02:
        text += f" (measured median {_secs(med)})"
    return text


def _secs(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.0f} s" if abs(x) >= 10 or x == int(x) else f"{x:.1f} s"


# ------------------------------------------------------------------ the default


def best_point(inputs: AnswerInputs, metric: str) -> tuple[int | None, str]:
    """The best point by ``metric`` among those passing their QoS criteria, and a note
    (why there is none, or that failing points were left out)."""
    direction = inputs.direction(metric)
    candidates = inputs.points_with(metric)
    if not candidates:
        return None, f"no point has a value of {metric}"
    if direction is None:
        return None, f"{metric} has no direction (higher or lower is better): not ranked"
    failing = inputs.qos_failing_points()
    passing = [p for p in candidates if p not in failing]
    note = ""
    if failing and passing and len(passing) < len(candidates):
        note = f"{len(candidates) - len(passing)} point(s) failing QoS left out"
    elif failing and not passing:
        return None, "every point fails its QoS criteria: no best point"
    f = inputs.analysis.figures

    def mean(p: int) -> float:
        return statistics.fmean(present(f.trial_values(p, metric)))

    chosen = (max if direction == "higher" else min)(passing, key=mean)
    return chosen, note


def default_answer(inputs: AnswerInputs) -> Answer:
    """The headline figures at the best point (see the module docstring)."""
    names = list(inputs.headline) or sorted({m for _, m in inputs.analysis.figures.values})[:3]
    if not names:
        return Answer("best point", "result", "no figure recorded", NO_ANSWER)
    lead = names[0]
    multi = len(inputs.analysis.figures.points) > 1
    point, note = best_point(inputs, lead)
    if point is None and inputs.points_with(lead):  # not ranked, or every point fails QoS
        figs = tuple(inputs.figure(p, lead) for p in inputs.points_with(lead)[:MAX_UNRANKED])
        return Answer("best point", "result", note, NO_ANSWER, figures=figs,
                      how_to_read="Each point's figure is shown: none is called best.")
    if point is None:  # each figure says why it has no value
        figs = tuple(inputs.figure(None, m) for m in names)
        return Answer("best point", "result", figs[0].value_text() if figs[0].value is None
                      else note, NO_ANSWER, figures=figs)
    figs = tuple(inputs.figure(point, m) for m in names)
    title = "best point" if multi else "result"
    where = inputs.point_title(point)
    head = figs[0]
    text = f"{head.metric} {head.value_text()}" + (f" at {where}" if multi else "")
    if multi:
        text += f" ({inputs.direction(lead)} is better)"
    if note:
        text += f"; {note}"
    facts = (Fact("point", where), Fact(lead, head.value_text(), head.value, head.unit))
    return Answer("best point", title, text, ANSWERED, facts=facts, figures=figs,
                  how_to_read="The headline figures at the point that ranks best by the "
                  "first headline metric." if multi else "")


# ------------------------------------------------------------------ the verdict


def noisy_figures(inputs: AnswerInputs, names: Sequence[str]) -> tuple[str, ...]:
    """Every headline figure, at any point, whose cv is above the scenario's threshold:
    ``total_iops at rate_iops=400: cv 7.1 %``."""
    f = inputs.analysis.figures
    cv = inputs.stored.scenario.cv_threshold
    out = []
    for m in dict.fromkeys(names):
        for p in sorted(p for (p, metric) in f.values if metric == m):
            s = summarize(present(f.trial_values(p, m)), cv_threshold=cv)
            if s.noisy and s.cv is not None:
                out.append(f"{m} at {inputs.point_title(p)}: cv {s.cv * 100:.1f} %")
    return tuple(out)


def qos_view(qos: QosResult, answers: Sequence[Answer]) -> QosView:
    """The QoS verdict as this run's study reads it: failures at the points an answer
    expects them (a search's levels above its answer) are the study working, not a
    failed run."""
    if not qos.declared:
        return QosView("none", "no criteria declared")
    fails = qos.failures
    n = len(qos.checks)
    expected = {p for a in answers for p in a.qos_expected}
    unexpected = [c for c in fails if c.point not in expected]
    if not fails:
        return QosView("pass", f"pass: {n} check{'s' if n != 1 else ''}", n, 0)
    if not unexpected:
        return QosView("bracket", f"{len(fails)} of {n} checks fail, all at levels above the "
                       "answer: that is the search finding its limit, not a failed run",
                       n, len(fails))
    # `failed` counts every check that did not pass: the text leads with the same count.
    text = f"FAIL: {len(fails)} of {n} checks did not pass"
    if len(unexpected) < len(fails):
        above = len(fails) - len(unexpected)
        text += f" ({len(unexpected)} where the answer expects none, {above} above it)"
    return QosView("fail", text, n, len(fails),
                   tuple(f"{c.criterion} at {c.point_title}: {c.message}" for c in unexpected))


def simulated_text(run: Mapping[str, Any]) -> str | None:
    """Which simulated vCenter(s) the run measured, when it reached one (vcsim): those
    its lab starts as simulators (``simulator:``), and those whose product name in the
    run's testbed is vcsim's (a lab pointing at a vcsim started elsewhere)."""
    testbed = run.get("testbed") or {}
    if not isinstance(testbed, Mapping) or not testbed:
        return None  # the run reached no vCenter: its figures are not the simulator's
    lab = run.get("lab") or {}
    sims = [str(n) for n, vc in (lab.get("vcenters") or {}).items()
            if isinstance(vc, Mapping) and vc.get("simulator") is not None]
    for vc in [testbed.get("vcenter"), *(testbed.get("vcenters") or ())]:
        if isinstance(vc, Mapping) and is_simulator(vc.get("product")):
            sims.append(str(vc.get("name") or "?"))
    if not sims:
        return None
    return f"simulated vCenter (vcsim): {', '.join(dict.fromkeys(sims))}"


def build_verdict(
    inputs: AnswerInputs,
    answers: Sequence[Answer],
    *,
    exit_code: int | None = None,
    exit_reason: str = "",
    warnings: Sequence[str] = (),
    effects: Effects | None = None,
) -> Verdict:
    """The verdict of a run from its declared answers (the default one when none)."""
    stored = inputs.stored
    chosen = tuple(answers) or (default_answer(inputs),)
    figured = next((a for a in chosen if a.figures), None)
    headline = figured.figures if figured is not None else default_answer(inputs).figures
    noise = noisy_figures(inputs, [f.metric for f in headline])
    qos = qos_view(inputs.analysis.qos, chosen)
    # Not recorded (a run under way, a status of its own): unknown, never an invented 0.
    code = EXIT_BY_STATUS.get(stored.status) if exit_code is None else exit_code
    return Verdict(
        run_id=stored.run_id, scenario=stored.scenario_name, title=stored.title,
        status=stored.status, exit_code=code, exit_reason=exit_reason,
        answers=chosen, headline=tuple(headline), qos=qos, noise=noise,
        warnings=tuple(dict.fromkeys([*warnings, *inputs.analysis.problems])),
        simulated=simulated_text(inputs.run), effects=effects,
        repeat=repeat_view(inputs),  # an adaptive repeat: trials and target per point
    )
