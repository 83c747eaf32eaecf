"""vCenter's PerformanceManager: one poller per vCenter and run that resolves names once
and fetches the new real-time samples of every registered entity together (one
``QueryPerf`` per ``batch`` entities). Used by the ``vcenter_perf`` collector."""

from __future__ import annotations

import difflib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from vbench.errors import LabError
from vbench.results.records import ClockOffset

REALTIME = 20  # seconds: vCenter's real-time sampling interval for hosts and VMs
# vSphere unit keys -> (unit, scale): percentages come in hundredths of a percent.
_UNITS = {
    "percent": ("%", 0.01), "millisecond": ("ms", 1.0), "microsecond": ("µs", 1.0),
    "second": ("s", 1.0), "kiloBytes": ("kB", 1.0), "megaBytes": ("MB", 1.0),
    "kiloBytesPerSecond": ("kB/s", 1.0), "megaBytesPerSecond": ("MB/s", 1.0),
    "megaHertz": ("MHz", 1.0), "number": ("", 1.0), "watt": ("W", 1.0), "joule": ("J", 1.0),
    "celsius": ("°C", 1.0),
}  # fmt: skip


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
            # The poll thread and remove() may fetch one entity at once and get the same
            # samples: the seen-check and the append must not interleave (no duplicates).
            with self._lock:
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
