"""Where every redis-server, nutcracker, HAProxy and redis-benchmark process goes, and
what it is given: configs rendered from ``drivers/redis/`` and command lines.

Pure functions of the parameters and the guests of each role (name, address): no
guest is touched here, so placement and rendering are unit-tested.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vbench.errors import ConfigError
from vbench.templates import Templates
from vbench.workloads.redis_scaleout.params import (
    STATS_OFFSET,
    RedisParams,
    apportion,
    mix_method,
    parse_ports,
)

KEY_FORMAT = "key:%012d"  # redis-benchmark's key:__rand_int__ with -r


@dataclass(frozen=True)
class Host:
    """A guest as placement sees it: its name and the address others reach it at."""

    name: str
    address: str

    @property
    def bind(self) -> str:
        """Listen address: the guest's own IP, or every address when it is a host name."""
        if self.address.startswith("<"):
            return self.address  # a placeholder in `vbench plan` without a lab
        try:
            ipaddress.ip_address(self.address)
        except ValueError:
            return "0.0.0.0"
        return self.address


@dataclass(frozen=True)
class Endpoint:
    address: str
    port: int

    def __str__(self) -> str:
        return f"{self.address}:{self.port}"


@dataclass(frozen=True)
class Instance:
    """One server or proxy process: kind is redis | twemproxy | haproxy."""

    kind: str
    guest: str
    address: str
    bind: str
    port: int
    index: int  # global index within its kind (names, ketama labels)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.address, self.port)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.port}"

    @property
    def stats_port(self) -> int:
        return self.port + STATS_OFFSET


@dataclass(frozen=True)
class ClientProcess:
    """One redis-benchmark process: one operation, its connections and requests."""

    id: str  # e.g. c03-get: client slot 3, operation GET
    slot: int  # the client (1-based) it realises part of
    guest: str
    op: str
    connections: int
    requests: int | None  # -n in requests mode
    target: Endpoint


@dataclass(frozen=True)
class Layout:
    servers: tuple[Instance, ...]
    twemproxies: tuple[Instance, ...]
    haproxies: tuple[Instance, ...]
    clients: tuple[ClientProcess, ...]
    method: str  # how the mix was realised: processes | connections

    @property
    def entry(self) -> tuple[Endpoint, ...]:
        """Where clients connect: the outermost tier that is on."""
        tier = self.haproxies or self.twemproxies or self.servers
        return tuple(i.endpoint for i in tier)

    def on(self, guest: str) -> list[Instance]:
        return [i for i in (*self.servers, *self.twemproxies, *self.haproxies) if i.guest == guest]

    def clients_on(self, guest: str) -> list[ClientProcess]:
        return [c for c in self.clients if c.guest == guest]

    def describe(self) -> dict[str, Any]:
        """A summary for the trial log and the plan."""
        ops: dict[str, dict[str, int]] = {}
        for c in self.clients:
            d = ops.setdefault(c.op, {"processes": 0, "connections": 0})
            d["processes"] += 1
            d["connections"] += c.connections
        return {
            "servers": [str(s.endpoint) for s in self.servers],
            "twemproxy": [str(t.endpoint) for t in self.twemproxies],
            "haproxy": [str(h.endpoint) for h in self.haproxies],
            "entry": [str(e) for e in self.entry],
            "mix_method": self.method,
            "client_processes": len(self.clients),
            "by_operation": ops,
        }


def place(
    params: RedisParams,
    servers: Sequence[Host],
    proxies: Sequence[Host],
    clients: Sequence[Host],
) -> Layout:
    """Spread instances over the guests of each role (round robin, first guests first)."""
    if not servers:
        raise ConfigError("the redis_scaleout workload needs at least one guest in 'servers'")
    if params.proxies_on and not proxies:
        raise ConfigError("a proxy tier is on but the role 'proxies' has no guests")
    if not clients:
        raise ConfigError("the redis_scaleout workload needs at least one guest in 'clients'")
    server_inst = _spread("redis", params.servers, servers, parse_ports(params.server_ports))
    twem: tuple[Instance, ...] = ()
    if params.twemproxy:
        ports = parse_ports(params.twemproxy_ports)
        twem = tuple(
            _instance("twemproxy", h, ports[i], gi * params.twemproxy_instances + i)
            for gi, h in enumerate(proxies)
            for i in range(params.twemproxy_instances)
        )
    hap: tuple[Instance, ...] = ()
    if params.haproxy:
        hap = tuple(_instance("haproxy", h, params.haproxy_port, i) for i, h in enumerate(proxies))
    entry = tuple(i.endpoint for i in (hap or twem or server_inst))
    method = mix_method(params)
    procs = _clients(params, method, clients, entry)
    return Layout(server_inst, twem, hap, procs, method)


def _instance(kind: str, host: Host, port: int, index: int) -> Instance:
    return Instance(kind, host.name, host.address, host.bind, port, index)


def _spread(kind: str, total: int, hosts: Sequence[Host], ports: range) -> tuple[Instance, ...]:
    used = hosts[: min(total, len(hosts))]
    per_guest = math.ceil(total / len(used))
    if per_guest > len(ports):
        raise ConfigError(
            f"{per_guest} {kind} instances per guest but the port range holds {len(ports)}"
        )
    out = []
    for n in range(total):
        host = used[n % len(used)]
        out.append(_instance(kind, host, ports[n // len(used)], n))
    return tuple(out)


def _clients(
    params: RedisParams, method: str, hosts: Sequence[Host], entry: Sequence[Endpoint]
) -> tuple[ClientProcess, ...]:
    procs: list[ClientProcess] = []
    if method == "processes":
        ops = _interleave(apportion(params.clients, params.mix))
        for slot in range(1, params.clients + 1):
            op = ops[slot - 1]
            procs.append(_client(params, slot, hosts, entry, op, params.connections,
                                 params.requests))
        return tuple(procs)
    conns = apportion(params.connections, params.mix)
    reqs = apportion(params.requests, params.mix) if params.requests else None
    for slot in range(1, params.clients + 1):
        for op in params.mix:
            n = None if reqs is None else max(1, reqs[op])
            procs.append(_client(params, slot, hosts, entry, op, max(1, conns[op]), n))
    return tuple(procs)


def _client(
    params: RedisParams, slot: int, hosts: Sequence[Host], entry: Sequence[Endpoint],
    op: str, connections: int, requests: int | None,
) -> ClientProcess:
    # Client slots go round robin over the client guests and over the entry points,
    # so every proxy (or server, without proxies) gets the same share of clients.
    host = hosts[(slot - 1) % len(hosts)]
    target = entry[(slot - 1) % len(entry)]
    return ClientProcess(f"c{slot:02d}-{op}", slot, host.name, op, connections, requests, target)


def _interleave(counts: dict[str, int]) -> list[str]:
    """Operations spread evenly along the slots: 6 get + 2 set → g g g s g g g s."""
    total = sum(counts.values())
    placed: list[tuple[float, int, str]] = []
    for rank, (op, n) in enumerate(counts.items()):
        placed += [((k + 1) / n, rank, op) for k in range(n)]
    return [op for _pos, _rank, op in sorted(placed)][:total]


# ----------------------------------------------------------------------------- commands


def benchmark_argv(params: RedisParams, proc: ClientProcess, *, loop: bool) -> list[str]:
    """redis-benchmark for one process; line-buffered so a stopped loop keeps its rows."""
    argv = [
        "stdbuf", "-oL", "redis-benchmark",
        "-h", proc.target.address, "-p", str(proc.target.port),
        "-c", str(proc.connections), "-P", str(params.pipeline),
        "-r", str(params.keyspace), "-d", str(params.value_size),
        "-t", proc.op, "--csv",
    ]  # fmt: skip
    if params.threads:
        argv += ["--threads", str(params.threads)]
    if loop:
        argv += ["-n", str(params.loop_requests), "-l"]
    else:
        argv += ["-n", str(proc.requests if proc.requests is not None else params.loop_requests)]
    return argv


def server_argv(conf: str) -> list[str]:
    return ["redis-server", conf]


def twemproxy_argv(params: RedisParams, inst: Instance, conf: str) -> list[str]:
    # No -o: nutcracker then logs to stderr, which the process log keeps.
    argv = ["nutcracker", "-c", conf, "-s", str(inst.stats_port), "-a", inst.bind]
    if params.twemproxy_mbuf:
        argv += ["-m", str(params.twemproxy_mbuf)]
    return argv


def haproxy_argv(conf: str) -> list[str]:
    return ["haproxy", "-db", "-f", conf]  # -db: foreground, no daemon


# Loads keys [first, last) as SET key:%012d <value> and counts the replies: plain bash
# and awk over /dev/tcp, because redis-cli --pipe ends with ECHO, which twemproxy
# refuses (it closes the connection and drops replies still in flight).
PRELOAD_SCRIPT = r"""
exec 3<>"/dev/tcp/$1/$2" || { echo "cannot connect to $1:$2" >&2; exit 2; }
awk -v a="$3" -v b="$4" -v d="$5" 'BEGIN {
  v = sprintf("%*s", d, ""); gsub(/ /, "x", v)
  for (i = a; i < b; i++)
    printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, d, v
}' >&3 &
want=$(($4 - $3))
got=$(head -n "$want" <&3 | awk '{ n++ } !/^\+OK/ { e++; if (!m) m = $0 } END {
  printf "%d %d %s", n, e + 0, m }')
set -- $got
echo "preload: $1 replies, $2 errors ${3:+(first: $3)}"
[ "$1" -eq "$want" ] && [ "$2" -eq 0 ]
"""


def preload_argv(target: Endpoint, first: int, last: int, value_size: int) -> list[str]:
    return [
        "bash", "-c", PRELOAD_SCRIPT, "vbench-preload",
        target.address, str(target.port), str(first), str(last), str(value_size),
    ]  # fmt: skip


def preload_streams(params: RedisParams, layout: Layout) -> list[tuple[Endpoint, int, int]]:
    """(target, first key, end key) per stream.

    Through a proxy tier the keyspace is cut into slices sent through the entry points
    (the proxies hash each key to its server). Without proxies every server is its own
    shard of the clients that talk to it, so each server receives the whole keyspace.
    """
    if not (layout.twemproxies or layout.haproxies):
        return [(s.endpoint, 0, params.keyspace) for s in layout.servers]
    n = min(params.preload_streams, params.keyspace)
    bounds = [params.keyspace * i // n for i in range(n + 1)]
    entry = layout.entry
    return [(entry[i % len(entry)], bounds[i], bounds[i + 1]) for i in range(n)]


# ----------------------------------------------------------------------------- configs


# A tab in a redis.conf value is written quoted (\t); any other control character is
# refused. Each template declares its format: redis.conf values are quoted when they are
# not plain words, HAProxy and twemproxy values must be plain words (vbench.templates).
_TEMPLATES = Templates.for_driver("redis", tabs=True)


def _render(template: str, **values: Any) -> str:
    return _TEMPLATES.render(template, **values)


def conf_value(value: str | int | float | bool) -> str | int | float:
    """A redis.conf value: booleans as yes/no; the renderer quotes what needs it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def redis_conf(params: RedisParams, inst: Instance, directory: str, header: str) -> str:
    return _render(
        "redis.conf.j2",
        header=header,
        bind=inst.bind,
        port=inst.port,
        dir=conf_value(directory),
        persistence=params.persistence,
        appendfsync=params.appendfsync,
        overrides=[(k, conf_value(v)) for k, v in params.redis_conf.items()],
    )


def nutcracker_conf(
    params: RedisParams, inst: Instance, servers: Sequence[Instance], header: str
) -> str:
    return _render(
        "nutcracker.yml.j2",
        header=header,
        listen=f"{inst.bind}:{inst.port}",
        hash=params.twemproxy_hash,
        distribution=params.twemproxy_distribution,
        server_connections=params.twemproxy_server_connections,
        # Names, not addresses, place servers on the ketama ring: stable across labs.
        servers=[(str(s.endpoint), f"redis{s.index + 1}") for s in servers],
    )


def haproxy_conf(
    params: RedisParams,
    inst: Instance,
    backends: Sequence[Instance],
    header: str,
    connections: int,
) -> str:
    return _render(
        "haproxy.cfg.j2",
        header=header,
        bind=f"{inst.bind}:{inst.port}",
        nbthread=params.haproxy_nbthread,
        # A frontend's own limit must not throttle the clients before the servers do.
        maxconn=max(2000, 2 * connections),
        backends=[(f"{b.kind}{b.index + 1}", str(b.endpoint)) for b in backends],
    )
