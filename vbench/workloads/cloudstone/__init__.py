"""The ``cloudstone`` workload driver: CloudStone / Olio web tier.

N independent instances, each a server guest running the Olio-shaped app of
``drivers/cloudstone/`` (nginx + PHP-FPM + MariaDB, :mod:`.sut`) — or the user's own app
at a base URL — and one or more client guests running Locust (:mod:`.loadgen`) on
Faban's Olio transition matrix with think time, or a fixed request rate on a static
page. Phases map to the load shape: warm-up = ramp-up, steady state = the measured
window, cool-down = ramp-down.

Per trial: prepare installs Locust and deploys + loads every instance (timed apart from
the measured phases); run starts Locust, dates the steady window from the test start
Locust itself records, and watches every server and Locust process (one that dies fails
the trial with its name); collect reads every record and computes the figures
(:mod:`.metrics`) for the steady window only; teardown stops everything and removes the
instance directories. User documentation: docs/cloudstone.md, drivers/cloudstone/README.md.
"""

from __future__ import annotations

import posixpath
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, ClassVar, TypeVar

from vbench.analysis.catalogue import Metric, relabel
from vbench.errors import GuestError, VbenchError
from vbench.workloads.base import Finding, PlannedCommand, TrialContext, Workload, register
from vbench.workloads.cloudstone import loadgen, metrics
from vbench.workloads.cloudstone import sut as sutmod
from vbench.workloads.cloudstone.params import CloudstoneParams, findings, stationary_mix

if TYPE_CHECKING:
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs
    from vbench.guest.ssh import Guest
    from vbench.results.records import Sample

SERVERS, CLIENTS = "servers", "clients"
DEPLOY_BUDGET = 600.0  # seconds a trial's servers may take to deploy and load, at most
T = TypeVar("T")


@register
class Cloudstone(Workload):
    """Olio-shaped web tier (nginx + PHP-FPM + MariaDB) driven by Locust, N instances."""

    name: ClassVar[str] = "cloudstone"
    docs: ClassVar[tuple[str, ...]] = ("drivers/cloudstone/README.md", "docs/cloudstone.md")
    Params: ClassVar[type[CloudstoneParams]] = CloudstoneParams
    roles: ClassVar[tuple[str, ...]] = (SERVERS, CLIENTS)
    optional_roles: ClassVar[tuple[str, ...]] = (SERVERS,)
    required_tools: ClassVar[dict[str, tuple[str, ...]]] = {
        SERVERS: ("mariadbd", "mariadb", "mariadb-install-db", "nginx", "curl", "timeout"),
        CLIENTS: ("python3", "timeout"),
    }
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "ops_per_sec", "rt_avg", "rt_p95", "rt_p99", "errors", "client_cpu",
    )  # fmt: skip
    metrics: ClassVar[tuple[Metric, ...]] = metrics.METRICS

    params: CloudstoneParams

    @classmethod
    def metric_catalogue(cls, params: CloudstoneParams) -> tuple[Metric, ...]:  # type: ignore[override]
        """The per-operation figures carry the operations of this profile's matrix."""
        return relabel(cls.metrics, operation=params.operations())

    def __init__(self, params: CloudstoneParams) -> None:
        super().__init__(params)
        self._reset()

    def _reset(self) -> None:
        self._suts: list[sutmod.Sut] = []
        self._gens: list[loadgen.LoadGen] = []
        self._offsets: dict[str, float] = {}
        self._window: tuple[float, float] | None = None
        self._failed: str | None = None
        self._samples: list[Sample] | None = None
        self._dirs: list[tuple[Guest, str]] = []

    # ------------------------------------------------------------------ interface

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """The best throughput valid by Faban's criteria (see :mod:`.answer`)."""
        from vbench.workloads.cloudstone.answer import cloudstone_answer

        return cloudstone_answer(inputs)

    @classmethod
    def findings(cls, params: CloudstoneParams) -> list[Finding]:  # type: ignore[override]
        return findings(params)

    @classmethod
    def active_roles(cls, params: CloudstoneParams) -> tuple[str, ...]:  # type: ignore[override]
        return (SERVERS, CLIENTS) if params.deploy else (CLIENTS,)

    def tools(self) -> dict[str, tuple[str, ...]]:
        out = dict(self.required_tools)
        if not self.params.deploy:
            out.pop(SERVERS)
        return out

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        return warmup + steady + cooldown + 20.0

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        d = "<workdir>/<run_id>/cs<point>-<trial>"
        cmds = []
        if self.params.deploy:
            cmds += [
                PlannedCommand(SERVERS, "prepare",
                               ("sh", f"{d}/i<k>/sut.sh", "init|schema|load"),
                               files=("app/", "schema.sql", "load.sql", "nginx.conf",
                                      "php-fpm.conf")),
                PlannedCommand(SERVERS, "prepare", ("mariadbd", "--datadir=…"), background=True),
                PlannedCommand(SERVERS, "prepare", ("php-fpm8.2", "--nodaemonize"),
                               background=True),
                PlannedCommand(SERVERS, "prepare", ("nginx", "-c", "…"), background=True),
            ]  # fmt: skip
        cmds.append(PlannedCommand(CLIENTS, "run",
                                   ("locust", "-f", "locustfile.py", "--headless"),
                                   files=("locustfile.py", "locust.json"),
                                   background=True))  # fmt: skip
        return cmds

    # ------------------------------------------------------------------ trial

    def prepare(self, ctx: TrialContext) -> None:
        self._reset()
        p = self.params
        servers, clients = list(ctx.guests.get(SERVERS, ())), list(ctx.guests[CLIENTS])
        if p.deploy and not servers:
            raise VbenchError("cloudstone: deploy is on but no guest has the servers role")
        base = self._base(ctx)
        lifetime = DEPLOY_BUDGET + ctx.warmup + ctx.steady + ctx.cooldown + 300
        for g in dict.fromkeys(clients):
            self._offsets[g.name] = g.clock_offset()[0]
        used = {g.name: g for k in range(p.instances) for g in self._clients_of(clients, k)}
        self._commands: dict[str, str] = dict(self._parallel(ctx, list(used.values()), lambda g: (
            g.name, loadgen.ensure_locust(g, p, self._run_dir(g, ctx)))))
        if p.deploy:
            # Every instance that came up is kept, even when another one failed: teardown
            # must stop its servers (else they hold their ports into the next trial).
            deployed: dict[int, sutmod.Sut] = {}

            def one(k: int) -> None:
                g = servers[k % len(servers)]
                self._dirs.append((g, base(g)))
                s = sutmod.deploy(g, k + 1, base(g), p.port + 10 * k, p, lifetime, ctx.cancel)
                deployed[k] = s
            try:
                self._parallel(ctx, list(range(p.instances)), one)
            finally:
                self._suts = [deployed[k] for k in sorted(deployed)]
                for s in self._suts:
                    ctx.log("cloudstone_deployed", instance=s.instance, url=s.url,
                            deploy_seconds=s.deploy_seconds, load_seconds=s.load_seconds)
        else:
            self._suts = [sutmod.Sut(k + 1, None, "", url.rstrip("/"))
                          for k, url in enumerate(p.base_urls or [])]  # fmt: skip

    def run(self, ctx: TrialContext) -> None:
        p = self.params
        clients = list(ctx.guests[CLIENTS])
        lifetime = ctx.warmup + ctx.steady + ctx.cooldown + 300
        counts = {k: v for k, v in sutmod.sizes(p).items() if k != "images"}
        for k, s in enumerate(self._suts):
            guests = self._clients_of(clients, k)
            d = posixpath.join(self._base(ctx)(guests[0]), f"load{s.instance}")
            for g in dict.fromkeys(guests):
                self._dirs.append((g, d))
            gen = loadgen.LoadGen(s.instance, d, guests)
            cfg = loadgen.config(p, s.url, f"{d}/records", ctx.warmup, ctx.steady, ctx.cooldown,
                                 counts)  # fmt: skip
            self._gens.append(gen)
            loadgen.start(gen, [self._commands[g.name] for g in guests], cfg,
                          p.port + 10 * k + 5, lifetime)  # fmt: skip
        ctx.mark("warmup_start")
        t0 = self._test_start(ctx)
        steady_start = t0 + ctx.warmup
        self._window = (steady_start, steady_start + ctx.steady)
        self._watch_until(ctx, steady_start)
        ctx.mark("steady_start")
        self._watch_until(ctx, self._window[1])
        ctx.mark("steady_end")

    def collect(self, ctx: TrialContext) -> list[Sample]:
        if self._samples is not None:  # the runner salvaging after a failure we raised
            return self._samples
        self._finish_load(ctx)
        per_instance, checks, samples = [], [], []
        window = self._window
        olio = self.params.profile == "olio"
        required = stationary_mix(self.params.effective_matrix()) if olio else {}
        lost: list[VbenchError] = []
        for gen, s in zip(self._gens, self._suts, strict=False):
            try:
                recs = self._fetch(ctx, gen)
            except VbenchError as exc:  # the other instances' figures are still good
                lost.append(exc)
                continue
            if window is None:
                continue
            p = self.params
            figs = metrics.op_figures(recs.ops, window[0], window[1], required,
                                      p.mix_tolerance, p.sub_window)  # fmt: skip
            check = self._load_check(recs, figs, window)
            guest = s.guest.name if s.guest is not None else gen.guests[0].name
            samples += metrics.instance_samples(s.instance, guest, figs, check)
            samples += self._deploy_samples(s, guest)
            per_instance.append(figs)
            checks.append(check)
        if per_instance:
            samples += metrics.aggregate_samples(per_instance, checks)
        self._samples = samples
        for exc in lost:
            ctx.log("cloudstone_records_lost", level="error", error=str(exc))
        if lost and not (self._failed or ctx.cancel.is_set()):
            raise lost[0]  # fails the trial; the runner's salvage gets the samples above
        self._judge(ctx, checks)
        return samples

    def teardown(self, ctx: TrialContext) -> None:
        errors = []
        for item in (*self._gens, *self._suts):
            try:
                item.stop()
            except VbenchError as exc:
                errors.append(str(exc))
        for g, d in dict.fromkeys(self._dirs):
            try:
                g.remove(d)
            except VbenchError as exc:
                errors.append(str(exc))
        if errors:
            raise VbenchError("cloudstone teardown: " + "; ".join(errors))

    # ------------------------------------------------------------------ helpers

    def _run_dir(self, g: Guest, ctx: TrialContext) -> str:
        return posixpath.join(g.spec.workdir, ctx.run_id)

    def _base(self, ctx: TrialContext) -> Callable[[Guest], str]:
        name = f"cs{ctx.point}-{ctx.trial}"
        return lambda g: posixpath.join(self._run_dir(g, ctx), name)

    def _clients_of(self, clients: Sequence[Guest], k: int) -> list[Guest]:
        n = self.params.clients_per_instance
        return [clients[(k * n + j) % len(clients)] for j in range(n)]

    def _parallel(self, ctx: TrialContext, items: Sequence[T],
                  fn: Callable[[T], object]) -> list:  # type: ignore[type-arg]  # fmt: skip
        with ThreadPoolExecutor(max_workers=max(1, min(ctx.max_parallel, len(items)))) as pool:
            return list(pool.map(fn, items))

    def _test_start(self, ctx: TrialContext) -> float:
        """The latest instance's Locust test start, in controller time (waited for)."""
        starts: dict[int, float] = {}
        deadline = time.monotonic() + 120
        while len(starts) < len(self._gens):
            for gen in self._gens:
                if gen.instance in starts:
                    continue
                g = gen.guests[0]
                glob = f"{shlex.quote(gen.dir)}/records.*"
                script = f"cat {glob} 2>/dev/null | grep -m1 '^S ' || true"
                out = g.run_script(script, timeout=30).stdout.split()
                if len(out) == 2:
                    starts[gen.instance] = float(out[1]) - self._offsets.get(g.name, 0.0)
            self._health(ctx)
            if time.monotonic() > deadline:
                raise GuestError(self._gens[0].guests[0].name,
                                 "Locust did not start its test in 120 s")
            if len(starts) < len(self._gens) and ctx.cancel.wait(0.2):
                return time.time()
        return max(starts.values())

    def _watch_until(self, ctx: TrialContext, until: float) -> None:
        """Wait until controller time ``until``, checking every server and Locust process."""
        while True:
            left = until - time.time()
            if left <= 0 or ctx.cancel.is_set():
                return
            self._health(ctx)
            ctx.cancel.wait(min(1.0, max(0.0, until - time.time())))

    def _health(self, ctx: TrialContext) -> None:
        for s in self._suts:
            dead = s.dead() if s.procs else None
            if dead and s.guest is not None:
                self._failed = dead
                ctx.log("cloudstone_server_died", level="error", instance=s.instance, error=dead)
                raise GuestError(s.guest.name, dead)
        for gen in self._gens:
            for proc in gen.procs:
                if not proc.is_running():
                    why = f"instance {gen.instance}: Locust exited early ({proc.tail(3).strip()})"
                    self._failed = why
                    raise GuestError(proc.guest.name, why)

    def _finish_load(self, ctx: TrialContext) -> None:
        """Let Locust finish its ramp-down (or stop it now after a failure) and flush."""
        for gen in self._gens:
            for proc in gen.procs:
                if self._failed or ctx.cancel.is_set() or self._window is None:
                    proc.kill(grace=15)
                    continue
                left = self._window[1] + ctx.cooldown - time.time()
                try:
                    proc.wait(timeout=max(0.0, left) + 60, cancel=ctx.cancel)
                except GuestError:
                    proc.kill(grace=15)

    def _fetch(self, ctx: TrialContext, gen: loadgen.LoadGen) -> metrics.ParsedRecords:
        ops: list[metrics.OpRecord] = []
        cpu: list[metrics.CpuSample] = []
        starts = []
        for g in dict.fromkeys(gen.guests):
            local = ctx.raw_path(g.name, f"cloudstone-i{gen.instance}")
            g.get(gen.dir, local)
            for f in sorted(local.glob("records.*")):
                r = metrics.parse_records(f.read_text(), f"{g.name}:{f.suffix[1:]}",
                                          self._offsets.get(g.name, 0.0))  # fmt: skip
                ops += r.ops
                cpu += r.cpu
                if r.start is not None:
                    starts.append(r.start)
        return metrics.ParsedRecords(min(starts) if starts else None, tuple(ops), tuple(cpu))

    def _load_check(self, recs: metrics.ParsedRecords, figs: Mapping[str, metrics.OpFigures],
                    window: tuple[float, float]) -> metrics.LoadCheck:  # fmt: skip
        p = self.params
        rate = p.rate if p.profile == "rate" else None
        users = None if rate is not None else p.users
        return metrics.load_check(recs.cpu, window[0], window[1], users, rate,
                                  figs[metrics.ALL].throughput, p.cpu_limit)  # fmt: skip

    def _deploy_samples(self, s: sutmod.Sut, guest: str) -> list[Sample]:
        from vbench.results.records import Sample

        lab = (("instance", str(s.instance)),)
        src = metrics.SOURCE
        return [Sample("sut_deploy_seconds", s.deploy_seconds, "s", src, guest, lab),
                Sample("sut_load_seconds", s.load_seconds, "s", src, guest, lab)]  # fmt: skip

    def _judge(self, ctx: TrialContext, checks: Sequence[metrics.LoadCheck]) -> None:
        bad = [f"instance {k + 1}: {', '.join(c.reasons)}"
               for k, c in enumerate(checks) if c.saturated]  # fmt: skip
        if not bad:
            return
        message = "load generator saturated: " + "; ".join(bad)
        ctx.log("cloudstone_saturated", level="warning", message=message)
        if self.params.saturation == "fail":
            raise VbenchError(message)
