"""Parameters of the ``dvdstore`` driver and the driver command they make (pure).

User documentation: ``drivers/dvdstore/README.md``; keep the two in step.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from vbench.config.types import new_list
from vbench.templates import has_control
from vbench.workloads.base import Finding, Params

_OPTION = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
_TARGET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:_-]*$")
# Options vbench sets itself: from the phases, the target list or the instance.
MANAGED = frozenset({"target", "run_time", "warmup_time", "config_file", "out_filename"})


class DvdStoreParams(Params):
    command: list[str] = Field(min_length=1, description=(
        "the driver command as an argv list, e.g. [mono, /opt/ds3/ds3webdriver.exe] or "
        "[/opt/ds2/ds2mysqldriver]"))
    targets: list[str] = Field(default_factory=new_list, description=(
        "database/web server host[:port] per instance, round robin (default: the address of "
        "the `databases` guests)"))
    instances: int = Field(1, ge=1, le=256, description="driver instances per client guest")
    n_threads: int = Field(1, ge=1, le=10000, description="driver threads per instance")
    ramp_rate: int | None = Field(None, ge=1, description="startup rate (users/s)")
    think_time: float | None = Field(None, ge=0, description="think time (s)")
    db_size: str | None = Field(None, pattern=r"^([SML]|\d+\s?[mgtMGT][bB])$",
                                description="database size: S, M, L or e.g. 20GB")
    pct_newcustomers: int | None = Field(None, ge=0, le=100)
    pct_newmember: int | None = Field(None, ge=0, le=100, description="(ds3)")
    n_searches: int | None = Field(None, ge=0)
    search_batch_size: int | None = Field(None, ge=1)
    n_line_items: int | None = Field(None, ge=1)
    n_reviews: int | None = Field(None, ge=0, description="(ds3)")
    pct_newreviews: int | None = Field(None, ge=0, le=100, description="(ds3)")
    pct_newhelpfulness: int | None = Field(None, ge=0, le=100, description="(ds3)")
    virt_dir: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$",
                                 description="virtual directory (web driver)")
    page_type: Literal["php", "jsp", "asp", "aspx"] | None = Field(
        None, description="web page type (web driver)")
    detailed_view: bool | None = Field(None, description="Y/N: per-operation statistics")
    ds2_mode: bool | None = Field(None, description="ds3 drivers against a ds2 database")
    log_freq: int | None = Field(None, ge=1, le=3600, description=(
        "seconds between the periodic lines (ds3; ds2 prints every 10 s)"))
    extra: dict[str, str | int | float] = Field(default_factory=dict, description=(
        "other --name=value options passed as they are"))

    @field_validator("command", "targets")
    @classmethod
    def _plain(cls, v: list[str]) -> list[str]:
        for item in v:
            if not item or has_control(item):
                raise ValueError(f"{item!r}: empty or holds control characters")
        return v

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        bad = [t for t in v if not _TARGET.match(t)]
        if bad:
            raise ValueError(f"not host[:port]: {', '.join(map(repr, bad))}")
        return v

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: dict[str, str | int | float]) -> dict[str, str | int | float]:
        for key, value in v.items():
            if not _OPTION.match(key):
                raise ValueError(f"{key!r} is not a driver option name")
            if key in MANAGED:
                raise ValueError(f"{key} is set by vbench (phases, targets); leave it out")
            if isinstance(value, str) and has_control(value):
                raise ValueError(f"{key}: control characters are not allowed")
        return v


def minutes(seconds: float) -> str:
    """DVD Store takes minutes; whole minutes print as integers (``1``, not ``1.0``).
    Six significant digits: four made a two-hour steady state of 7510 s 7512 s."""
    m = seconds / 60
    return str(int(m)) if m.is_integer() else f"{m:.6g}"


def driver_argv(p: DvdStoreParams, target: str, warmup: float, steady: float) -> list[str]:
    """One instance's command: every option a separate ``--name=value`` argument."""
    opts: dict[str, object] = {
        "target": target, "n_threads": p.n_threads, "run_time": minutes(steady),
        "warmup_time": minutes(warmup),
    }
    for name in ("ramp_rate", "think_time", "db_size", "pct_newcustomers", "pct_newmember",
                 "n_searches", "search_batch_size", "n_line_items", "n_reviews",
                 "pct_newreviews", "pct_newhelpfulness", "virt_dir", "page_type", "log_freq"):
        value = getattr(p, name)
        if value is not None:
            opts[name] = f"{value:g}" if isinstance(value, float) else value
    for name in ("detailed_view", "ds2_mode"):
        value = getattr(p, name)
        if value is not None:
            opts[name] = "Y" if value else "N"
    opts.update(p.extra)
    return [*p.command, *(f"--{k}={v}" for k, v in opts.items())]


def findings(p: DvdStoreParams) -> list[Finding]:
    out = []
    exe = p.command[-1].lower()
    if exe.endswith(".exe") and p.command[0] not in ("mono", "wine") and len(p.command) == 1:
        out.append(Finding("warning", "command", (
            "a .exe outside Windows needs mono: command: [mono, …/ds3webdriver.exe]")))
    return out

