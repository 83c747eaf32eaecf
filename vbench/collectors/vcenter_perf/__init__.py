"""vcenter_perf: vCenter real-time performance counters of the run's hosts, VMs, datastores.

Counters are named as vSphere names them, ``group.name.rollup`` (``cpu.usage.average``,
``cpu.ready.summation``, ``mem.consumed.average``, ``disk.maxTotalLatency.latest``,
``net.packetsRx.summation`` …). One poller per vCenter fetches, every ``poll`` seconds
during the trial, the new 20-second samples of *every* entity collected at once (one
``QueryPerf`` call per ``batch`` entities), so nothing ages out of vCenter's real-time
window (about an hour) however long the run. Times are vCenter's clock; its offset to
the controller is read from ``ServiceInstance.CurrentTime`` (minimum round trip).
"""

from __future__ import annotations

import difflib
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd
from pydantic import Field, field_validator

from vbench.collectors.base import (
    Collector,
    CollectorContext,
    CollectorOptions,
    Series,
    Target,
    register,
)
from vbench.collectors.series import ClockOffset
from vbench.config.types import Duration
from vbench.errors import ConfigError, LabError

if TYPE_CHECKING:
    from vbench.collectors.runtime import RunEnv
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec, Scenario
    from vbench.workloads.base import TrialContext

REALTIME = 20  # seconds: vCenter's real-time sampling interval for hosts and VMs
_NAME = re.compile(r"^[A-Za-z]+\.[A-Za-z0-9_.]+\.(average|summation|latest|maximum|minimum|none)$")
_KINDS = ("host", "vm", "datastore", "cluster")
# vSphere unit keys -> (unit, scale): percentages come in hundredths of a percent.
_UNITS = {
    "percent": ("%", 0.01), "millisecond": ("ms", 1.0), "microsecond": ("µs", 1.0),
    "second": ("s", 1.0), "kiloBytes": ("kB", 1.0), "megaBytes": ("MB", 1.0),
    "kiloBytesPerSecond": ("kB/s", 1.0), "megaBytesPerSecond": ("MB/s", 1.0),
    "megaHertz": ("MHz", 1.0), "number": ("", 1.0), "watt": ("W", 1.0), "joule": ("J", 1.0),
    "celsius": ("°C", 1.0),
}  # fmt: skip


class VCenterPerfOptions(CollectorOptions):
    vcenter: str | None = Field(None, description="lab vCenter (default: the only one)")
    counters: list[str] = Field(
        default_factory=lambda: [
            "cpu.usage.average",
            "cpu.ready.summation",
            "mem.consumed.average",
            "disk.maxTotalLatency.latest",
            "net.packetsRx.summation",
            "net.packetsTx.summation",
        ],
        min_length=1,
        description="counters as group.name.rollup",
    )
    instances: str = Field("", description='"" for the aggregate only, "*" for every instance')
    poll: Duration = Field(
        60.0, ge=1, description="how often samples are fetched during a trial (per vCenter)"
    )
    batch: int = Field(50, ge=1, le=1000, description="entities per QueryPerf call")

    @field_validator("counters")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if not _NAME.match(c)]
        if bad:
            raise ValueError(
                f"{', '.join(bad)}: counters are group.name.rollup, e.g. cpu.usage.average"
            )
        return v


@dataclass
class _Entity:
    key: str  # "vm:web-1"
    moref: Any
    metric_ids: list[Any]
    since: Any  # datetime of the last sample fetched (vCenter clock)
    interval: int
    rows: list[tuple[float, str, str, str, float | None, str]] = field(default_factory=list)
    seen: set[tuple[float, int, str]] = field(default_factory=set)


class PerfPoller:
    """One per vCenter and run: resolves names once, fetches all entities together."""

    @classmethod
    def target_problems(
        cls, spec: CollectorSpec, scenario: Scenario, lab: Lab | None
    ) -> list[tuple[int | None, str]]:
        out: list[tuple[int | None, str]] = []
        if lab is not None and not lab.vcenters:
            out.append((None, "vcenter_perf needs a vCenter: the lab has no `vcenters:`"))
        kinds = ("host", "vm", "datastore", "cluster")
        for j, t in enumerate(spec.targets):
            kind, sep, name = t.partition(":")
            if sep and (kind not in kinds or not name):
                out.append((j, f"{t!r}: targets are {'|'.join(kinds)}:NAME (or a VM name)"))
        return out

    def __init__(self, session: Any, poll: float, batch: int) -> None:
        from pyVmomi import vim

        self.vim = vim
        self.session = session
        self.poll, self.batch = poll, batch
        self.pm = session.content.perfManager
        self.by_name = {
            f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}": c
            for c in session.call(lambda: self.pm.perfCounter)
        }
        self.by_key = {c.key: c for c in self.by_name.values()}
        self._entities: dict[str, _Entity] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []
        self.calls = 0  # QueryPerf calls made (each covers up to `batch` entities)

    # -- inventory -------------------------------------------------------------------------
    def find(self, kind: str, name: str) -> Any:
        vim = self.vim
        types = {"host": vim.HostSystem, "vm": vim.VirtualMachine, "datastore": vim.Datastore,
                 "cluster": vim.ClusterComputeResource}  # fmt: skip
        content = self.session.content

        def lookup() -> list[Any]:
            view = content.viewManager.CreateContainerView(content.rootFolder, [types[kind]], True)
            try:
                return list(view.view)
            finally:
                view.Destroy()

        objs = self.session.call(lookup)
        for o in objs:
            if o.name == name:
                return o
        close = difflib.get_close_matches(name, [o.name for o in objs], n=3)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise LabError(f"vcenter {self.session.target.name}", f"no {kind} named {name!r}{hint}")

    def counter_ids(self, names: list[str]) -> list[int]:
        unknown = [n for n in names if n not in self.by_name]
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(self.by_name), n=3)
            raise LabError(
                f"vcenter {self.session.target.name}",
                f"unknown performance counter {', '.join(unknown)}"
                + (f" (closest: {', '.join(close)})" if close else ""),
            )
        return [self.by_name[n].key for n in names]

    def clock(self) -> ClockOffset:
        best: ClockOffset | None = None
        for _ in range(3):
            t0 = time.time()
            server = self.session.call(self.session.si.CurrentTime)
            t1 = time.time()
            off = ClockOffset(server.timestamp() - (t0 + t1) / 2, t1 - t0)
            if best is None or off.rtt < best.rtt:
                best = off
        assert best is not None
        return best

    # -- sampling --------------------------------------------------------------------------
    def add(self, key: str, moref: Any, ids: list[int], instances: str) -> list[str]:
        """Register an entity; returns notes on counters it does not have."""
        summary = self.session.call(lambda: self.pm.QueryPerfProviderSummary(entity=moref))
        interval = summary.refreshRate if summary.currentSupported else 300
        avail = self.session.call(
            lambda: self.pm.QueryAvailablePerfMetric(entity=moref, intervalId=interval)
        )
        have = {m.counterId for m in avail or []}
        use = [i for i in ids if i in have] if have else ids
        label = key.split("/", 1)[-1]
        notes = [
            f"{label} has no {self._name(i)} at the {interval} s interval"
            for i in ids
            if i not in use
        ]
        metric = self.vim.PerformanceManager.MetricId
        since = self.session.call(self.session.si.CurrentTime)
        entity = _Entity(key, moref, [metric(counterId=i, instance=instances) for i in use],
                         since, interval)  # fmt: skip
        with self._lock:
            self._entities[key] = entity
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="vbench-vcenter-perf")  # fmt: skip
                self._thread.start()
        return notes

    def remove(self, key: str) -> tuple[list[tuple[Any, ...]], int]:
        """Fetch the entity's last samples, unregister it; (rows, interval)."""
        with self._lock:
            entity = self._entities.get(key)
        if entity is None:
            return [], REALTIME
        self.fetch([entity])
        with self._lock:
            self._entities.pop(key, None)
        return entity.rows, entity.interval

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            with self._lock:
                entities = list(self._entities.values())
            try:
                self.fetch(entities)
            except Exception as exc:  # keep polling: the next fetch may succeed
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def fetch(self, entities: list[_Entity]) -> None:
        """New samples of many entities, ``batch`` of them per QueryPerf call."""
        spec = self.vim.PerformanceManager.QuerySpec
        todo = [e for e in entities if e.metric_ids]
        for i in range(0, len(todo), self.batch):
            part = todo[i : i + self.batch]
            specs = [spec(entity=e.moref, metricId=e.metric_ids, intervalId=e.interval,
                          startTime=e.since, format="normal") for e in part]  # fmt: skip
            result = self.session.call(lambda specs=specs: self.pm.QueryPerf(querySpec=specs))
            self.calls += 1
            by_moref = {str(e.moref): e for e in part}
            for res in result or []:
                entity = by_moref.get(str(res.entity))
                if entity is not None:
                    self._add_rows(entity, res)

    def _add_rows(self, e: _Entity, res: Any) -> None:
        stamps = [si.timestamp for si in res.sampleInfo or []]
        for series in res.value or []:
            info = self.by_key.get(series.id.counterId)
            if info is None:
                continue
            unit, scale = _UNITS.get(info.unitInfo.key, (info.unitInfo.key, 1.0))
            name = f"{info.nameInfo.key}.{info.rollupType}"
            for ts, v in zip(stamps, series.value, strict=False):
                t = ts.timestamp()
                key = (t, series.id.counterId, series.id.instance)
                if key in e.seen:
                    continue
                e.seen.add(key)
                value = None if v is None or v < 0 else v * scale  # -1: no data
                e.rows.append((t, info.groupInfo.key, series.id.instance, name, value, unit))
        if stamps:
            e.since = max(stamps)

    def _name(self, key: int) -> str:
        c = self.by_key.get(key)
        return f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}" if c else str(key)

    def close(self) -> None:
        self._stop.set()


@register
class VCenterPerf(Collector):
    kind: ClassVar[str] = "vcenter_perf"
    target_kind: ClassVar[str] = "entity"
    Options: ClassVar[type[CollectorOptions]] = VCenterPerfOptions
    min_interval: ClassVar[float] = REALTIME

    def __init__(self, name: str, interval: float, options: CollectorOptions, target: Target):
        super().__init__(name, interval, options, target)
        self.notes: list[str] = []

    @property
    def opts(self) -> VCenterPerfOptions:
        assert isinstance(self.options, VCenterPerfOptions)
        return self.options

    @classmethod
    def check(cls, options: CollectorOptions, interval: float) -> list[str]:
        if interval != REALTIME:
            return [f"vcenter_perf reads vCenter's real-time samples: set interval: {REALTIME}s"]
        return []

    @classmethod
    def metric_name(cls, obj: str, instance: str, counter: str) -> str:
        return f"{obj}.{counter}" + (f"({instance})" if instance else "")

    @classmethod
    def targets(cls, spec: CollectorSpec, env: RunEnv, ctx: TrialContext) -> list[Target]:
        opts = VCenterPerfOptions.model_validate(spec.options)
        vc = _vcenter_name(env, opts)
        poller = _poller(env, vc, opts)
        items = list(spec.targets) or [f"vm:{g.name}" for g in ctx.all_guests()]
        out = []
        for item in items:
            kind, _, name = item.partition(":") if ":" in item else ("vm", "", item)
            if kind not in _KINDS:
                raise ConfigError(f"vcenter_perf target {item!r}: use {'|'.join(_KINDS)}:NAME")
            moref = poller.find(kind, name)
            out.append(Target(f"{kind}:{name}", "entity", None, {"moref": moref, "poller": poller}))
        return out

    @property
    def poller(self) -> PerfPoller:
        return self.target.detail["poller"]

    def clock_offset(self) -> ClockOffset:
        return self.poller.clock()

    def start(self, ctx: CollectorContext) -> None:
        ids = self.poller.counter_ids(self.opts.counters)
        self.notes = self.poller.add(self._key, self.target.detail["moref"], ids,
                                     self.opts.instances)  # fmt: skip

    @property
    def _key(self) -> str:
        return f"{self.name}/{self.target.name}"

    def stop(self, ctx: CollectorContext) -> Series:
        rows, interval = self.poller.remove(self._key)
        if interval != self.interval:
            self.notes.append(f"{self.target.name} is sampled every {interval} s by vCenter")
        frame = pd.DataFrame(rows, columns=["time", "object", "instance", "counter", "value",
                                            "unit"])  # fmt: skip
        errors = list(self.poller.errors)
        return Series(frame.sort_values("time", kind="stable").reset_index(drop=True),
                      tuple(self.notes + errors))  # fmt: skip

    def abort(self, ctx: CollectorContext) -> None:
        self.poller.remove(self._key)


def _vcenter_name(env: RunEnv, opts: VCenterPerfOptions) -> str:
    names = list(env.lab.vcenters) if env.lab else []
    if opts.vcenter:
        if opts.vcenter not in names:
            raise ConfigError(f"no vCenter {opts.vcenter!r} in the lab ({', '.join(names)})")
        return opts.vcenter
    if len(names) != 1:
        raise ConfigError(
            "vcenter_perf: name the lab vCenter in options.vcenter "
            f"(the lab has {len(names)}: {', '.join(names) or 'none'})"
        )
    return names[0]


def _poller(env: RunEnv, vc: str, opts: VCenterPerfOptions) -> PerfPoller:
    from vbench.vsphere.connection import connect, target_from_lab

    assert env.lab is not None

    def make() -> _Owned:
        session = connect(target_from_lab(env.lab, vc))  # type: ignore[arg-type]
        return _Owned(session, PerfPoller(session, opts.poll, opts.batch))

    return env.resource(f"vcenter_perf:{vc}", make).poller


@dataclass
class _Owned:
    """The session and poller of one vCenter, closed together at the end of the run."""

    session: Any
    poller: PerfPoller

    def close(self) -> None:
        self.poller.close()
        self.session.close()
