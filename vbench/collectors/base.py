"""The collector interface and registry (esxtop, vCenter counters, guest sysstat).

A collector samples one *target* (an ESXi host, a guest, a vCenter entity) while a trial
runs: :meth:`Collector.start` before warm-up, :meth:`Collector.stop` after cool-down.
``stop`` returns the whole series in the target's clock, as tidy rows; the runtime
(:mod:`vbench.collectors.runtime`) shifts it onto controller time, stores it as Parquet
and summarises it over the steady-state window only.

A collector module registers one :class:`Collector` subclass with :func:`register`.
Its options are a pydantic model (unknown keys refused), validated when the plan is
built, so a mistake is located in the scenario file before anything runs.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from vbench.errors import ConfigError
from vbench.lazy import lazy_module
from vbench.plugins import Registry

if TYPE_CHECKING:
    from vbench.analysis.catalogue import Metric
    from vbench.collectors.runtime import RunEnv
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec, Scenario
    from vbench.guest.ssh import Guest
    from vbench.results.records import Sample, Window


if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")


class TrialContext(Protocol):
    """What a collector reads of the running trial: the engine passes the workload's
    trial context (vbench/workloads/base.py), which has these and more. A protocol keeps
    the collectors below the workloads in the layers of docs/design.md."""

    run_id: str
    point: int
    trial: int
    raw_dir: Path
    groups: Mapping[str, Sequence[str]]  # topology group -> the trial's guest names
    log: Callable[..., None]

    def all_guests(self) -> list[Guest]: ...


class PlannedPoint(Protocol):
    """What the collectors read of a planned point (vbench/engine/plan.py)."""

    roles: dict[str, str]
    guests: dict[str, tuple[str, ...]]
    warmup: float
    steady: float
    cooldown: float


# Columns of the frame a collector returns (time: epoch seconds in the target's clock).
SERIES_COLUMNS = ("time", "object", "instance", "counter", "value", "unit")


class CollectorOptions(BaseModel):
    """Base of every collector's options model: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Target:
    """What one collector instance samples."""

    name: str
    kind: str  # "host" (ESXi over SSH) | "guest" (SSH) | "entity" (vCenter object)
    guest: Guest | None = field(default=None, compare=False, repr=False)
    detail: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class CollectorContext:
    """Everything one collector instance may use during one trial."""

    run_id: str
    point: int
    trial: int
    planned_seconds: float  # warm-up + steady + cool-down, as planned
    raw_dir: Path  # local folder for this target's raw files (created on demand)
    log: Callable[..., None]

    def remote_dir(self, guest: Guest) -> str:
        """A scratch folder on an SSH target, removed with the run's directory."""
        return f"{guest.spec.workdir.rstrip('/')}/{self.run_id}/collect-{self.point}-{self.trial}"

    def raw_path(self, name: str) -> Path:
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        return self.raw_dir / name


@dataclass(frozen=True)
class Series:
    """What a collector measured: tidy rows (see :data:`SERIES_COLUMNS`), notes on what
    was irregular, and figures about the collector itself (e.g. its CPU cost)."""

    frame: pd.DataFrame
    notes: tuple[str, ...] = ()
    samples: tuple[Sample, ...] = ()
    error: str | None = None  # it failed part-way; ``frame`` holds what it got

    @staticmethod
    def empty() -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("time", "value") else "object")
                             for c in SERIES_COLUMNS})  # fmt: skip


class Collector(ABC):
    """One collector on one target for one trial."""

    kind: ClassVar[str]
    target_kind: ClassVar[str]  # the Target.kind it samples
    Options: ClassVar[type[CollectorOptions]] = CollectorOptions
    # Smallest interval the tool supports (seconds) and whether it must be whole.
    min_interval: ClassVar[float] = 1.0
    whole_seconds: ClassVar[bool] = True

    def __init__(self, name: str, interval: float, options: CollectorOptions, target: Target):
        self.name = name
        self.interval = interval
        self.options = options
        self.target = target

    @classmethod
    def check(cls, options: CollectorOptions, interval: float) -> list[str]:
        """Problems beyond what the options model rejects (checked before a run)."""
        problems = []
        if interval < cls.min_interval:
            problems.append(f"{cls.kind} samples at most every {cls.min_interval:g} s")
        elif cls.whole_seconds and interval != math.floor(interval):
            problems.append(f"{cls.kind} takes whole seconds (interval {interval:g} s)")
        return problems

    @classmethod
    def targets(cls, spec: CollectorSpec, env: RunEnv, ctx: TrialContext) -> list[Target]:
        """What this collector samples in this trial (``spec.targets`` resolved)."""
        raise NotImplementedError

    @classmethod
    def target_problems(
        cls, spec: CollectorSpec, scenario: Scenario, lab: Lab | None
    ) -> list[tuple[int | None, str]]:
        """Targets this lab or topology cannot give: (index in ``targets`` or None, why)."""
        return []

    @classmethod
    def metric_catalogue(cls, options: CollectorOptions) -> tuple[Metric, ...] | None:
        """The metrics this collector stores with these options: its window summaries
        (see :meth:`metric_name`) and figures (vbench/analysis/catalogue.py). None: not
        declared, so names are not checked."""
        return None

    @classmethod
    def figures(
        cls,
        name: str,
        target: str,
        frame: pd.DataFrame,
        window: Window,
        interval: float,
        own: Sequence[Sample],
    ) -> list[Sample]:
        """Figures derived from one target's series over the steady window (see
        docs/metrics.md); ``own`` holds the collector's own samples (e.g. CPU count)."""
        return []

    @classmethod
    def metric_name(cls, obj: str, instance: str, counter: str) -> str:
        """The metric a series row is stored and summarised under."""
        inst = f"({instance})" if instance else ""
        return f"{obj}{inst}\\{counter}"

    def samples_needed(self, planned_seconds: float) -> int:
        """A sample count that outlasts the trial even when phases overrun (the collector
        is stopped explicitly; the count only bounds a run-away tool)."""
        return max(2, math.ceil(planned_seconds * 2 / self.interval) + 60)

    @abstractmethod
    def start(self, ctx: CollectorContext) -> None:
        """Begin sampling (called before warm-up). Raise a VbenchError on failure."""

    @abstractmethod
    def stop(self, ctx: CollectorContext) -> Series:
        """Stop sampling (after cool-down), fetch and parse what was measured."""

    def abort(self, ctx: CollectorContext) -> None:  # noqa: B027 - optional hook
        """Stop without collecting (the trial is being torn down); best effort."""


def guest_targets(spec: CollectorSpec, ctx: TrialContext) -> list[Target]:
    """The trial's guests named by ``spec.targets`` (topology groups or guest names;
    default: every guest of the trial)."""
    guests = {g.name: g for g in ctx.all_guests()}
    if not spec.targets:
        return [Target(n, "guest", g) for n, g in guests.items()]
    by_group = ctx.groups
    out: dict[str, Guest] = {}
    for item in spec.targets:
        names = by_group.get(item, [item])
        for n in names:
            if n not in guests:
                raise ConfigError(
                    f"{spec.kind}: target {item!r} is not a guest or group of this trial "
                    f"(guests: {', '.join(guests)})"
                )
            out[n] = guests[n]
    return [Target(n, "guest", g) for n, g in out.items()]


REGISTRY: Registry[type[Collector]] = Registry(
    "vbench.collectors", "collector", lambda cls: cls.kind
)


def register(cls: type[Collector]) -> type[Collector]:
    """Class decorator: make a collector available under ``cls.kind`` (found by
    discovery: see :mod:`vbench.plugins`)."""
    return REGISTRY.register(cls)


def get_collector(kind: str) -> type[Collector]:
    return REGISTRY.get(kind)


def collector_kinds() -> list[str]:
    return REGISTRY.names()
