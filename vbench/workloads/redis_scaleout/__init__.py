"""The ``redis_scaleout`` workload driver: redis-server instances,
twemproxy and HAProxy tiers, and redis-benchmark clients, in three roles.

Per trial: prepare renders and pushes the configs, pins if asked, checks ports, starts
servers then twemproxy then HAProxy (each waited for until it listens), checks the path
with PING and preloads the keyspace through it; run runs the clients (warm-up, then the
measured phase); collect parses every client's CSV and asks each server its DBSIZE;
teardown stops everything in reverse order, removes containers, restores pinning and
deletes the trial's directories. Placement and configs: :mod:`.topology`;
parameters: :mod:`.redis_params`; guest checks: :mod:`.redis_guest`; pinning:
:mod:`.redis_pinning`. User documentation: ``drivers/redis/README.md``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeVar

from vbench.analysis.catalogue import Metric
from vbench.errors import ConfigError, GuestError, Interrupted, ParseError, VbenchError
from vbench.parsers.redis_benchmark import combine_iterations, parse_redis_benchmark
from vbench.workloads import listening
from vbench.workloads.base import Finding, PlannedCommand, TrialContext, Workload, register
from vbench.workloads.redis_scaleout import guest as redis_guest
from vbench.workloads.redis_scaleout import pinning as redis_pinning
from vbench.workloads.redis_scaleout import topology as topo
from vbench.workloads.redis_scaleout.metrics import ClientFigures, catalogue, samples_for
from vbench.workloads.redis_scaleout.params import RedisParams, findings, placement_findings

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.results.records import Sample

SERVERS, PROXIES, CLIENTS = "servers", "proxies", "clients"
PRELOAD_RATE = 500_000.0  # keys/s of one preload stream, for estimates and time limits
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
T = TypeVar("T")


def client_seconds(params: RedisParams, fig: ClientFigures) -> float | None:
    """How long one redis-benchmark process measured for, by its own clock: it prints
    requests ÷ its own elapsed time as rps, so the time is requests ÷ rps (in loop mode,
    of the iterations it completed; the one cut short is not counted). None without an
    rps figure."""
    rps = fig.test.rps
    if not rps:
        return None
    if params.duration_mode:
        return fig.test.iterations * params.loop_requests / rps
    requests = fig.client.requests if fig.client.requests is not None else params.loop_requests
    return requests / rps


@dataclass
class _Started:
    guest: Guest
    proc: RemoteProcess
    what: str
    container: str | None = None


@register
class RedisScaleout(Workload):
    """Redis servers behind optional twemproxy and HAProxy tiers, driven by redis-benchmark."""

    name: ClassVar[str] = "redis_scaleout"
    docs: ClassVar[tuple[str, ...]] = ("drivers/redis/README.md",)
    Params: ClassVar[type[RedisParams]] = RedisParams
    roles: ClassVar[tuple[str, ...]] = (SERVERS, PROXIES, CLIENTS)
    optional_roles: ClassVar[tuple[str, ...]] = (PROXIES,)
    required_tools: ClassVar[dict[str, tuple[str, ...]]] = {
        SERVERS: ("redis-server",),
        PROXIES: ("nutcracker", "haproxy"),
        CLIENTS: ("redis-benchmark", "redis-cli", "bash", "stdbuf"),
    }
    headline_metrics: ClassVar[tuple[str, ...]] = (
        "ops_per_sec", "get_ops_per_sec", "set_ops_per_sec", "get_latency_avg",
        "set_latency_avg", "get_latency_p99_max", "set_latency_p99_max", "keys_total",
    )  # fmt: skip

    @classmethod
    def metric_catalogue(cls, params: RedisParams) -> tuple[Metric, ...]:  # type: ignore[override]
        return catalogue(params)

    params: RedisParams

    def __init__(self, params: RedisParams) -> None:
        super().__init__(params)
        self._reset()

    def _reset(self) -> None:
        self._layout: topo.Layout | None = None
        self._started: list[_Started] = []
        self._clients: dict[str, _Started] = {}
        self._steady_started: float | None = None  # controller time the clients started
        self._pins: list[tuple[Guest, redis_pinning.PinState]] = []
        self._dirs: dict[str, tuple[Guest, str]] = {}

    # ------------------------------------------------------------------ interface

    @classmethod
    def findings(cls, params: RedisParams) -> list[Finding]:  # type: ignore[override]
        return findings(params)

    @classmethod
    def placement_findings(  # type: ignore[override]
        cls, params: RedisParams, guests: Mapping[str, int]
    ) -> list[Finding]:
        return placement_findings(params, guests)

    @classmethod
    def active_roles(cls, params: RedisParams) -> tuple[str, ...]:  # type: ignore[override]
        return (SERVERS, PROXIES, CLIENTS) if params.proxies_on else (SERVERS, CLIENTS)

    def tools(self) -> dict[str, tuple[str, ...]]:
        p = self.params
        docker = p.deployment == "docker"
        proxies = [t for t, on in (("nutcracker", p.twemproxy), ("haproxy", p.haproxy)) if on]
        out = {
            SERVERS: ("docker",) if docker else ("redis-server",),
            PROXIES: ("docker",) if docker and proxies else tuple(proxies),
            CLIENTS: self.required_tools[CLIENTS],
        }
        if p.pin is not None and not docker:
            for role in p.pin.roles:
                out[role] = (*out[role], "taskset")
        return out

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        return warmup + steady + cooldown + 2.0 + self._preload_seconds()

    def _preload_seconds(self) -> float:
        p = self.params
        if not p.preload:
            return 0.0
        # Streams run in parallel; through proxies the servers share the keyspace.
        parallel = min(p.preload_streams, p.servers) if p.proxies_on else 1
        return p.keyspace / (PRELOAD_RATE * parallel)

    # ------------------------------------------------------------------ planning

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        p = self.params
        d = "<workdir>/<run_id>/redis-<guest>-p<point>-t<trial>"
        hosts = [topo.Host(f"<{r}>", f"<{r}>") for r in (SERVERS, PROXIES, CLIENTS)]
        try:
            layout = topo.place(p, [hosts[0]], [hosts[1]], [hosts[2]])
        except ConfigError:
            return []  # reported by placement_findings
        cmds: list[PlannedCommand] = []
        for inst in (*layout.servers, *layout.twemproxies, *layout.haproxies):
            role = SERVERS if inst.kind == "redis" else PROXIES
            name, argv = self._config_and_argv(inst, d)
            cmds.append(PlannedCommand(role, "prepare", tuple(self._plan_wrap(role, inst, d, argv)),
                                       files=(name,), background=True))
        if p.preload:
            streams = topo.preload_streams(p, layout)
            targets = sorted({str(t) for t, _, _ in streams})
            cmds.append(PlannedCommand(CLIENTS, "prepare", (
                "bash", "-c", f"<preload: SET key:{0:012d}..key:{p.keyspace - 1:012d}, "
                f"{p.value_size}-byte values, {len(streams)} stream(s) over /dev/tcp>",
                *targets)))
        for c in layout.clients:
            cmds.append(PlannedCommand(CLIENTS, "run", tuple(
                self._plan_prefix(CLIENTS) + topo.benchmark_argv(p, c, loop=p.duration_mode)),
                background=True))
        cmds.append(PlannedCommand(CLIENTS, "collect", ("redis-cli", "DBSIZE", "<each server>")))
        cmds.append(PlannedCommand(SERVERS, "teardown", ("rm", "-rf", d)))
        return cmds

    # ------------------------------------------------------------------ prepare

    def prepare(self, ctx: TrialContext) -> None:
        self._reset()
        p = self.params
        layout = self._place(ctx)
        self._layout = layout
        ctx.log("redis_layout", point=ctx.point, trial=ctx.trial, **layout.describe())
        guests = {g.name: g for g in ctx.all_guests()}
        self._check_tools(ctx, layout, guests)
        self._fan_out(ctx, list(guests.values()), lambda g: self._push(ctx, g, layout))
        if p.pin is not None:
            self._apply_pinning(ctx, guests)
        busy = {g.name: self._ports_of(layout, g.name) for g in guests.values()}
        self._fan_out(ctx, list(guests.values()),
                      lambda g: listening.check_ports_free(g, busy[g.name]))
        for kind in ("redis", "twemproxy", "haproxy"):
            self._start_tier(ctx, guests, layout, kind)
        client0 = ctx.guests[CLIENTS][0]
        for entry in layout.entry:
            answer = redis_guest.ping(client0, entry)
            if answer != "PONG":
                raise GuestError(client0.name, f"PING through {entry} answered {answer!r}")
        if p.preload:
            self._preload(ctx, layout)

    def _place(self, ctx: TrialContext) -> topo.Layout:
        def hosts(role: str) -> list[topo.Host]:
            return [topo.Host(g.name, g.spec.address) for g in ctx.guests.get(role, ())]

        try:
            return topo.place(self.params, hosts(SERVERS), hosts(PROXIES), hosts(CLIENTS))
        except ConfigError as exc:
            raise GuestError("redis_scaleout", str(exc)) from exc

    def _check_tools(
        self, ctx: TrialContext, layout: topo.Layout, guests: Mapping[str, Guest]
    ) -> None:
        tools = self.tools()
        for role, members in ctx.guests.items():
            for g in members:
                missing = [t for t in tools.get(role, ()) if g.which(t) is None]
                if missing:
                    raise GuestError(g.name, f"not installed: {', '.join(missing)} "
                                     "(Debian: redis-server, redis-tools, nutcracker, haproxy)")
        if self.params.deployment == "docker":
            needs: dict[str, set[str]] = {}
            for i in (*layout.servers, *layout.twemproxies, *layout.haproxies):
                needs.setdefault(i.guest, set()).add(self._image(i.kind))
            for name, images in needs.items():
                version = redis_guest.check_docker(guests[name])
                pulled = redis_guest.ensure_images(guests[name], sorted(images))
                ctx.log("redis_docker", guest=name, engine=version, pulled=pulled)

    def _image_or_note(self, kind: str) -> str:
        images = self.params.docker_images
        image = {"redis": images.redis, "twemproxy": images.twemproxy,
                 "haproxy": images.haproxy}[kind]
        return image or f"<docker_images.{kind} unset>"

    def _image(self, kind: str) -> str:
        image = self._image_or_note(kind)
        if image.startswith("<"):  # findings refuse this before a run; belt and braces
            raise GuestError("redis_scaleout", f"no docker image for {kind}")
        return image

    def _dir(self, ctx: TrialContext, guest: Guest) -> str:
        name = _SAFE.sub("_", guest.name)
        return (f"{str(guest.spec.workdir).rstrip('/')}/{ctx.run_id}/"
                f"redis-{name}-p{ctx.point}-t{ctx.trial}")

    def _push(self, ctx: TrialContext, guest: Guest, layout: topo.Layout) -> None:
        d = self._dir(ctx, guest)
        self._dirs[guest.name] = (guest, d)
        guest.mkdir(d)
        header = f"run {ctx.run_id}, point {ctx.point}, trial {ctx.trial}, guest {guest.name}"
        p = self.params
        for inst in layout.on(guest.name):
            if inst.kind == "redis":
                data = f"{d}/redis-{inst.port}"
                guest.mkdir(data)
                if p.deployment == "docker":  # the image's redis user writes there
                    guest.run(["chmod", "0777", data])
                text = topo.redis_conf(p, inst, data, header)
            elif inst.kind == "twemproxy":
                text = topo.nutcracker_conf(p, inst, layout.servers, header)
            else:
                backends = layout.twemproxies or layout.servers
                conns = sum(c.connections for c in layout.clients)
                text = topo.haproxy_conf(p, inst, backends, header, conns)
            name, _ = self._config_and_argv(inst, d)
            guest.put_text(text, f"{d}/{name}")

    @staticmethod
    def _ports_of(layout: topo.Layout, guest: str) -> list[tuple[str, int, str]]:
        wanted = []
        for inst in layout.on(guest):
            wanted.append((inst.bind, inst.port, f"{inst.kind} {inst.endpoint}"))
            if inst.kind == "twemproxy":
                wanted.append((inst.bind, inst.stats_port, f"twemproxy stats {inst.endpoint}"))
        return wanted

    # ------------------------------------------------------------------ pinning

    def _apply_pinning(self, ctx: TrialContext, guests: Mapping[str, Guest]) -> None:
        pin = self.params.pin
        assert pin is not None
        names = dict.fromkeys(g.name for r in pin.roles for g in ctx.guests.get(r, ()))
        for name in names:
            guest = guests[name]
            cpus = redis_pinning.resolve_cpus(guest, pin)
            state = redis_pinning.apply(guest, pin, cpus, ctx.log)
            self._pins.append((guest, state))

    def _pinned_cpus(self, role: str, guest: str, index_on_guest: int) -> str | None:
        """CPUs for the n-th process of a role on a guest; None when it is not pinned."""
        pin = self.params.pin
        if pin is None or role not in pin.roles:
            return None
        cpus = next((s.cpus for g, s in self._pins if g.name == guest), None)
        return None if cpus is None else redis_pinning.cpus_for(pin, cpus, index_on_guest)

    def _plan_prefix(self, role: str) -> list[str]:
        pin = self.params.pin
        if pin is None or role not in pin.roles or self.params.deployment == "docker":
            return []
        return redis_pinning.taskset_prefix(pin.cpus or f"<cpus of numa node {pin.numa_node}>")

    def _plan_wrap(self, role: str, inst: topo.Instance, d: str, argv: list[str]) -> list[str]:
        if self.params.deployment != "docker":
            return [*self._plan_prefix(role), *argv]
        return ["docker", "run", "--rm", "--name", f"vbench-<run_id>-{inst.kind}-{inst.port}",
                "--network", "host", "-v", f"{d}:{d}", self._image_or_note(inst.kind), *argv]

    def _config_and_argv(self, inst: topo.Instance, d: str) -> tuple[str, list[str]]:
        """The config file name of an instance and its command line."""
        if inst.kind == "redis":
            name = f"redis-{inst.port}.conf"
            return name, topo.server_argv(f"{d}/{name}")
        if inst.kind == "twemproxy":
            name = f"nutcracker-{inst.port}.yml"
            return name, topo.twemproxy_argv(self.params, inst, f"{d}/{name}")
        name = f"haproxy-{inst.port}.cfg"
        return name, topo.haproxy_argv(f"{d}/{name}")

    # ------------------------------------------------------------------ start tiers

    def _start_tier(
        self, ctx: TrialContext, guests: Mapping[str, Guest], layout: topo.Layout, kind: str
    ) -> None:
        tier = {"redis": layout.servers, "twemproxy": layout.twemproxies,
                "haproxy": layout.haproxies}[kind]
        if not tier:
            return
        by_guest: dict[str, list[topo.Instance]] = {}
        for inst in tier:
            by_guest.setdefault(inst.guest, []).append(inst)

        def start_on(name: str) -> None:
            guest = guests[name]
            pending = [self._start_instance(ctx, guest, inst, n)
                       for n, inst in enumerate(by_guest[name])]
            listening.wait_listening(guest, pending, self.params.start_timeout, ctx.cancel)
            pinned = self._pinned_cpus(SERVERS, name, 0) is not None
            if kind == "redis" and pinned and self.params.deployment == "native":
                for item in pending:
                    ctx.log("redis_pinned", guest=name, what=item.what,
                            affinity=redis_pinning.group_affinity(guest, item.proc.pid))

        self._fan_out(ctx, [guests[n] for n in by_guest], lambda g: start_on(g.name))

    def _start_instance(
        self, ctx: TrialContext, guest: Guest, inst: topo.Instance, n: int
    ) -> listening.Pending:
        p = self.params
        _, d = self._dirs[guest.name]
        role = SERVERS if inst.kind == "redis" else PROXIES
        _, argv = self._config_and_argv(inst, d)
        what = argv[0]
        container = None
        cpus = self._pinned_cpus(role, guest.name, n)
        if p.deployment == "docker":
            container = f"vbench-{_SAFE.sub('_', ctx.run_id)}-{inst.kind}-{inst.port}"
            run = ["docker", "run", "--rm", "--name", container, "--network", "host",
                   "-v", f"{d}:{d}"]
            if cpus:
                run += ["--cpuset-cpus", cpus]
            argv = [*run, self._image(inst.kind), *argv]
        elif cpus:
            argv = [*redis_pinning.taskset_prefix(cpus), *argv]
        proc = guest.start(argv, log=f"{d}/{inst.kind}-{inst.port}.log")
        self._started.append(_Started(guest, proc, f"{what} {inst.endpoint}", container))
        ctx.log("redis_started", guest=guest.name, what=what, port=inst.port, pid=proc.pid,
                container=container)
        return listening.Pending(f"{what} on {inst.endpoint}", inst.bind, inst.port, proc)

    # ------------------------------------------------------------------ preload

    def _preload(self, ctx: TrialContext, layout: topo.Layout) -> None:
        p = self.params
        clients = ctx.guests[CLIENTS]
        started = time.time()
        procs = []
        for i, (target, first, last) in enumerate(topo.preload_streams(p, layout)):
            guest = clients[i % len(clients)]
            _, d = self._dirs[guest.name]
            proc = guest.start(topo.preload_argv(target, first, last, p.value_size),
                               log=f"{d}/preload-{i}.log")
            self._started.append(_Started(guest, proc, f"preload stream {i} via {target}"))
            procs.append((guest, proc, target))
        budget = 120.0 + 10 * self._preload_seconds()
        deadline = time.monotonic() + budget
        for guest, proc, target in procs:
            status = proc.wait(timeout=max(1.0, deadline - time.monotonic()), cancel=ctx.cancel)
            if status is None:
                raise Interrupted("interrupted during the preload")
            if status != 0:
                raise GuestError(guest.name, f"preload via {target} failed (exit {status}):\n"
                                 f"{listening.tail(proc)}")
        sizes = redis_guest.dbsize(clients[0], [s.endpoint for s in layout.servers])
        ctx.log("redis_preload", seconds=round(time.time() - started, 3), keys=p.keyspace,
                dbsize=sizes)
        self._check_preload(sizes, layout)

    def _check_preload(self, sizes: Mapping[str, int | None], layout: topo.Layout) -> None:
        p = self.params
        if layout.twemproxies or layout.haproxies:
            total = sum(v or 0 for v in sizes.values())
            # Exact without twemproxy only if one server: HAProxy alone spreads keys anyhow.
            ok = total == p.keyspace if layout.twemproxies or len(sizes) == 1 else total > 0
        else:
            ok = all(v == p.keyspace for v in sizes.values())
            total = sum(v or 0 for v in sizes.values())
        if not ok:
            raise GuestError("redis_scaleout", f"preload of {p.keyspace} keys left "
                             f"{total} keys on the servers: {dict(sizes)}")

    # ------------------------------------------------------------------ run

    def run(self, ctx: TrialContext) -> None:
        layout = self._require_layout()
        guests = {g.name: g for g in ctx.guests[CLIENTS]}
        ctx.mark("warmup_start")
        if ctx.warmup > 0:
            warm = self._start_clients(ctx, layout, guests, "warmup", loop=True)
            if ctx.cancel.wait(ctx.warmup):
                raise Interrupted("redis run interrupted during warm-up")
            self._check_alive(warm)
            self._stop(list(warm.values()))
        self._steady_started = time.time()
        self._clients = self._start_clients(ctx, layout, guests, "steady",
                                            loop=self.params.duration_mode)
        ctx.mark("steady_start")
        if self.params.duration_mode:
            if ctx.cancel.wait(ctx.steady):
                raise Interrupted("redis run interrupted during the steady phase")
            self._check_alive(self._clients)
            ctx.mark("steady_end")
            self._stop(list(self._clients.values()))
        else:
            for cid, item in self._clients.items():
                status = item.proc.wait(cancel=ctx.cancel)
                if status is None:
                    raise Interrupted("redis run interrupted during the steady phase")
                if status != 0:
                    raise GuestError(item.guest.name, f"redis-benchmark {cid} exited {status}:"
                                     f"\n{listening.tail(item.proc)}")
            ctx.mark("steady_end")

    def _start_clients(
        self, ctx: TrialContext, layout: topo.Layout, guests: Mapping[str, Guest],
        phase: str, *, loop: bool,
    ) -> dict[str, _Started]:
        out: dict[str, _Started] = {}
        counts: dict[str, int] = {}
        for c in layout.clients:
            guest = guests[c.guest]
            _, d = self._dirs[guest.name]
            n = counts[c.guest] = counts.get(c.guest, -1) + 1
            cpus = self._pinned_cpus(CLIENTS, c.guest, n)
            prefix = redis_pinning.taskset_prefix(cpus) if cpus else []
            argv = [*prefix, *topo.benchmark_argv(self.params, c, loop=loop)]
            proc = guest.start(argv, log=f"{d}/{phase}-{c.id}.csv")
            out[c.id] = _Started(guest, proc, f"redis-benchmark {c.id}")
            self._started.append(out[c.id])
        ctx.log("redis_clients", phase=phase, processes=len(out), loop=loop,
                pids={cid: item.proc.pid for cid, item in out.items()})
        return out

    @staticmethod
    def _check_alive(procs: Mapping[str, _Started]) -> None:
        """A looping client that already ended has failed (e.g. lost its connection)."""
        for cid, item in procs.items():
            if not item.proc.is_running():
                status = item.proc.wait(timeout=5)
                raise GuestError(item.guest.name, f"redis-benchmark {cid} stopped early "
                                 f"(exit {status}):\n{listening.tail(item.proc)}")

    def _stop(self, items: Sequence[_Started]) -> None:
        for item in items:
            with contextlib.suppress(VbenchError, OSError):
                item.proc.kill(grace=2.0)
            if item in self._started:
                self._started.remove(item)

    def _require_layout(self) -> topo.Layout:
        if self._layout is None:
            raise GuestError("redis_scaleout", "run() before prepare()")
        return self._layout

    # ------------------------------------------------------------------ collect

    def collect(self, ctx: TrialContext) -> list[Sample]:
        layout = self._require_layout()
        if not self._clients:
            return []  # a trial that failed before its clients ran measured nothing
        figures: list[ClientFigures] = []
        failed: list[GuestError] = []
        for c in layout.clients:  # every client's output fetched, even after one fails
            if c.id in self._clients:
                try:
                    figures.append(self._client_figures(ctx, c))
                except GuestError as exc:
                    failed.append(exc)
        self._fetch_logs(ctx, layout)
        if failed:
            raise failed[0]
        seconds = [client_seconds(self.params, f) for f in figures]
        if self._steady_started is not None and seconds and None not in seconds:
            # The clients ran at once: the window is the longest one's own elapsed time.
            longest = max(s for s in seconds if s is not None)
            ctx.workload_window(self._steady_started, self._steady_started + longest)
        sizes = redis_guest.dbsize(ctx.guests[CLIENTS][0], [s.endpoint for s in layout.servers])
        return samples_for(self.params, layout, figures, sizes)

    def _fetch_logs(self, ctx: TrialContext, layout: topo.Layout) -> None:
        for name, (guest, d) in self._dirs.items():
            for inst in layout.on(name):  # server and proxy logs, for a reviewer
                with contextlib.suppress(VbenchError, OSError):
                    guest.get(f"{d}/{inst.kind}-{inst.port}.log",
                              ctx.raw_path(name, f"{inst.kind}-{inst.port}.log"))

    def _client_figures(self, ctx: TrialContext, c: topo.ClientProcess) -> ClientFigures:
        item = self._clients[c.id]
        local = ctx.raw_path(c.guest, f"{c.id}.csv")
        try:
            item.guest.get(item.proc.log, local)
        except (VbenchError, OSError) as exc:
            raise GuestError(c.guest, f"cannot fetch {item.proc.log}: {exc}") from exc
        text = local.read_text(encoding="utf-8", errors="replace")
        where = f"{c.guest}:{item.proc.log}"
        try:
            result = parse_redis_benchmark(text, where, cut_short=self.params.duration_mode)
        except ParseError as exc:
            raise GuestError(c.guest, f"redis-benchmark {c.id}: {exc}") from exc
        runs = [t for t in result.tests if t.command.lower() == c.op]
        if not runs:
            raise GuestError(c.guest, f"redis-benchmark {c.id} reported no {c.op.upper()} "
                             f"result (tests: {', '.join(result.names())})")
        # Loop mode prints one row per iteration; otherwise the one run is the figure.
        test = combine_iterations(runs) if self.params.duration_mode else runs[-1]
        if test.rps is None:
            raise GuestError(c.guest, f"redis-benchmark {c.id} completed no iteration of "
                             f"{self.params.loop_requests} requests in the steady phase "
                             "(lower loop_requests or lengthen phases.steady)")
        return ClientFigures(c, test)

    # ------------------------------------------------------------------ teardown

    def teardown(self, ctx: TrialContext) -> None:
        errors: list[str] = []
        # Clients first, servers last: a server must not vanish under a live client.
        for item in reversed(self._started):
            try:
                item.proc.kill(grace=5.0)
            except (VbenchError, OSError) as exc:
                errors.append(f"{item.guest.name}: stop {item.what}: {exc}")
        containers: dict[str, tuple[Guest, list[str]]] = {}
        for item in self._started:
            if item.container:
                containers.setdefault(item.guest.name, (item.guest, []))[1].append(item.container)
        for guest, names in containers.values():
            try:
                redis_guest.remove_containers(guest, names)
            except VbenchError as exc:
                errors.append(f"{guest.name}: docker rm: {exc}")
        self._started.clear()
        for guest, state in self._pins:
            try:
                redis_pinning.restore(guest, state, ctx.log)
            except VbenchError as exc:
                errors.append(str(exc))
        for guest, d in self._dirs.values():
            try:
                guest.remove(d)
            except VbenchError as exc:
                errors.append(f"{guest.name}: {exc}")
        if errors:
            raise GuestError("redis_scaleout", "teardown: " + "; ".join(errors))

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _fan_out(ctx: TrialContext, guests: Sequence[Guest], fn: Callable[[Guest], T]) -> list[T]:
        if len(guests) <= 1:
            return [fn(g) for g in guests]
        with ThreadPoolExecutor(max_workers=max(1, min(ctx.max_parallel, len(guests)))) as ex:
            return list(ex.map(fn, guests))
