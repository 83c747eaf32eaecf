"""vcbench figures from the raw operation log (pure: records in, samples out).

The raw log (``ops.csv``, one row per operation: op, session, vCenter, VM, start, end,
ok, fault type, fault message) is the source of every figure: an operation counts in
the steady window when it *completed* inside it (as Faban counts), so

    ops/s = operations completed in [steady_start, steady_end] ÷ (steady_end − steady_start)

Latency statistics are over the same operations. Failed operations are counted per
fault type and never enter the latency figures.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

from vbench.analysis.catalogue import Metric, labelled, metric, same_unit
from vbench.results.records import Sample

SOURCE = "vcbench"
OPS_FILE = "ops.csv"
SERIES_FILE = "ops_per_second.csv"
# Per trial, and per operation (label `op`) for the vcbench.op_* and mix figures: those
# exist only per operation (a QoS names its operations with `where: {op: [...]}`); the
# driver fills in the operations of each point's mix (VcbenchWorkload.metric_catalogue).
METRICS: tuple[Metric, ...] = (
    metric("vcbench.ops_per_s", "ops/s", "higher"),
    *labelled([metric("vcbench.op_ops_per_s", "ops/s", "higher")], per_label=True, op=()),
    # Little's law's ideal is the reference the measured rate is read against.
    metric("vcbench.littles_ideal_ops_per_s", "ops/s", "none"),
    metric("vcbench.completed", "ops", "higher"),
    *same_unit(("vcbench.failed", "vcbench.late_starts"), "ops", "lower"),
    *labelled([metric("vcbench.failures", "ops", "lower")], per_label=True, op=(), fault=()),
    metric("vcbench.sessions", "sessions", "none"),
    metric("vcbench.latency_avg", "s", "lower"),
    *labelled(same_unit(("vcbench.op_latency_<stat>",), "s", "lower",
                        stat=("avg", "p50", "p95", "p99", "max")), per_label=True, op=()),
    *labelled(same_unit(("vcbench.mix_share", "vcbench.mix_target"), "%", "none"),
              per_label=True, op=()),
)  # fmt: skip
_COLUMNS = ("op", "session", "vcenter", "vm", "start", "end", "ok", "fault_type", "fault")


@dataclass(frozen=True)
class Row:
    """One operation as the raw log holds it (mirrors vsphere.operations.OpRecord)."""

    op: str
    session: int
    vcenter: str
    vm: str
    start: float
    end: float
    ok: bool
    fault_type: str | None = None
    fault: str | None = None

    @property
    def latency(self) -> float:
        return self.end - self.start


class RowLike(Protocol):
    op: str
    session: int
    vcenter: str
    vm: str
    start: float
    end: float
    ok: bool
    fault_type: str | None
    fault: str | None


def write_log(path: Path, records: Iterable[RowLike]) -> int:
    """Write records (OpRecords, Rows) as CSV; the number written."""
    n = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(_COLUMNS)
        for r in records:
            w.writerow([
                r.op, r.session, r.vcenter, r.vm, f"{r.start:.6f}", f"{r.end:.6f}",
                int(bool(r.ok)), r.fault_type or "", r.fault or "",
            ])  # fmt: skip
            n += 1
    return n


def read_log(path: Path) -> list[Row]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [
        Row(
            r["op"],
            int(r["session"]),
            r["vcenter"],
            r["vm"],
            float(r["start"]),
            float(r["end"]),
            r["ok"] == "1",
            r["fault_type"] or None,
            r["fault"] or None,
        )
        for r in rows
    ]


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100) of sorted values; None when empty."""
    if not sorted_values:
        return None
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def in_window(rows: Iterable[Row], start: float, end: float) -> list[Row]:
    return [r for r in rows if start <= r.end <= end]


@dataclass(frozen=True)
class LatencyStats:
    count: int
    avg: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None


def latency_stats(latencies: Iterable[float]) -> LatencyStats:
    v = sorted(latencies)
    if not v:
        return LatencyStats(0, None, None, None, None, None)
    return LatencyStats(
        len(v), sum(v) / len(v), percentile(v, 50), percentile(v, 95), percentile(v, 99), v[-1]
    )


def _s(metric: str, value: float | None, unit: str, **labels: str) -> Sample:
    return Sample(metric, value, unit, SOURCE, None, tuple(sorted(labels.items())))


def steady_samples(
    rows: Sequence[Row],
    start: float,
    end: float,
    *,
    sessions: int,
    think_time: float,
    mix: Mapping[str, float],
) -> list[Sample]:
    """Every figure of one trial's steady window."""
    window = end - start
    steady = in_window(rows, start, end)
    ok = [r for r in steady if r.ok]
    failed = [r for r in steady if not r.ok]
    out = [
        _s("vcbench.ops_per_s", len(ok) / window if window > 0 else None, "ops/s"),
        _s("vcbench.completed", float(len(ok)), "ops"),
        _s("vcbench.failed", float(len(failed)), "ops"),
        _s("vcbench.sessions", float(sessions), "sessions"),
    ]
    overall = latency_stats(r.latency for r in ok)
    out.append(_s("vcbench.latency_avg", overall.avg, "s"))
    # Little's law for a closed loop: N sessions, each busy for latency + think time.
    busy = None if overall.avg is None else overall.avg + think_time
    out.append(_s("vcbench.littles_ideal_ops_per_s", sessions / busy if busy else None, "ops/s"))
    by_op: dict[str, list[Row]] = defaultdict(list)
    for r in ok:
        by_op[r.op].append(r)
    total_weight = sum(w for w in mix.values() if w > 0)
    for op in sorted(set(by_op) | {o for o, w in mix.items() if w > 0}):
        st = latency_stats(r.latency for r in by_op.get(op, ()))
        n = len(by_op.get(op, ()))
        out += [
            _s("vcbench.op_ops_per_s", n / window if window > 0 else None, "ops/s", op=op),
            _s("vcbench.op_latency_avg", st.avg, "s", op=op),
            _s("vcbench.op_latency_p50", st.p50, "s", op=op),
            _s("vcbench.op_latency_p95", st.p95, "s", op=op),
            _s("vcbench.op_latency_p99", st.p99, "s", op=op),
            _s("vcbench.op_latency_max", st.max, "s", op=op),
            _s("vcbench.mix_share", 100.0 * n / len(ok) if ok else None, "%", op=op),
            _s(
                "vcbench.mix_target",
                100.0 * mix.get(op, 0) / total_weight if total_weight else None,
                "%",
                op=op,
            ),
        ]
    for (op, kind), n in sorted(Counter((r.op, r.fault_type or "Unknown") for r in failed).items()):
        out.append(_s("vcbench.failures", float(n), "ops", op=op, fault=kind))
    return out


def fault_messages(rows: Iterable[Row]) -> dict[str, list[str]]:
    """Fault type -> the distinct messages vCenter gave for it (for the failures table)."""
    out: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if not r.ok:
            out[r.fault_type or "Unknown"].add(r.fault or "")
    return {k: sorted(v) for k, v in out.items()}


def per_second(rows: Iterable[Row], start: float, end: float) -> list[tuple[float, int]]:
    """Completed operations per whole second from ``start`` (the ops/s time series)."""
    n = max(0, math.ceil(end - start))
    bins = [0] * n
    for r in rows:
        if r.ok and start <= r.end < start + n:
            bins[int(r.end - start)] += 1
    return [(start + i, c) for i, c in enumerate(bins)]


def write_series(path: Path, series: Sequence[tuple[float, int]], t0: float) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(("ts", "t", "ops"))
        for ts, c in series:
            w.writerow((f"{ts:.3f}", f"{ts - t0:.0f}", c))


ROW_FIELDS = tuple(f.name for f in fields(Row))
