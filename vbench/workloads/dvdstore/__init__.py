"""The ``dvdstore`` workload driver: DVD Store OLTP orders per minute.

DVD Store's drivers are C# programs the user brings (``ds2webdriver``, ``ds3mysqldriver``
…, on Windows or under mono); vbench runs the user's driver command in every guest of
the ``clients`` role, ``instances`` times per guest, with the documented ``--name=value``
options (:mod:`.params`), ``--warmup_time``/``--run_time`` taken from the phases, and
each instance pointed at its own target (``targets`` round robin, else the ``databases``
guests). The steady window starts when every instance has printed ``Stats reset`` (the
driver's own end of warm-up) and ends when they have all exited.

Figures (steady window only, from each instance's console output, see
:mod:`vbench.parsers.dvdstore`): ``opm`` per instance and summed over instances,
``rt_avg_ms`` (order-weighted) and ``rt_max_ms``, ``rollback_rate_pct``, ``orders``, and
per-operation counts and average times. Normalised to the native configuration is a
``normalize`` derived figure of ``opm`` in the scenario (see scenarios/dvdstore-oltp.yaml).

User documentation: ``drivers/dvdstore/README.md``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from vbench.analysis.catalogue import Metric, labelled, metric, same_unit
from vbench.errors import GuestError, Interrupted, ParseError, VbenchError
from vbench.parsers.dvdstore import DsResult, parse_dvdstore
from vbench.results.records import Sample
from vbench.workloads import guest_trial
from vbench.workloads.base import Finding, PlannedCommand, TrialContext, Workload, register
from vbench.workloads.dvdstore.params import DvdStoreParams, driver_argv, findings

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs
    from vbench.guest.ssh import Guest, RemoteProcess

CLIENTS, DATABASES = "clients", "databases"
SOURCE = "dvdstore"
GRACE_SECONDS = 120.0  # start-up (mono, connections) and the ramp before Stats reset
POLL_SECONDS = 0.5


@dataclass
class Instance:
    index: int
    guest: Guest
    target: str
    log: str
    proc: RemoteProcess | None = None


@register
class DvdStoreWorkload(Workload):
    name: ClassVar[str] = "dvdstore"
    docs: ClassVar[tuple[str, ...]] = ("drivers/dvdstore/README.md",)
    Params: ClassVar[type[DvdStoreParams]] = DvdStoreParams
    roles: ClassVar[tuple[str, ...]] = (CLIENTS, DATABASES)
    optional_roles: ClassVar[tuple[str, ...]] = (DATABASES,)
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "opm", "opm_per_instance", "rt_avg_ms", "rt_max_ms", "rollback_rate_pct",
    )
    metrics: ClassVar[tuple[Metric, ...]] = (
        *same_unit(("opm", "opm_per_instance"), "orders/min", "higher"),
        *same_unit(("rt_avg_ms", "rt_max_ms"), "ms", "lower"),
        metric("rollback_rate_pct", "%", "lower"), metric("orders", "orders", "higher"),
        metric("instances", "count", "none"),
        # Only per operation (label `operation`: named by the driver's own output).
        *labelled([metric("op_rt_avg_ms", "ms", "lower"),
                   metric("operations", "count", "higher")], per_label=True, operation=()),
    )  # fmt: skip

    params: DvdStoreParams

    def __init__(self, params: DvdStoreParams) -> None:
        super().__init__(params)
        self._instances: list[Instance] = []

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """Each configuration's OPM against native (see :mod:`.answer`)."""
        from vbench.workloads.dvdstore.answer import dvdstore_answer

        return dvdstore_answer(inputs)

    @classmethod
    def findings(cls, params: DvdStoreParams) -> list[Finding]:  # type: ignore[override]
        return findings(params)

    @classmethod
    def active_roles(cls, params: DvdStoreParams) -> tuple[str, ...]:  # type: ignore[override]
        return (CLIENTS,) if params.targets else (CLIENTS, DATABASES)

    def tools(self) -> dict[str, tuple[str, ...]]:
        return {CLIENTS: (self.params.command[0],)}

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        d = "<workdir>/<run_id>/dvdstore-<guest>-p<point>-t<trial>"
        target = self.params.targets[0] if self.params.targets else "<databases[i]>"
        return [
            PlannedCommand(CLIENTS, "run", tuple(driver_argv(self.params, target, warmup, steady)),
                           background=True),
            PlannedCommand(CLIENTS, "collect", ("get", f"{d}/driver-<i>.log")),
            PlannedCommand(CLIENTS, "teardown", ("rm", "-rf", d)),
        ]

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        return warmup + steady + cooldown + 10.0  # start-up and the driver's own ramp

    # ------------------------------------------------------------------ prepare

    def prepare(self, ctx: TrialContext) -> None:
        clients = list(ctx.guests.get(CLIENTS, ()))
        if not clients:
            raise GuestError(CLIENTS, "the dvdstore workload needs a guest in role 'clients'")
        targets = list(self.params.targets) or [g.spec.address for g in
                                                ctx.guests.get(DATABASES, ())]
        if not targets:
            raise GuestError(DATABASES, "no targets: set workload.params.targets or bind the "
                             "'databases' role to the database (or web) servers")
        self._instances = []
        for g in clients:
            d = self._dir(ctx, g)
            g.mkdir(d)
            for _ in range(self.params.instances):
                i = len(self._instances)
                self._instances.append(Instance(i, g, targets[i % len(targets)],
                                                f"{d}/driver-{i}.log"))
        ctx.log("dvdstore_instances", instances=[
            {"index": x.index, "guest": x.guest.name, "target": x.target}
            for x in self._instances])

    # ------------------------------------------------------------------ run

    def run(self, ctx: TrialContext) -> None:
        for x in self._instances:
            x.proc = x.guest.start(driver_argv(self.params, x.target, ctx.warmup, ctx.steady),
                                   log=x.log)
        ctx.log("dvdstore_started", pids={f"{x.guest.name}#{x.index}": x.proc.pid
                                          for x in self._instances if x.proc})
        ctx.mark("warmup_start")
        begun = time.monotonic()
        if ctx.warmup > 0:
            self._await_stats_reset(ctx, begun + ctx.warmup + GRACE_SECONDS)
        ctx.mark("steady_start")
        deadline = time.monotonic() + ctx.steady + GRACE_SECONDS
        for x in self._instances:
            self._wait_exit(ctx, x, deadline)
        ctx.mark("steady_end")

    def _await_stats_reset(self, ctx: TrialContext, deadline: float) -> None:
        """Until every instance has printed ``Stats reset`` (its warm-up is over)."""
        left = list(self._instances)
        while left:
            for x in list(left):
                with contextlib.suppress(OSError, VbenchError):
                    if "Stats reset" in x.guest.read_text(x.log):
                        left.remove(x)
                        continue
                assert x.proc is not None
                if not x.proc.is_running():
                    self._fail(x, "exited before the end of its warm-up")
            if not left:
                return
            if time.monotonic() > deadline:
                self._fail(left[0], "printed no 'Stats reset' by the end of the warm-up")
            if ctx.cancel.wait(POLL_SECONDS):
                self._kill_all()
                raise Interrupted("dvdstore run interrupted during warm-up")

    def _wait_exit(self, ctx: TrialContext, x: Instance, deadline: float) -> None:
        assert x.proc is not None
        guest_trial.wait_exit(x.proc, x.guest.name, f"DVD Store driver {x.index} ({x.target})",
                              deadline, ctx.cancel, self._kill_all)

    def _fail(self, x: Instance, what: str) -> None:
        tail = guest_trial.log_tail(x.proc) if x.proc is not None else ""
        self._kill_all()
        raise GuestError(x.guest.name, f"DVD Store driver {x.index} ({x.target}) {what}{tail}")

    def _kill_all(self) -> None:
        guest_trial.stop_all(x.proc for x in self._instances if x.proc is not None)

    # ------------------------------------------------------------------ collect

    def collect(self, ctx: TrialContext) -> list[Sample]:
        results: list[tuple[Instance, DsResult]] = []
        for x in self._instances:
            local = ctx.raw_path(x.guest.name, f"driver-{x.index}.log")
            try:
                x.guest.get(x.log, local)
                text = local.read_text(encoding="utf-8", errors="replace")
                result = parse_dvdstore(text, f"{x.guest.name}:{x.log}")
                results.append((x, result))
                if result.ignored:  # said, not refused: the figures are all there
                    ctx.log("dvdstore_ignored_lines", guest=x.guest.name, instance=x.index,
                            lines=result.ignored)
            except OSError as exc:
                raise GuestError(x.guest.name, f"cannot fetch {x.log}: {exc}") from exc
            except ParseError as exc:
                raise GuestError(x.guest.name, f"unreadable DVD Store output: {exc}") from exc
        samples: list[Sample] = []
        for x, r in results:
            samples += instance_samples(r, x.guest.name, x.index, x.target)
        return samples + total_samples([r for _, r in results])

    def teardown(self, ctx: TrialContext) -> None:
        self._kill_all()
        guest_trial.remove_trial_dirs((x.guest for x in self._instances),
                                      lambda g: self._dir(ctx, g))

    @staticmethod
    def _dir(ctx: TrialContext, g: Guest) -> str:
        return guest_trial.guest_trial_dir(ctx, g, "dvdstore")


def instance_samples(r: DsResult, guest: str, index: int, target: str) -> list[Sample]:
    labels = (("instance", str(index)), ("target", target))

    def s(metric: str, value: float | None, unit: str,
          more: tuple[tuple[str, str], ...] = ()) -> Sample:
        return Sample(metric, value, unit, SOURCE, guest, labels + more)

    orders = r.final.n_overall if r.final is not None else (
        r.steady[-1].n_overall if r.steady else None)
    out = [s("opm", r.opm(), "orders/min"), s("rt_avg_ms", r.rt_avg_ms(), "ms"),
           s("rt_max_ms", r.rt_max_ms(), "ms"), s("rollback_rate_pct", r.rollback_rate_pct(), "%"),
           s("orders", None if orders is None else float(orders), "orders")]
    if r.final is not None:
        for op, n in r.final.counts.items():
            out.append(s("operations", float(n), "count", (("operation", op),)))
        for op, ms in r.final.avg_ms.items():
            out.append(s("op_rt_avg_ms", ms, "ms", (("operation", op),)))
    return out


def total_samples(results: Sequence[DsResult]) -> list[Sample]:
    """Summed over instances (OPM, orders), order-weighted (response time, rollbacks)."""
    opms = [r.opm() for r in results]
    known = [v for v in opms if v is not None]
    # One instance without a figure makes the sum wrong: None, never a partial sum.
    total = sum(known) if known and len(known) == len(opms) else None
    orders = [r.final.n_overall if r.final and r.final.n_overall is not None else None
              for r in results]
    rts = [r.rt_avg_ms() for r in results]
    weighted = [(o, t) for o, t in zip(orders, rts, strict=True) if o and t is not None]
    # As for OPM: an instance without the figure leaves the total missing.
    rt_avg = (sum(o * t for o, t in weighted) / sum(o for o, _ in weighted)
              if weighted and len(weighted) == len(results) else None)
    maxes = [v for r in results if (v := r.rt_max_ms()) is not None]
    maxes = maxes if len(maxes) == len(results) else []
    rollbacks = [r.final.n_rollbacks for r in results if r.final]
    rate = None
    if orders and all(o for o in orders) and rollbacks and all(b is not None for b in rollbacks):
        rate = 100.0 * sum(b for b in rollbacks if b is not None) / sum(o for o in orders if o)
    n_orders = sum(o for o in orders if o) if all(o is not None for o in orders) else None
    return [
        Sample("opm", total, "orders/min", SOURCE),
        Sample("opm_per_instance", total / len(opms) if total is not None else None,
               "orders/min", SOURCE),
        Sample("instances", float(len(results)), "count", SOURCE),
        Sample("rt_avg_ms", rt_avg, "ms", SOURCE),
        Sample("rt_max_ms", max(maxes) if maxes else None, "ms", SOURCE),
        Sample("rollback_rate_pct", rate, "%", SOURCE),
        Sample("orders", float(n_orders) if n_orders is not None else None, "orders", SOURCE),
    ]
