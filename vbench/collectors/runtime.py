"""Run the scenario's collectors around every trial: start, stop, align, store, summarise.

The engine holds one :class:`CollectorRuntime` per run and asks it for a
:class:`TrialCollectors` per trial. A collector that cannot start, dies mid-trial or
cannot be read is recorded (log, ``series/<p>-<t>/collectors.json``, the report and
``vbench show``) and the trial goes on with the workload's figures — unless its spec
says ``required: true``, in which case the trial fails with that error.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from vbench.collectors.base import (
    Collector,
    CollectorContext,
    CollectorOptions,
    Series,
    Target,
    get_collector,
)
from vbench.collectors.series import ClockOffset, window_summaries
from vbench.errors import LabError, VbenchError
from vbench.results.collected import (
    SERIES_DIR,
    CollectorRecord,
    safe_name,
    write_manifest,
    write_series,
)
from vbench.results.records import PhaseTimes, Sample

if TYPE_CHECKING:
    from vbench.collectors.base import PlannedPoint, TrialContext
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec
    from vbench.guest.ssh import Guest, GuestPool
    from vbench.results.rundir import RunDir


class CollectorFailed(LabError):
    """A collector marked ``required: true`` failed: the trial fails with it."""


@dataclass
class RunEnv:
    """What collectors may reach during a run: the lab, the guest pool, and connections
    they open themselves (ESXi hosts, vCenters), closed at the end of the run."""

    lab: Lab | None
    pool: GuestPool | None
    run_id: str
    max_parallel: int = 16
    _hosts: dict[str, Guest] = field(default_factory=dict)
    _resources: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def host(self, name: str) -> Guest:
        """An SSH connection to the lab's ESXi host ``name`` (opened once per run)."""
        from vbench.guest.labspec import host_spec
        from vbench.guest.ssh import Guest

        with self._lock:
            if name not in self._hosts:
                if self.lab is None or name not in self.lab.hosts:
                    raise LabError(name, "not an ESXi host of the lab (`hosts:`)")
                self._hosts[name] = Guest(host_spec(self.lab, name))
            return self._hosts[name]

    def resource(self, key: str, factory: Callable[[], Any]) -> Any:
        """A shared object (a vCenter session, say) made once per run."""
        with self._lock:
            if key not in self._resources:
                self._resources[key] = factory()
            return self._resources[key]

    def close(self) -> None:
        for guest in self._hosts.values():
            # An unreachable host: nothing more can be stopped or removed from here.
            with contextlib.suppress(VbenchError):
                guest.kill_all()
                guest.remove(f"{guest.spec.workdir.rstrip('/')}/{self.run_id}")
            guest.close()
        self._hosts.clear()
        for res in self._resources.values():
            closer = getattr(res, "close", None)
            if callable(closer):
                with contextlib.suppress(Exception):  # a session already gone is fine here
                    closer()
        self._resources.clear()


@dataclass
class _Running:
    spec: CollectorSpec
    name: str
    collector: Collector | None
    record: CollectorRecord
    ctx: CollectorContext
    clock: ClockOffset | None = None
    started: bool = False


class CollectorRuntime:
    """The collectors of one run."""

    def __init__(self, specs: Sequence[CollectorSpec], env: RunEnv, rundir: RunDir) -> None:
        self.specs = list(specs)
        self.env = env
        self.rundir = rundir

    def __bool__(self) -> bool:
        return bool(self.specs)

    def trial(self, ctx: TrialContext, point: PlannedPoint) -> TrialCollectors:
        """The collectors of one trial of ``point`` (``ctx`` is the workload's context)."""
        planned = point.warmup + point.steady + point.cooldown
        return TrialCollectors(self, ctx, planned)

    def close(self) -> None:
        self.env.close()


class TrialCollectors:
    """The collectors of one trial: ``start()`` before warm-up, ``stop()`` after cool-down."""

    def __init__(self, runtime: CollectorRuntime, ctx: TrialContext, planned: float) -> None:
        self.rt = runtime
        self.tctx = ctx
        self.planned = planned
        self.running: list[_Running] = []
        self.stopped = False
        self.required_failure: str | None = None
        self.shown: set[str] = set()  # failures already shown to the user
        self.summaries: list[Sample] = []
        # (collector, target) -> (kind, frame in controller time, interval)
        self.series: dict[tuple[str, str], tuple[str, pd.DataFrame, float]] = {}
        self.phases: PhaseTimes | None = None

    # -- start -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start every collector on every target; failures are recorded, not raised."""
        for spec in self.rt.specs:
            name = spec.name or spec.kind
            try:
                cls = get_collector(spec.kind)
                options = cls.Options.model_validate(spec.options)
                targets = cls_targets(cls, spec, self.rt.env, self.tctx)
            except Exception as exc:
                self._fail_spec(spec, name, exc)
                continue
            for target in targets:
                self.running.append(self._prepare(spec, name, cls, options, target))
        self._fan_out(self._start_one, [r for r in self.running if r.collector is not None])
        for r in self.running:
            if r.record.status == "failed":
                self._report(r, "start")

    def _prepare(
        self,
        spec: CollectorSpec,
        name: str,
        cls: type[Collector],
        options: CollectorOptions,
        target: Target,
    ) -> _Running:
        record = CollectorRecord(name, spec.kind, target.name, spec.required, spec.interval)
        ctx = CollectorContext(
            run_id=self.tctx.run_id,
            point=self.tctx.point,
            trial=self.tctx.trial,
            planned_seconds=self.planned,
            raw_dir=self.tctx.raw_dir / safe_name(target.name),
            log=self.tctx.log,
        )
        return _Running(spec, name, cls(name, spec.interval, options, target), record, ctx)

    def _start_one(self, r: _Running) -> None:
        assert r.collector is not None
        try:
            r.clock = clock_offset(r.collector)
            r.record.clock_offset, r.record.clock_rtt = r.clock.offset, r.clock.rtt
            if abs(r.clock.offset) > r.spec.interval / 2:
                r.record.warnings.append(
                    f"clock of {r.record.target} is {r.clock.offset:+.3f} s off the "
                    f"controller's (more than half the {r.spec.interval:g} s interval); "
                    "its series were shifted onto controller time"
                )
            r.collector.start(r.ctx)
            r.started = True
        except Exception as exc:
            r.record.status, r.record.error = "failed", _why(exc)

    def _fail_spec(self, spec: CollectorSpec, name: str, exc: Exception) -> None:
        record = CollectorRecord(name, spec.kind, "*", spec.required, spec.interval)
        record.status, record.error = "failed", _why(exc)
        ctx = CollectorContext(
            self.tctx.run_id, self.tctx.point, self.tctx.trial, self.planned,
            self.tctx.raw_dir, self.tctx.log,
        )  # fmt: skip
        r = _Running(spec, name, None, record, ctx)
        self.running.append(r)

    # -- stop ------------------------------------------------------------------------------
    def stop(self, phases: PhaseTimes) -> list[Sample]:
        """Stop everything, store the series, return the steady-window summaries."""
        if self.stopped:
            return []
        self.stopped = True
        self.phases = phases
        live = [r for r in self.running if r.started]
        results: dict[int, Series | None] = {}

        def stop_one(r: _Running) -> None:
            assert r.collector is not None
            try:
                results[id(r)] = r.collector.stop(r.ctx)
            except Exception as exc:
                r.record.status, r.record.error = "failed", _why(exc)
                results[id(r)] = None

        self._fan_out(stop_one, live)
        samples: list[Sample] = []
        for r in live:
            series = results.get(id(r))
            if series is not None:
                samples.extend(self._store(r, series, phases))
            if r.record.status == "failed":
                self._report(r, "stop")
        self.summaries = samples
        self._manifest()
        return samples

    def derived(self, workload: Sequence[Sample], headline: Sequence[str]) -> list[Sample]:
        """Figures from the series and the workload's figures (call after ``stop``)."""
        from vbench.collectors.derived import all_figures

        window = self.phases.steady if self.phases else None
        try:
            return all_figures(self.series, self.summaries, window, workload, headline)
        except Exception as exc:  # a derived figure must never cost the trial its data
            self.tctx.log("derived_failed", level="warning", error=_why(exc))
            return []

    def abort(self) -> None:
        """Kill what still runs (the trial failed before ``stop``); nothing is stored."""
        if self.stopped:
            return
        self.stopped = True
        for r in self.running:
            if r.started and r.collector is not None:
                try:
                    r.collector.abort(r.ctx)
                except Exception as exc:
                    self.tctx.log(
                        "collector_abort_failed", level="warning", collector=r.name,
                        target=r.record.target, error=_why(exc),
                    )  # fmt: skip
        self._manifest()

    def _store(self, r: _Running, series: Series, phases: PhaseTimes) -> list[Sample]:
        assert r.collector is not None
        rec = r.record
        rec.notes.extend(series.notes)
        if series.error:
            rec.status, rec.error = "failed", series.error
        frame = series.frame
        out: list[Sample] = list(series.samples)
        if frame.empty:
            if rec.status == "ok":
                rec.status, rec.error = "failed", "no samples collected"
            return out
        frame = frame.copy()
        offset = r.clock or ClockOffset(0.0, 0.0)
        frame["time"] = offset.to_controller(frame["time"].astype("float64"))
        metric = r.collector.metric_name
        frame["metric"] = [
            metric(o, i, c)
            for o, i, c in zip(frame["object"], frame["instance"], frame["counter"], strict=True)
        ]
        rel = (
            f"{SERIES_DIR}/{self.tctx.point}-{self.tctx.trial}/{safe_name(r.name)}/"
            f"{safe_name(rec.target)}.parquet"
        )
        window = phases.steady
        meta = {
            "collector": r.name, "kind": rec.kind, "target": rec.target,
            "interval": rec.interval, "clock_offset": offset.offset, "clock_rtt": offset.rtt,
            "steady_start": window.start if window else None,
            "steady_end": window.end if window else None,
        }  # fmt: skip
        path = self.rt.rundir.path / rel
        rec.rows = write_series(
            path, frame, source=r.name, entity=rec.target, point=self.tctx.point,
            trial=self.tctx.trial, metadata=meta,
        )  # fmt: skip
        rec.file = rel
        rec.metrics = int(frame["metric"].nunique())
        times = frame["time"].to_numpy()
        rec.first, rec.last = float(np.min(times)), float(np.max(times))
        if window is not None and rec.last < window.end - rec.interval:
            rec.warnings.append(
                f"the series ends {window.end - rec.last:.0f} s before the steady window does"
            )
        self.series[(r.name, rec.target)] = (rec.kind, frame, rec.interval)
        out.extend(window_summaries(frame, window, rec.interval, r.name, rec.target))
        return out

    # -- reporting -------------------------------------------------------------------------
    def _report(self, r: _Running, phase: str) -> None:
        rec = r.record
        self.tctx.log(
            "collector_failed", level="error" if rec.required else "warning",
            collector=r.name, target=rec.target, phase=phase, error=rec.error,
            required=rec.required,
        )  # fmt: skip
        if rec.required and self.required_failure is None:
            self.required_failure = (
                f"required collector {r.name} on {rec.target} failed: {rec.error}"
            )

    def failures(self) -> list[str]:
        return [
            f"{r.name} on {r.record.target}: {r.record.error}"
            for r in self.running
            if r.record.status == "failed"
        ]

    def warnings(self) -> list[str]:
        return [w for r in self.running for w in r.record.warnings]

    def _manifest(self) -> None:
        directory = self.rt.rundir.path / SERIES_DIR / f"{self.tctx.point}-{self.tctx.trial}"
        write_manifest(directory, [r.record for r in self.running])

    def _fan_out(self, fn: Callable[[_Running], None], items: list[_Running]) -> None:
        if len(items) <= 1:
            for it in items:
                fn(it)
            return
        with ThreadPoolExecutor(max_workers=min(len(items), self.rt.env.max_parallel)) as ex:
            list(ex.map(fn, items))


def cls_targets(
    cls: type[Collector], spec: CollectorSpec, env: RunEnv, ctx: TrialContext
) -> list[Target]:
    """The targets of one collector spec in this trial (see each collector's ``targets``)."""
    targets = cls.targets(spec, env, ctx)
    if not targets:
        raise LabError(spec.kind, "no target to collect from")
    return list(targets)


def clock_offset(collector: Collector) -> ClockOffset:
    """The target's clock against the controller's, by the collector's own means."""
    custom = getattr(collector, "clock_offset", None)
    if callable(custom):
        return custom()
    guest = collector.target.guest
    if guest is None:
        return ClockOffset(0.0, 0.0)
    offset, rtt = guest.clock_offset(rounds=5)
    return ClockOffset(offset, rtt)


def _why(exc: BaseException) -> str:
    if isinstance(exc, VbenchError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
