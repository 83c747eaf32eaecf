"""Disturbed trials across runs — where a nightly series' owner looks: `vbench history`
(plain and JSON), its trend page and the static site, and the change points' triage.

A figure of one run at one point *includes disturbed trials* when the lab's watch found
a trial of that point disturbed and the trial's value is in the figure (a flagged trial
that succeeded); it is read with the rules of :mod:`vbench.report.disturbed`, from what
the history loaded (:class:`vbench.analysis.history.RunWatch`: the testbed's records,
the samples read, and the stored trials of the runs with records), so no run is read again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vbench.report.disturbed import PointDisturbance, point_disturbances

if TYPE_CHECKING:
    from vbench.analysis.history import History, RunWatch
    from vbench.analysis.nightly import SeriesChange

MARK = "†"  # beside a figure that includes disturbed trials (as the run summary marks n)
LEGEND = f"{MARK} = the figure includes disturbed trials (in the statistics)"


def run_disturbances(watch: RunWatch | None) -> dict[int, PointDisturbance]:
    """Per point of the run with a disturbed, retried or unwatched trial: what the
    watch saw (as the run's own outputs say it)."""
    if watch is None:
        return {}
    return point_disturbances({"disturbances": list(watch.entries)}, watch.trials)


def _point_of(watch: RunWatch, labels: Mapping[str, str]) -> int | None:
    return watch.points.get(tuple(sorted((str(k), str(v)) for k, v in labels.items())))


def figure_disturbance(watch: RunWatch | None, labels: Mapping[str, str], metric: str,
                       found: Mapping[int, PointDisturbance] | None = None
                       ) -> PointDisturbance | None:
    """The disturbed trials of one run's figure of ``metric`` at the point with
    ``labels``, as that figure sees them (None: the point had none). A derived metric's
    values are not read per trial: its point's trials count as the point's."""
    if watch is None:
        return None
    p = _point_of(watch, labels)
    if p is None:
        return None
    pd_ = (found if found is not None else run_disturbances(watch)).get(p)
    if pd_ is None or not pd_.disturbed:
        return None
    stored = any(m == metric for _, m in watch.values) or not watch.values
    return pd_.of_metric(watch.values.get((p, metric), {})) if stored else pd_


def cells(hist: History) -> dict[tuple[int, int], PointDisturbance]:
    """(series index, run index) -> the disturbed trials of that figure, for the figures
    with any (measured figures only)."""
    out: dict[tuple[int, int], PointDisturbance] = {}
    at = {r.run_id: i for i, r in enumerate(hist.runs)}
    for rid, watch in hist.watch.items():
        i = at.get(rid)
        if i is None:
            continue
        found = run_disturbances(watch)
        for k, s in enumerate(hist.series):
            if s.summaries[i] is None:
                continue
            pd_ = figure_disturbance(watch, s.labels, s.metric, found)
            if pd_ is not None:
                out[(k, i)] = pd_
    return out


def point_title(hist: History, watch: RunWatch, point: int) -> str:
    labels = next((dict(key) for key, p in watch.points.items() if p == point), {})
    return ", ".join(f"{f}={labels[f]}" for f in hist.factors if f in labels) or "all"


def run_lines(hist: History, indent: str = "  ") -> list[str]:
    """Per run with a disturbed trial (oldest first), per point, what the watch saw."""
    out = []
    for r in hist.runs:
        watch = hist.watch.get(r.run_id)
        found = {p: d for p, d in run_disturbances(watch).items() if d.disturbed}
        if watch is None or not found:
            continue
        for p in sorted(found):
            out.append(f"{indent}{r.run_id}  {point_title(hist, watch, p)}: {found[p].text()}")
            out += [f"{indent}    trial {d.trial}: {d.text or 'disturbed'} — {d.counted}"
                    for d in found[p].disturbed]
    return out


def run_json(watch: RunWatch | None) -> list[dict[str, Any]]:
    """A run's ``disturbed`` in `history --json`: as `show --json` has it."""
    return [d.to_json() for _, d in sorted(run_disturbances(watch).items())]


def figure_json(pd_: PointDisturbance | None) -> dict[str, list[int]]:
    """A figure's ``disturbed_included`` / ``disturbed_excluded`` trial numbers."""
    return {"disturbed_included": pd_.included if pd_ else [],
            "disturbed_excluded": pd_.excluded if pd_ else []}


def night(epoch: float) -> str:
    """"16 Nov 2026" (UTC)."""
    t = time.gmtime(epoch)
    return f"{t.tm_mday} {time.strftime('%b %Y', t)}"


def change_notes(c: SeriesChange) -> list[dict[str, Any]]:
    """The disturbed trials of the change's point on the first night after it and the
    night before: a reviewer must not chase a step that was a noisy neighbour."""
    out = []
    for role, run, watch in c.watched:
        pd_ = figure_disturbance(watch, c.labels, c.metric)
        if pd_ is None:
            continue
        n = len(pd_.disturbed)
        where = f" at {c.title}" if c.title and c.title != "all" else ""
        which = "the first night after the change" if role == "after" else "the night before it"
        what = "; ".join(f"trial {d.trial}: {d.text or 'disturbed'} — {d.counted}"
                         for d in pd_.disturbed)
        out.append({"night": role, "run_id": run.run_id, "started": run.started,
                    **figure_json(pd_),
                    "text": f"the night of {night(run.started)} ({which}, run {run.run_id}) "
                            f"had {n} disturbed trial{'s' if n != 1 else ''}{where}: {what}"})
    return out
