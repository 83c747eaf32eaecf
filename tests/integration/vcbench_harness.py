"""Driving the vcbench workload against vcsim without the CLI: the run's vSphere
resources (sessions, shared watcher, journal) built as the engine builds them, and one
trial's prepare → run → collect → teardown on a TrialContext."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyVmomi import vim

from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.results.records import Sample
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import retrieve
from vbench.vsphere.journal import Journal
from vbench.vsphere.resources import ProfilePlacement, RunResources
from vbench.vsphere.tasks import Watcher
from vbench.workloads.base import TrialContext
from vbench.workloads.vcbench import VcbenchWorkload
from vbench.workloads.vcbench.params import VcbenchParams

TEMPLATE = "DC0_C0_RP0_VM0"


def lab_for(servers: Mapping[str, VcsimServer]) -> Lab:
    vcs = {
        name: s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port))
        for name, s in servers.items()
    }
    return Lab.model_validate({"version": 1, "name": "vcb", "vcenters": vcs})


@dataclass
class Harness:
    lab: Lab
    run_id: str
    run_dir: Path
    sessions: SessionPool
    journal: Journal
    watchers: dict[str, Watcher] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def watcher(self, vc: str) -> Watcher:
        with self.lock:
            if vc not in self.watchers:
                self.watchers[vc] = Watcher(self.sessions.get(vc))
            return self.watchers[vc]

    def resources(self, vcenter: str) -> Any:
        run = RunResources(self.lab, self.sessions, self.watcher, self.journal, self.run_id)
        return run.for_point(ProfilePlacement(vcenter))

    def close(self) -> None:
        for w in self.watchers.values():
            w.close()
        self.sessions.close()


def harness(servers: Mapping[str, VcsimServer], tmp: Path, run_id: str = "t1") -> Harness:
    lab = lab_for(servers)
    run_dir = tmp / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    journal = Journal.in_run_dir(run_dir)
    journal.open(run_id)
    return Harness(lab, run_id, run_dir, SessionPool.for_lab(lab, pool_size=16), journal)


@dataclass
class TrialOutcome:
    samples: list[Sample]
    raw_dir: Path
    marks: dict[str, float]
    workload: VcbenchWorkload
    log: list[dict[str, Any]]

    def value(self, metric: str, **labels: str) -> float | None:
        want = tuple(sorted(labels.items()))
        hits = [s for s in self.samples if s.metric == metric and s.labels == want]
        assert len(hits) == 1, f"{metric} {labels}: {len(hits)} samples"
        return hits[0].value

    def metric(self, metric: str) -> list[Sample]:
        return [s for s in self.samples if s.metric == metric]


def context(
    h: Harness,
    vcenter: str,
    raw: Path,
    *,
    warmup: float,
    steady: float,
    on_mark: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[TrialContext, dict[str, float], list[dict[str, Any]]]:
    marks: dict[str, float] = {}
    log: list[dict[str, Any]] = []

    def mark(name: str) -> None:
        marks[name] = time.time()
        if on_mark is not None:
            on_mark(name)

    ctx = TrialContext(
        run_id=h.run_id, point=1, trial=1, labels={}, warmup=warmup, steady=steady,
        cooldown=0.0, guests={}, raw_dir=raw, cancel=cancel or threading.Event(),
        mark=mark, log=lambda event, **kw: log.append({"event": event, **kw}),
        vsphere=h.resources(vcenter),
    )  # fmt: skip
    return ctx, marks, log


def run_trial(
    h: Harness,
    params: Mapping[str, Any],
    *,
    vcenter: str = "vc1",
    warmup: float = 0.5,
    steady: float = 3.0,
    on_mark: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    teardown: bool = True,
) -> TrialOutcome:
    merged = {"template": TEMPLATE, **params}
    wl = VcbenchWorkload(VcbenchParams.model_validate({k: v for k, v in merged.items()
                                                      if v is not None}))
    raw = h.run_dir / "raw" / vcenter
    ctx, marks, log = context(
        h, vcenter, raw, warmup=warmup, steady=steady, on_mark=on_mark, cancel=cancel
    )
    try:
        wl.prepare(ctx)
        wl.run(ctx)
        samples = wl.collect(ctx)
    finally:
        if teardown:
            wl.teardown(ctx)
    return TrialOutcome(samples, raw, marks, wl, log)


def vm_names(server_session: Any) -> list[str]:
    return sorted(o.name for o in retrieve(server_session, {vim.VirtualMachine: ["name"]}))


def run_vms(h: Harness, vc: str = "vc1") -> list[str]:
    """VMs in the inventory named for this run (vb-<run id>-…)."""
    return [n for n in vm_names(h.sessions.get(vc)) if n.startswith(f"vb-{h.run_id}-")]


def snapshots_of_run(h: Harness, vc: str = "vc1") -> int:
    objs = retrieve(h.sessions.get(vc), {vim.VirtualMachine: ["name", "snapshot"]})
    return sum(
        1 for o in objs if o.name.startswith(f"vb-{h.run_id}-") and o.get("snapshot")
    )


def fixture_harness(servers: Mapping[str, VcsimServer], tmp: Path) -> Iterator[Harness]:
    h = harness(servers, tmp)
    try:
        yield h
    finally:
        h.close()
