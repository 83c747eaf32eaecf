"""The per-trial figures of one run, as derived figures, QoS, compare and regression use
them; plus what they share: units, the direction of improvement, scenario hashes and the
facts (testbed, guests) two runs are compared on.

A point's figure for one trial is its aggregate sample (guest empty, no labels) — the
same rule as :mod:`vbench.analysis.aggregate`. Only successful trials count.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from vbench.analysis.aggregate import trial_values
from vbench.config.labels import render_label
from vbench.config.tiles import TILE_LABEL
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import json

    import pandas as pd
else:
    pd = lazy_module("pandas")
    json = lazy_module("json")  # stored labels and digests: `vbench validate` reads none

OK_STATUS = "ok"
Values = dict[int, float | None]  # trial -> value


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class RunFigures:
    """One run's figures: per (point, metric) the value of every successful trial."""

    run: Mapping[str, Any]
    points: Mapping[int, Mapping[str, str]]
    factors: tuple[str, ...]
    values: Mapping[tuple[int, str], Values]
    units: Mapping[str, str]
    samples: pd.DataFrame = field(repr=False, compare=False)
    _parsed: dict[int, dict[str, str]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def run_id(self) -> str:
        return str(self.run.get("run_id", "?"))

    @property
    def scenario(self) -> Mapping[str, Any]:
        return self.run.get("scenario") or {}

    def title(self, point: int) -> str:
        labels = self.points.get(point, {})
        template = self.scenario.get("label")
        if template and labels:  # the scenario names its points: "VM-8VMs-16S"
            return render_label(str(template), labels)
        ordered = [f for f in self.factors if f in labels]
        # People count points from 1 (the stored index is 0-based).
        return ", ".join(f"{k}={labels[k]}" for k in ordered) or f"point {point + 1}"

    def trial_values(self, point: int, metric: str) -> Values:
        return dict(self.values.get((point, metric), {}))

    def metrics(self) -> list[str]:
        return sorted({m for _, m in self.values})

    def labelled(self, point: int, metric: str, where: Mapping[str, str]) -> Values:
        """Per trial, the aggregate samples (guest empty) of ``metric`` at ``point`` whose
        labels include ``where``; several matches in one trial are averaged."""
        if not where:
            return self.trial_values(point, metric)
        df = self.samples
        if df.empty:
            return {}
        rows = df[(df["point"] == point) & (df["metric"] == metric) & df["guest"].isna()]
        acc: dict[int, list[float]] = {}
        for idx, trial, value in zip(rows.index, rows["trial"], rows["value"], strict=True):
            labels = self._labels(int(idx), rows.at[idx, "labels"])
            # A tile's figure is the one of exactly these labels: its fio job or operation
            # figures (more labels) are not averaged into the tile's aggregate.
            if (labels == dict(where)) if TILE_LABEL in where else \
                    all(labels.get(k) == v for k, v in where.items()):
                f = _finite(value)
                acc.setdefault(int(trial), [])
                if f is not None:
                    acc[int(trial)].append(f)
        return {t: (sum(v) / len(v) if v else None) for t, v in acc.items()}

    def _labels(self, idx: int, raw: Any) -> dict[str, str]:
        if idx not in self._parsed:
            self._parsed[idx] = parse_labels(raw)
        return self._parsed[idx]

    def with_values(
        self, extra: Mapping[tuple[int, str], Values], units: Mapping[str, str]
    ) -> RunFigures:
        """A copy holding more (point, name) series, e.g. derived figures."""
        return RunFigures(
            run=self.run,
            points=self.points,
            factors=self.factors,
            values={**self.values, **extra},
            units={**self.units, **units},
            samples=self.samples,
        )


def parse_labels(raw: Any) -> dict[str, str]:
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items()}
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return {}
    try:
        data = json.loads(str(raw))
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def factor_order(
    scenario: Mapping[str, Any], points: Iterable[Mapping[str, str]]
) -> tuple[str, ...]:
    """The scenario's factor order (the store keeps labels sorted), then any other key."""
    points = list(points)
    seen = dict.fromkeys((scenario.get("factors") or {}).keys())
    for labels in points:
        seen.update(dict.fromkeys(labels))
    used = {k for labels in points for k in labels}
    return tuple(k for k in seen if k in used)


def ok_trial_set(
    trials: Sequence[Mapping[str, Any]], samples: pd.DataFrame
) -> set[tuple[int, int]]:
    if not trials:
        if samples.empty:
            return set()
        pairs = samples[["point", "trial"]].dropna().astype(int)
        return set(pairs.itertuples(index=False, name=None))
    return {(int(t["point"]), int(t["trial"])) for t in trials if t.get("status") == OK_STATUS}


def build_figures(
    run: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
    samples: pd.DataFrame,
) -> RunFigures:
    """RunFigures from what the store returns (rows as dicts, samples as a frame)."""
    labels = {int(p["point"]): {str(k): str(v) for k, v in (p.get("labels") or {}).items()}
              for p in points}
    ok = ok_trial_set(trials, samples)
    if not samples.empty:
        pairs = zip(samples["point"].astype(int), samples["trial"].astype(int), strict=True)
        keep = pd.Series([pair in ok for pair in pairs], index=samples.index, dtype=bool)
        samples = samples[keep].reset_index(drop=True)
        for p in samples["point"].unique():
            labels.setdefault(int(p), {})
    for t in trials:
        labels.setdefault(int(t["point"]), {})
    values, units = values_from_samples(samples)
    scenario = run.get("scenario") or {}
    return RunFigures(
        run=run,
        points=labels,
        factors=factor_order(scenario, labels.values()),
        values=values,
        units=units,
        samples=samples,
    )


def values_from_samples(
    samples: pd.DataFrame,
) -> tuple[dict[tuple[int, str], Values], dict[str, str]]:
    """Aggregate per-trial values and the unit of every metric (the first one seen)."""
    units: dict[str, str] = {}
    if samples.empty:
        return {}, units
    for metric, unit in zip(samples["metric"], samples["unit"].fillna(""), strict=True):
        units.setdefault(str(metric), str(unit))
    per_trial = trial_values(samples)
    values: dict[tuple[int, str], Values] = {}
    for point, metric, trial, value in zip(
        per_trial["point"], per_trial["metric"], per_trial["trial"], per_trial["value"],
        strict=True,
    ):
        values.setdefault((int(point), str(metric)), {})[int(trial)] = _finite(value)
    return values, units


def present(values: Mapping[int, float | None]) -> list[float]:
    """The values that exist, in trial order."""
    return [v for _, v in sorted(values.items()) if v is not None]


# ------------------------------------------------------------------ units

_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0,
         "min": 60.0, "h": 3600.0}  # fmt: skip
_RATE = {"B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "KiB/s": 1024.0,
         "MiB/s": 1024.0**2, "GiB/s": 1024.0**3, "bit/s": 0.125, "Kbit/s": 125.0,
         "Mbit/s": 125e3, "Gbit/s": 125e6, "Mbps": 125e3, "Gbps": 125e6}  # fmt: skip
_FRACTION = {"%": 0.01, "fraction": 1.0}


def convert(value: float, from_unit: str, to_unit: str) -> float | None:
    """``value`` in ``from_unit`` expressed in ``to_unit``; None when they do not convert
    (different kinds of unit). Equal units always convert."""
    if from_unit == to_unit:
        return value
    for table in (_TIME, _RATE, _FRACTION):
        if from_unit in table and to_unit in table:
            return value * table[from_unit] / table[to_unit]
    return None


def unit_family(unit: str) -> tuple[str, ...]:
    """The spellings ``unit`` converts to (itself first), as :func:`convert` knows them."""
    for table in (_TIME, _RATE, _FRACTION):
        if unit in table:
            return (unit, *(u for u in table if u != unit))
    return (unit,)


# ------------------------------------------------------ direction of improvement

_LOWER_WORDS = re.compile(
    r"(^|_)(lat|latency|clat|slat|response|resp|rt|time|duration|elapsed|cost|wait|"
    r"ready|cstp|swap|drop|dropped|loss|errors?|retrans\w*)(_|$)"
)


class DirectionSource(Protocol):
    """What :func:`better` asks first: ``vbench.analysis.direction.Directions``."""

    def of(self, metric: str, unit: str = "") -> Any: ...


def guess_better(metric: str, unit: str) -> Literal["higher", "lower"]:
    """The guess for a run stored before catalogues declared directions: a time unit or
    a latency-like name means lower is better, anything else higher."""
    if unit in _TIME:
        return "lower"
    return "lower" if _LOWER_WORDS.search(metric.lower()) else "higher"


def better(
    metric: str, unit: str, overrides: Mapping[str, str] | DirectionSource | None = None
) -> str:
    """``higher``, ``lower`` or ``none`` (never ranked). Given a run's ``Directions``
    (vbench/analysis/direction.py), its answer; given a plain mapping (``report.better``),
    that, else :func:`guess_better`."""
    of = getattr(overrides, "of", None)  # a Directions (itself a Mapping) answers with the unit
    if callable(of):
        return str(of(metric, unit))
    if overrides and metric in overrides:
        return overrides[metric]
    return guess_better(metric, unit)


# ----------------------------------------------------------- scenario identity

# The parts of a scenario that change what is measured; description, report layout,
# QoS, derived figures and engine settings do not.
MEASUREMENT_KEYS = ("topology", "workload", "factors", "zip", "exclude", "phases", "collectors")


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def scenario_hash(scenario: Mapping[str, Any]) -> str:
    """Hash of the whole resolved scenario as stored (12 hex digits)."""
    return _digest(dict(scenario))


def measurement_hash(scenario: Mapping[str, Any]) -> str:
    """Hash of what is measured: two runs with the same value ran the same experiment."""
    return _digest({k: scenario.get(k) for k in MEASUREMENT_KEYS})


# ------------------------------------------------------------ testbed facts

_VOLATILE = re.compile(
    r"(recorded_at|captured_at|timestamp|uptime|boot_?time|clock_offset|clock_rtt|"
    r"address|^ip$|moid|moref|session|^time$|_time$|^started$|^ended$|^uuid$)",
    re.IGNORECASE,
)
_HARDWARE = re.compile(
    r"(model|vendor|cpu|core|socket|thread|memory|mem_|ram|vcpu|numcpu|nic|hba|"
    r"disk|capacity|sizing|speed)",
    re.IGNORECASE,
)
_ENTRY_KEYS = ("name", "hostname", "host", "id")


@dataclass(frozen=True)
class FactDiff:
    """One fact that differs between two runs (None = absent on that side)."""

    key: str
    a: str | None
    b: str | None

    @property
    def hardware(self) -> bool:
        last = re.split(r"[.\]]", self.key)[-1] or self.key
        return bool(_HARDWARE.search(last))


def _fact_text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return ", ".join(_fact_text(x) for x in v)
    return str(v)


def _flatten(obj: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if _VOLATILE.search(str(k)):
                continue
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list | tuple) and obj and all(isinstance(x, Mapping) for x in obj):
        for i, item in enumerate(obj):
            key = next((str(item[k]) for k in _ENTRY_KEYS if item.get(k) is not None), str(i))
            _flatten(item, f"{prefix}[{key}]", out)
    elif obj is not None:
        out[prefix] = _fact_text(obj)


def run_facts(run: Mapping[str, Any]) -> dict[str, str]:
    """The facts two runs are compared on: the vSphere testbed snapshot, every guest's
    kernel, vCPUs, CPU model, memory and tool versions, the lab and the vbench version."""
    out: dict[str, str] = {}
    # What disturbed its trials happened in the run, it is not how the lab was set up
    # (compare says it on its own lines): not a testbed fact.
    testbed = {k: v for k, v in (run.get("testbed") or {}).items() if k != "disturbances"}
    # A hygiene finding's detail says what was measured that time (guest clock offsets,
    # other VMs' MHz): it differs every run. Two runs are compared on its level and state.
    if isinstance(testbed.get("hygiene"), list):
        testbed["hygiene"] = [{k: v for k, v in f.items() if k != "detail"}
                              if isinstance(f, Mapping) else f for f in testbed["hygiene"]]
    _flatten(testbed, "testbed", out)
    env = run.get("environment") or {}
    for name, g in (env.get("guests") or {}).items():
        if isinstance(g, Mapping):
            _flatten({k: v for k, v in g.items()}, f"guest[{name}]", out)
    lab = run.get("lab") or {}
    if lab.get("name"):
        out["lab.name"] = str(lab["name"])
    if run.get("lab_fingerprint"):
        out["lab.fingerprint"] = str(run["lab_fingerprint"])
    version = run.get("vbench_version") or (env.get("controller") or {}).get("vbench_version")
    if version:
        out["vbench.version"] = str(version)
    run_id = str(run.get("run_id") or "")
    if run_id:
        # VMs a run creates carry its id in their names: compare them as "RUN".
        out = {k.replace(run_id, "RUN"): v.replace(run_id, "RUN") for k, v in out.items()}
    return out


def fact_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[FactDiff]:
    """Facts that differ between run ``a`` and run ``b`` (sorted by key)."""
    fa, fb = run_facts(a), run_facts(b)
    return [
        FactDiff(k, fa.get(k), fb.get(k))
        for k in sorted(set(fa) | set(fb))
        if fa.get(k) != fb.get(k)
    ]
