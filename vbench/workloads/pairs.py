"""Client/server pairs of a network throughput test, shared by ``iperf3`` and ``netperf``.

Client instance *i* (``instances`` per client guest, guests in order) talks to server
guest ``servers[i % len(servers)]`` on port ``port + i``: one server process per client
instance, so a one-test-at-a-time server (``iperf3 -s -1``) never refuses a second
client, and ports never collide on a guest. The data-plane address of a server is its
SSH address unless ``data_addresses`` names another one (a test network beside the
management network).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator

from vbench.errors import GuestError, Interrupted, ParseError
from vbench.workloads import guest_trial, listening
from vbench.workloads.base import Params, PlannedCommand, TrialContext, Workload

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.results.records import Sample

SIZE = re.compile(r"^(\d+)([KMG]?)$")
_ADDRESS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:-]*$")


def size_bytes(text: str | int) -> int:
    """``"16K"`` → 16384 (iperf3's and netperf's K/M/G are powers of 1024)."""
    m = SIZE.match(str(text).strip().upper())
    if not m:
        raise ValueError(f"{text!r} is not a size such as 256, 16K or 64K")
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2)]


@dataclass(frozen=True)
class Pair:
    index: int
    client: str  # guest name
    server: str  # guest name
    address: str  # where the client connects
    port: int


def make_pairs(
    clients: Sequence[str], servers: Sequence[str], instances: int, port: int,
    addresses: Mapping[str, str],
) -> list[Pair]:
    if not clients or not servers:
        raise GuestError("topology", "a network test needs at least one guest in role "
                         "'clients' and one in role 'servers'")
    pairs = []
    for i in range(len(clients) * instances):
        server = servers[i % len(servers)]
        pairs.append(Pair(i, clients[i // instances], server, addresses[server], port + i))
    return pairs


# ---------------------------------------------------------------------- the trial flow

SERVERS, CLIENTS = "servers", "clients"
GRACE_SECONDS = 60.0  # clients stop on their own after warm-up + steady; allow start-up
LISTEN_TIMEOUT = 30.0


class PairParams(Params):
    """What every client/server network driver takes."""

    instances: int = Field(1, ge=1, le=256, description=(
        "client processes per client guest (each with a server process of its own)"))
    port: int = Field(5201, ge=1024, le=65000, description=(
        "first server port; client instance i uses port + i"))
    data_addresses: dict[str, str] = Field(default_factory=dict, description=(
        "server guest -> the address clients connect to (default: its SSH address)"))

    @field_validator("data_addresses")
    @classmethod
    def _addresses(cls, v: dict[str, str]) -> dict[str, str]:
        for name, addr in v.items():
            if not _ADDRESS.match(addr):
                raise ValueError(f"{name}: {addr!r} is not a host name or IP address")
        return v


@dataclass
class Started:
    pair: Pair
    side: str  # server | client
    guest: Guest
    proc: RemoteProcess


class PairWorkload(Workload):
    """Servers on the ``servers`` guests, clients on the ``clients`` guests, one server
    process per client instance; the clients run warm-up + steady state and exit."""

    roles: ClassVar[tuple[str, ...]] = (SERVERS, CLIENTS)
    tool: ClassVar[str]  # directory prefix and log name
    result_name: ClassVar[str] = "result.txt"

    params: PairParams

    def __init__(self, params: PairParams) -> None:
        super().__init__(params)
        self._started: list[Started] = []
        self._pairs: list[Pair] = []

    # -- what a subclass provides
    def server_argv(self, pair: Pair, d: str) -> list[str]:
        raise NotImplementedError

    def client_argv(self, pair: Pair, d: str, warmup: float, steady: float) -> list[str]:
        raise NotImplementedError

    def warmup_argv(self, pair: Pair, d: str, warmup: float) -> list[str] | None:
        """A tool without a warm-up option of its own (netperf) runs this first, for the
        warm-up; its output is kept but not measured."""
        return None

    def pair_samples(self, pair: Pair, text: str, source: str) -> list[Sample]:
        raise NotImplementedError

    def total_samples(self, per_pair: Sequence[Sample]) -> list[Sample]:
        raise NotImplementedError

    def check_guest(self, guest: Guest, role: str) -> None:
        """Refuse early when the tool is missing (a clear line naming the guest)."""
        for tool in self.tools().get(role, ()):
            if guest.which(tool) is None:
                raise GuestError(guest.name, f"{tool} not found in PATH")

    # -- planning
    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        d = f"<workdir>/<run_id>/{self.tool}-<guest>-p<point>-t<trial>"
        p = Pair(0, "<client>", "<server>", "<server address>", self.params.port)
        return [
            PlannedCommand(SERVERS, "run", tuple(self.server_argv(p, d)), background=True),
            PlannedCommand(CLIENTS, "run", tuple(self.client_argv(p, d, warmup, steady)),
                           background=True),
            PlannedCommand(CLIENTS, "collect", ("get", f"{d}/client-<i>.{self.result_name}")),
            PlannedCommand(CLIENTS, "teardown", ("rm", "-rf", d)),
        ]

    # -- prepare
    def prepare(self, ctx: TrialContext) -> None:
        servers = list(ctx.guests.get(SERVERS, ()))
        clients = list(ctx.guests.get(CLIENTS, ()))
        addresses = {g.name: self.params.data_addresses.get(g.name, g.spec.address)
                     for g in servers}
        self._pairs = make_pairs([g.name for g in clients], [g.name for g in servers],
                                 self.params.instances, self.params.port, addresses)
        by_name = {g.name: g for g in [*servers, *clients]}
        for g in servers:
            self.check_guest(g, SERVERS)
        for g in clients:
            self.check_guest(g, CLIENTS)
        for g in by_name.values():
            g.mkdir(self._dir(ctx, g))
        for g in servers:
            wanted = [(p.address, p.port, f"{self.tool} server {p.index}")
                      for p in self._pairs if p.server == g.name]
            listening.check_ports_free(g, wanted)
        ctx.log(f"{self.tool}_pairs", pairs=[
            {"client": p.client, "server": p.server, "address": p.address, "port": p.port}
            for p in self._pairs])

    # -- run
    def run(self, ctx: TrialContext) -> None:
        guests = {g.name: g for g in ctx.all_guests()}
        pending: dict[str, list[listening.Pending]] = {}
        for p in self._pairs:
            g = guests[p.server]
            d = self._dir(ctx, g)
            proc = g.start(self.server_argv(p, d), log=f"{d}/server-{p.index}.log")
            self._started.append(Started(p, "server", g, proc))
            pending.setdefault(g.name, []).append(
                listening.Pending(f"{self.tool} server {p.address}:{p.port}", p.address, p.port,
                                  proc))
        for name, items in pending.items():
            listening.wait_listening(guests[name], items, LISTEN_TIMEOUT, ctx.cancel)
        if ctx.warmup > 0 and self.warmup_argv(self._pairs[0], "", ctx.warmup) is not None:
            self._run_warmup_apart(ctx, guests)
        else:
            self._run_omitting_warmup(ctx, guests)

    def _run_warmup_apart(self, ctx: TrialContext, guests: Mapping[str, Guest]) -> None:
        """A warm-up run of its own, then the measured run (the steady window)."""
        begun = time.monotonic()
        ctx.mark("warmup_start")
        warm = self._start_clients(ctx, guests, "warmup", lambda p, d: self.warmup_argv(
            p, d, ctx.warmup) or [])
        for c in warm:
            self._wait(ctx, c, begun + ctx.warmup + GRACE_SECONDS)
        self._started = [s for s in self._started if s not in warm]
        ctx.mark("steady_start")
        clients = self._start_clients(ctx, guests, "client", lambda p, d: self.client_argv(
            p, d, 0.0, ctx.steady))
        self._log_started(ctx)
        for c in clients:
            self._wait(ctx, c, time.monotonic() + ctx.steady + GRACE_SECONDS)
        ctx.mark("steady_end")

    def _run_omitting_warmup(self, ctx: TrialContext, guests: Mapping[str, Guest]) -> None:
        """One client run; the tool leaves the warm-up out itself (iperf3 --omit)."""
        clients = self._start_clients(ctx, guests, "client", lambda p, d: self.client_argv(
            p, d, ctx.warmup, ctx.steady))
        self._log_started(ctx)
        ctx.mark("warmup_start")
        begun = time.monotonic()
        if ctx.warmup > 0 and ctx.cancel.wait(ctx.warmup):
            self._kill_all()
            raise Interrupted(f"{self.tool} run interrupted during warm-up")
        ctx.mark("steady_start")
        deadline = begun + ctx.warmup + ctx.steady + GRACE_SECONDS
        for c in clients:
            self._wait(ctx, c, deadline)
        ctx.mark("steady_end")

    def _start_clients(
        self, ctx: TrialContext, guests: Mapping[str, Guest], name: str,
        argv: Callable[[Pair, str], list[str]],
    ) -> list[Started]:
        out = []
        for p in self._pairs:
            g = guests[p.client]
            d = self._dir(ctx, g)
            proc = g.start(argv(p, d), log=f"{d}/{name}-{p.index}.log")
            started = Started(p, "client", g, proc)
            self._started.append(started)
            out.append(started)
        return out

    def _log_started(self, ctx: TrialContext) -> None:
        ctx.log(f"{self.tool}_started", **{
            side + "s": {f"{x.guest.name}#{x.pair.index}": x.proc.pid
                         for x in self._started if x.side == side}
            for side in ("server", "client")})

    def _wait(self, ctx: TrialContext, c: Started, deadline: float) -> None:
        guest_trial.wait_exit(c.proc, c.guest.name, f"{self.tool} client {c.pair.index}",
                              deadline, ctx.cancel, self._kill_all)

    def _kill_all(self) -> None:
        guest_trial.stop_all(s.proc for s in self._started)
        self._started.clear()

    # -- collect
    def collect(self, ctx: TrialContext) -> list[Sample]:
        guests = {g.name: g for g in ctx.all_guests()}
        samples: list[Sample] = []
        for p in self._pairs:
            g = guests[p.client]
            remote = f"{self._dir(ctx, g)}/client-{p.index}.{self.result_name}"
            local = ctx.raw_path(g.name, f"client-{p.index}.{self.result_name}")
            try:
                g.get(remote, local)
            except OSError as exc:
                raise GuestError(g.name, f"cannot fetch {remote}: {exc}") from exc
            text = local.read_text(encoding="utf-8", errors="replace")
            try:
                samples += self.pair_samples(p, text, f"{g.name}:{remote}")
            except ParseError as exc:
                raise GuestError(g.name, f"unreadable {self.tool} output: {exc}") from exc
        return samples + self.total_samples(samples)

    # -- teardown
    def teardown(self, ctx: TrialContext) -> None:
        self._kill_all()
        guest_trial.remove_trial_dirs(ctx.all_guests(), lambda g: self._dir(ctx, g))

    def _dir(self, ctx: TrialContext, g: Guest) -> str:
        return guest_trial.guest_trial_dir(ctx, g, self.tool)
