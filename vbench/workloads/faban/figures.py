"""A Faban run's figures as vbench samples (pure).

The names are the ``cloudstone`` driver's, so that a Locust run of the Olio mix and a
Faban run of the same application sit in one report: per operation (label
``operation``) and for the whole mix (``operation: all``) per instance (on the client
guest, label ``instance``), and across instances (no guest): throughput and counts
summed, response times averaged, as the CloudStone write-ups average the latencies of
independent client/server pairs. A figure missing in one instance leaves the
cross-instance figure missing (``None``), never a partial sum or mean.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from vbench.analysis.catalogue import Better, Metric, labelled, metric
from vbench.parsers.faban import FabanOperationFigures, FabanRun
from vbench.results.records import Sample

SOURCE = "faban"
ALL = "all"
UNITS = {"ops_per_sec": "ops/s", "rt_avg": "ms", "rt_p90": "ms", "rt_p95": "ms",
         "rt_p99": "ms", "rt_max": "ms", "rt_sd": "ms", "errors": "count",
         "operations": "count", "mix": "%", "mix_required": "%", "op_passed": "flag",
         "ops_per_sec_interval_sd": "ops/s"}  # fmt: skip
SUMMED = frozenset({"ops_per_sec", "errors", "operations"})
# Not listed: lower is better (response times, errors, spreads).
_BETTER: dict[str, Better] = {"ops_per_sec": "higher", "operations": "higher", "mix": "none",
                              "mix_required": "none", "op_passed": "higher"}  # fmt: skip
# Per operation (label `operation`: the names the user's Faban driver gives, not known
# before the run) and for the whole mix (no label).
METRICS: tuple[Metric, ...] = (
    *labelled([metric(name, unit, _BETTER.get(name, "lower")) for name, unit in UNITS.items()],
              operation=()),
    metric("faban_passed", "flag", "higher"), metric("steady_seconds", "s", "none"),
    metric("users", "count", "none"), metric("instances", "count", "none"),
)  # fmt: skip


def op_values(f: FabanOperationFigures) -> dict[str, float | None]:
    def num(v: int | None) -> float | None:
        return None if v is None else float(v)

    total = (None if f.successes is None or f.failures is None
             else float(f.successes + f.failures))  # fmt: skip
    return {
        "ops_per_sec": f.throughput, "rt_avg": f.avg_ms, "rt_p90": f.p90_ms,
        "rt_p95": f.p95_ms, "rt_p99": f.p99_ms, "rt_max": f.max_ms, "rt_sd": f.sd_ms,
        "errors": num(f.failures), "operations": total,
        "mix": None if f.mix is None else 100.0 * f.mix,
        "mix_required": None if f.required_mix is None else 100.0 * f.required_mix,
        "op_passed": None if f.passed is None else float(f.passed),
        "ops_per_sec_interval_sd": f.interval_sd,
    }  # fmt: skip


def whole_mix(run: FabanRun) -> dict[str, float | None]:
    """The overall row: throughput and counts summed over operations, response time
    weighted by successes, the slowest operation's maximum; percentiles do not combine."""
    rows = [op_values(f) for f in run.operations]
    out: dict[str, float | None] = dict.fromkeys(UNITS)
    for m in ("ops_per_sec", "errors", "operations"):
        xs = [r[m] for r in rows]
        out[m] = math.fsum(x for x in xs if x is not None) if rows and None not in xs else None
    pairs = [(f.successes, f.avg_ms) for f in run.operations]
    if pairs and all(n is not None and a is not None for n, a in pairs):
        n_all = sum(n for n, _ in pairs if n is not None)
        out["rt_avg"] = (math.fsum(n * a for n, a in pairs if n is not None and a is not None)
                         / n_all) if n_all else None  # fmt: skip
    maxes = [r["rt_max"] for r in rows]
    out["rt_max"] = max(x for x in maxes if x is not None) if rows and None not in maxes else None
    out["op_passed"] = float(run.passed)
    return out


def instance_samples(instance: int, guest: str, run: FabanRun) -> list[Sample]:
    """One instance's figures, on its client guest."""
    inst = ("instance", str(instance))
    out = []
    for f in run.operations:
        labels = (inst, ("operation", f.operation))
        out += [Sample(m, v, UNITS[m], SOURCE, guest, labels) for m, v in op_values(f).items()]
    labels = (inst, ("operation", ALL))
    out += [Sample(m, v, UNITS[m], SOURCE, guest, labels) for m, v in whole_mix(run).items()]
    users = [d.users for d in run.summary.drivers]
    out += [
        Sample("faban_passed", float(run.passed), "flag", SOURCE, guest, (inst,)),
        Sample("steady_seconds", run.steady_seconds, "s", SOURCE, guest, (inst,)),
        Sample("users", float(sum(u for u in users if u is not None))
               if users and None not in users else None, "count", SOURCE, guest, (inst,)),
    ]  # fmt: skip
    return out


def aggregate_samples(runs: Sequence[FabanRun]) -> list[Sample]:
    """Across instances (guest empty); the whole mix carries no label (the headline)."""
    per_run = [{f.operation: op_values(f) for f in r.operations} | {ALL: whole_mix(r)}
               for r in runs]  # fmt: skip
    out: list[Sample] = []
    for op in dict.fromkeys(op for values in per_run for op in values):
        labels = () if op == ALL else (("operation", op),)
        for m, unit in UNITS.items():
            xs = [values[op][m] if op in values else None for values in per_run]
            out.append(Sample(m, _combine(m, xs), unit, SOURCE, None, labels))
    out += [
        Sample("faban_passed", float(all(r.passed for r in runs)) if runs else None, "flag",
               SOURCE),
        Sample("instances", float(len(runs)), "count", SOURCE),
    ]  # fmt: skip
    return out


def _combine(m: str, xs: list[float | None]) -> float | None:
    if not xs or None in xs:
        return None
    got = [x for x in xs if x is not None]
    if m == "op_passed":
        return float(all(got))
    return math.fsum(got) if m in SUMMED else statistics.fmean(got)
