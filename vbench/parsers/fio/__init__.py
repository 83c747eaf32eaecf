"""fio ``--output-format=json`` → tidy records and samples.

Pure functions: no I/O. Handles fio 2.x (latencies in µs under ``clat``/``lat``,
``io_bytes`` in KiB) and fio 3.x (latencies in ns under ``clat_ns``/``lat_ns``,
``io_bytes`` in bytes, ``bw_bytes``). Normalised units: IO/s, MiB/s, ms, B, s.

Metric names and how guest and trial figures are combined are documented for
users in ``drivers/fio/README.md``; keep the two in step.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register
from vbench.parsers.fio_metrics import DIRECTIONS, PERCENTILES, UNITS

if TYPE_CHECKING:  # made when a trial's figures are
    from vbench.results.records import Sample

SOURCE = "fio"
_LATENCY = ("lat_mean", "clat_mean", *PERCENTILES)
_SUMMED = ("iops", "bw", "io_bytes", "ios")
_MIB = 1024.0 * 1024.0
_MAX_JSON_ATTEMPTS = 64
_NORMAL_OUTPUT = re.compile(r"\(groupid=\d+|Run status group|^\s*(read|write)\s*:\s*io=", re.M)


@dataclass(frozen=True)
class FioRecord:
    """One figure of one fio job and direction, in normalised units."""

    job: str
    direction: str  # "read" | "write" | "trim" | "mixed"
    metric: str
    value: float | None
    unit: str
    fio_version: str | None
    error: int  # the job's error code (0 ok)


@dataclass(frozen=True)
class FioResult:
    """A parsed fio JSON document."""

    fio_version: str | None
    timestamp: float | None
    jobs: tuple[str, ...]
    records: tuple[FioRecord, ...]
    errors: tuple[tuple[str, int], ...]  # (job, error) of failed jobs
    preamble: str  # text before the JSON (fio warnings and errors), kept for messages
    trailer: str = ""  # non-blank text after the JSON document, if any

    def value(self, job: str, direction: str, metric: str) -> float | None:
        for r in self.records:
            if (r.job, r.direction, r.metric) == (job, direction, metric):
                return r.value
        raise KeyError((job, direction, metric))

    def error_message(self) -> str:
        """One line describing the failed jobs (empty when none failed)."""
        if not self.errors:
            return ""
        parts = [
            f"job {job!r} failed with error {err} ({_strerror(err)})" for job, err in self.errors
        ]
        last = _last_line(self.preamble)
        return "; ".join(parts) + (f": {last}" if last else "")


# ---------------------------------------------------------------------------- parsing


def parse_fio_json(text: str, source: str = "<text>") -> FioResult:
    """Parse fio JSON output; text before the first ``{`` is kept as the preamble."""
    if not isinstance(text, str):
        raise ParseError(f"{source}: expected text, got {type(text).__name__}")
    text = text.lstrip("\ufeff")
    data, start, end = _find_document(text, source)
    version = data.get("fio version")
    version = version if isinstance(version, str) else None
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise ParseError(
            f"{source}: no 'jobs' list in the JSON document (expected fio --output-format=json)"
        )
    names = _unique_names([_job_name(j, i, source) for i, j in enumerate(jobs)])
    records: list[FioRecord] = []
    errors: list[tuple[str, int]] = []
    for name, job in zip(names, jobs, strict=True):
        err = _int(job.get("error", 0), f"job {name!r} error", source)
        if err:
            errors.append((name, err))
        for direction in DIRECTIONS:
            block = job.get(direction)
            if block is None:
                continue
            if not isinstance(block, dict):
                raise ParseError(f"{source}: job {name!r}: '{direction}' is not an object")
            ctx = _Ctx(source, name, direction, version)
            records.extend(
                FioRecord(name, direction, metric, value, UNITS[metric], version, err)
                for metric, value in _direction_figures(block, ctx).items()
            )
    return FioResult(
        fio_version=version,
        timestamp=_timestamp(data),
        jobs=tuple(names),
        records=tuple(records),
        errors=tuple(errors),
        preamble=text[:start],
        trailer=text[end:].strip(),
    )


def _find_document(text: str, source: str) -> tuple[dict[str, Any], int, int]:
    """The first JSON object in ``text`` that looks like fio output: (data, start, end)."""
    decoder = json.JSONDecoder()
    pos = text.find("{")
    first_error: json.JSONDecodeError | None = None
    attempts = 0
    while pos != -1 and attempts < _MAX_JSON_ATTEMPTS:
        attempts += 1
        try:
            data, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
        else:
            if isinstance(data, dict) and ("jobs" in data or "fio version" in data):
                return data, pos, end
        pos = text.find("{", pos + 1)
    if _NORMAL_OUTPUT.search(text):
        raise ParseError(
            f"{source}: this is fio's normal (human-readable) output, not JSON; "
            "run fio with --output-format=json"
        )
    if first_error is not None:
        raise ParseError(
            f"{source}: invalid JSON at line {first_error.lineno} column {first_error.colno}: "
            f"{first_error.msg} (expected fio --output-format=json output)"
        )
    what = "empty input" if not text.strip() else "no JSON object found"
    hint = _last_line(text)
    raise ParseError(
        f"{source}: {what} (expected fio --output-format=json output)"
        + (f"; the text ends with: {hint}" if hint else "")
    )


@dataclass(frozen=True)
class _Ctx:
    source: str
    job: str
    direction: str
    version: str | None

    def where(self, key: str) -> str:
        return f"job {self.job!r} {self.direction}.{key}"


def _direction_figures(block: Mapping[str, Any], ctx: _Ctx) -> dict[str, float | None]:
    iops = _num(block, "iops", ctx)
    runtime_ms = _num(block, "runtime", ctx)
    runtime = runtime_ms / 1000.0 if runtime_ms is not None else None
    ios = _io_count(block, iops, runtime, ctx)
    io_bytes = _io_bytes(block, ctx)
    did_io = ios > 0 if ios is not None else bool(io_bytes)
    figures: dict[str, float | None] = {
        "iops": iops,
        "bw": _bandwidth(block, ctx),
        "lat_mean": None,
        "clat_mean": None,
        **dict.fromkeys(PERCENTILES),
        "io_bytes": io_bytes,
        "ios": ios,
        "runtime": runtime,
    }
    if not did_io:
        # fio prints zeros for a direction without I/O; a latency of 0 ms would be a lie.
        return figures
    lat, lat_scale = _latency_block(block, "lat", ctx)
    clat, clat_scale = _latency_block(block, "clat", ctx)
    if lat is not None:
        figures["lat_mean"] = _scaled(_num(lat, "mean", ctx), lat_scale)
    if clat is not None:
        figures["clat_mean"] = _scaled(_num(clat, "mean", ctx), clat_scale)
        figures.update(_percentiles(clat.get("percentile"), clat_scale, ctx))
    return figures


def _latency_block(
    block: Mapping[str, Any], name: str, ctx: _Ctx
) -> tuple[Mapping[str, Any] | None, float]:
    """fio 3.x ``<name>_ns`` (ns) or fio 2.x ``<name>`` (µs), with the factor to ms."""
    for key, scale in ((f"{name}_ns", 1e-6), (name, 1e-3)):
        found = block.get(key)
        if found is None:
            continue
        if not isinstance(found, dict):
            raise ParseError(f"{ctx.source}: {ctx.where(key)} is not an object")
        return found, scale
    return None, 1.0


def _percentiles(raw: Any, scale: float, ctx: _Ctx) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(PERCENTILES)
    if raw is None:
        return out
    if not isinstance(raw, dict):
        raise ParseError(f"{ctx.source}: {ctx.where('percentile')} is not an object")
    by_pct: dict[float, Any] = {}
    for key, value in raw.items():
        try:
            by_pct[float(key)] = value
        except ValueError:
            continue  # json+ adds non-numeric keys; unused slots are "0.00"
    for metric, wanted in PERCENTILES.items():
        for pct, value in by_pct.items():
            if math.isclose(pct, wanted, abs_tol=1e-6):
                number = _as_number(value, ctx.where(f"percentile.{wanted}"), ctx)
                out[metric] = _scaled(number, scale)
    return out


def _io_bytes(block: Mapping[str, Any], ctx: _Ctx) -> float | None:
    raw = _num(block, "io_bytes", ctx)
    kib = _num(block, "io_kbytes", ctx)
    if raw is None:
        return kib * 1024.0 if kib is not None else None
    # fio 2.x printed KiB under "io_bytes"; 3.x prints bytes and adds "io_kbytes".
    if kib is not None or _major(ctx.version) >= 3:
        return raw
    return raw * 1024.0


def _bandwidth(block: Mapping[str, Any], ctx: _Ctx) -> float | None:
    bw_bytes = _num(block, "bw_bytes", ctx)
    if bw_bytes is not None:
        return bw_bytes / _MIB
    bw_kib = _num(block, "bw", ctx)
    return bw_kib / 1024.0 if bw_kib is not None else None


def _io_count(
    block: Mapping[str, Any], iops: float | None, runtime: float | None, ctx: _Ctx
) -> float | None:
    total = _num(block, "total_ios", ctx)
    if total is not None:
        return total
    # fio 2.1 has no total_ios: estimate from rate × time (used only as a weight).
    if iops is not None and runtime is not None:
        return float(round(iops * runtime))
    return None


def _timestamp(data: Mapping[str, Any]) -> float | None:
    ms = data.get("timestamp_ms")
    if _is_number(ms):
        return float(ms) / 1000.0
    s = data.get("timestamp")
    return float(s) if _is_number(s) else None


def _job_name(job: Any, index: int, source: str) -> str:
    if not isinstance(job, dict):
        raise ParseError(f"{source}: jobs[{index}] is not an object")
    name = job.get("jobname")
    if not isinstance(name, str) or not name:
        raise ParseError(f"{source}: jobs[{index}] has no 'jobname'")
    return name


def _unique_names(names: list[str]) -> list[str]:
    # numjobs>1 without group_reporting repeats a name; fio's own files use name.N.
    counts = {n: names.count(n) for n in names}
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if counts[n] == 1:
            out.append(n)
            continue
        out.append(f"{n}.{seen.get(n, 0)}")
        seen[n] = seen.get(n, 0) + 1
    return out


def _num(block: Mapping[str, Any], key: str, ctx: _Ctx) -> float | None:
    if key not in block:
        return None
    return _as_number(block[key], ctx.where(key), ctx)


def _as_number(value: Any, where: str, ctx: _Ctx) -> float:
    if not _is_number(value):
        raise ParseError(f"{ctx.source}: {where}: expected a number, got {value!r}")
    return float(value)


def _int(value: Any, where: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParseError(f"{source}: {where}: expected an integer, got {value!r}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scaled(value: float | None, scale: float) -> float | None:
    return value * scale if value is not None else None


def _major(version: str | None) -> int:
    m = re.match(r"fio-(\d+)", version or "")
    return int(m.group(1)) if m else 0


def _strerror(code: int) -> str:
    try:
        return os.strerror(code)
    except ValueError:
        return "unknown error"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


# ---------------------------------------------------------------------------- samples


Figures = dict[tuple[str, str], float | None]  # (direction, metric) -> value


def guest_samples(result: FioResult, guest: str | None) -> list[Sample]:
    """Samples of one guest: one per job and metric, plus guest-level combined figures.

    Raises ParseError when a job failed: a failed job's zeros are not measurements.
    """
    _refuse_failed(result, guest)
    samples: list[Sample] = []
    per_job = _per_job(result.records)
    for job in result.jobs:
        figures = per_job.get(job, {})
        labels = (("job", job),)
        samples.extend(_samples_from(figures, guest, labels))
    samples.extend(_samples_from(combine_jobs(result), guest, ()))
    return samples


def combine_jobs(result: FioResult) -> Figures:
    """Guest-level figures over all jobs of one fio run.

    IOPS, bandwidth, bytes and I/O counts add up; mean latencies are weighted by each
    job's I/O count; runtime is the longest job's. Percentiles are kept only when the
    run had exactly one job: a percentile of a union of jobs cannot be computed from
    the jobs' percentiles (fio's group_reporting=1 merges jobs into one for that).
    """
    per_job = list(_per_job(result.records).values())
    out: Figures = {}
    for direction in _directions(per_job):
        for metric in _SUMMED:
            out[direction, metric] = _sum(f.get((direction, metric)) for f in per_job)
        out[direction, "runtime"] = _max(f.get((direction, "runtime")) for f in per_job)
        for metric in ("lat_mean", "clat_mean"):
            out[direction, metric] = _weighted(per_job, direction, metric)
        for metric in PERCENTILES:
            only = per_job[0].get((direction, metric)) if len(per_job) == 1 else None
            out[direction, metric] = only
    return out


def aggregate_guests(per_guest: Mapping[str, FioResult]) -> list[Sample]:
    """Trial-level samples (guest=None) over the guests of a role.

    ``<dir>_iops``/``_bw``/``_io_bytes``/``_ios`` are sums; ``<dir>_lat_mean`` and
    ``<dir>_clat_mean`` are I/O-weighted means over all guests' I/Os;
    ``<dir>_lat_mean_median`` is the median of the per-guest mean latencies (the
    "median of per-worker average latency" figure of storage studies);
    ``<dir>_clat_pNN`` is kept only for a single guest, and ``<dir>_clat_pNN_max``
    is the worst guest's percentile.
    """
    guests = sorted(per_guest)
    for g in guests:
        _refuse_failed(per_guest[g], g)
    combined = [combine_jobs(per_guest[g]) for g in guests]
    if not combined:
        return []
    out: Figures = {}
    for direction in _directions(combined):
        for metric in _SUMMED:
            out[direction, metric] = _sum(c.get((direction, metric)) for c in combined)
        out[direction, "runtime"] = _max(c.get((direction, "runtime")) for c in combined)
        for metric in ("lat_mean", "clat_mean"):
            out[direction, metric] = _weighted(combined, direction, metric)
            out[direction, f"{metric}_median"] = _median(
                c.get((direction, metric)) for c in combined
            )
        for metric in PERCENTILES:
            values = [c.get((direction, metric)) for c in combined]
            out[direction, metric] = values[0] if len(values) == 1 else None
            out[direction, f"{metric}_max"] = _max(values)
    return _samples_from(out, None, ())


def measured_window(result: FioResult) -> tuple[float, float] | None:
    """The window fio measured over, in the clock of the machine it ran on: it ends at
    fio's output time stamp (written once every job has ended) and lasts the longest
    job's runtime (fio's ``runtime``: the time of I/O, after ``ramp_time``). None when fio
    gave no time stamp or no runtime."""
    runtimes = [r.value for r in result.records if r.metric == "runtime" and r.value]
    if result.timestamp is None or not runtimes:
        return None
    return result.timestamp - max(runtimes), result.timestamp


def records_to_rows(result: FioResult) -> list[dict[str, Any]]:
    """Flat rows for ``vbench parse fio --per-job``: every job, then (with several jobs)
    the total over them (:func:`total_rows`)."""
    rows = [
        {
            "job": r.job,
            "direction": r.direction,
            "metric": r.metric,
            "value": r.value,
            "unit": r.unit,
            "fio_version": r.fio_version,
            "error": r.error,
        }
        for r in result.records
    ]
    return rows + (total_rows(result) if len(result.jobs) > 1 else [])


def total_rows(result: FioResult) -> list[dict[str, Any]]:
    """The run's figures over all its jobs (:func:`combine_jobs`), ``job`` = ``all (N
    jobs)``, plus ``total`` IOPS and bandwidth over the directions. Percentiles of several
    jobs stay empty: they cannot be combined from the jobs' own (fio's group_reporting=1
    merges the jobs before it computes them)."""
    job = f"all ({len(result.jobs)} jobs)" if len(result.jobs) != 1 else result.jobs[0]
    error = next((e for _, e in result.errors), 0)
    figures = combine_jobs(result)
    for metric in ("iops", "bw"):
        figures["total", metric] = _sum(v for (_, m), v in list(figures.items()) if m == metric)
    return [
        {"job": job, "direction": d, "metric": m, "value": v, "unit": UNITS[m],
         "fio_version": result.fio_version, "error": error}
        for (d, m), v in figures.items()
    ]


def metric_unit(metric: str) -> str:
    """Unit of a sample metric name such as ``read_clat_p99`` or ``total_iops``."""
    if metric.startswith("total_"):
        return UNITS[metric.removeprefix("total_")]
    _, _, rest = metric.partition("_")
    for suffix in ("_median", "_max"):
        rest = rest.removesuffix(suffix)
    return UNITS[rest]


def _samples_from(
    figures: Figures, guest: str | None, labels: tuple[tuple[str, str], ...]
) -> list[Sample]:
    from vbench.results.records import Sample

    samples = [
        Sample(f"{d}_{m}", v, metric_unit(f"{d}_{m}"), SOURCE, guest, labels)
        for (d, m), v in figures.items()
    ]
    # total_* over directions: None only when no direction reported the figure.
    for metric in ("iops", "bw"):
        total = _sum(v for (_, m), v in figures.items() if m == metric)
        samples.append(Sample(f"total_{metric}", total, UNITS[metric], SOURCE, guest, labels))
    return samples


def _per_job(records: Iterable[FioRecord]) -> dict[str, Figures]:
    out: dict[str, Figures] = {}
    for r in records:
        out.setdefault(r.job, {})[r.direction, r.metric] = r.value
    return out


def _directions(figures: list[Figures]) -> list[str]:
    present = {d for f in figures for d, _ in f}
    return [d for d in DIRECTIONS if d in present]


def _weighted(figures: list[Figures], direction: str, metric: str) -> float | None:
    num = den = 0.0
    for f in figures:
        value, weight = f.get((direction, metric)), f.get((direction, "ios"))
        if value is None or not weight:
            continue
        num += value * weight
        den += weight
    return num / den if den else None


def _sum(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(sum(present)) if present else None


def _max(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None


def _refuse_failed(result: FioResult, guest: str | None) -> None:
    if result.errors:
        who = f"{guest}: " if guest else ""
        raise ParseError(f"{who}{result.error_message()}")


def _cli_rows(text: str, source: str) -> list[dict[str, Any]]:
    result = parse_fio_json(text, source=source)
    return total_rows(result) if len(result.jobs) > 1 else records_to_rows(result)


def _cli_job_rows(text: str, source: str) -> list[dict[str, Any]]:
    return records_to_rows(parse_fio_json(text, source=source))


register(ToolParser(
    "fio", "fio --output-format=json output (fio 2.x and 3.x): the total over the jobs.",
    _cli_rows, detail=_cli_job_rows, detail_flag="per-job",
    detail_help="Also one row per job and direction (before the total)."))
