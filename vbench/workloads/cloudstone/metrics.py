"""Steady-state figures of the cloudstone driver from the Locust records (pure).

Each Locust process wrote its operations (end time, name, ms, ok, bytes) and a CPU /
users sample every second (see drivers/cloudstone/locustfile.py). Here, in controller
time and for the steady window only: per operation and overall, throughput, avg / p90 /
p95 / p99 / max response time of the successful operations, errors, achieved vs
required mix (flagged outside the tolerance), and the standard deviation of
``sub_window``-second averages; across instances throughput is summed and latencies
averaged (as the seeds do), per-instance figures kept with an ``instance`` label.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.analysis import catalogue as mc
from vbench.lazy import lazy_module
from vbench.results.records import Sample

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

SOURCE = "cloudstone"
ALL = "all"


@dataclass(frozen=True)
class OpRecord:
    end: float  # controller epoch seconds
    op: str
    ms: float
    ok: bool
    size: int


@dataclass(frozen=True)
class CpuSample:
    process: str  # "<guest>:<pid>"
    when: float  # controller epoch seconds
    cpu: float  # process CPU seconds so far
    users: int


@dataclass(frozen=True)
class ParsedRecords:
    start: float | None  # earliest test start, controller time
    ops: tuple[OpRecord, ...]
    cpu: tuple[CpuSample, ...]


def parse_records(text: str, process: str, offset: float) -> ParsedRecords:
    """One records file; ``offset`` = guest clock minus controller clock (subtracted)."""
    start: float | None = None
    ops: list[OpRecord] = []
    cpu: list[CpuSample] = []
    for line in text.splitlines():
        f = line.split()
        try:
            if f[:1] == ["S"] and len(f) == 2:
                t = float(f[1]) - offset
                start = t if start is None else min(start, t)
            elif f[:1] == ["R"] and len(f) == 6:
                end = float(f[1]) - offset
                ops.append(OpRecord(end, f[2], float(f[3]), f[4] == "1", int(f[5])))
            elif f[:1] == ["C"] and len(f) == 4:
                cpu.append(CpuSample(process, float(f[1]) - offset, float(f[2]), int(f[3])))
        except ValueError:
            continue  # a line cut short by a killed process
    return ParsedRecords(start, tuple(ops), tuple(cpu))


@dataclass(frozen=True)
class OpFigures:
    operation: str
    count: int  # all operations finished in the window
    errors: int
    throughput: float | None  # successful ops/s; None for an empty window
    avg_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    mix_pct: float | None
    required_pct: float | None
    mix_ok: bool | None
    sub_throughput_sd: float | None  # sd of per-sub-window throughput (ops/s)
    sub_avg_sd_ms: float | None  # sd of per-sub-window average response time


def op_figures(ops: Sequence[OpRecord], start: float, end: float,
               required: Mapping[str, float], tolerance_pp: float,
               sub_window: float) -> dict[str, OpFigures]:  # fmt: skip
    """Per operation and ``ALL`` over [start, end)."""
    window = [r for r in ops if start <= r.end < end]
    seconds = end - start
    names = list(dict.fromkeys([*required, *(r.op for r in window)]))
    total = len(window)
    out = {}
    for name in [*names, ALL]:
        mine = window if name == ALL else [r for r in window if r.op == name]
        req = None if name == ALL else required.get(name)
        out[name] = _figures(name, mine, total, req, seconds, start, tolerance_pp, sub_window)
    return out


def _figures(name: str, mine: list[OpRecord], total: int, req: float | None, seconds: float,
             start: float, tolerance_pp: float, sub_window: float) -> OpFigures:  # fmt: skip
    good = np.array([r.ms for r in mine if r.ok], dtype=float)
    errors = sum(1 for r in mine if not r.ok)

    def pct(q: float) -> float | None:
        return float(np.percentile(good, q)) if good.size else None

    mix = 100.0 * len(mine) / total if total and name != ALL else None
    mix_ok = None
    if mix is not None and req is not None:
        # Too few operations cannot show a 2-point difference: widen to 3 standard errors.
        se = 100.0 * 3 * math.sqrt(req * (1 - req) / total)
        mix_ok = abs(mix - 100.0 * req) <= max(tolerance_pp, se)
    subs = _sub_windows(mine, start, seconds, sub_window)
    return OpFigures(
        operation=name, count=len(mine), errors=errors,
        throughput=good.size / seconds if seconds > 0 else None,
        avg_ms=float(good.mean()) if good.size else None,
        p90_ms=pct(90), p95_ms=pct(95), p99_ms=pct(99),
        max_ms=float(good.max()) if good.size else None,
        mix_pct=mix, required_pct=100.0 * req if req is not None else None, mix_ok=mix_ok,
        sub_throughput_sd=statistics.stdev([n / sub_window for n, _ in subs])
        if len(subs) >= 2 else None,
        sub_avg_sd_ms=_sd([a for _, a in subs]),
    )  # fmt: skip


def _sub_windows(mine: list[OpRecord], start: float, seconds: float,
                 width: float) -> list[tuple[int, float | None]]:  # fmt: skip
    """(successful count, average ms) of every whole sub-window."""
    n = int(seconds // width)
    buckets: list[list[float]] = [[] for _ in range(n)]
    for r in mine:
        i = int((r.end - start) // width)
        if r.ok and 0 <= i < n:
            buckets[i].append(r.ms)
    return [(len(b), statistics.fmean(b) if b else None) for b in buckets]


def _sd(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.stdev(xs) if len(xs) >= 2 else None


@dataclass(frozen=True)
class LoadCheck:
    """Whether one instance's load generator kept up during the steady window."""

    cpu_max: float | None  # highest CPU share of one core among its Locust processes
    users_min: int | None  # fewest running users (summed over processes) in the window
    saturated: bool
    reasons: tuple[str, ...]


def load_check(cpu: Sequence[CpuSample], start: float, end: float, users: int | None,
               rate: float | None, achieved_rate: float | None,
               cpu_limit: float) -> LoadCheck:  # fmt: skip
    reasons = []
    shares = []
    for proc in sorted({c.process for c in cpu}):
        mine = sorted((c for c in cpu if c.process == proc and start <= c.when <= end),
                      key=lambda c: c.when)  # fmt: skip
        if len(mine) >= 2 and mine[-1].when > mine[0].when:
            shares.append((mine[-1].cpu - mine[0].cpu) / (mine[-1].when - mine[0].when))
    cpu_max = max(shares) if shares else None
    if cpu_max is not None and cpu_max > cpu_limit:
        reasons.append(f"Locust CPU {cpu_max:.0%} of a core > {cpu_limit:.0%}")
    # The first second of the window may still hold a sample taken while spawning.
    users_min = _users_min(cpu, start + 1.0, end)
    if users is not None and users_min is not None and users_min < users:
        reasons.append(f"only {users_min} of {users} users running")
    if rate is not None and achieved_rate is not None and achieved_rate < 0.95 * rate:
        reasons.append(f"achieved {achieved_rate:.1f} req/s of {rate:g} asked")
    return LoadCheck(cpu_max, users_min, bool(reasons), tuple(reasons))


def _users_min(cpu: Sequence[CpuSample], start: float, end: float) -> int | None:
    """Fewest users running at once: per second, the sum of every process's latest count."""
    inside = [c for c in cpu if start <= c.when <= end]
    if not inside:
        return None
    by_second: dict[int, dict[str, int]] = {}
    for c in inside:
        by_second.setdefault(int(c.when), {})[c.process] = c.users
    procs = {c.process for c in inside}
    full = [sum(v.values()) for v in by_second.values() if set(v) == procs]
    return min(full) if full else None


_UNITS = {"ops_per_sec": "ops/s", "rt_avg": "ms", "rt_p90": "ms", "rt_p95": "ms",
          "rt_p99": "ms", "rt_max": "ms", "errors": "count", "operations": "count",
          "mix": "%", "mix_required": "%", "mix_outside_tolerance": "flag",
          "ops_per_sec_subwindow_sd": "ops/s", "rt_avg_subwindow_sd": "ms"}  # fmt: skip
# Response times, errors, spreads over sub-windows and being outside the mix tolerance
# are lower-is-better; the mix shares are the validity criterion's inputs, not scores.
_BETTER: dict[str, mc.Better] = {
    "ops_per_sec": "higher", "operations": "higher", "mix": "none", "mix_required": "none"}


# Per operation (label `operation`, `all` for the whole mix) and instance; and per trial.
_SHARES = {"mix", "mix_required"}  # per operation only
# The figures per operation carry `operation` (the driver fills in the operations of its
# matrix: CloudstoneWorkload.metric_catalogue); the mix shares exist only per operation.
METRICS: tuple[mc.Metric, ...] = (
    # The rate profile's fixed request rate caps the throughput.
    *(mc.labelled([mc.metric(name, unit, _BETTER.get(name, "lower"),
                             capped_by=("rate",) if name in ("ops_per_sec", "operations")
                             else ())],
                  per_label=name in _SHARES, operation=())[0]
      for name, unit in _UNITS.items()),
    # The load generator's own CPU and users: whether the client kept up, not a score.
    mc.metric("client_cpu", "fraction", "none"), mc.metric("client_users_min", "count", "none"),
    mc.metric("client_saturated", "flag", "lower"), mc.metric("instances", "count", "none"),
    mc.metric("sut_deploy_seconds", "s", "lower"), mc.metric("sut_load_seconds", "s", "lower"),
)  # fmt: skip


def _values(f: OpFigures) -> dict[str, float | None]:
    return {
        "ops_per_sec": f.throughput, "rt_avg": f.avg_ms, "rt_p90": f.p90_ms,
        "rt_p95": f.p95_ms, "rt_p99": f.p99_ms, "rt_max": f.max_ms,
        "errors": float(f.errors), "operations": float(f.count), "mix": f.mix_pct,
        "mix_required": f.required_pct,
        "mix_outside_tolerance": None if f.mix_ok is None else float(not f.mix_ok),
        "ops_per_sec_subwindow_sd": f.sub_throughput_sd,
        "rt_avg_subwindow_sd": f.sub_avg_sd_ms,
    }  # fmt: skip


def instance_samples(instance: int, guest: str, figs: Mapping[str, OpFigures],
                     check: LoadCheck) -> list[Sample]:  # fmt: skip
    """Per-instance figures: on the instance's server guest, labelled instance/operation."""
    out = []
    for op, f in figs.items():
        labels = (("instance", str(instance)), ("operation", op))
        out += [Sample(m, v, _UNITS[m], SOURCE, guest, labels) for m, v in _values(f).items()]
    lab = (("instance", str(instance)),)
    out += [
        Sample("client_cpu", check.cpu_max, "fraction", SOURCE, guest, lab),
        Sample("client_users_min", None if check.users_min is None else float(check.users_min),
               "count", SOURCE, guest, lab),
        Sample("client_saturated", float(check.saturated), "flag", SOURCE, guest, lab),
    ]  # fmt: skip
    return out


_SUMMED = {"ops_per_sec", "errors", "operations"}
_WHOLE_MIX = {"mix_outside_tolerance"}  # the whole mix's: from its operations'


def aggregate_samples(per_instance: Sequence[Mapping[str, OpFigures]],
                      checks: Sequence[LoadCheck]) -> list[Sample]:  # fmt: skip
    """Across instances (guest empty): counts and throughput summed, the rest averaged.
    The overall figures carry no label (the point's headline); operations are labelled.
    The whole mix has no share of itself (no ``mix``/``mix_required`` row: an empty one
    read as "no figure at any point"); its ``mix_outside_tolerance`` is Faban's validity
    verdict: 1 when any operation of any instance is outside the tolerance."""
    out: list[Sample] = []
    ops = list(dict.fromkeys(op for figs in per_instance for op in figs))
    for op in ops:
        labels = () if op == ALL else (("operation", op),)
        for metric in _UNITS:
            if op == ALL and metric in _SHARES:
                continue
            xs = [_values(figs[o])[metric] for figs in per_instance
                  for o in ([op] if op != ALL or metric not in _WHOLE_MIX else
                            [o for o in figs if o != ALL]) if o in figs]  # fmt: skip
            got = [x for x in xs if x is not None]
            if metric == "mix_outside_tolerance":
                value = float(any(got)) if got else None
            elif metric in _SUMMED:
                value = math.fsum(got) if got else None
            else:
                value = statistics.fmean(got) if got else None
            out.append(Sample(metric, value, _UNITS[metric], SOURCE, None, labels))
    cpus = [c.cpu_max for c in checks if c.cpu_max is not None]
    out.append(Sample("client_cpu", max(cpus) if cpus else None, "fraction", SOURCE))
    out.append(Sample("client_saturated", float(any(c.saturated for c in checks)), "flag",
                      SOURCE))  # fmt: skip
    out.append(Sample("instances", float(len(per_instance)), "count", SOURCE))
    return out
