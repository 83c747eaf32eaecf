"""Parameters of the ``cloudstone`` driver, and the Olio defaults of the CloudStone study.

The default transition matrix is Faban's Olio matrix (seed 003 appendix C), the default
limits the seeds' pass criteria. The required mix of a matrix is its stationary
distribution: the share of each operation a user following the chain settles into.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from vbench.config.netaddr import check_address
from vbench.config.secrets import expand_path
from vbench.templates import has_control
from vbench.workloads.base import Finding, Params

OPERATIONS = ("HomePage", "Login", "TagSearch", "EventDetail", "PersonDetail",
              "AddPerson", "AddEvent")  # fmt: skip
# Faban's Olio transition matrix (rows: from, columns: to, in OPERATIONS order), percent.
OLIO_MATRIX: dict[str, dict[str, float]] = {
    frm: dict(zip(OPERATIONS, row, strict=True))
    for frm, row in {
        "HomePage": (0, 11, 52, 36, 0, 1, 0),
        "Login": (0, 0, 60, 20, 0, 0, 20),
        "TagSearch": (21, 6, 41, 31, 0, 1, 0),
        "EventDetail": (72, 21, 0, 0, 6, 1, 0),
        "PersonDetail": (52, 6, 0, 31, 11, 0, 0),
        "AddPerson": (0, 0, 0, 0, 100, 0, 0),
        "AddEvent": (0, 0, 0, 100, 0, 0, 0),
    }.items()
}
DEFAULT_WHEELHOUSE = "${vbench:wheelhouse}"
# The seeds' limits: avg ≤ 250 ms and p95 ≤ 500 ms for the browsing operations,
# avg ≤ 500 ms and p95 ≤ 1000 ms for the others.
_FAST = ("HomePage", "TagSearch", "EventDetail", "Login")


class Limit(Params):
    """Response-time limits of one operation (its pass criterion)."""

    avg_ms: float | None = Field(None, gt=0, description="average response time limit (ms)")
    p95_ms: float | None = Field(None, gt=0, description="95th percentile limit (ms)")


def olio_limits() -> dict[str, Limit]:
    return {op: Limit(avg_ms=250, p95_ms=500) if op in _FAST else Limit(avg_ms=500, p95_ms=1000)
            for op in OPERATIONS}  # fmt: skip


class ThinkTime(Params):
    """How long each user pauses between operations."""

    kind: Literal["negexp", "cycle"] = Field(
        "negexp", description="negexp: think time drawn from a negative exponential with "
        "`mean`, truncated at `max`; cycle: one operation every `seconds` per user")
    mean: float = Field(5.0, ge=0, description="mean think time (s), negexp")
    max: float | None = Field(None, gt=0, description="truncation (s), negexp; default 5 × mean")
    seconds: float = Field(1.0, gt=0, description="cycle time (s), cycle")


class CloudstoneParams(Params):
    """CloudStone / Olio: N client/server instances, Locust driving an Olio-shaped app."""

    profile: Literal["olio", "rate"] = Field(
        "olio", description="olio: the seven operations on a Markov chain with think time; "
        "rate: a fixed request rate per server on one static page (web farm)")
    instances: int = Field(1, ge=1, le=256, description="independent client/server pairs")
    users: int = Field(500, ge=1, description="users per instance (olio)")
    rate: float | None = Field(None, gt=0, description="requests/s per server (profile rate)")
    static_path: str = Field("/static/farm100k.html", description="page of the rate profile")
    clients_per_instance: int = Field(
        1, ge=1, description="client guests per instance; above 1 Locust runs distributed "
        "(a master and one worker per client guest)")
    matrix: dict[str, dict[str, float]] | None = Field(
        None, description="transition matrix {from: {to: weight}}; default Faban's Olio "
        "matrix; the first row's operation is where every user starts")
    think: ThinkTime = Field(default_factory=ThinkTime, description="think / cycle time")
    limits: dict[str, Limit] | None = Field(
        None, description="per-operation limits; default the seeds' (250/500 ms avg, "
        "500/1000 ms p95)")
    mix_tolerance: float = Field(
        2.0, gt=0, description="allowed |achieved − required| mix, percentage points "
        "(widened to 3 binomial standard errors when too few operations to judge)")
    sub_window: float = Field(30.0, gt=0, description="seconds per sub-window for the "
                              "variation figures")  # fmt: skip
    fetch_images: bool = Field(True, description="fetch every image a page shows, "
                               "timed as part of the operation")  # fmt: skip
    deploy: bool = Field(True, description="deploy the test app on the server guests; "
                         "false: drive `base_urls`")  # fmt: skip
    base_urls: list[str] | None = Field(None, description="one URL per instance when "
                                        "deploy is false")  # fmt: skip
    port: int = Field(18080, ge=1024, le=65000, description="first instance's HTTP port "
                      "(instance k uses port + 10·k)")  # fmt: skip
    bind: str | None = Field(None, description="address nginx listens on in the server "
                             "guest (default: the address vbench reaches it at)")
    php_children: int = Field(16, ge=1, le=4096, description="PHP-FPM workers per instance")
    nginx_workers: int = Field(1, ge=1, le=256, description="nginx worker processes")
    persons_per_user: int = Field(4, ge=1, description="data size: persons per user")
    events_per_user: int = Field(3, ge=1, description="data size: events per user")
    saturation: Literal["warn", "fail"] = Field(
        "warn", description="a saturated load generator (CPU > cpu_limit, or fewer users "
        "or a lower rate than asked): warn, or fail the trial")
    cpu_limit: float = Field(0.8, gt=0, le=1, description="CPU share of one core above "
                             "which a Locust process counts as saturated")  # fmt: skip
    locust_command: str | None = Field(
        None, description="an existing Locust in the client guests (e.g. /opt/locust/bin/"
        "locust); default: a private venv from vbench's wheelhouse")
    wheelhouse: str = Field(DEFAULT_WHEELHOUSE, description="controller folder of "
                            "Locust wheels ($VBENCH_WHEELHOUSE overrides)")  # fmt: skip
    locust_version: str = Field("2.42.6", pattern=r"^[0-9][0-9A-Za-z.]*$",
                                description="Locust version the wheelhouse holds")  # fmt: skip

    @field_validator("static_path", "bind", "locust_command", "wheelhouse")
    @classmethod
    def _one_line(cls, v: str | None) -> str | None:
        if v is not None and has_control(v):
            raise ValueError("must not contain control characters")
        return v

    @field_validator("bind")
    @classmethod
    def _bind(cls, v: str | None) -> str | None:
        # It becomes nginx's `listen ADDRESS:PORT` and the base URL: an IPv4 address or a
        # host name, nothing an nginx directive or a URL would read as more (x;touch …).
        if v is None:
            return v
        check_address(v)
        if ":" in v:
            raise ValueError("an IPv4 address or a host name (IPv6 is not supported here)")
        return v

    @field_validator("static_path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not v.startswith("/") or any(c in v for c in " \"'<>"):
            raise ValueError("must be an absolute URL path without spaces or quotes")
        return v

    @model_validator(mode="after")
    def _check(self) -> CloudstoneParams:
        if self.profile == "rate" and self.rate is None:
            raise ValueError("profile rate needs `rate` (requests/s per server)")
        if not self.deploy and (not self.base_urls or len(self.base_urls) != self.instances):
            raise ValueError("deploy: false needs one base_urls entry per instance")
        for url in self.base_urls or []:
            if not url.startswith(("http://", "https://")) or has_control(url) or " " in url:
                raise ValueError(f"base_urls: {url!r} is not an http(s) URL")
        m = self.effective_matrix()
        unknown = {op for row in m.values() for op in row} | set(m)
        bad = sorted(unknown - set(OPERATIONS))
        if bad:
            raise ValueError(f"matrix: unknown operation(s) {', '.join(bad)} "
                             f"(known: {', '.join(OPERATIONS)})")
        for frm, row in m.items():
            if any(w < 0 for w in row.values()) or not any(w > 0 for w in row.values()):
                raise ValueError(f"matrix row {frm}: weights must be ≥ 0, one of them > 0")
            _locust_row(frm, row)
            missing = [to for to, w in row.items() if w > 0 and to not in m]
            if missing:
                raise ValueError(f"matrix row {frm} leads to {missing[0]}, which has no row")
        for op in self.limits or {}:
            if op not in OPERATIONS:
                raise ValueError(f"limits: unknown operation {op!r}")
        return self

    def effective_matrix(self) -> dict[str, dict[str, float]]:
        return self.matrix if self.matrix is not None else OLIO_MATRIX

    def effective_limits(self) -> dict[str, Limit]:
        return self.limits if self.limits is not None else olio_limits()

    def operations(self) -> list[str]:
        return list(self.effective_matrix()) if self.profile == "olio" else ["StaticPage"]

    def think_max(self) -> float:
        return self.think.max if self.think.max is not None else 5 * self.think.mean


def _locust_row(frm: str, row: dict[str, float]) -> None:
    """Refuse a row integer_weights cannot turn into Locust's integer weights."""
    scaled = [w * 100 for w in row.values()]
    if not all(math.isfinite(x) for x in scaled):
        raise ValueError(f"matrix row {frm}: a weight too large (at most 1e306)")
    if not any(round(x) > 0 for x in scaled):
        raise ValueError(f"matrix row {frm}: no weight above 0.005 (Locust takes its "
                         "weights in hundredths)")


def integer_weights(matrix: dict[str, dict[str, float]]) -> dict[str, dict[str, int]]:
    """Locust's Markov transitions take integer weights: rows scaled to hundredths."""
    return {frm: {to: round(w * 100) for to, w in row.items() if round(w * 100) > 0}
            for frm, row in matrix.items()}  # fmt: skip


def stationary_mix(matrix: dict[str, dict[str, float]]) -> dict[str, float]:
    """The share of each operation in the long run (power iteration from the start state)."""
    ops = list(matrix)
    probs = {frm: {to: w / math.fsum(row.values()) for to, w in row.items()}
             for frm, row in matrix.items()}  # fmt: skip
    dist = {op: 1.0 / len(ops) for op in ops}
    for _ in range(10_000):
        nxt = dict.fromkeys(ops, 0.0)
        for frm, p in dist.items():
            for to, w in probs[frm].items():
                nxt[to] += p * w
        # Average with the previous step: converges for periodic chains too.
        nxt = {op: (nxt[op] + dist[op]) / 2 for op in ops}
        if max(abs(nxt[op] - dist[op]) for op in ops) < 1e-12:
            return nxt
        dist = nxt
    return dist


def findings(p: CloudstoneParams) -> list[Finding]:
    out = []
    if p.profile == "olio" and p.think.kind == "negexp" and p.think.mean == 0:
        out.append(Finding("warning", "think.mean",
                           "no think time: every user sends back to back (a closed loop)"))
    if p.profile == "rate" and p.matrix is not None:
        out.append(Finding("warning", "matrix", "profile rate ignores the matrix"))
    problem = _wheelhouse_problem(p)
    if problem:
        out.append(Finding("error", "wheelhouse", problem))
    return out


def _wheelhouse_problem(p: CloudstoneParams) -> str | None:
    """A wheelhouse folder named (or set by $VBENCH_WHEELHOUSE) that does not exist: found
    by validate, not when the first client installs Locust. The default folder may be
    missing: vbench creates it and downloads the wheels into it."""
    if p.locust_command is not None:
        return None
    env = os.environ.get("VBENCH_WHEELHOUSE")
    if not env and p.wheelhouse == DEFAULT_WHEELHOUSE:
        return None
    root = Path(env or expand_path(p.wheelhouse))
    where = "$VBENCH_WHEELHOUSE" if env else "wheelhouse"
    try:
        if root.is_dir():
            return None
    except OSError as exc:  # a name too long for the file system …
        return f"{where} folder {str(root)[:80]!r}: {exc.strerror or exc}"
    return f"{where} folder {str(root)!r} does not exist"
