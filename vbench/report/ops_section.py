"""The per-operation section: for a run whose samples carry an ``op`` label (vcbench's
``vcbench.op_latency_avg {op}`` …), per point a table operation × (ops/s, latency mean
± 95 % CI over trials, p95, p99, max, failures), a bar chart of mean latency per
operation with whiskers, and the failures per fault type with vCenter's messages.

Pure: it reads the stored samples and, for the fault messages (text, which no sample
can hold), the ``faults`` map a driver leaves in ``raw/<point>-<trial>/window.json``.

Which samples count: aggregate ones (no guest) labelled ``{op}`` only — per-process or
per-guest breakdowns (redis's ``{op, process}``) stay out — and failure counts labelled
``{op, fault}``. The figure a metric is comes from the end of its name, so another
driver that names its figures the same way gets the same section.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from vbench.analysis.figures import parse_labels
from vbench.analysis.stats import Summary, summarize
from vbench.report.chartplan import ChartIds, error_text, point_legend, whiskers
from vbench.report.charts import Bar, grouped_bar_chart_svg
from vbench.report.data import MISSING, NO_DATA, fmt_mean_ci, fmt_num, fmt_value

OP_LABEL = "op"
FAULT_LABEL = "fault"
FAULTS_FILE = "window.json"
MAX_MESSAGES = 5  # per fault type in the table; the raw log keeps every one
# Figure -> the metric-name endings that are it (vcbench: vcbench.op_latency_p95).
ROLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ops", ("ops_per_s", "ops_per_sec")),
    ("latency", ("latency_avg", "latency_mean")),
    ("p95", ("latency_p95",)),
    ("p99", ("latency_p99",)),
    ("max", ("latency_max",)),
)
_FAILURE_ENDINGS = ("failures", "failed")


@dataclass(frozen=True)
class OpFigures:
    """One operation type at one point; each figure summarised over the trials."""

    op: str
    ops: Summary
    latency: Summary
    p95: Summary
    p99: Summary
    max: Summary
    failures: float | None  # failed operations over the point's trials; None: not counted


@dataclass(frozen=True)
class FaultRow:
    fault: str
    count: float  # over the point's trials
    by_op: tuple[tuple[str, float], ...]
    messages: tuple[str, ...]  # distinct, as vCenter gave them; () when not recorded


@dataclass(frozen=True)
class PointOps:
    point: int
    title: str
    trials: int
    units: Mapping[str, str]  # role -> unit
    ops: tuple[OpFigures, ...]
    faults: tuple[FaultRow, ...]


def _role(metric: str) -> str | None:
    for role, endings in ROLES:
        if metric.endswith(endings):
            return role
    return None


def _labelled(samples: pd.DataFrame) -> list[tuple[int, int, str, str, dict[str, str], float]]:
    """(point, trial, metric, unit, labels, value) of the aggregate ``op``-labelled rows."""
    if samples.empty or "labels" not in samples:
        return []
    # A cheap text test first: a run may hold thousands of unlabelled collector rows.
    mask = samples["labels"].astype(str).str.contains(f'"{OP_LABEL}"', regex=False)
    mask &= samples["guest"].isna()
    out = []
    for row in samples[mask].itertuples(index=False):
        labels = parse_labels(row.labels)
        if OP_LABEL not in labels or set(labels) - {OP_LABEL, FAULT_LABEL}:
            continue
        value = float(row.value)
        out.append((int(row.point), int(row.trial), str(row.metric), str(row.unit or ""),
                    labels, value))
    return out


def _counts_failures(samples: pd.DataFrame, sources: set[str]) -> bool:
    """Whether the driver of the op figures counts failures (so no count means 0)."""
    rows = samples[samples["source"].astype(str).isin(sources)]
    return bool(rows["metric"].astype(str).str.endswith(_FAILURE_ENDINGS).any())


def operation_figures(
    samples: pd.DataFrame,
    titles: Mapping[int, str],
    run_dir: str | Path | None = None,
    *,
    cv_threshold: float | None = None,
) -> list[PointOps]:
    """Per point (in order) its operations; empty when no sample carries an ``op``."""
    rows = _labelled(samples)
    if not rows:
        return []
    sources = set(samples.loc[samples["labels"].astype(str).str.contains(
        f'"{OP_LABEL}"', regex=False), "source"].astype(str))
    counted = _counts_failures(samples, sources)
    # point -> role -> op -> trial -> values (several metrics of one role are averaged)
    figs: dict[int, dict[str, dict[str, dict[int, list[float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    fails: dict[int, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    units: dict[int, dict[str, str]] = defaultdict(dict)
    trials: dict[int, set[int]] = defaultdict(set)
    for point, trial, metric, unit, labels, value in rows:
        trials[point].add(trial)
        if FAULT_LABEL in labels:
            if metric.endswith(_FAILURE_ENDINGS) and value == value:
                fails[point][(labels[OP_LABEL], labels[FAULT_LABEL])] += value
            continue
        role = _role(metric)
        if role is None:
            continue
        figs[point][role][labels[OP_LABEL]][trial].append(value)
        units[point].setdefault(role, unit)
    kw = {} if cv_threshold is None else {"cv_threshold": cv_threshold}
    out = []
    for point in sorted(trials):
        by_role = figs[point]
        ops = sorted({op for r in by_role.values() for op in r}
                     | {op for op, _ in fails[point]})
        table = []
        for op in ops:
            s = {role: summarize(_per_trial(by_role[role].get(op, {})), **kw)
                 for role, _ in ROLES}
            n_fail = sum(v for (o, _), v in fails[point].items() if o == op)
            table.append(OpFigures(op, s["ops"], s["latency"], s["p95"], s["p99"], s["max"],
                                   n_fail if counted or n_fail else None))
        messages = _messages(run_dir, point, sorted(trials[point]))
        out.append(PointOps(point, titles.get(point, f"point {point + 1}"), len(trials[point]),
                            dict(units[point]), tuple(table),
                            _fault_rows(fails[point], messages)))
    return out


def _per_trial(by_trial: Mapping[int, list[float]]) -> list[float | None]:
    """One figure per trial (NaN stays missing: summarize skips it)."""
    return [sum(v) / len(v) for _, v in sorted(by_trial.items())]


def _fault_rows(
    fails: Mapping[tuple[str, str], float], messages: Mapping[str, Sequence[str]]
) -> tuple[FaultRow, ...]:
    by_fault: dict[str, dict[str, float]] = defaultdict(dict)
    for (op, fault), n in fails.items():
        by_fault[fault][op] = n
    rows = [
        FaultRow(fault, sum(ops.values()), tuple(sorted(ops.items(), key=lambda x: (-x[1], x[0]))),
                 tuple(messages.get(fault, ())))
        for fault, ops in by_fault.items()
    ]
    return tuple(sorted(rows, key=lambda r: (-r.count, r.fault)))


def _messages(
    run_dir: str | Path | None, point: int, trials: Sequence[int]
) -> dict[str, list[str]]:
    """Fault type -> the distinct messages the point's trials recorded."""
    if not run_dir:
        return {}
    found: dict[str, set[str]] = defaultdict(set)
    for t in trials:
        path = Path(run_dir) / "raw" / f"{point}-{t}" / FAULTS_FILE
        try:
            faults = json.loads(path.read_text(encoding="utf-8")).get("faults") or {}
        except (OSError, ValueError, AttributeError):
            continue  # no file (another driver) or not ours: the counts still stand
        if isinstance(faults, dict):
            for kind, msgs in faults.items():
                found[str(kind)].update(str(m) for m in (msgs or ()) if m)
    return {k: sorted(v) for k, v in found.items()}


# ------------------------------------------------------------------ the HTML view


def _cell(s: Summary, unit: str, stat: str) -> str:
    if s.n == 0:
        return NO_DATA
    if stat == "mean":
        return fmt_mean_ci(s, unit)
    return fmt_value(s.max if stat == "max" else s.mean, unit)


def _count(x: float | None) -> str:
    return MISSING if x is None else fmt_num(x, 0)


def ops_section(
    points: Sequence[PointOps], ids: ChartIds, mode: str = "range",
    labels: Mapping[int, Mapping[str, str]] | None = None,
) -> dict[str, Any] | None:
    """What the template shows (None: no run point has per-operation figures).
    ``labels``: each point's factor levels, naming the chart's legend entries."""
    if not points:
        return None
    tables = []
    for p in points:
        u = p.units
        rows = [{
            "op": o.op,
            "ops": _cell(o.ops, u.get("ops", ""), "mean"),
            "latency": _cell(o.latency, u.get("latency", ""), "mean"),
            "p95": _cell(o.p95, u.get("p95", ""), "p"),
            "p99": _cell(o.p99, u.get("p99", ""), "p"),
            "max": _cell(o.max, u.get("max", ""), "max"),
            "failures": _count(o.failures),
            "failed": bool(o.failures),
        } for o in p.ops]
        faults = [{
            "fault": f.fault,
            "count": _count(f.count),
            "ops": ", ".join(f"{op} {fmt_num(n, 0)}" for op, n in f.by_op),
            "messages": list(f.messages[:MAX_MESSAGES]),
            "more": max(0, len(f.messages) - MAX_MESSAGES),
        } for f in p.faults]
        tables.append({"title": p.title, "point": p.point, "trials": p.trials, "rows": rows,
                       "faults": faults,
                       "counted": any(o.failures is not None for o in p.ops)})
    return {"points": tables, "chart": _latency_chart(points, ids, mode, labels or {}),
            "error_bars": error_text(mode)}


def _latency_chart(points: Sequence[PointOps], ids: ChartIds, mode: str,
                   labels: Mapping[int, Mapping[str, str]]) -> Markup | None:
    ops = sorted({o.op for p in points for o in p.ops})
    if not ops:
        return None
    heading, names = point_legend([labels.get(p.point, {}) for p in points],
                                  [p.title for p in points])
    series = []
    for p, name in zip(points, names, strict=True):
        mine = {o.op: o.latency for o in p.ops}
        bars = []
        for op in ops:
            s = mine.get(op)
            low, high = whiskers(s, mode)
            bars.append(Bar(op, s.mean if s is not None and s.n else None, low, high))
        series.append((name, bars))
    unit = next((p.units["latency"] for p in points if p.units.get("latency")), "")
    svg = grouped_bar_chart_svg(
        ops, series, f"mean latency ({unit})" if unit else "mean latency",
        chart_id=ids.next(), xlabel="operation", title="Mean latency per operation",
        legend_title=heading,
    )
    return Markup(svg)
