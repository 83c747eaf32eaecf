"""The history of a scenario: one figure per run, point and metric, oldest run first.

Runs are read in bulk (a few queries whatever their number), and points are matched
across runs by their labels. Only successful trials count, as everywhere; by default
only runs that completed (status ok) are shown.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vbench.analysis import expr as ex
from vbench.analysis.derived import compute_derived, parse_specs
from vbench.analysis.figures import RunFigures, better, factor_order, values_from_samples
from vbench.analysis.stats import Summary, summarize
from vbench.config.scenario import Derived
from vbench.results.store import RunRow, Store, baseline_scope

LabelKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class HistoryRun:
    run_id: str
    started: float
    status: str
    tags: tuple[str, ...]
    vbench_version: str
    baseline: bool  # the scenario's baseline run (vbench baseline set)


@dataclass(frozen=True)
class HistorySeries:
    """One metric at one point across the runs of a :class:`History`."""

    metric: str
    unit: str
    better: str
    labels: Mapping[str, str]
    title: str
    summaries: tuple[Summary | None, ...]  # aligned with History.runs; None: not measured

    @property
    def means(self) -> list[float | None]:
        return [s.mean if s is not None else None for s in self.summaries]

    @property
    def change(self) -> float | None:
        """Last figure against the first one (relative), over the runs that have one."""
        xs = [m for m in self.means if m is not None]
        if len(xs) < 2 or xs[0] == 0:
            return None
        return (xs[-1] - xs[0]) / abs(xs[0])


@dataclass(frozen=True)
class History:
    scenario: str
    runs: tuple[HistoryRun, ...]  # oldest first
    metrics: tuple[str, ...]
    factors: tuple[str, ...]
    series: tuple[HistorySeries, ...]  # metric by metric, points in order

    def for_metric(self, metric: str) -> list[HistorySeries]:
        return [s for s in self.series if s.metric == metric]


def _needed(metrics: Sequence[str], specs: Sequence[Derived]) -> tuple[set[str], list[Derived]]:
    """Stored metrics to read, and the derived specs to compute, for ``metrics``."""
    by_name = {d.name: d for d in specs}
    wanted: set[str] = set()
    use: dict[str, Derived] = {}
    todo = list(metrics)
    while todo:
        name = todo.pop()
        if name in by_name and name not in use:
            d = by_name[name]
            use[name] = d
            deps = [*([d.metric] if d.metric else []), *d.metrics]
            if d.expr:
                with contextlib.suppress(ex.ExprError):  # reported by the run's own report
                    deps += sorted(ex.names(ex.parse(d.expr)))
            todo.extend(deps)
        elif name not in by_name:
            wanted.add(name)
    ordered = [d for d in specs if d.name in use]  # declaration order: dependencies first
    return wanted, ordered


def _key(labels: Mapping[str, str]) -> LabelKey:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def _select_runs(
    store: Store, scenario: str, tag: str | None, limit: int, include_failed: bool
) -> list[RunRow]:
    rows = store.list_runs(scenario=scenario, tag=tag)
    if not include_failed:
        rows = [r for r in rows if r.status == "ok"]
    return list(reversed(rows[:limit]))


def _plain_summaries(
    frame: pd.DataFrame, cv: float
) -> dict[tuple[str, int, str], Summary]:
    """(run, point, metric) -> summary over successful trials."""
    # The aggregate figure of a trial carries no labels (see analysis.aggregate).
    ok = frame[(frame["status"] == "ok") & ~frame["labelled"]]
    if ok.empty:
        return {}
    keys = ["run_id", "point", "metric"]
    per_trial = ok.groupby([*keys, "trial"], sort=True)["value"].mean().reset_index()
    # Rows are sorted by key: split the values where the key changes (much faster than
    # pandas' per-group iteration for thousands of small groups).
    runs, points, metrics = (per_trial[k].to_numpy() for k in keys)
    change = np.ones(len(per_trial), dtype=bool)
    change[1:] = (runs[1:] != runs[:-1]) | (points[1:] != points[:-1]) | (
        metrics[1:] != metrics[:-1]
    )
    starts = np.flatnonzero(change)
    groups = np.split(per_trial["value"].to_numpy(), starts[1:])
    return {
        (str(runs[i]), int(points[i]), str(metrics[i])): summarize(g.tolist(), cv)
        for i, g in zip(starts, groups, strict=True)
    }


def _derived_summaries(
    frame: pd.DataFrame,
    runs: Sequence[RunRow],
    points: Mapping[str, Mapping[int, Mapping[str, str]]],
    specs: Sequence[Derived],
    cv: float,
) -> dict[tuple[str, int, str], Summary]:
    out: dict[tuple[str, int, str], Summary] = {}
    ok = frame[(frame["status"] == "ok") & ~frame["labelled"]].assign(guest=None, labels="{}")
    by_run = dict(tuple(ok.groupby("run_id"))) if not ok.empty else {}
    for run in runs:
        rows = by_run.get(run.run_id, ok.iloc[0:0])
        values, units = values_from_samples(rows)
        figures = RunFigures(
            run={"run_id": run.run_id, "scenario": run.scenario},
            points=points.get(run.run_id, {}),
            factors=(),
            values=values,
            units=units,
            samples=rows.iloc[0:0],
        )
        result = compute_derived(figures, specs, cv_threshold=cv)
        for f in result.figures:
            if f.point is not None:
                out[(run.run_id, f.point, f.name)] = f.summary
    return out


def load_history(
    store: Store,
    scenario: str,
    metrics: Sequence[str],
    *,
    tag: str | None = None,
    limit: int = 20,
    include_failed: bool = False,
    cv_threshold: float = 0.05,
) -> History:
    """The last ``limit`` runs of ``scenario`` (optionally with ``tag``), oldest first,
    with ``metrics`` (measured or derived, as the newest run's scenario declares them)."""
    runs = _select_runs(store, scenario, tag, limit, include_failed)
    if not runs:
        return History(scenario, (), tuple(metrics), (), ())
    newest = runs[-1]
    specs, _ = parse_specs(newest.scenario)
    stored, derived_specs = _needed(metrics, specs)
    ids = [r.run_id for r in runs]
    frame = store.aggregate_frame(ids, sorted(stored))
    point_rows = store.points_of_runs(ids)
    points = {rid: {p.point: p.labels for p in rows} for rid, rows in point_rows.items()}
    summaries = _plain_summaries(frame, cv_threshold)
    if derived_specs:
        summaries.update(_derived_summaries(frame, runs, points, derived_specs, cv_threshold))
    units = dict(zip(frame["metric"], frame["unit"].fillna(""), strict=True))
    units.update({d.name: d.unit for d in derived_specs})
    baseline_ids = {
        b.run_id for b in store.baselines(scenario) if b.scope == baseline_scope(newest.lab)
    }
    return _assemble(scenario, runs, metrics, points, summaries, units, baseline_ids, specs)


def _assemble(
    scenario: str,
    runs: Sequence[RunRow],
    metrics: Sequence[str],
    points: Mapping[str, Mapping[int, Mapping[str, str]]],
    summaries: Mapping[tuple[str, int, str], Summary],
    units: Mapping[str, str],
    baseline_ids: set[str],
    specs: Sequence[Derived],
) -> History:
    # Points in the newest run's order, then any older point no longer measured.
    order: dict[LabelKey, Mapping[str, str]] = {}
    for run in reversed(runs):
        for _, labels in sorted(points.get(run.run_id, {}).items()):
            order.setdefault(_key(labels), labels)
    factors = factor_order(runs[-1].scenario, order.values())
    index = {
        (r.run_id, _key(labels)): p for r in runs for p, labels in points.get(r.run_id, {}).items()
    }
    overrides = {**((runs[-1].scenario.get("report") or {}).get("better") or {})}
    for d in specs:
        if d.better:
            overrides.setdefault(d.name, d.better)
    series = []
    for m in metrics:
        unit = units.get(m, "")
        for key, labels in order.items():
            row = []
            for r in runs:
                p = index.get((r.run_id, key))
                row.append(summaries.get((r.run_id, p, m)) if p is not None else None)
            if all(s is None for s in row):
                continue
            title = ", ".join(f"{f}={labels[f]}" for f in factors if f in labels) or "all"
            series.append(HistorySeries(m, unit, better(m, unit, overrides), dict(labels),
                                        title, tuple(row)))
    hist_runs = tuple(
        HistoryRun(r.run_id, r.started, r.status, r.tags, r.vbench_version,
                   r.run_id in baseline_ids)
        for r in runs
    )
    return History(scenario, hist_runs, tuple(metrics), factors, tuple(series))


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, ▁ (lowest) to █ (highest); a space for a gap."""
    bars = "▁▂▃▄▅▆▇█"
    xs = [v for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return " " * len(values)
    lo, hi = min(xs), max(xs)
    span = hi - lo
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(" ")
        else:
            out.append(bars[int((v - lo) / span * (len(bars) - 1)) if span else 3])
    return "".join(out)
