"""Disturbed trials per point, for every output that shows a point's statistics or its
trials: the report's tables and charts, the terminal summary, Markdown, JSON and CSV.

The run's testbed keeps one entry per disturbed (or not watched) attempt
(``testbed["disturbances"]``, vbench/engine/hygiene.py: ``point``, ``trial``,
``action`` flag | fail | retried | unread, ``text``, ``events[].at``). Per trial, its last
entry says what became of the attempt that was kept: ``flag`` or ``fail`` — that attempt
was disturbed; ``unread`` — it was not watched; ``retried`` — the kept attempt ran after
it, undisturbed. An ``unread`` entry of the kept attempt (after the last ``retried``)
before its ``flag`` or ``fail`` — one source could not look, another found something —
makes the trial disturbed and partly not watched. Whether a disturbed trial's figures
are in the point's mean and CI is read from the trial's own record (``status: ok``), not
assumed from the action: a flagged trial that failed for another reason, or has no
record, is not in the statistics either. Reads plain JSON.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.report.svg import TrialMark

INCLUDED = "in the statistics"
EXCLUDED = "not in the statistics"
# What the lines of :func:`footnotes` are (above the HTML results tables, in Markdown):
# not only vCenter's events (busy VMs in esxtop too), and not only disturbed trials.
NOTES_TITLE = ("What the lab's watch found in the trials' steady windows (trials disturbed, "
               "run again, not watched)")
# The charts' marker of a disturbed trial's value (its legend entry says the rest).
MARK_LABEL = f"disturbed, {INCLUDED}"


@dataclass(frozen=True)
class DisturbedTrial:
    """A trial whose kept attempt was disturbed."""

    point: int
    trial: int
    action: str  # flag | fail (as the scenario's `disturbance:` decided)
    text: str  # what happened and when
    at: tuple[float, ...]  # each event's time (epoch s, the controller's clock)
    included: bool  # its figures are in the point's statistics (the trial succeeded)
    status: str | None = "ok"  # the kept trial's own status (None: no record stored)

    @property
    def left_out(self) -> str:
        """Why a trial out of the statistics is out: its status ("failed", "interrupted")
        or "not stored" (a run stopped between the watch's record and the trial's)."""
        return "not stored" if self.status is None else self.status

    @property
    def counted(self) -> str:
        return INCLUDED if self.included else f"{self.left_out}, {EXCLUDED}"

    def note(self, title: str = "") -> str:
        """"point 2 (bs=4k) trial 3: vMotion of guest1 … — in the statistics"."""
        where = point_where(self.point, title)
        return f"{where} trial {self.trial}: {self.text or 'disturbed'} — {self.counted}"

    def to_json(self) -> dict[str, Any]:
        return {"trial": self.trial, "action": self.action, "included": self.included,
                "text": self.text, "at": list(self.at)}


@dataclass(frozen=True)
class PointDisturbance:
    """One point's trials as the lab's watch saw them (only points with something)."""

    point: int
    trials: int  # the point's trials (ok or not)
    disturbed: tuple[DisturbedTrial, ...] = ()
    retried: tuple[tuple[int, int], ...] = ()  # (trial, disturbed attempts run again)
    unwatched: tuple[int, ...] = ()  # trials whose steady window was not (all) watched
    unwatched_why: tuple[str, ...] = ()  # for each, its record's text (what was not read)

    @property
    def included(self) -> list[int]:
        return [d.trial for d in self.disturbed if d.included]

    @property
    def excluded(self) -> list[int]:
        return [d.trial for d in self.disturbed if not d.included]

    def text(self, of: str = "trials") -> str:
        """The point's row: "1 of 5 trials disturbed: trial 3, in the statistics"."""
        parts = []
        if self.included:
            parts.append(f"{_trials(self.included)}, {INCLUDED}")
        for why in dict.fromkeys(d.left_out for d in self.disturbed if not d.included):
            out_ = [d.trial for d in self.disturbed if not d.included and d.left_out == why]
            parts.append(f"{_trials(out_)} {why}, {EXCLUDED}")
        head = f"{len(self.disturbed)} of {self.trials} {of} disturbed"
        out = [head + (": " + "; ".join(parts) if parts else "")]
        out += [f"trial {t} run again after {n} disturbed attempt{'s' if n != 1 else ''} "
                "(not stored)" for t, n in self.retried]
        partly = [t for t in self.unwatched if t in {d.trial for d in self.disturbed}]
        if [t for t in self.unwatched if t not in partly]:
            out.append(f"{_trials([t for t in self.unwatched if t not in partly])} not watched")
        if partly:
            out.append(f"{_trials(partly)} partly not watched")
        return "; ".join(out)

    def of_metric(self, values: Mapping[int, float | None]) -> PointDisturbance:
        """As a figure of one metric sees them (``values``: trial -> its value): a trial
        in the statistics without a value of it is not in this figure's."""
        return dataclasses.replace(self, disturbed=tuple(
            dataclasses.replace(d, included=False, status="without a value")
            if d.included and values.get(d.trial) is None else d for d in self.disturbed))

    def to_json(self) -> dict[str, Any]:
        return {"point": self.point, "point_number": self.point + 1, "trials": self.trials,
                "disturbed": [d.to_json() for d in self.disturbed],
                "disturbed_included": self.included, "disturbed_excluded": self.excluded,
                "retried": [{"trial": t, "attempts": n} for t, n in self.retried],
                "unwatched": list(self.unwatched), "text": self.text()}


def point_where(point: int, title: str | None) -> str:
    """"point 2 (bs=4k)"; "point 1" alone when that is its title (no factors)."""
    where = f"point {point + 1}"
    return f"{where} ({title})" if title and title != where else where


def _trials(numbers: Sequence[int]) -> str:
    return ("trial " if len(numbers) == 1 else "trials ") + ", ".join(map(str, numbers))


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _times(events: Any) -> tuple[float, ...]:
    out = []
    for e in events if isinstance(events, list | tuple) else ():
        try:
            at = float(e.get("at")) if isinstance(e, Mapping) else math.nan
        except (TypeError, ValueError):
            continue
        if math.isfinite(at):
            out.append(at)
    return tuple(sorted(out))


def entries_of(testbed: Mapping[str, Any] | None) -> dict[tuple[int, int], list[Mapping[str, Any]]]:
    """The testbed's disturbance entries per (point, trial), in the order recorded."""
    out: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    raw = testbed.get("disturbances") if isinstance(testbed, Mapping) else None
    for d in raw if isinstance(raw, list | tuple) else ():
        if not isinstance(d, Mapping):
            continue
        point, trial = _int(d.get("point")), _int(d.get("trial"))
        if point is not None and trial is not None:
            out.setdefault((point, trial), []).append(d)
    return out


def point_disturbances(testbed: Mapping[str, Any] | None,
                       trials: Iterable[Mapping[str, Any]]) -> dict[int, PointDisturbance]:
    """Per point with a disturbed, retried or unwatched trial: what the watch saw."""
    trials = list(trials)
    status = {(int(t["point"]), int(t["trial"])): t.get("status") for t in trials}
    count: dict[int, int] = {}
    for p, _t in status:
        count[p] = count.get(p, 0) + 1
    found: dict[int, dict[str, list[Any]]] = {}
    for (p, t), entries in sorted(entries_of(testbed).items()):
        mine = found.setdefault(p, {"disturbed": [], "retried": [], "unwatched": [],
                                    "why": []})
        last = entries[-1]
        action = str(last.get("action") or "flag")
        again = sum(1 for e in entries if e.get("action") == "retried")
        if again:
            mine["retried"].append((t, again))
        # The kept attempt's records: those after the last attempt run again. A source
        # that could not look is recorded before what the others found in that attempt.
        kept_attempt = entries[max((i for i, e in enumerate(entries)
                                    if e.get("action") == "retried"), default=-1) + 1:]
        unread = [str(e.get("text") or "") for e in kept_attempt
                  if e.get("action") == "unread"]
        if unread:
            mine["unwatched"].append(t)
            mine["why"].append("; ".join(unread))
        if action not in ("unread", "retried"):  # flag, fail (or a kind to come): kept
            # In the statistics only when its own record is ok: a trial with no record
            # (a run stopped between the watch's record and the trial's) has no figure.
            kept = status.get((p, t))
            mine["disturbed"].append(DisturbedTrial(p, t, action, str(last.get("text") or ""),
                                                    _times(last.get("events")), kept == "ok",
                                                    None if kept is None else str(kept)))
    return {p: PointDisturbance(p, max(count.get(p, 0), 1), tuple(v["disturbed"]),
                                tuple(v["retried"]), tuple(v["unwatched"]), tuple(v["why"]))
            for p, v in found.items()}


def of_data(data: Any) -> dict[int, PointDisturbance]:
    """:func:`point_disturbances` of a :class:`~vbench.report.data.ReportData`."""
    return point_disturbances(data.run.get("testbed"), data.trials)


def disturbed_in(pd_: PointDisturbance | None, values: Mapping[int, float | None]
                 ) -> tuple[list[int], list[int]]:
    """(disturbed trials whose value is in this statistic, disturbed trials left out) of
    one figure at one point (``values``: trial -> value, successful trials only)."""
    if pd_ is None:
        return [], []
    inside = [d.trial for d in pd_.disturbed if d.included and values.get(d.trial) is not None]
    return inside, [d.trial for d in pd_.disturbed if d.trial not in inside]


DISTURBED, RETRIED, UNWATCHED = "disturbed", "retried", "unwatched"  # as in JSON


def kinds_of_notes(found: Mapping[int, PointDisturbance], titles: Mapping[int, str]
                   ) -> list[tuple[str, str]]:
    """(kind, line) of :func:`footnotes`: ``disturbed`` (a kept attempt was),
    ``retried`` (its disturbed attempts were not kept: the kept one was clean) or
    ``unwatched`` — what a line of a machine-read output (JUnit) is prefixed with."""
    out = [(DISTURBED, d.note(titles.get(p, ""))) for p in sorted(found)
           for d in found[p].disturbed]
    for p in sorted(found):
        pd_ = found[p]
        where = point_where(p, titles.get(p))
        out += [(RETRIED, f"{where} trial {t}: run again after {n} disturbed attempt"
                 f"{'s' if n != 1 else ''} (not stored; the kept attempt was not disturbed)")
                for t, n in pd_.retried
                if t not in {d.trial for d in pd_.disturbed}]
        whys = pd_.unwatched_why or ("",) * len(pd_.unwatched)
        seen = {d.trial for d in pd_.disturbed}  # disturbed too: what it saw is said above
        out += [(UNWATCHED, f"{where} trial {t}: {'partly ' if t in seen else ''}not watched "
                 f"({why or 'not read'})") for t, why in zip(pd_.unwatched, whys, strict=False)]
    return out


def footnotes(found: Mapping[int, PointDisturbance], titles: Mapping[int, str]) -> list[str]:
    """One line per disturbed trial, then per point its retried and unwatched trials."""
    return [line for _, line in kinds_of_notes(found, titles)]


def trial_marks(pd_: PointDisturbance | None, values: Mapping[int, float | None],
                title: str = "") -> tuple[TrialMark, ...]:
    """The disturbed trials of one point with a value in ``values`` (those in the
    statistics: a failed trial has none)."""
    if pd_ is None:
        return ()
    out = []
    for d in pd_.disturbed:
        v = values.get(d.trial)
        if d.included and v is not None and math.isfinite(v):
            out.append(TrialMark(float(v), d.note(title)))
    return tuple(out)


def chart_note(found: Mapping[int, PointDisturbance], drawn: int | None = None) -> str:
    """The captions' sentence: what the marker is, and what is not drawn; ``drawn``: the
    diamonds a chart draws (a trial with no value of its metric has none), default every
    disturbed trial in the statistics."""
    inside = sum(len(p.included) for p in found.values()) if drawn is None else drawn
    failed = sum(len(p.excluded) for p in found.values())
    out = []
    if inside:
        out.append(f"diamond = a disturbed trial's value ({inside} trial"
                   f"{'s' if inside != 1 else ''}, {INCLUDED})")
    if failed:
        out.append(f"{failed} disturbed trial{'s' if failed != 1 else ''} failed, "
                   f"{EXCLUDED} and not drawn")
    return "; ".join(out)


def trial_origin(trial: Mapping[str, Any]) -> float | None:
    """Where a trial's time series start (seconds 0 of its charts: its warm-up, else its
    steady window, else its start), as vbench/report/series.py counts them."""
    ph = trial.get("phases") or {}
    start = ph.get("warmup_start") or ph.get("steady_start") or trial.get("started")
    try:
        return float(start) if start is not None else None
    except (TypeError, ValueError):
        return None


def event_times(found: Mapping[int, PointDisturbance], trials: Iterable[Mapping[str, Any]],
                titles: Mapping[int, str] | None = None) -> list[tuple[int, int, float, str]]:
    """(point, trial, seconds since the trial's start, what) of every event of a
    disturbed trial in the statistics: where its time-series charts mark it."""
    origin = {(int(t["point"]), int(t["trial"])): trial_origin(t) for t in trials}
    out = []
    for p in sorted(found):
        for d in found[p].disturbed:
            start = origin.get((p, d.trial))
            if not d.included or start is None:
                continue
            label = d.note((titles or {}).get(p, ""))
            out += [(p, d.trial, at - start, label) for at in d.at]
    return out


def trial_text(entries: Sequence[Mapping[str, Any]]) -> str:
    """One trial's attempts as the watch saw them (the Trials table's cell), in order:
    "run again, disturbed: …; disturbed: …"."""
    from vbench.report.hygiene_text import ACTIONS

    return "; ".join(f"{ACTIONS.get(str(e.get('action')), 'disturbed')}: {e.get('text') or ''}"
                     for e in entries)


def run_lines(data: Any, name: str) -> list[str]:
    """Per point of a run with a disturbed, retried or unwatched trial: "run A
    20270101-…: point 2 (bs=4k): 1 of 3 trials disturbed: trial 3, in the statistics"
    (`vbench compare`, under the rows its figures are in)."""
    found = of_data(data)
    figures = data.analyzed().figures if found else None
    return [f"{name} {data.run.get('run_id')}: {point_where(p, figures.title(p))}: "
            f"{found[p].text()}" for p in sorted(found) if figures is not None]


def compare_lines(data: Any, name: str) -> list[str]:
    """:func:`run_lines` as `vbench compare` prints them: ``disturbed:`` before a point
    with a disturbed trial, ``lab watch:`` before one whose trials were only run again
    or not watched (a script that greps "disturbed:" must not count those)."""
    found = of_data(data)
    return [f"{'disturbed' if found[p].disturbed else 'lab watch'}: {line}"
            for p, line in zip(sorted(found), run_lines(data, name), strict=False)]


def by_title(data: Any) -> dict[str, str]:
    """Point title -> its disturbed trials' text, for a run's points with a disturbed
    trial: what the answer's headline figures (which name their point by its title) say
    beside the point. A steady-state study's figure is its window's rounds only: said of
    those (:func:`window_text`)."""
    found = {p: d for p, d in of_data(data).items() if d.disturbed}
    if not found:
        return {}
    figures = data.analyzed().figures
    windows = steady_windows(data)
    return {figures.title(p): window_text(d, windows[p]) if p in windows else d.text()
            for p, d in found.items()}


def steady_windows(data: Any) -> dict[int, range]:
    """Per deciding point of a steady-state study that reached it, the trials (rounds)
    of its measurement window: what the answer's figure there is the mean of."""
    from vbench.analysis.steady_answer import point_states
    from vbench.analysis.steady_state import rule_of
    from vbench.analysis.verdict_build import AnswerInputs

    rule = rule_of((data.run.get("scenario") or {}).get("steady_state"))
    if rule is None:
        return {}
    inputs = AnswerInputs(data.run, data.points, data.trials, data.analyzed(),
                          tuple(data.headline_metrics))
    f = inputs.analysis.figures
    return {p: range(st.window.first, st.window.last + 1)
            for p, st in point_states(inputs, rule).items()
            if st.reached and st.window is not None and rule.decides(f.points.get(p, {}))}


def window_text(pd_: PointDisturbance, window: range) -> str:
    """A point's disturbed trials as a steady-state figure over ``window`` sees them:
    "1 of 3 rounds of the steady-state window disturbed: trial 4, in the statistics",
    and those outside it, not in the figure."""
    inside = [d for d in pd_.disturbed if d.trial in window]
    outside = [d.trial for d in pd_.disturbed if d.trial not in window]
    out = []
    if inside:
        out.append(PointDisturbance(pd_.point, len(window), tuple(inside)).text(
            "rounds of the steady-state window"))
    if outside:
        out.append(f"{_trials(outside)} disturbed, outside the steady-state window: not in "
                   "this figure")
    return "; ".join(out)


def verdict_json(data: Any) -> dict[str, Any]:
    """The run's verdict as JSON (``show --json``, ``run --json``, ``report --format
    json``), each headline figure (and each answer's) with ``disturbed``: its point's
    disturbed trials as the other outputs say them beside it (:func:`by_title`), or null."""
    from vbench.analysis.verdict import verdict_to_json

    doc = verdict_to_json(data.verdicted())
    notes = by_title(data)
    for fig in [*doc.get("headline", ()), *(f for a in doc.get("answers", ())
                                             for f in a.get("figures", ()))]:
        fig["disturbed"] = notes.get(fig.get("where") or "") if fig.get("value") is not None \
            else None
    return doc
