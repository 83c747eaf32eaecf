"""Parameters of the ``redis_scaleout`` driver and the checks on them (pure, unit-tested).

User documentation: ``drivers/redis/README.md``; keep the two in step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, field_validator, model_validator

from vbench.templates import has_control
from vbench.workloads.base import Finding, Params

# redis-benchmark -t names the mix may use; each process runs exactly one of them.
OPS = (
    "get", "set", "incr", "lpush", "rpush", "lpop", "rpop", "sadd", "hset", "spop",
    "zadd", "zpopmin", "mset", "ping_inline", "ping_mbulk",
)  # fmt: skip
# redis.conf directives vbench writes itself (an override would break the driver).
MANAGED_CONF = frozenset(
    {
        "port", "bind", "dir", "daemonize", "logfile", "pidfile", "protected-mode",
        "appendonly", "appendfsync", "save", "include", "supervised",
    }
)  # fmt: skip
# Directives that load code into redis-server or read or create files at any path in the
# guest: never from a scenario (docs/labs.md, "What reaches a guest").
REFUSED_CONF = {
    "loadmodule": "loads a shared object into redis-server",
    "unixsocket": "creates a socket file at any path",
    "aclfile": "reads users and passwords from another file",
}
_CONF_KEY = re.compile(r"^[a-z][a-z0-9-]*$")
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
_NIC = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
INT_MAX = 2**31 - 1  # a C int: what redis-benchmark reads its counts into
MAX_CPU = 8191  # Linux builds for at most 8192 CPUs (NR_CPUS)
STATS_OFFSET = 100  # nutcracker's stats port = its client port + this


def parse_ports(text: str | int) -> range:
    """``"7001-7099"`` or ``7001`` → the range of ports (1024-65535)."""
    raw = str(text).strip()
    m = re.match(r"^(\d+)(?:\s*-\s*(\d+))?$", raw)
    if not m:
        raise ValueError(f"{text!r} is not a port or port range such as 7001-7099")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if not 1024 <= lo <= hi <= 65535:
        raise ValueError(f"{text!r}: ports must satisfy 1024 <= first <= last <= 65535")
    return range(lo, hi + 1)


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8"`` → [0, 1, 2, 3, 8] (the Linux cpulist format)."""
    if not _CPU_LIST.match(text.strip()):
        raise ValueError(f"{text!r} is not a CPU list such as 0-7 or 0,2,4-6")
    cpus: list[int] = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        # bounded before expanding: 0-99999999 would be a list of 10^8 numbers
        first, last = _cpu_number(lo), _cpu_number(hi or lo)
        if first > last:
            raise ValueError(f"{part!r} is a CPU range written backwards (first-last)")
        cpus.extend(range(first, last + 1))
    return cpus


def _cpu_number(digits: str) -> int:
    if len(digits) > len(str(MAX_CPU)) or int(digits) > MAX_CPU:
        raise ValueError(f"CPU {digits[:12]}{'…' if len(digits) > 12 else ''} is above "
                         f"{MAX_CPU}, the largest CPU number Linux has")
    return int(digits)


class PinSpec(Params):
    """The ``pinned`` variant: CPUs for the chosen roles, optionally NIC interrupts."""

    cpus: str | None = Field(None, description="CPU list, e.g. 0-7 or 0,2,4-6")
    numa_node: int | None = Field(
        None, ge=0, description="pin to the CPUs of this NUMA node (read in the guest)"
    )
    roles: list[Literal["servers", "proxies", "clients"]] = Field(
        default_factory=lambda: ["servers"], description="which roles' processes are pinned"
    )
    spread: bool = Field(
        False, description="one CPU per instance, round robin over the list (else the whole list)"
    )
    irqs: bool = Field(False, description="also pin the interrupts of `nic` to the CPUs")
    nic: str | None = Field(None, description="network interface whose IRQs are pinned")
    stop_irqbalance: bool = Field(
        True, description="stop irqbalance for the trial (restarted afterwards if it ran)"
    )

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: str | None) -> str | None:
        if v is not None:
            parse_cpu_list(v)
        return v

    @field_validator("nic")
    @classmethod
    def _nic(cls, v: str | None) -> str | None:
        if v is not None and not _NIC.match(v):
            raise ValueError(f"{v!r} is not a network interface name")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> PinSpec:
        if (self.cpus is None) == (self.numa_node is None):
            raise ValueError("give exactly one of cpus or numa_node")
        if self.irqs and self.nic is None:
            raise ValueError("irqs: true needs nic (the interface whose interrupts to pin)")
        return self


class DockerImages(Params):
    """Images used when ``deployment: docker`` (clients stay native)."""

    redis: str = Field("redis:7.0", description="image with redis-server")
    twemproxy: str | None = Field(
        None, description="image with nutcracker on PATH (there is no official one)"
    )
    haproxy: str = Field("haproxy:2.6", description="image with haproxy")

    @field_validator("redis", "twemproxy", "haproxy")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and not _IMAGE.match(v):
            raise ValueError(f"{v!r} is not an image reference")
        return v


class RedisParams(Params):
    """``workload.params`` of the redis_scaleout driver."""

    # -- servers
    servers: int = Field(1, description="redis-server instances in total (spread over guests)")
    server_ports: str = Field("7001-7099", description="ports for instances on one guest")
    persistence: Literal["aof", "rdb", "none"] = Field("aof", description="AOF, RDB or none")
    appendfsync: Literal["always", "everysec", "no"] = Field(
        "everysec", description="AOF fsync policy"
    )
    redis_conf: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="further redis.conf directives, e.g. io-threads: 4"
    )
    # -- proxies
    twemproxy: bool = Field(True, description="twemproxy (nutcracker) tier on/off")
    twemproxy_instances: int = Field(1, ge=1, le=512, description="nutcrackers per proxy guest")
    twemproxy_ports: str = Field("22121-22199", description="nutcracker client ports")
    twemproxy_hash: Literal[
        "one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1a_64",
        "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins",
    ] = Field("fnv1a_64", description="key hash")  # fmt: skip
    twemproxy_distribution: Literal["ketama", "modula", "random"] = Field(
        "ketama", description="key distribution over the servers (consistent hashing: ketama)"
    )
    twemproxy_server_connections: int = Field(
        1, ge=1, le=1024, description="connections from each nutcracker to each server"
    )
    twemproxy_mbuf: int | None = Field(
        None, ge=512, le=16 * 1024 * 1024, description="nutcracker -m mbuf size in bytes"
    )
    haproxy: bool = Field(True, description="HAProxy tier (TCP round robin) on/off")
    haproxy_port: int = Field(6380, ge=1024, le=65535, description="HAProxy port per guest")
    haproxy_nbthread: int | None = Field(None, ge=1, le=256, description="HAProxy threads")
    # -- clients
    clients: int = Field(1, ge=1, le=4096, description="redis-benchmark processes in total")
    connections: int = Field(50, ge=1, le=100000, description="-c: connections per process")
    pipeline: int = Field(1, ge=1, le=100000, description="-P: pipelined requests")
    requests: int | None = Field(  # redis-benchmark reads -n with atoi: a C int
        None, ge=1, le=INT_MAX, description="-n per process; unset: run for the steady phase"
    )
    loop_requests: int = Field(
        100000, ge=1, le=INT_MAX,
        description="requests per iteration when running for a duration (-l)",
    )
    keyspace: int = Field(100000, ge=1, le=10**12,  # the keys' 12 digits
                          description="-r: keys key:000000000000 … key:N-1")
    value_size: int = Field(1, ge=1, le=512 * 1024 * 1024, description="-d: value bytes")
    mix: dict[str, float] = Field(
        default_factory=lambda: {"get": 75.0, "set": 25.0},
        description="operation → percent of requests (sums to 100)",
    )
    mix_method: Literal["auto", "processes", "connections"] = Field(
        "auto", description="realise the mix by process counts, by connections, or auto"
    )
    threads: int | None = Field(None, ge=1, le=256, description="redis-benchmark --threads")
    preload: bool = Field(True, description="fill the keyspace before the measured phase")
    preload_streams: int = Field(4, ge=1, le=256, description="parallel preload streams")
    # -- deployment
    deployment: Literal["native", "docker"] = Field(
        "native", description="processes in the guest, or Docker containers (host network)"
    )
    docker_images: DockerImages = Field(default_factory=DockerImages)
    pin: PinSpec | None = Field(None, description="the pinned variant (CPUs, IRQs, irqbalance)")
    start_timeout: float = Field(
        30.0, gt=0, le=3600, description="seconds a server or proxy may take to listen"
    )

    @field_validator("servers")
    @classmethod
    def _servers(cls, v: int) -> int:
        if v < 1:
            raise ValueError(
                "at least one redis-server is needed (a proxy tier with no servers "
                "has nothing to route to)"
            )
        if v > 4096:
            raise ValueError("at most 4096 redis-server instances")
        return v

    @field_validator("server_ports", "twemproxy_ports")
    @classmethod
    def _ports(cls, v: str) -> str:
        parse_ports(v)
        return v

    @field_validator("mix")
    @classmethod
    def _mix(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(OPS))
        if unknown:
            raise ValueError(
                f"unknown operation {', '.join(unknown)} (redis-benchmark -t names: "
                f"{', '.join(OPS)})"
            )
        if any(share < 0 for share in v.values()):
            raise ValueError("mix shares cannot be negative")
        total = sum(v.values())
        if not math.isclose(total, 100.0, abs_tol=1e-6):
            raise ValueError(f"the mix sums to {total:g} %, it must sum to 100 %")
        return {op: float(share) for op, share in v.items() if share > 0}

    @field_validator("redis_conf")
    @classmethod
    def _conf(cls, v: dict[str, str | int | float | bool]) -> dict[str, str | int | float | bool]:
        for key, value in v.items():
            if not _CONF_KEY.match(key):
                raise ValueError(f"{key!r} is not a redis.conf directive name")
            if key in REFUSED_CONF:
                raise ValueError(f"{key} {REFUSED_CONF[key]}: not allowed in redis_conf")
            if key in MANAGED_CONF:
                raise ValueError(
                    f"{key} is written by vbench (use persistence / appendfsync / "
                    "server_ports instead)"
                )
            if has_control(str(value)):
                raise ValueError(f"{key}: control characters are not allowed in a value")
        return v

    @model_validator(mode="after")
    def _port_layout(self) -> RedisParams:
        # Loopback labs put several roles on one machine: the ranges must not overlap.
        named = {
            "server_ports": parse_ports(self.server_ports),
            "twemproxy_ports": parse_ports(self.twemproxy_ports),
            "twemproxy stats ports (twemproxy_ports + 100)": _shift(
                parse_ports(self.twemproxy_ports), STATS_OFFSET
            ),
            "haproxy_port": range(self.haproxy_port, self.haproxy_port + 1),
        }
        items = list(named.items())
        for i, (a, ra) in enumerate(items):
            for b, rb in items[i + 1 :]:
                if ra.start < rb.stop and rb.start < ra.stop:
                    raise ValueError(f"{a} and {b} overlap")
        return self

    # -- derived facts
    @property
    def proxies_on(self) -> bool:
        return self.twemproxy or self.haproxy

    @property
    def duration_mode(self) -> bool:
        return self.requests is None


def _shift(r: range, offset: int) -> range:
    return range(r.start + offset, r.stop + offset)


# ----------------------------------------------------------------------------- the mix


def apportion(total: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Split ``total`` units over ``shares`` (percent) by largest remainder."""
    exact = {op: total * share / 100.0 for op, share in shares.items()}
    out = {op: math.floor(x) for op, x in exact.items()}
    left = total - sum(out.values())
    for op in sorted(exact, key=lambda o: (out[o] - exact[o], list(exact).index(o)))[:left]:
        out[op] += 1
    return out


def exact_by_processes(params: RedisParams) -> bool:
    """True when whole processes realise the mix exactly (e.g. 8 processes at 75/25)."""
    return all(
        math.isclose(params.clients * share / 100.0, round(params.clients * share / 100.0))
        for share in params.mix.values()
    )


def mix_method(params: RedisParams) -> str:
    """The method used: ``processes`` or ``connections`` (``auto`` resolved)."""
    if params.mix_method != "auto":
        return params.mix_method
    if len(params.mix) == 1 or exact_by_processes(params):
        return "processes"
    return "connections"


def findings(params: RedisParams) -> list[Finding]:
    out: list[Finding] = []
    method = mix_method(params)
    if method == "processes":
        counts = apportion(params.clients, params.mix)
        starved = [op for op, n in counts.items() if n == 0]
        if starved:
            out.append(Finding(
                "error", "mix_method",
                f"{params.clients} client process(es) cannot carry {', '.join(starved)} "
                "at this mix with one operation per process; use mix_method: connections "
                "(or auto), or more clients",
            ))
        elif not exact_by_processes(params):
            real = ", ".join(f"{op} {100 * n / params.clients:.1f} %" for op, n in counts.items())
            out.append(Finding("warning", "mix", f"realised by processes as {real}"))
    elif params.connections < len(params.mix):
        out.append(Finding(
            "error", "connections",
            f"splitting each process's connections over {len(params.mix)} operations needs "
            f"at least {len(params.mix)} connections",
        ))
    if params.haproxy and not params.twemproxy:
        out.append(Finding(
            "warning", "twemproxy",
            "HAProxy without twemproxy round-robins connections straight over the servers: "
            "keys are not partitioned consistently (a GET may miss a key SET elsewhere)",
        ))
    docker = params.deployment == "docker"
    if docker and params.twemproxy and params.docker_images.twemproxy is None:
        out.append(Finding(
            "error", "docker_images.twemproxy",
            "deployment docker with twemproxy needs an image with nutcracker "
            "(there is no official one)",
        ))
    if params.persistence != "aof" and "appendfsync" in params.model_fields_set:
        out.append(Finding(
            "warning", "appendfsync", f"appendfsync has no effect with persistence "
            f"{params.persistence}",
        ))
    return out


def placement_findings(params: RedisParams, guests: Mapping[str, int]) -> list[Finding]:
    """Checks that need the number of guests per role (ports per guest)."""
    out: list[Finding] = []
    n_servers = guests.get("servers", 0)
    if n_servers:
        per_guest = math.ceil(params.servers / min(params.servers, n_servers))
        ports = len(parse_ports(params.server_ports))
        if per_guest > ports:
            out.append(Finding(
                "error", "server_ports",
                f"{per_guest} redis-server instances per guest ({params.servers} over "
                f"{n_servers} guest(s)) but server_ports holds {ports} port(s)",
            ))
    if params.twemproxy:
        ports = len(parse_ports(params.twemproxy_ports))
        if params.twemproxy_instances > ports:
            out.append(Finding(
                "error", "twemproxy_instances",
                f"{params.twemproxy_instances} nutcracker instances per guest but "
                f"twemproxy_ports holds {ports} port(s)",
            ))
    return out
