"""`vbench history SCENARIO --changes`: the change points of a scenario's series, lab by
lab, as plain text and as JSON. Times in UTC (as textfmt)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vbench.analysis.changepoints import ALPHA
from vbench.analysis.history import History
from vbench.analysis.nightly import ACKNOWLEDGED, ALERTED, SeriesChange, lab_series
from vbench.report.history_watch import change_notes
from vbench.report.textfmt import utc


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f} %"


def state_text(c: SeriesChange) -> str:
    if c.state == ACKNOWLEDGED and c.ack is not None:
        return f"acknowledged by {c.ack.who} on {utc(c.ack.at)}: {c.ack.why}"
    if c.state == ALERTED:
        return f"not acknowledged; alerted by the check of run {c.alerted_run}"
    return "not acknowledged" + ("" if c.regression else " (not a regression: never alerts)")


def change_lines(c: SeriesChange, indent: str = "  ") -> list[str]:
    """A change as the terminal shows it (also used by the regression check's text)."""
    out = [f"{indent}{c.change_id}  {utc(c.started)}",
           f"{indent}  {c.text()}",
           f"{indent}  minimum effect {_pct(c.min_effect)}"
           + (f" (lab noise {_pct(c.noise)}, measured by vbench run --aa)"
              if c.noise is not None else " (lab noise not measured)"),
           f"{indent}  {state_text(c)}"]
    # A night either side with a disturbed trial: a step that may be a noisy neighbour.
    out += [f"{indent}  {n['text']}" for n in change_notes(c)]
    if c.testbed:
        out.append(f"{indent}  testbed between {c.run_before} and {c.run_id}:")
        out += [f"{indent}    {d.key}: {d.a if d.a is not None else '—'} → "
                f"{d.b if d.b is not None else '—'}" for d in c.testbed]
    else:
        out.append(f"{indent}  testbed: no recorded difference between {c.run_before} "
                   f"and {c.run_id}")
    if c.setup:
        out.append(f"{indent}  experiment between {c.run_before} and {c.run_id}:")
        out += [f"{indent}    {line}" for line in c.setup]
    return out


def format_changes(hist: History, found: Sequence[SeriesChange]) -> str:
    labs = lab_series(hist)
    out = [f"change points of {hist.scenario}: {len(hist.runs)} runs in {len(labs)} "
           f"lab{'s' if len(labs) != 1 else ''} (a change: p < {ALPHA:g} and at least "
           "its minimum effect; series never span two labs)"]
    for fingerprint, where in labs.items():
        runs = [hist.runs[i] for i in where]
        mine = [c for c in found if c.lab_fingerprint == fingerprint]
        out += ["", f"lab {runs[-1].lab or '-'} (fingerprint {fingerprint or '-'}): "
                f"{len(runs)} runs, {utc(runs[0].started)} … {utc(runs[-1].started)}: "
                f"{len(mine) or 'no'} change point{'s' if len(mine) != 1 else ''}"]
        for c in mine:
            out += change_lines(c)
    # A metric with no figure is no flat series: say so (a typo in --metric otherwise
    # read as "no change points").
    out += [f"{m}: no data in these runs" for m in missing_metrics(hist)]
    return "\n".join(out) + "\n"


def missing_metrics(hist: History) -> list[str]:
    """The metrics asked for that no run of ``hist`` has a figure of."""
    return [m for m in hist.metrics if not hist.for_metric(m)]


def testbed_json(c: SeriesChange) -> list[dict[str, Any]]:
    """The testbed facts that differ between the runs either side of a change."""
    return [{"fact": d.key, "before": d.a, "after": d.b} for d in c.testbed]


def change_json(c: SeriesChange) -> dict[str, Any]:
    ch = c.change
    return {
        "id": c.change_id, "scenario": c.scenario, "lab": c.lab,
        "lab_fingerprint": c.lab_fingerprint, "metric": c.metric, "unit": c.unit,
        "better": c.better, "point": c.title, "labels": dict(c.labels),
        "run_id": c.run_id, "run_before": c.run_before, "started": c.started,
        "before": ch.before, "after": ch.after,
        "relative": ch.relative if math.isfinite(ch.relative) else None,  # from 0: no ratio
        "p_value": ch.p_value, "runs_before": ch.n_before, "runs_after": ch.n_after,
        "regression": c.regression, "min_effect": c.min_effect, "noise": c.noise,
        "state": c.state, "alerted_run": c.alerted_run,
        "ack": None if c.ack is None else {"who": c.ack.who, "at": c.ack.at,
                                           "why": c.ack.why, "run_id": c.ack.run_id},
        "testbed": testbed_json(c),
        "experiment": list(c.setup),
        "disturbed": change_notes(c),
    }


def changes_json(hist: History, found: Sequence[SeriesChange]) -> dict[str, Any]:
    return {
        "scenario": hist.scenario,
        "runs": len(hist.runs),
        "labs": [{"lab": hist.runs[w[-1]].lab, "lab_fingerprint": fp, "runs": len(w)}
                 for fp, w in lab_series(hist).items()],
        "changes": [change_json(c) for c in found],
        "no_data": missing_metrics(hist),
    }


def noise_lines(runs: Sequence[Any], series: Sequence[Any], stored: int,
                lab_fingerprint: str) -> list[str]:
    """What `vbench run --aa` prints at the end: each series' run-to-run noise."""
    ok = [r for r in runs if r.status == "ok"]
    if not series:
        return [f"A/A: {len(ok)} of {len(runs)} runs completed: too few to measure the "
                "noise (nothing stored)"]
    headline = set(ok[0].run.headline) if ok else set()
    shown = [s for s in series if s.metric in headline and s.cv is not None] or [
        s for s in series if s.cv is not None]
    out = [f"A/A: {len(ok)} runs back to back ({', '.join(r.run_id for r in ok)}); "
           f"run-to-run noise (stdev of the run means / their mean), stored for lab "
           f"fingerprint {lab_fingerprint or '-'} ({stored} series; the headline "
           f"metrics shown):"]
    width = max((len(s.metric) for s in shown), default=0)
    for s in shown:
        where = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())) or "all"
        out.append(f"  {s.metric:<{width}}  {where}  {_pct(s.cv)}"
                   f"  (runs: {', '.join(f'{m:.4g}' for m in s.means)} {s.unit})")
    return out


def alert_sections(reg: Any) -> list[dict[str, Any]]:
    """The HTML report's change-point alerts of a regression check: each with its series
    chart (the change marked) and the testbed facts that differ either side."""
    from markupsafe import Markup

    from vbench.report.trend import ChangeMark, chart_svg

    hist = reg.history
    if hist is None:
        return []
    names = sorted({r.variant for r in hist.runs})
    out = []
    for i, c in enumerate(reg.changes):
        series = next((s for s in hist.series if c.of_series(s.metric, s.labels)), None)
        if series is None:
            continue
        before = next(r.started for r in hist.runs if r.run_id == c.run_before)
        mark = ChangeMark(c.metric, tuple(sorted(c.labels.items())), before, c.started,
                          c.text(), c.ack is not None)
        out.append({
            "id": c.change_id, "text": c.text(),
            "state": ". ".join([state_text(c), *(n["text"] for n in change_notes(c))]),
            "new": c in reg.failing_changes,
            "svg": Markup(chart_svg(hist, series, f"change-{i}", names, [mark])),
            "testbed": testbed_json(c),
            "runs": (c.run_before, c.run_id),
        })
    return out
