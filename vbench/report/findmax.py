"""The find-max section: the answer first, then the search path and each criterion
against the level. The searches are replayed in vbench/analysis/findmax_search.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vbench.analysis.findmax_qos import CriterionValue
from vbench.analysis.findmax_search import FindMaxReport, PathRow, findmax_reports
from vbench.analysis.qos import OP_TEXT
from vbench.report.data import ReportData

__all__ = [
    "FindMaxReport",
    "PathRow",
    "findmax_of",
    "findmax_reports",
    "findmax_section",
    "findmax_text",
]


def findmax_text(reports: Sequence[FindMaxReport]) -> str:
    """The terminal form: the answer, the path, the binding criterion."""
    lines: list[str] = []
    for r in reports:
        lines.append(f"{r.title}: {r.answer()}")
        steps = []
        for row in r.path:
            mark = {True: "pass", False: "FAIL", None: "…"}[row.passed]
            steps.append(f"{r.fmt(row.level)} {mark}{' (noisy)' if row.noisy else ''}")
        lines.append("  path: " + " → ".join(steps))
        bind = r.binding()
        if bind:
            lines.append(f"  binding at {r.fmt(r.outcome.lowest_fail)}: {', '.join(bind)}")
    return "\n".join(lines) + ("\n" if lines else "")


def findmax_section(reports: Sequence[FindMaxReport],
                    points: Mapping[int, Mapping[str, str]] | None = None,
                    disturbed: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    """What the HTML template shows for each search; ``disturbed``: point -> its
    disturbed trials' text (vbench/report/disturbed.py), said beside its level (a level
    is a point: ``points`` gives their labels)."""
    out = []
    for r in reports:
        notes = _level_notes(r, points or {}, disturbed or {})
        names = list(dict.fromkeys(c.name for cs in r.criteria.values() for c in cs))
        rows = []
        for row in sorted(r.path, key=lambda x: x.level):
            cells = {c.name: c for c in r.criteria.get(row.level, ())}
            rows.append({
                "level": r.fmt(row.level),
                "status": {True: "pass", False: "fail", None: "missing"}[row.passed],
                "cells": [
                    _cell(cells.get(n)) for n in names
                ],
            })
        limits = []
        for n in names:
            c = next(c for cs in r.criteria.values() for c in cs if c.name == n)
            limits.append(f"{OP_TEXT[c.op]} {c.threshold:g} {c.unit}".strip())
        out.append({
            "title": r.title,
            "answer": r.answer(),
            "binding": r.binding(),
            "path": [
                {"order": row.order + 1, "level": r.fmt(row.level),
                 "step": "—" if row.step is None else f"{row.step:+.4g}",
                 "reason": row.reason, "trials": row.trials, "noisy": row.noisy,
                 "verified": row.verified, "disturbed": notes.get(row.level, ""),
                 "status": {True: "pass", False: "fail", None: "missing"}[row.passed]}
                for row in r.path
            ],
            "has_disturbed": any(notes.get(row.level) for row in r.path),
            "criteria": names,
            "limits": limits,
            "rows": rows,
        })
    return out


def _level_notes(r: FindMaxReport, points: Mapping[int, Mapping[str, str]],
                 disturbed: Mapping[int, str]) -> dict[float, str]:
    """Level of search ``r`` -> the text of its point's disturbed trials."""
    out = {}
    for p, text in disturbed.items():
        labels = points.get(p, {})
        if any(labels.get(k) != v for k, v in r.combination.items()):
            continue
        try:
            out[float(labels.get(r.factor, ""))] = text
        except ValueError:
            continue
    return out


def _cell(c: CriterionValue | None) -> dict[str, str]:
    if c is None:
        return {"text": "—", "status": "missing"}
    text = "no data" if c.value is None else f"{c.value:.4g} {c.unit}".strip()
    return {"text": text, "status": "pass" if c.passed else "fail"}


def findmax_of(data: ReportData) -> list[FindMaxReport]:
    """The searches of the run a report is drawn from."""
    return findmax_reports(data.run, data.points, data.trials, data.analyzed().figures)
