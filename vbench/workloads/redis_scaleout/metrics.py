"""Samples of one redis_scaleout trial, from parsed client results and DBSIZE answers.

Pure: unit-tested. Metric names and how processes are combined are documented in
``drivers/redis/README.md`` (keep the two in step).

* per process (guest = its client guest, labels op + process): ``ops_per_sec`` and
  ``latency_{avg,min,p50,p95,p99,max}`` exactly as redis-benchmark reported them;
* per client guest (no labels): ``ops_per_sec`` summed over its processes;
* per server (guest = its server guest, label server=host:port): ``dbsize``;
* the trial (guest None, no labels): ``ops_per_sec`` = the sum of every process's
  reported rps; per operation ``<op>_ops_per_sec``, ``<op>_latency_avg`` (weighted by
  each process's rps, i.e. per request), ``<op>_latency_p50_max`` … ``_p99_max`` (worst
  process: percentiles cannot be merged), ``<op>_latency_max``, and ``mix_<op>_pct``
  (the share of requests that operation really got); ``keys_total``,
  ``servers_with_keys``, ``key_spread`` (fewest/most keys on one server),
  ``server_instances``, ``client_processes`` and ``client_connections``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vbench.analysis.catalogue import Metric, metric, same_unit
from vbench.parsers.redis_benchmark import RedisBenchTest
from vbench.results.records import Sample
from vbench.workloads.redis_scaleout.params import RedisParams
from vbench.workloads.redis_scaleout.topology import ClientProcess, Layout

SOURCE = "redis-benchmark"
DBSIZE_SOURCE = "redis-cli DBSIZE"
OPS_UNIT = "ops/s"
_LATENCY = ("avg", "min", "p50", "p95", "p99", "max")


def catalogue(params: RedisParams) -> tuple[Metric, ...]:
    """The metrics of these parameters: the per-operation ones for the operations of
    the mix (drivers/redis/README.md#metrics)."""
    ops = tuple(params.mix)
    return (
        *same_unit(("ops_per_sec", "<op>_ops_per_sec"), OPS_UNIT, "higher", op=ops),
        *same_unit((*(f"latency_{n}" for n in _LATENCY), "<op>_latency_avg",
                    "<op>_latency_<pct>_max", "<op>_latency_max"), "ms", "lower",
                   op=ops, pct=("p50", "p95", "p99")),
        metric("mix_<op>_pct", "%", "none", op=ops),
        *same_unit(("dbsize", "keys_total"), "keys", "none"),
        metric("servers_with_keys", "servers", "none"),
        metric("key_spread", "ratio", "higher"),  # 1: the keys spread evenly
        metric("server_instances", "instances", "none"),
        metric("client_processes", "processes", "none"),
        metric("client_connections", "connections", "none"),
    )  # fmt: skip


@dataclass(frozen=True)
class ClientFigures:
    """One redis-benchmark process and its (combined) result."""

    client: ClientProcess
    test: RedisBenchTest


def samples_for(
    params: RedisParams,
    layout: Layout,
    figures: Sequence[ClientFigures],
    dbsizes: Mapping[str, int | None],
) -> list[Sample]:
    out: list[Sample] = []
    for f in figures:
        out += _process_samples(f)
    out += _guest_samples(figures)
    out += _operation_samples(figures)
    total = _sum(f.test.rps for f in figures)
    out.append(Sample("ops_per_sec", total, OPS_UNIT, SOURCE))
    out += _key_samples(layout, dbsizes)
    out += [
        Sample("server_instances", float(len(layout.servers)), "instances", "vbench"),
        Sample("client_processes", float(len(layout.clients)), "processes", "vbench"),
        Sample("client_connections", float(sum(c.connections for c in layout.clients)),
               "connections", "vbench"),
    ]
    return out


def _process_samples(f: ClientFigures) -> list[Sample]:
    labels = (("op", f.client.op.upper()), ("process", f.client.id))
    t = f.test
    out = [Sample("ops_per_sec", t.rps, OPS_UNIT, SOURCE, f.client.guest, labels)]
    for name in _LATENCY:
        value = getattr(t, f"{name}_ms")
        out.append(Sample(f"latency_{name}", value, "ms", SOURCE, f.client.guest, labels))
    return out


def _guest_samples(figures: Sequence[ClientFigures]) -> list[Sample]:
    by_guest: dict[str, list[float | None]] = {}
    for f in figures:
        by_guest.setdefault(f.client.guest, []).append(f.test.rps)
    return [Sample("ops_per_sec", _sum(v), OPS_UNIT, SOURCE, g) for g, v in by_guest.items()]


def _operation_samples(figures: Sequence[ClientFigures]) -> list[Sample]:
    by_op: dict[str, list[RedisBenchTest]] = {}
    for f in figures:
        by_op.setdefault(f.client.op, []).append(f.test)
    total = _sum(f.test.rps for f in figures)
    out: list[Sample] = []
    for op, tests in by_op.items():
        rps = _sum(t.rps for t in tests)
        out.append(Sample(f"{op}_ops_per_sec", rps, OPS_UNIT, SOURCE))
        out.append(Sample(f"{op}_latency_avg", _weighted_avg(tests), "ms", SOURCE))
        for pct in ("p50", "p95", "p99"):
            worst = _max(getattr(t, f"{pct}_ms") for t in tests)
            out.append(Sample(f"{op}_latency_{pct}_max", worst, "ms", SOURCE))
        out.append(Sample(f"{op}_latency_max", _max(t.max_ms for t in tests), "ms", SOURCE))
        share = 100.0 * rps / total if rps is not None and total else None
        out.append(Sample(f"mix_{op}_pct", share, "%", SOURCE))
    return out


def _key_samples(layout: Layout, dbsizes: Mapping[str, int | None]) -> list[Sample]:
    out: list[Sample] = []
    for s in layout.servers:
        size = dbsizes.get(str(s.endpoint))
        value = float(size) if size is not None else None
        out.append(Sample("dbsize", value, "keys", DBSIZE_SOURCE, s.guest,
                          (("server", str(s.endpoint)),)))
    known = [v for v in (dbsizes.get(str(s.endpoint)) for s in layout.servers) if v is not None]
    complete = len(known) == len(layout.servers)
    out.append(Sample("keys_total", float(sum(known)) if complete else None, "keys",
                      DBSIZE_SOURCE))
    out.append(Sample("servers_with_keys", float(sum(1 for v in known if v > 0))
                      if complete else None, "servers", DBSIZE_SOURCE))
    spread = min(known) / max(known) if complete and known and max(known) > 0 else None
    out.append(Sample("key_spread", spread, "ratio", DBSIZE_SOURCE))
    return out


def _sum(values: Iterable[float | None]) -> float | None:
    vals = list(values)
    if not vals or any(v is None for v in vals):
        return None  # a process without a figure makes the sum unknown, not smaller
    return float(sum(vals))


def _max(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def _weighted_avg(tests: Sequence[RedisBenchTest]) -> float | None:
    pairs = [(t.avg_ms, t.rps) for t in tests if t.avg_ms is not None and t.rps]
    weight = sum(w for _, w in pairs if w is not None)
    if not pairs or not weight:
        return None
    return sum(a * w for a, w in pairs if a is not None and w is not None) / weight
