"""The history of a scenario: one figure per run, point and metric, oldest run first.

Runs are read in bulk (a few queries whatever their number), and points are matched
across runs by their labels. Only successful trials count, as everywhere; by default
only runs that completed (status ok) are shown.

Every run carries what makes it comparable (:mod:`vbench.results.identity`): runs of one
*variant* ran the same scenario (after ``--set``) in the same lab. Variants are named
A, B, … from the newest run's, each with its differences from A, so a trend never
mixes a throttled or simulated run into a real one without saying so; ``lab`` and
``same_scenario`` keep one lab or one variant of the scenario only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from vbench.analysis import expr as ex
from vbench.analysis.comparable import Comparability, compare_runs
from vbench.analysis.derived import compute_derived, parse_specs
from vbench.analysis.direction import directions_of
from vbench.analysis.figures import RunFigures, better, factor_order, values_from_samples
from vbench.analysis.stats import Summary, summarize
from vbench.config.scenario import Derived
from vbench.results.identity import RunIdentity, identity_of
from vbench.results.store import RunRow, Store, baseline_scope
from vbench.results.stored import StoredRun

LabelKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class HistoryRun:
    run_id: str
    started: float
    status: str
    tags: tuple[str, ...]
    vbench_version: str
    baseline: bool  # the scenario's baseline run (vbench baseline set)
    lab: str = ""  # the lab's name
    lab_kind: str = ""  # "local loopback", "simulated vCenter (vcsim), throttled" …
    lab_fingerprint: str = ""
    scenario_hash: str = ""  # the resolved scenario after --set
    overrides: tuple[str, ...] = ()  # the run's --set arguments
    variant: str = "A"  # see History.variants


@dataclass(frozen=True)
class HistoryVariant:
    """Runs that ran the same scenario (after --set) in the same lab."""

    name: str  # A (the newest run's), B, …
    lab: str
    lab_kind: str
    lab_fingerprint: str
    scenario_hash: str
    runs: int
    against_a: Comparability | None  # what differs from variant A (None for A)


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
        return _change(self.means)


@dataclass(frozen=True)
class RunWatch:
    """What the lab's watch recorded of one run's trials, as stored with it
    (``testbed["disturbances"]``), its stored trials and their values the history read —
    plain data: vbench/report/disturbed.py says which trials were disturbed and whether a
    figure includes them. Only runs with such records have one."""

    entries: tuple[Mapping[str, Any], ...]  # the testbed's records, in order
    trials: tuple[Mapping[str, Any], ...]  # {point, trial, status}: its stored trials
    points: Mapping[LabelKey, int]  # a point's labels -> its index in this run
    # (point, metric) -> {trial: its value} of the successful trials (stored metrics only)
    values: Mapping[tuple[int, str], Mapping[int, float]]


@dataclass(frozen=True)
class History:
    scenario: str
    runs: tuple[HistoryRun, ...]  # oldest first
    metrics: tuple[str, ...]
    factors: tuple[str, ...]
    series: tuple[HistorySeries, ...]  # metric by metric, points in order
    variants: tuple[HistoryVariant, ...] = ()
    watch: Mapping[str, RunWatch] = field(default_factory=dict)  # run id -> its records

    def for_metric(self, metric: str) -> list[HistorySeries]:
        return [s for s in self.series if s.metric == metric]

    def change(self, series: HistorySeries) -> float | None:
        """Last figure against the first, over the runs of the newest run's variant
        (all runs when there is one variant): a trend never spans two experiments."""
        if len(self.variants) < 2:
            return series.change
        return _change([m for r, m in zip(self.runs, series.means, strict=True)
                        if r.variant == "A"])


def _change(means: Sequence[float | None]) -> float | None:
    xs = [m for m in means if m is not None]
    if len(xs) < 2 or xs[0] == 0:
        return None
    return (xs[-1] - xs[0]) / abs(xs[0])


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


def _identity(run: RunRow) -> RunIdentity:
    return identity_of({"lab": run.lab, "scenario": run.scenario,
                        "lab_fingerprint": run.lab_fingerprint,
                        "scenario_hash": run.scenario_hash, "overrides": run.overrides,
                        "base_scenario_hash": run.base_scenario_hash})


def lab_matches(identity: RunIdentity, lab: str) -> bool:
    """``lab`` names the run's lab, or is a prefix (4+ digits) of its fingerprint."""
    return identity.lab_name == lab or (
        len(lab) >= 4 and identity.lab_fingerprint.startswith(lab.lower()))


def _select_runs(
    store: Store, scenario: str, tag: str | None, limit: int, include_failed: bool,
    lab: str | None = None, same_scenario: bool = False,
) -> list[tuple[RunRow, RunIdentity]]:
    rows = store.list_runs(scenario=scenario, tag=tag)
    if not include_failed:
        rows = [r for r in rows if r.status == "ok"]
    found = [(r, _identity(r)) for r in rows]  # newest first
    if lab is not None:
        found = [(r, i) for r, i in found if lab_matches(i, lab)]
    if same_scenario and found:
        newest = found[0][1].scenario_hash
        found = [(r, i) for r, i in found if i.scenario_hash == newest]
    return list(reversed(found[:limit]))


def _variants(
    runs: Sequence[tuple[RunRow, RunIdentity]],
) -> tuple[dict[str, str], tuple[HistoryVariant, ...]]:
    """Run id -> variant name, and the variants: A is the newest run's, then the others
    from the newest down, each described against A."""
    newest: dict[tuple[str, str], RunRow] = {}
    count: dict[tuple[str, str], int] = {}
    for r, i in reversed(runs):
        newest.setdefault(i.variant, r)
        count[i.variant] = count.get(i.variant, 0) + 1
    names = {key: chr(ord("A") + n) if n < 26 else f"V{n + 1}"
             for n, key in enumerate(newest)}
    first = next(iter(newest.values()), None)
    variants = []
    for key, row in newest.items():
        i = _identity(row)
        comp = None
        if first is not None and row is not first:
            comp = compare_runs(_as_run(first), _as_run(row))
        variants.append(HistoryVariant(names[key], i.lab_name, i.lab_kind.text,
                                       i.lab_fingerprint, i.scenario_hash, count[key], comp))
    return {r.run_id: names[i.variant] for r, i in runs}, tuple(variants)


def _as_run(row: RunRow) -> dict[str, object]:
    return {"lab": row.lab, "scenario": row.scenario, "lab_fingerprint": row.lab_fingerprint,
            "scenario_hash": row.scenario_hash, "overrides": row.overrides}


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


Summaries = dict[tuple[str, LabelKey, str], Summary]  # (run, point labels, metric)


def _by_labels(
    plain: Mapping[tuple[str, int, str], Summary],
    points: Mapping[str, Mapping[int, Mapping[str, str]]],
) -> Summaries:
    keys = {(rid, p): _key(labels) for rid, pts in points.items() for p, labels in pts.items()}
    out: Summaries = {}
    for (rid, p, m), s in plain.items():
        key = keys.get((rid, p))
        if key is not None:
            out[(rid, key, m)] = s
    return out


def _derived_summaries(
    frame: pd.DataFrame,
    runs: Sequence[RunRow],
    points: Mapping[str, Mapping[int, Mapping[str, str]]],
    specs: Sequence[Derived],
    cv: float,
) -> Summaries:
    """Derived figures of every run, by point labels; a figure across the levels of a
    factor (geomean ``across``) by the labels of its group."""
    out: Summaries = {}
    ok = frame[(frame["status"] == "ok") & ~frame["labelled"]].assign(guest=None, labels="{}")
    by_run = dict(tuple(ok.groupby("run_id"))) if not ok.empty else {}
    for run in runs:
        rows = by_run.get(run.run_id, ok.iloc[0:0])
        values, units = values_from_samples(rows)
        run_points = points.get(run.run_id, {})
        figures = RunFigures(
            run={"run_id": run.run_id, "scenario": run.scenario},
            points=run_points,
            # normalize, speedup and geomean-across name factors: without them every
            # such figure was "no factor …" and the history had no data.
            factors=factor_order(run.scenario, run_points.values()),
            values=values,
            units=units,
            samples=rows.iloc[0:0],
        )
        result = compute_derived(figures, specs, cv_threshold=cv)
        for f in result.figures:
            labels = run_points.get(f.point) if f.point is not None else f.labels
            if labels is not None:
                out[(run.run_id, _key(labels), f.name)] = f.summary
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
    lab: str | None = None,
    same_scenario: bool = False,
) -> History:
    """The last ``limit`` runs of ``scenario`` (optionally with ``tag``, in ``lab`` — a
    name or fingerprint prefix —, only of the newest run's scenario variant), oldest
    first, with ``metrics`` (measured or derived, as the newest run's scenario declares
    them; none given: the newest run's headline metrics)."""
    selected = _select_runs(store, scenario, tag, limit, include_failed, lab, same_scenario)
    if not selected:
        return History(scenario, (), tuple(metrics), (), ())
    runs = [r for r, _ in selected]
    newest = runs[-1]
    if not metrics:  # the newest run's headline metrics
        metrics = StoredRun.of(dataclasses.asdict(newest)).headline
    specs, _ = parse_specs(newest.scenario)
    stored, derived_specs = _needed(metrics, specs)
    ids = [r.run_id for r in runs]
    frame = store.aggregate_frame(ids, sorted(stored))
    point_rows = store.points_of_runs(ids)
    points = {rid: {p.point: p.labels for p in rows} for rid, rows in point_rows.items()}
    summaries = _by_labels(_plain_summaries(frame, cv_threshold), points)
    if derived_specs:
        summaries.update(_derived_summaries(frame, runs, points, derived_specs, cv_threshold))
    units = dict(zip(frame["metric"], frame["unit"].fillna(""), strict=True))
    units.update({d.name: d.unit for d in derived_specs})
    baseline_ids = {
        b.run_id for b in store.baselines(scenario) if b.scope == baseline_scope(newest.lab)
    }
    factors, series = _assemble(runs, metrics, points, summaries, units, specs)
    names, variants = _variants(selected)
    watch = _watches(frame, runs, points, store)
    hist_runs = tuple(
        HistoryRun(r.run_id, r.started, r.status, r.tags, r.vbench_version,
                   r.run_id in baseline_ids, i.lab_name, i.lab_kind.text, i.lab_fingerprint,
                   i.scenario_hash, i.overrides, names[r.run_id])
        for r, i in selected
    )
    return History(scenario, hist_runs, tuple(metrics), factors, series, variants, watch)


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _watches(frame: pd.DataFrame, runs: Sequence[RunRow],
             points: Mapping[str, Mapping[int, Mapping[str, str]]],
             store: Store) -> dict[str, RunWatch]:
    """The :class:`RunWatch` of each run whose testbed has disturbance records, from the
    samples already read and the run's stored trials (most nights have none: nothing
    more is read or computed for them)."""
    entries = {r.run_id: tuple(d for d in r.testbed["disturbances"] if isinstance(d, Mapping))
               for r in runs if isinstance(r.testbed, Mapping)
               and isinstance(r.testbed.get("disturbances"), list | tuple)
               and r.testbed["disturbances"]}
    if not entries:
        return {}
    # Only the points with records matter (what was disturbed and its trials' values).
    pairs = {(rid, p) for rid, found in entries.items() for d in found
             if isinstance(p := _int_or_none(d.get("point")), int)}
    mine = frame[frame["run_id"].isin(list(entries))]
    mine = mine[pd.MultiIndex.from_arrays([mine["run_id"], mine["point"].astype(int)])
                .isin(list(pairs))] if len(mine) else mine
    values: dict[str, dict[tuple[int, str], dict[int, float]]] = {rid: {} for rid in entries}
    ok = mine[(mine["status"] == "ok") & ~mine["labelled"]]
    per_trial = ok.groupby(["run_id", "point", "metric", "trial"])["value"].mean()
    for (rid, p, m, t), v in per_trial.items():
        if math.isfinite(v):
            values[rid].setdefault((int(p), str(m)), {})[int(t)] = float(v)
    # Every stored trial, as `vbench show` counts them: one that failed before any
    # sample is one of its point's trials too (the samples alone would not know it).
    return {rid: RunWatch(found, tuple({"point": t.point, "trial": t.trial, "status": t.status}
                                       for t in store.trials(rid)),
                          {_key(lb): p for p, lb in points.get(rid, {}).items()},
                          values[rid])
            for rid, found in entries.items()}


def _assemble(
    runs: Sequence[RunRow],
    metrics: Sequence[str],
    points: Mapping[str, Mapping[int, Mapping[str, str]]],
    summaries: Summaries,
    units: Mapping[str, str],
    specs: Sequence[Derived],
) -> tuple[tuple[str, ...], tuple[HistorySeries, ...]]:
    """The factors and one series per metric and point (or group), in order."""
    # Points in the newest run's order, then any older point no longer measured, then
    # the groups of figures across a factor's levels.
    order: dict[LabelKey, Mapping[str, str]] = {}
    for run in reversed(runs):
        for _, labels in sorted(points.get(run.run_id, {}).items()):
            order.setdefault(_key(labels), labels)
    for _, key, _ in summaries:
        order.setdefault(key, dict(key))
    factors = factor_order(runs[-1].scenario, order.values())
    # The newest run's catalogue, report.better and derived figures say which way is better.
    overrides = directions_of({"scenario": runs[-1].scenario,
                               "metrics": getattr(runs[-1], "metrics", None)})
    series = []
    for m in metrics:
        unit = units.get(m, "")
        for key, labels in order.items():
            row = tuple(summaries.get((r.run_id, key, m)) for r in runs)
            if all(s is None for s in row):
                continue
            title = ", ".join(f"{f}={labels[f]}" for f in factors if f in labels) or "all"
            series.append(HistorySeries(m, unit, better(m, unit, overrides), dict(labels),
                                        title, row))
    return factors, tuple(series)


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
