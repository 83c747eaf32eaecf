"""The report's figure tables: per metric (one row per point) and per guest, each in the
unit its values read best in (one unit per table or column, see :mod:`.units`), for the
metrics :mod:`.shown` keeps."""

from __future__ import annotations

from typing import Any

from vbench.analysis.aggregate import summarize_points
from vbench.report.data import NO_DATA, ReportView, fmt_value
from vbench.report.shown import MetricChoice, families
from vbench.report.units import Scale, choose


def metric_scale(view: ReportView, metric: str) -> Scale:
    """One unit for a metric over all points (its table, its headline row)."""
    means = [ms.summary.mean for (_, m), ms in view.summaries.items() if m == metric]
    return choose(view.units.get(metric, ""), means)


def result_tables(view: ReportView, choice: MetricChoice) -> list[dict[str, Any]]:
    """A table per metric shown, a row per point; ``disturbed``: the point's disturbed
    trials and whether they are in its figures (vbench/report/disturbed.py), a column
    only in a run that has any."""
    from vbench.report.disturbed import of_data

    found = of_data(view.data)
    figures = view.data.analyzed().figures if found else None
    tables = []
    for metric in choice.shown:
        scale = metric_scale(view, metric)
        rows = []
        for p in view.points:
            cell = view.cell(p.point, metric, scale)
            s = cell.summary
            noisy = ""
            if s is not None and s.noisy:
                noisy = "noisy" + (f": ~{s.trials_needed} trials needed" if s.trials_needed else "")
            mine = found.get(p.point)
            if mine is not None and figures is not None:  # as this metric's figure sees them
                mine = mine.of_metric(figures.trial_values(p.point, metric))
            rows.append(
                {"point": p, "cell": cell, "has_data": p.has_data and cell.n > 0, "noisy": noisy,
                 "disturbed": mine.text() if mine else ""}
            )
        tables.append({"metric": metric, "unit": scale.unit,
                       "headline": metric in view.headline, "rows": rows,
                       "has_disturbed": bool(found)})
    return tables


def guest_table(view: ReportView, choice: MetricChoice) -> dict[str, Any] | None:
    """Mean per guest and point, a column per metric shown (hidden ones stay hidden)."""
    found = summarize_points(
        view.data.samples,
        per_guest=True,
        include_trials=view.ok_trials,
        cv_threshold=view.cv_threshold,
    )
    hidden = choice.hidden()
    found = [ms for ms in found if ms.metric not in hidden]
    if not found:
        return None
    units = {ms.metric: ms.unit for ms in found}
    zero = {m for m in units if all(ms.summary.mean == 0 for ms in found if ms.metric == m
                                    and ms.summary.n)}
    metrics = [m for m in [*choice.shown, *sorted(set(units) - set(choice.shown))]
               if m in units and m not in zero]
    scales = {m: choose(units[m], [ms.summary.mean for ms in found if ms.metric == m])
              for m in metrics}
    by_key = {(ms.point, ms.guest, ms.metric): ms for ms in found}
    titles = {p.point: p for p in view.points}
    rows = []
    for point, guest in dict.fromkeys((ms.point, ms.guest) for ms in found):
        cells = []
        for m in metrics:
            ms = by_key.get((point, guest, m))
            if ms is None or ms.summary.n == 0:
                cells.append(NO_DATA)
                continue
            sc = scales[m]
            cells.append(f"{fmt_value(sc.value(ms.summary.mean), sc.unit)} (n={ms.summary.n})")
        p = titles.get(point)
        rows.append({"point": p.title if p else str(point), "guest": guest, "cells": cells})
    return {"metrics": [(m, scales[m].unit) for m in metrics], "rows": rows,
            "hidden": families(sorted(zero))}
