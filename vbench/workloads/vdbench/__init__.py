"""The ``vdbench`` workload driver: a user's vdbench parameter file, run as written in
every guest of the ``target`` role (what HCIBench users bring with them).

Per trial and guest everything lives in ``<workdir>/<run_id>/vdbench-<guest>-p<point>-t<trial>/``:
the parameter file and vdbench's output directory ``output/``. vdbench's own
``elapsed=``/``warmup=`` decide how long each run definition lasts, and its averages
(the ``avg_…`` rows) already leave its warm-up intervals out; the scenario's phases only
bound the trial (warm-up + steady + a grace period before it is stopped as hung). The
figures are read from ``flatfile.html`` (see :mod:`vbench.parsers.vdbench`); the output
files are kept under ``raw/<point>-<trial>/<guest>/``.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator

from vbench.analysis.catalogue import Better, Metric, metric
from vbench.errors import GuestError, ParseError, VbenchError
from vbench.parsers.vdbench import FIGURES, parse_flatfile, samples
from vbench.results.records import Sample
from vbench.workloads import guest_trial
from vbench.workloads.base import (
    Finding,
    Params,
    PlannedCommand,
    TrialContext,
    Workload,
    register,
)

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess

ROLE = "target"
PARMFILE = "parmfile"
OUTPUT = "output"
KEPT = ("flatfile.html", "totals.html", "summary.html", "logfile.html", "errorlog.html")
GRACE_SECONDS = 300.0


class VdbenchParams(Params):
    """Parameters of the ``vdbench`` workload."""

    parmfile: str = Field(description="your vdbench parameter file (path on the controller)")
    command: str = Field(
        "vdbench", description="vdbench in the guest: a name in PATH or an absolute path"
    )

    @field_validator("command")
    @classmethod
    def _command(cls, v: str) -> str:
        if not v or any(c.isspace() for c in v) or v.startswith("-"):
            raise ValueError("a command name or path, without spaces")
        return v


def vdbench_argv(command: str, d: str) -> list[str]:
    return [command, "-f", f"{d}/{PARMFILE}", "-o", f"{d}/{OUTPUT}"]

# The read share, queue depth and CPU of a run definition are its setting or its cost.
_BETTER: dict[str, Better] = {
    "iops": "higher", "mb_per_sec": "higher", "resp": "lower", "read_resp": "lower",
    "write_resp": "lower", "resp_max": "lower", "resp_std": "lower", "read_pct": "none",
    "queue_depth": "none", "read_rate": "higher", "write_rate": "higher", "cpu_used": "none"}


@register
class VdbenchWorkload(Workload):
    """vdbench with the user's parameter file on every target guest at once."""

    name: ClassVar[str] = "vdbench"
    docs: ClassVar[tuple[str, ...]] = ("drivers/vdbench/README.md",)
    Params: ClassVar[type[VdbenchParams]] = VdbenchParams
    roles: ClassVar[tuple[str, ...]] = (ROLE,)
    headline_metrics: ClassVar[tuple[str, ...]] = ("total_iops", "resp", "total_mb_per_sec")
    metrics: ClassVar[tuple[Metric, ...]] = (
        *(metric(name, unit, _BETTER[name]) for name, _column, unit in FIGURES),
        metric("total_iops", "1/s", "higher"), metric("total_mb_per_sec", "MiB/s", "higher"),
        metric("resp_median", "ms", "lower"),
    )  # fmt: skip

    params: VdbenchParams

    def __init__(self, params: VdbenchParams) -> None:
        super().__init__(params)
        self._procs: dict[str, RemoteProcess] = {}

    @classmethod
    def findings(cls, params: VdbenchParams) -> list[Finding]:  # type: ignore[override]
        # A missing parameter file would fail every trial (exit 3): validate says it.
        path = Path(params.parmfile).expanduser()
        try:
            if not path.is_file():
                return [Finding("error", "parmfile", f"no such file on the controller: {path}"
                                + (" (a relative path is read from the current folder)"
                                   if not path.is_absolute() else ""))]
            path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return [Finding("error", "parmfile", f"cannot read {str(path)[:80]}: "
                            f"{getattr(exc, 'strerror', None) or exc}")]
        return []

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        d = "<workdir>/<run_id>/vdbench-<guest>-p<point>-t<trial>"
        return [
            PlannedCommand(ROLE, "run", tuple(vdbench_argv(self.params.command, d)),
                           files=(PARMFILE,), background=True),
            PlannedCommand(ROLE, "collect", ("get", f"{d}/{OUTPUT}/flatfile.html")),
            PlannedCommand(ROLE, "teardown", ("rm", "-rf", d)),
        ]  # fmt: skip

    # ------------------------------------------------------------------ prepare / run

    def prepare(self, ctx: TrialContext) -> None:
        path = Path(self.params.parmfile).expanduser()
        try:
            parm = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GuestError(
                "controller", f"cannot read vdbench parameter file {path}: {exc}"
            ) from exc
        for g in self._guests(ctx):
            if g.which(self.params.command) is None:
                raise GuestError(g.name, f"{self.params.command} not found (install vdbench "
                                 "and Java, or give its path in workload.params.command)")
            d = self._dir(ctx, g)
            g.mkdir(d)
            g.put_text(parm, f"{d}/{PARMFILE}")

    def run(self, ctx: TrialContext) -> None:
        guests = self._guests(ctx)
        for g in guests:
            d = self._dir(ctx, g)
            self._procs[g.name] = g.start(vdbench_argv(self.params.command, d),
                                          log=f"{d}/vdbench.log", cwd=d)  # fmt: skip
        # vdbench runs its own warm-up and leaves it out of its averages.
        ctx.mark("warmup_start")
        ctx.mark("steady_start")
        deadline = time.monotonic() + ctx.warmup + ctx.steady + GRACE_SECONDS
        for g in guests:
            guest_trial.wait_exit(self._procs[g.name], g.name, "vdbench", deadline, ctx.cancel,
                                  self._kill_all)
        ctx.mark("steady_end")
        self._procs.clear()

    # ------------------------------------------------------------------ collect

    def collect(self, ctx: TrialContext) -> list[Sample]:
        per_guest: dict[str, list[Sample]] = {}
        for g in self._guests(ctx):
            d = f"{self._dir(ctx, g)}/{OUTPUT}"
            for name in KEPT:  # what a reviewer opens; only the flatfile is required
                with contextlib.suppress(VbenchError, OSError):
                    g.get(f"{d}/{name}", ctx.raw_path(g.name, name))
            local = ctx.raw_path(g.name, "flatfile.html")
            if not local.exists():
                raise GuestError(g.name, f"vdbench wrote no {d}/flatfile.html")
            try:
                rows = parse_flatfile(local.read_text(encoding="utf-8", errors="replace"),
                                      f"{g.name}:{d}/flatfile.html")  # fmt: skip
            except ParseError as exc:
                raise GuestError(g.name, f"unreadable vdbench output: {exc}") from exc
            per_guest[g.name] = samples(rows, g.name)
            if not per_guest[g.name]:
                raise GuestError(g.name, "vdbench finished no run definition (no avg rows)")
        return [s for ss in per_guest.values() for s in ss] + combine_guests(per_guest)

    # ------------------------------------------------------------------ teardown

    def teardown(self, ctx: TrialContext) -> None:
        self._kill_all()
        guest_trial.remove_trial_dirs(ctx.guests.get(ROLE, ()), lambda g: self._dir(ctx, g))

    # ------------------------------------------------------------------ helpers

    def _guests(self, ctx: TrialContext) -> Sequence[Guest]:
        guests = ctx.guests.get(ROLE, ())
        if not guests:
            raise GuestError(ROLE, "the vdbench workload needs at least one guest in 'target'")
        return guests

    @staticmethod
    def _dir(ctx: TrialContext, guest: Guest) -> str:
        return guest_trial.guest_trial_dir(ctx, guest, "vdbench")

    def _kill_all(self) -> None:
        guest_trial.stop_all(self._procs.values())
        self._procs.clear()


def combine_guests(per_guest: dict[str, list[Sample]]) -> list[Sample]:
    """Trial-level figures per run definition: IOPS and MiB/s summed over the guests,
    the response time weighted by each guest's IOPS, and the median across guests of
    their mean response time. A figure missing on any guest stays missing."""
    out: list[Sample] = []
    by_rd: dict[tuple[tuple[str, str], ...], dict[str, dict[str, float | None]]] = {}
    for guest, ss in per_guest.items():
        for s in ss:
            by_rd.setdefault(s.labels, {}).setdefault(guest, {})[s.metric] = s.value
    for labels, guests in by_rd.items():
        rows = list(guests.values())
        iops = [r.get("iops") for r in rows]
        mbps = [r.get("mb_per_sec") for r in rows]
        resp = [r.get("resp") for r in rows]
        complete = all(v is not None for v in iops + resp)
        total = sum(v for v in iops if v is not None) if None not in iops else None
        out.append(Sample("total_iops", total, "1/s", "vdbench", None, labels))
        out.append(Sample("total_mb_per_sec",
                          sum(v for v in mbps if v is not None) if None not in mbps else None,
                          "MiB/s", "vdbench", None, labels))  # fmt: skip
        weighted = (sum(i * r for i, r in zip(iops, resp, strict=True)) / total  # type: ignore[operator]
                    if complete and total else None)  # fmt: skip
        out.append(Sample("resp", weighted, "ms", "vdbench", None, labels))
        median = statistics.median(resp) if None not in resp else None  # type: ignore[type-var]
        out.append(Sample("resp_median", median, "ms", "vdbench", None, labels))
    return out
