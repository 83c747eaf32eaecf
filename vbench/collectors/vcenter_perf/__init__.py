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

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from vbench.analysis.catalogue import Metric, metric
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
from vbench.errors import ConfigError
from vbench.lazy import lazy_module
from vbench.vsphere.perf import REALTIME, PerfPoller

if TYPE_CHECKING:
    from vbench.collectors.base import TrialContext
    from vbench.collectors.runtime import RunEnv
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec, Scenario


if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")

_NAME = re.compile(r"^[A-Za-z]+\.[A-Za-z0-9_.]+\.(average|summation|latest|maximum|minimum|none)$")
_KINDS = ("host", "vm", "datastore", "cluster")


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
    def metric_catalogue(cls, options: CollectorOptions) -> tuple[Metric, ...]:
        assert isinstance(options, VCenterPerfOptions)
        # The counters read, with an instance when instances are asked for; vSphere
        # gives the unit (a counter's unit is known only once vCenter is asked).
        # A counter's direction is the reader's to say (report.better): none here.
        out = [metric(c, None, "none") for c in options.counters]
        if options.instances:
            out += [metric(f"{c}(<instance>)", None, "none") for c in options.counters]
        return tuple(out)

    @classmethod
    def metric_name(cls, obj: str, instance: str, counter: str) -> str:
        return f"{obj}.{counter}" + (f"({instance})" if instance else "")

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
