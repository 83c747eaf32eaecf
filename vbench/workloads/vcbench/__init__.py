"""The ``vcbench`` workload driver: vCenter management-operation throughput.

``sessions`` sessions, each its own login, issue a mix of operations (power, clone,
relocate, reconfigure, register, snapshot, create/destroy) on VMs each leases
exclusively, closed loop (optionally with think time) or open loop (a target rate).
Figures are for the steady window only (see :mod:`.metrics`). The driver needs no
guests: it works through the run's vSphere resources (``ctx.vsphere``): the point's
vCenter (a profile level may switch it), its shared task watcher and its journal.

Per trial: prepare opens the sessions and creates the VM pool (one clone of
``template`` per session, journaled and marked) or reads the named ``vms``; run drives
warm-up and steady state; collect writes ``ops.csv`` (every operation) and
``ops_per_second.csv`` and computes the figures; teardown logs the sessions out and
removes every VM the trial created (run-end cleanup and ``vbench cleanup RUN`` remove
whatever a crash left). User documentation: ``docs/vcbench.md``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from vbench.analysis.catalogue import Metric, relabel
from vbench.errors import Interrupted, LabError
from vbench.workloads.base import (
    Finding,
    LabObject,
    PlannedCommand,
    TrialContext,
    Workload,
    register,
)
from vbench.workloads.vcbench import metrics
from vbench.workloads.vcbench.params import VcbenchParams, lab_objects, mix_findings

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs
    from vbench.results.records import Sample
    from vbench.vsphere.connection import VSphereSession
    from vbench.vsphere.operations import Site
    from vbench.workloads.vcbench.loop import LoadRun

WINDOW_FILE = "window.json"
TESTBED_FILE = "vcenter.json"


@dataclass
class _Trial:
    """What one trial set up (so that teardown can undo exactly that)."""

    sessions: list[VSphereSession] = field(default_factory=list)
    sites: dict[str, Site] = field(default_factory=dict)
    load: LoadRun | None = None
    leases: list[Any] = field(default_factory=list)
    window: tuple[float, float] | None = None
    prefix: str = ""


@register
class VcbenchWorkload(Workload):
    """Many vCenter sessions issuing a management-operation mix."""

    name: ClassVar[str] = "vcbench"
    docs: ClassVar[tuple[str, ...]] = ("docs/vcbench.md",)
    Params: ClassVar[type[VcbenchParams]] = VcbenchParams
    roles: ClassVar[tuple[str, ...]] = ()
    needs_vcenter: ClassVar[bool] = True
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "vcbench.ops_per_s",
        "vcbench.latency_avg",
        "vcbench.failed",
    )
    metrics: ClassVar[tuple[Metric, ...]] = metrics.METRICS

    def __init__(self, params: VcbenchParams) -> None:  # type: ignore[override]
        super().__init__(params)
        self.p: VcbenchParams = params
        self._trial = _Trial()

    @classmethod
    def findings(cls, params: VcbenchParams) -> list[Finding]:  # type: ignore[override]
        return mix_findings(params)

    @classmethod
    def metric_catalogue(cls, params: VcbenchParams) -> tuple[Metric, ...]:  # type: ignore[override]
        """The per-operation figures carry the operations of this mix (weight > 0)."""
        return relabel(cls.metrics, op=[op for op, w in params.mix.items() if w > 0])

    @classmethod
    def lab_objects(cls, params: VcbenchParams) -> tuple[LabObject, ...]:  # type: ignore[override]
        """Template, named VMs, cluster and datastores (checked before the pool is made)."""
        return lab_objects(params)

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """ops/s against Little's law (see :mod:`.answer`)."""
        from vbench.workloads.vcbench.answer import vcbench_answer

        return vcbench_answer(inputs)

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        p = self.p
        ops = ",".join(f"{op}:{w:g}" for op, w in p.mix.items() if w > 0)
        pool = (
            f"create {p.sessions} VMs (clones of {p.template}), up to {p.sessions * p.spares} "
            "more during the run (clone/create, destroyed by the run)"
            if p.template
            else f"use {len(p.vms)} named VMs"
        )
        if p.loop == "closed":
            loop = f"closed loop, think {p.think_time:g}s"
        else:
            loop = f"open loop {p.rate:g} ops/s"
        argv = ("vcbench", f"sessions={p.sessions}", loop, f"mix={ops}", pool)
        return [PlannedCommand("vcenter", "run", argv)]

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        return warmup + steady + cooldown + 10.0  # pool, logins, drain (an estimate)

    # ------------------------------------------------------------------ prepare
    def prepare(self, ctx: TrialContext) -> None:
        from vbench.vsphere.operations import Lease, Operator
        from vbench.vsphere.oppool import (
            create_pool,
            existing_pool,
            find_template,
            open_sessions,
            resolve_site,
        )
        from vbench.workloads.vcbench.loop import LoadRun, Session

        res = _resources(ctx)
        journal = _journal(res)
        t = self._trial = _Trial(prefix=res.object_name(f"vcb{ctx.point}.{ctx.trial}"))
        vcenters = self.p.vcenters or [res.vcenter]
        counts = _split(self.p.sessions, len(vcenters))
        sessions: list[Session] = []
        index = 0
        for vc, n in zip(vcenters, counts, strict=True):
            if n == 0:
                continue
            main = res.session(vc)
            inv = res.inventory(vc)
            dc = res.placement.datacenter if vc == res.vcenter else None
            site = resolve_site(inv, vc, dc, self.p.cluster, self.p.datastores)
            t.sites[vc] = site
            _record_testbed(ctx, vc, main)
            watcher = res.watcher(vc)
            if self.p.template:
                names = [f"{t.prefix}-{index + i}" for i in range(n)]
                ctx.log("vcbench_pool", vcenter=vc, vms=n, template=self.p.template)
                vms = create_pool(
                    main, watcher, site, journal, res.run_id,
                    find_template(inv, dc, self.p.template), self.p.template, names,
                    parallel=self.p.pool_parallel, cancel=ctx.cancel,
                )  # fmt: skip
            else:
                names = self.p.vms[index : index + n]
                vms = existing_pool(main, inv, dc, names)
                for vm in vms:
                    vm.snapshots = []  # only snapshots this run takes are touched
            opened = open_sessions(main.target, n, parallel=16)
            t.sessions += opened
            for s, vm in zip(opened, vms, strict=True):
                op = Operator(
                    index, s, watcher, site, journal, res.run_id, t.prefix, ctx.cancel
                )
                lease = op.adopt(Lease(vm, max_spares=self.p.spares))
                t.leases.append(lease)
                sessions.append(Session(op, lease))
                index += 1
        t.load = LoadRun(
            sessions,
            self.p.mix,
            think_time=self.p.think_time,
            rate=self.p.rate if self.p.loop == "open" else None,
            seed=self.p.seed + 7919 * ctx.trial,
            cancel=ctx.cancel,
        )
        ctx.log("vcbench_ready", sessions=len(sessions), vcenters=vcenters)

    # ------------------------------------------------------------------ run
    def run(self, ctx: TrialContext) -> None:
        load = self._trial.load
        if load is None:
            raise LabError("vcbench", "prepare did not finish (no sessions)")
        ctx.mark("warmup_start")
        load.start()
        try:
            if ctx.cancel.wait(ctx.warmup):
                return
            ctx.mark("steady_start")
            start = time.time()
            if ctx.cancel.wait(ctx.steady):
                return
            ctx.mark("steady_end")
            self._trial.window = (start, time.time())
        finally:
            drained = load.stop(0.0 if ctx.cancel.is_set() else self.p.drain)
            if not drained:
                ctx.log(
                    "vcbench_drain",
                    level="warning",
                    still_running=load.in_flight(),
                    message=f"operations still running {self.p.drain:g}s after the end",
                )

    # ------------------------------------------------------------------ collect
    def collect(self, ctx: TrialContext) -> list[Sample]:
        load = self._trial.load
        if load is None:
            return []
        records = load.snapshot()
        raw = ctx.raw_dir
        raw.mkdir(parents=True, exist_ok=True)
        metrics.write_log(raw / metrics.OPS_FILE, records)
        rows = metrics.read_log(raw / metrics.OPS_FILE)  # figures come from the raw log
        if rows:
            t0 = min(r.start for r in rows)
            end = max(r.end for r in rows)
            series = metrics.per_second(rows, t0, end)
            metrics.write_series(raw / metrics.SERIES_FILE, series, t0)
            _store_series(ctx, series)
        window = self._trial.window
        (raw / WINDOW_FILE).write_text(
            json.dumps({
                "steady_start": window[0] if window else None,
                "steady_end": window[1] if window else None,
                "late_starts": load.late_starts,
                "errors": load.errors[:50],
                "faults": metrics.fault_messages(rows),
            }, indent=1),
            encoding="utf-8",
        )  # fmt: skip
        if window is None:
            return []  # interrupted before the steady window ended: raw log kept
        samples = metrics.steady_samples(
            rows,
            window[0],
            window[1],
            sessions=self.p.sessions,
            think_time=self.p.think_time,
            mix=self.p.mix,
        )
        if self.p.loop == "open":
            samples.append(
                metrics.Sample(
                    "vcbench.late_starts", float(load.late_starts), "ops", metrics.SOURCE
                )
            )
        return samples

    # ------------------------------------------------------------------ teardown
    def teardown(self, ctx: TrialContext) -> None:
        from vbench.vsphere.oppool import close_sessions

        t = self._trial
        if t.load is not None:
            t.load.stop(0.0 if ctx.cancel.is_set() else self.p.drain)
        errors: list[str] = []
        if t.sessions:
            try:
                errors += self._restore(t)
            except Exception as exc:  # still close the sessions and remove the VMs
                errors.append(f"restoring the leased VMs: {exc}")
            close_sessions(t.sessions)
            t.sessions = []
        with contextlib.suppress(Interrupted):
            errors += self._remove_created(ctx, t)
        if errors:
            raise LabError("vcbench teardown", "; ".join(errors[:5]))

    def _restore(self, t: _Trial) -> list[str]:
        """Unregistered spares are registered again (so cleanup removes their files too);
        named VMs lose the snapshots this run took. What could not be undone, one line
        each (a named VM left with the run's snapshots is the user's to know about)."""
        from vbench.vsphere.operations import Lease

        if t.load is None:
            return []
        errors = []
        for s in t.load.sessions:
            lease: Lease = s.lease
            while lease.unregistered:
                rec = s.operator.run("register", lease)
                if not rec.ok and not rec.registered_already:
                    errors.append(f"{rec.vcenter}: cannot register {rec.vm} again "
                                  f"({rec.fault_type}: {rec.fault})")  # fmt: skip
                    break
            if self.p.vms:
                while lease.home.snapshots:
                    rec = s.operator.run("snapshot_remove", lease)
                    if not rec.ok:
                        errors.append(f"{rec.vcenter}: cannot remove the "
                                      f"{len(lease.home.snapshots)} snapshot(s) this run "
                                      f"took of VM {lease.home.name} "
                                      f"({rec.fault_type}: {rec.fault})")  # fmt: skip
                        break
        return errors

    def _remove_created(self, ctx: TrialContext, t: _Trial) -> list[str]:
        """Destroy every VM this trial created (journal items named with its prefix)."""
        from vbench.vsphere.cleanup import cleanup_items
        from vbench.vsphere.journal import pending

        if not t.prefix:
            return []
        res = _resources(ctx)
        journal = _journal(res)
        mine = [i for i in pending(journal.read()) if i.name.startswith(t.prefix + "-")]
        errors: list[str] = []
        for vc in dict.fromkeys(i.vcenter for i in mine):
            report = cleanup_items(
                res.session(vc),
                res.watcher(vc),
                journal,
                res.run_id,
                [i for i in mine if i.vcenter == vc],
                parallel=self.p.pool_parallel,
            )
            errors += report.errors
        return errors


def _store_series(ctx: TrialContext, series: Sequence[tuple[float, int]]) -> None:
    """The ops/s time series beside the collectors' (``<run>/series/<point>-<trial>/``),
    where the report charts every trial's series over time."""
    import pandas as pd

    from vbench.results.collected import SERIES_DIR

    run_dir = ctx.raw_dir.parent.parent  # <run>/raw/<point>-<trial>
    if ctx.raw_dir.parent.name != "raw":
        return  # not a run directory (a bench or a test's scratch): the CSV is enough
    path = run_dir / SERIES_DIR / f"{ctx.point}-{ctx.trial}" / "vcbench" / "ops_per_s.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({
        "metric": "vcbench.ops_per_s",
        "value": [float(c) for _, c in series],
        "ts": [ts for ts, _ in series],
        "point": ctx.point,
        "trial": ctx.trial,
        "unit": "ops/s",
        "source": "vcbench",
    }).to_parquet(path, index=False)


def _split(total: int, parts: int) -> list[int]:
    """``total`` sessions over ``parts`` vCenters, as evenly as possible."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _resources(ctx: TrialContext) -> Any:
    res = getattr(ctx, "vsphere", None)
    if res is None:
        raise LabError(
            "vcbench",
            "needs a vCenter: the lab names none (add one under `vcenters:`, or use "
            "examples/labs/vcbench-sim.yaml)",
        )
    return res


def _journal(res: Any) -> Any:
    """The run's journal (everything created is written there before the call)."""
    return res.journal


def _record_testbed(ctx: TrialContext, vcenter: str, session: VSphereSession) -> None:
    """vCenter version/build, statistics level and extensions, beside the raw log."""
    from vbench.vsphere.oppool import vcenter_facts

    try:
        facts = vcenter_facts(session)
    except Exception as exc:  # the testbed is a record, not a reason to fail
        ctx.log("vcbench_testbed", level="warning", vcenter=vcenter, error=str(exc))
        return
    path: Path = ctx.raw_dir / f"{vcenter}-{TESTBED_FILE}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(facts, indent=1, default=str), encoding="utf-8")
    ctx.log("vcbench_testbed", vcenter=vcenter, **facts)


__all__: Sequence[str] = ("VcbenchParams", "VcbenchWorkload")
