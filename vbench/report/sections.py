"""The report's sections beyond the per-point tables: summary with badges, scenario,
testbed, QoS, derived figures, regression, warnings and the reproducibility footer.

Every function returns plain data (text already formatted) for the template; nothing
here produces markup, so autoescaping covers every string.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench import __version__
from vbench.analysis.derived import DerivedFigure, DerivedResult
from vbench.analysis.figures import better, measurement_hash, scenario_hash
from vbench.analysis.qos import QosResult
from vbench.analysis.regression import RegressionResult
from vbench.analysis.run_analysis import RunAnalysis
from vbench.analysis.verdict import Verdict
from vbench.report.data import (
    MISSING,
    NO_DATA,
    ReportView,
    fmt_mean_ci,
    fmt_num,
    fmt_pct,
    fmt_range,
    fmt_value,
)
from vbench.report.tabulate import Table, keyed_text, scalar_text, tabulate
from vbench.report.units import Scale, choose
from vbench.report.verdict_view import qos_badge

# A guest clock this far from the controller's, relative to the window, skews windows.
CLOCK_OFFSET_WARN_S = 0.5


@dataclass(frozen=True)
class Badge:
    label: str
    text: str
    kind: str  # good | bad | warn | neutral


# ------------------------------------------------------------------ summary


def badges(
    view: ReportView, analysis: RunAnalysis, regression: RegressionResult | None,
    verdict: Verdict | None = None,
) -> list[Badge]:
    run = view.data.run
    status = str(run.get("status") or MISSING)
    out = [Badge("run", status, "good" if status == "ok" else "bad")]
    ok = sum(p.ok for p in view.points)
    total = sum(p.total for p in view.points)
    out.append(Badge("trials", f"{ok}/{total} ok", "good" if ok == total and total else "bad"))
    out += _disturbed_badge(view)
    qos = analysis.qos
    if verdict is not None:  # QoS as the study reads it (a search's bracket is no fault)
        text, kind = qos_badge(verdict)
        out.append(Badge("QoS", text, kind))
        if verdict.simulated:
            out.append(Badge("lab", "SIMULATED", "warn"))
    elif qos.declared:
        bad = len(qos.failures)
        out.append(Badge("QoS", "pass" if qos.passed else f"fail ({bad} of {len(qos.checks)})",
                         "good" if qos.passed else "bad"))
    else:
        out.append(Badge("QoS", "none declared", "neutral"))
    if regression is not None:
        if regression.skipped:
            out.append(Badge("regression", "not checked (no baseline)", "neutral"))
        elif regression.regressed:
            out.append(Badge("regression", f"{len(regression.regressions)} found", "bad"))
        else:
            out.append(Badge("regression", "none", "good"))
    noisy = len(verdict.noise) if verdict is not None else sum(
        1 for (_p, m), ms in view.summaries.items() if m in view.headline and ms.summary.noisy
    )
    out.append(Badge("noise", f"{noisy} noisy figure{'s' if noisy != 1 else ''}"
                     if noisy else "none", "warn" if noisy else "good"))
    return out


def _disturbed_badge(view: ReportView) -> list[Badge]:
    """Trials the lab's watch found disturbed (vbench/report/disturbed.py), when any."""
    from vbench.report.disturbed import of_data

    found = of_data(view.data).values()
    n = sum(len(p.disturbed) for p in found)
    if not n:
        return []
    inside = sum(len(p.included) for p in found)
    return [Badge("disturbed", f"{n} trial{'s' if n != 1 else ''}, {inside} in the statistics",
                  "warn")]


def headline_rows(view: ReportView, overrides: Mapping[str, str],
                  hidden: Collection[str] = ()) -> list[dict[str, str]]:
    """Per headline metric (but those in ``hidden``: zero everywhere): the best and the
    worst point (or the one value), in the unit the two read best in. The best point is
    the run's answer's (:func:`~vbench.analysis.verdict_build.best_point`): a point whose
    QoS criteria fail is never called best, and when every point fails none is."""
    from vbench.analysis.verdict_build import AnswerInputs, best_point

    d = view.data
    inputs = AnswerInputs(d.run, d.points, d.trials, d.analyzed(), tuple(d.headline_metrics))
    rows = []
    for m in view.headline:
        if m in hidden:
            continue
        unit = view.units.get(m, "")
        found = [
            (p, view.cell(p.point, m).summary) for p in view.points if p.has_data
        ]
        found = [(p, s) for p, s in found if s is not None and s.mean is not None]
        if not found:
            rows.append({"metric": m, "unit": unit, "best": NO_DATA, "worst": "", "note": ""})
            continue
        direction = better(m, unit, overrides)
        ordered = sorted(found, key=lambda ps: ps[1].mean or 0.0,
                         reverse=direction != "lower")
        sc = choose(unit, [ordered[0][1].mean, ordered[-1][1].mean])
        worst_p, worst = ordered[-1]
        one = len(ordered) == 1
        if direction not in ("higher", "lower"):  # no best point by a figure of context
            first_p, first = ordered[0]
            span = fmt_mean_ci(sc.summary(first), sc.unit) + ("" if one else (
                f" at {first_p.title} to {fmt_mean_ci(sc.summary(worst), sc.unit)} "
                f"at {worst_p.title}"))
            rows.append({"metric": m, "unit": sc.unit, "best": span, "worst": "",
                         "note": "not ranked: no direction of improvement"})
            continue
        chosen, why = best_point(inputs, m)
        at = f" at {worst_p.title}"
        if chosen is None:  # every point fails its QoS criteria: none is called best
            rows.append({"metric": m, "unit": sc.unit, "best": "none",
                         "worst": fmt_mean_ci(sc.summary(worst), sc.unit) + at,
                         "note": f"{direction} is better; {why}"})
            continue
        best_p, best = next(ps for ps in ordered if ps[0].point == chosen)
        skipped = chosen != ordered[0][0].point
        rows.append({
            "metric": m,
            "unit": sc.unit,
            "best": fmt_mean_ci(sc.summary(best), sc.unit) + ("" if one else f" at {best_p.title}"),
            "worst": "" if one else fmt_mean_ci(sc.summary(worst), sc.unit) + at,
            "note": f"{direction} is better"
            + ("; points failing QoS are not called best" if skipped else ""),
        })
    return rows


def derived_headline_rows(view: ReportView, derived: DerivedResult,
                          names: Sequence[str]) -> list[dict[str, str]]:
    """Headline rows for the derived figures the scenario's ``report.headline`` names
    (a study that leads with "OPM normalised to native"), in that order."""
    titles = {p.point: p.title for p in view.points}
    rows = []
    for name in names:
        figs = [f for f in derived.named(name) if f.point is not None
                and f.summary.n > 0 and f.summary.mean is not None]
        if not figs:
            continue
        ordered = sorted(figs, key=lambda f: f.summary.mean or 0.0,
                         reverse=figs[0].better != "lower")
        best, worst = ordered[0], ordered[-1]
        sc = choose(best.unit, [best.summary.mean, worst.summary.mean])
        one = len(ordered) == 1
        where = figs[0].reference or figs[0].kind
        if figs[0].better not in ("higher", "lower"):
            where += "; not ranked: no direction of improvement"
        rows.append({
            "metric": name, "unit": sc.unit,
            "best": fmt_mean_ci(sc.summary(best.summary), sc.unit)
            + ("" if one else f" at {titles.get(best.point or 0, best.point)}"),
            "worst": "" if one else fmt_mean_ci(sc.summary(worst.summary), sc.unit)
            + f" at {titles.get(worst.point or 0, worst.point)}",
            "note": f"derived ({where})",
        })
    return rows


# ----------------------------------------------------------------- scenario


def scenario_section(view: ReportView) -> dict[str, Any]:
    stored = view.data.stored
    sc = stored.scenario
    factors = [
        {"name": f.name, "levels": ", ".join(f.levels), "path": f.path} for f in sc.factors
    ]
    topology = [
        {"group": g.name, "count": str(g.count), "nodes": ", ".join(g.nodes) or MISSING}
        for g in sc.topology
    ]
    params = [(str(k), scalar_text(v)) for k, v in sc.params.items()]
    n_points = len(view.points)
    ran = sum(p.total for p in view.points)
    return {
        "name": sc.name or stored.scenario_name or MISSING,
        "description": sc.description,
        "driver": sc.driver or MISSING,
        "params": params,
        "factors": factors,
        "topology": topology,
        "matrix": f"{n_points} point{'s' if n_points != 1 else ''} × "
                  + (f"{view.trials_text}, {ran} ran"  # an adaptive repeat: a range
                     if isinstance(view.scenario.get("repeat"), Mapping) else
                     f"{view.repeat or '?'} trials = {n_points * (view.repeat or 0)} planned, "
                     f"{ran} ran"),
    }


# ------------------------------------------------------------------ testbed

# Disturbed trials and the lab's hygiene first: what a reviewer must see before the rest.
_TESTBED_TITLES = {"disturbances": "Disturbed trials", "hygiene": "Lab hygiene",
                   "vcenters": "vCenters", "clusters": "Clusters", "hosts": "Hosts",
                   "datastores": "Datastores", "vms": "Virtual machines"}


def _nested(v: Any) -> bool:
    return isinstance(v, list | tuple) and bool(v) and all(isinstance(x, Mapping) for x in v)


def _records(title: str, records: Sequence[Mapping[str, Any]]) -> list[Table]:
    """A row per record; a field holding records of its own (a host's NICs, adapters)
    becomes a table of its own, so that every row stays one line high."""
    columns: dict[str, None] = {}
    for r in records:
        columns.update(dict.fromkeys(str(k) for k in r))
    nested = [c for c in columns if any(_nested(r.get(c)) for r in records)]
    # The entity's name first: it is what a reader looks for.
    order = sorted((c for c in columns if c not in nested),
                   key=lambda c: (c not in ("name", "hostname"), list(columns).index(c)))
    rows = tuple(tuple(keyed_text(c, r.get(c)) if c in r else MISSING for c in order)
                 for r in records)
    tables = [Table(title, tuple(order), rows)]
    owner = next((c for c in ("name", "hostname", "id") if c in order), None)
    for c in nested:
        subs = [(r.get(owner) if owner else i + 1, item) for i, r in enumerate(records)
                if _nested(r.get(c)) for item in r[c]]
        sub = _records(f"{title}: {c.replace('_', ' ')}", [item for _, item in subs])[0]
        head = owner or "#"
        tables.append(Table(sub.title, (head, *sub.columns),
                            tuple((scalar_text(o), *row) for (o, _), row
                                  in zip(subs, sub.rows, strict=True))))
    return tables


def _numbered(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """A disturbance record with its point from 1 (its id, "point 1 trial 2 #1", and
    every table number points so; the record keeps the stored index from 0)."""
    point = record.get("point")
    if isinstance(point, int) and not isinstance(point, bool):
        return {**record, "point": point + 1}
    return record


def testbed_tables(testbed: Mapping[str, Any] | None) -> list[Table]:
    """Hosts, datastores and VMs (lists of records) as their own tables, first; the
    rest of the snapshot as the generic tables of :func:`tabulate`."""
    if not testbed:
        return []
    tables: list[list[Table]] = []
    rest: dict[str, Any] = {}
    for key, value in testbed.items():
        is_records = (isinstance(value, list) and value
                      and all(isinstance(v, Mapping) for v in value))
        if key == "disturbances" and is_records:  # points numbered as the tables say them
            value = [_numbered(r) for r in value]
        if key in _TESTBED_TITLES and is_records:
            tables.append(_records(_TESTBED_TITLES[key], value))
        else:
            rest[key] = value
    titles = list(_TESTBED_TITLES.values())
    ordered = [t for group in sorted(tables, key=lambda g: titles.index(g[0].title))
               for t in group]
    return ordered + tabulate(rest, "vSphere") if rest else ordered


# ---------------------------------------------------------------------- QoS


def qos_rows(qos: QosResult) -> list[dict[str, Any]]:
    rows = []
    for c in qos.checks:
        rows.append({
            "criterion": c.criterion,
            "subject": c.subject_text,
            "point": c.point_title,
            "value": fmt_value(c.value, c.unit) if c.value is not None else NO_DATA,
            "limit": f"{c.op.replace('<=', '≤').replace('>=', '≥')} {fmt_num(c.threshold)}"
                     + (f" {c.unit}" if c.unit else ""),
            "stat": f"{c.stat} over {c.n} trial{'s' if c.n != 1 else ''}",
            "status": c.status,
            "message": c.message,
        })
    return rows


# ------------------------------------------------------------------ derived


def derived_tables(derived: DerivedResult, factors: Sequence[str],
                   disturbed: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    """A table per derived figure; ``disturbed``: point -> its disturbed trials' text
    (vbench/report/disturbed.py), a column when any."""
    disturbed = disturbed or {}
    tables = []
    for name in derived.names():
        figs = derived.named(name)
        first = figs[0]
        across = first.point is None
        cols = [f for f in factors if any(f in x.labels for x in figs)]
        sc = choose(first.unit, [f.summary.mean for f in figs])
        rows = [{**_derived_row(f, cols, sc),
                 "disturbed": disturbed.get(f.point, "") if f.point is not None else ""}
                for f in figs]
        tables.append({
            "name": name,
            "kind": first.kind,
            "unit": sc.unit,
            "reference": first.reference,
            "better": first.better,
            "factors": cols,
            "rows": rows,
            "has_ideal": any(f.ideal is not None for f in figs),
            "across": across,
            "has_disturbed": any(r["disturbed"] for r in rows),
        })
    return tables


def _derived_row(f: DerivedFigure, cols: Sequence[str], sc: Scale) -> dict[str, Any]:
    s = sc.summary(f.summary)
    assert s is not None
    return {
        "labels": [f.labels.get(c, "all" if f.point is None else MISSING) for c in cols],
        "mean_ci": fmt_mean_ci(s, sc.unit),
        "range": fmt_range(s, sc.unit) if s.n > 1 else MISSING,
        "cv": fmt_pct(s.cv),
        "n": str(s.n),
        "ideal": fmt_num(sc.value(f.ideal)) if f.ideal is not None else "",
        "efficiency": fmt_pct(f.summary.mean / f.ideal)
        if f.ideal and f.summary.mean is not None else "",
        "has_data": s.n > 0,
    }


# --------------------------------------------------------------- regression


def regression_section(reg: RegressionResult | None) -> dict[str, Any] | None:
    if reg is None:
        return None
    rows = []
    for c in reg.checks:
        change = c.change
        rows.append({
            "point": c.title,
            "metric": c.metric,
            "baseline": fmt_mean_ci(c.baseline, c.unit) + f" (n={c.baseline.n})",
            "current": fmt_mean_ci(c.current, c.unit) + f" (n={c.current.n})",
            "change": f"{change * 100:+.1f} %" if change is not None else MISSING,
            "better": c.better,
            "test": c.sig.reason,
            "status": "known" if c.triage else c.status,
            "triage": c.triage,
        })
    from vbench.report.changesfmt import alert_sections

    return {
        "verdict": reg.verdict(),
        "baseline": reg.baseline.description if reg.baseline else None,
        "baseline_ids": list(reg.baseline.run_ids) if reg.baseline else [],
        "min_effect": fmt_pct(reg.min_effect),
        "alpha": f"{reg.alpha:g}",
        "rows": rows,
        "regressed": reg.regressed,
        "alerts": alert_sections(reg),  # change points tonight sits after
    }


# ----------------------------------------------------------------- warnings


def extra_warnings(view: ReportView, analysis: RunAnalysis) -> list[str]:
    """Clock offsets, collectors that produced nothing, declarations not honoured."""
    out = list(analysis.problems)
    stored = view.data.stored
    for g in stored.environment.guests:
        off = g.clock_offset_s
        if off is not None and math.isfinite(off) and abs(off) > CLOCK_OFFSET_WARN_S:
            out.append(f"Clock of guest {g.name} is {off:+.3f} s off the controller's: "
                       "guest-side timestamps are shifted by that much.")
        elif not g.clock_offset_measured:
            out.append(f"Clock offset of guest {g.name} could not be measured.")
    sources = set()
    if not view.data.samples.empty and "source" in view.data.samples:
        sources = set(view.data.samples["source"].dropna().astype(str))
    for kind in stored.scenario.collector_kinds:
        if kind not in sources:
            out.append(f"Collector {kind} produced no sample in this run.")
    return out


# ------------------------------------------------------------------- footer


def footer(view: ReportView) -> dict[str, str]:
    run = view.data.stored
    ctl = run.environment.controller
    sc = view.scenario
    return {
        "version": __version__,
        "run_version": str(run.vbench_version or ctl.get("vbench_version") or MISSING),
        "scenario_hash": scenario_hash(sc) if sc else MISSING,
        "measurement_hash": measurement_hash(sc) if sc else MISSING,
        "command": run.environment.command or MISSING,
        "lab_fingerprint": run.lab_fingerprint or MISSING,
        "rerender": f"vbench report {run.run_id or 'RUN_ID'} -o report.html",
    }
