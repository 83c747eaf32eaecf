"""The ``fio`` workload driver: storage I/O in every guest of the ``target`` role.

Per trial and guest, everything lives in one directory
``<workdir>/<run_id>/fio-<guest>-p<point>-t<trial>/`` (guest name included because
several loopback guests may share one filesystem): the job files, fio's JSON and
log, and — unless ``filename`` names a device or file — the data file itself.
Teardown removes that directory and nothing else.

Parameters, pitfall checks and job-file rendering are in :mod:`.jobs`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from vbench.analysis.catalogue import Better, Metric, metric, same_unit
from vbench.errors import GuestError, Interrupted, ParseError, VbenchError
from vbench.lazy import lazy_module
from vbench.parsers.fio_metrics import DIRECTIONS, PERCENTILES, UNITS
from vbench.workloads.base import (
    Finding,
    PlannedCommand,
    PlannedGuest,
    TrialContext,
    Workload,
    register,
)
from vbench.workloads.fio import disks as fio_disks
from vbench.workloads.fio import jobs as fio_jobs
from vbench.workloads.fio import pitfalls as fio_pitfalls
from vbench.workloads.fio import precondition as fio_precondition
from vbench.workloads.fio.jobs import FioParams

if TYPE_CHECKING:
    from vbench.analysis import warmup as warmup_rule
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.parsers import fio as fio_parser
    from vbench.parsers.fio import FioResult
    from vbench.results.records import Sample
    from vbench.workloads import guest_trial
    from vbench.workloads.fio import warmup as fio_warmup
else:  # imported at first use: a trial's (fio's output parsed; `phases.warmup: auto`), not
    # validate's or plan's, which read the catalogue's names and units only
    warmup_rule = lazy_module("vbench.analysis.warmup")
    fio_warmup = lazy_module("vbench.workloads.fio.warmup")
    fio_parser = lazy_module("vbench.parsers.fio")
    guest_trial = lazy_module("vbench.workloads.guest_trial")

ROLE = "target"
DATA_FILE = "fio.data"
MEASURE_JOB = "measure.fio"
PREPARE_JOB = "prepare.fio"
RESULT = "fio.json"
LOG = "fio.log"
PREPARE_RESULT = "prepare.json"
PREPARE_LOG = "prepare.log"
# fio stops on its own after ramp_time + runtime; allow for start-up and file set-up.
GRACE_SECONDS = 120.0
T = TypeVar("T")

# Directions of the per-job figures that are not latencies (those are lower-is-better);
# the bytes, I/Os and runtime of a job follow from its size or time limit: context.
_BETTER: dict[str, Better] = {"iops": "higher", "bw": "higher", "io_bytes": "none",
                              "ios": "none", "runtime": "none"}  # fmt: skip
# A job's rate limit caps its IOPS and with them its bandwidth.
_RATE = ("rate_iops",)
_CAPPED = {"iops": _RATE, "bw": _RATE}

METRICS: tuple[Metric, ...] = (
    # Per job, guest and trial (drivers/fio/README.md#metrics).
    *(metric(f"<direction>_{name}", unit, _BETTER.get(name, "lower"),
             capped_by=_CAPPED.get(name, ()), direction=DIRECTIONS)
      for name, unit in UNITS.items()),
    *same_unit(("<direction>_lat_mean_median", "<direction>_clat_mean_median",
              *(f"<direction>_{p}_max" for p in PERCENTILES)), "ms", "lower",
               direction=DIRECTIONS),
    metric("total_iops", UNITS["iops"], "higher", capped_by=_RATE),
    metric("total_bw", UNITS["bw"], "higher", capped_by=_RATE),
    # From the per-second logs (per_second_logs: true).
    *same_unit(("iops_ts_mean", "iops_ts_min", "iops_ts_max"), "1/s", "higher",
               capped_by=_RATE),
    metric("iops_ts_cv", "ratio", "lower"),  # the rate's variability over the seconds
    metric("ts_seconds", "s", "none"),
    metric("<direction>_lat_ts_mean", "ms", "lower", direction=("read", "write")),
)  # fmt: skip


def fio_argv(result: str, jobfile: str) -> list[str]:
    return ["fio", "--output-format=json", "--output", result, jobfile]


def guest_dir(workdir: str, run_id: str, guest: str, point: int, trial: int) -> str:
    """The per-guest, per-trial directory (removed at teardown)."""
    return guest_trial.trial_dir(workdir, run_id, "fio", guest, point, trial)


READ_ONLY = ("read", "randread")
WRITE_ONLY = ("write", "randwrite")


@register
class FioWorkload(Workload):
    """fio on every target guest at once; one JSON result per guest."""

    name: ClassVar[str] = "fio"
    docs: ClassVar[tuple[str, ...]] = ("drivers/fio/README.md",)
    Params: ClassVar[type[FioParams]] = FioParams
    roles: ClassVar[tuple[str, ...]] = (ROLE,)
    required_tools: ClassVar[dict[str, tuple[str, ...]]] = {ROLE: ("fio",)}
    headline_metrics: ClassVar[tuple[str, ...]] = (
        # Completion latency throughout: clat mean beside clat p99, never lat (submission +
        # completion) beside a clat percentile, which can put p99 under the "mean".
        # Per-trial percentiles exist only for one guest; the worst guest's p99 always does.
        "total_iops", "total_bw", "read_clat_mean", "write_clat_mean",
        "read_clat_p99_max", "write_clat_p99_max",
    )

    metrics: ClassVar[tuple[Metric, ...]] = METRICS
    auto_warmup: ClassVar[bool] = True  # phases.warmup: auto (vbench/workloads/fio/warmup.py)

    params: FioParams

    def __init__(self, params: FioParams) -> None:
        super().__init__(params)
        self._procs: dict[str, RemoteProcess] = {}
        # Controller time of this trial's steady window: trims the per-second logs when
        # fio's own window (its JSON's time stamp and runtime) is not known.
        self._window: tuple[float | None, float | None] = (None, None)

    @classmethod
    def findings(cls, params: FioParams) -> list[Finding]:  # type: ignore[override]
        return fio_pitfalls.findings(params)

    @classmethod
    def factor_findings(  # type: ignore[override]
        cls, params: FioParams, varied: Mapping[str, str]
    ) -> list[Finding]:
        """iodepth with a synchronous engine, numjobs under a per-job rate cap."""
        from vbench.workloads.fio.semantics import factor_findings

        return factor_findings(params, varied)

    @classmethod
    def headline_for(cls, params: FioParams) -> tuple[str, ...]:  # type: ignore[override]
        """A read-only job leads with no write figure, a write-only one with no read
        figure (fio reports them as zero-I/O sections); a user's job file may do anything,
        so it keeps both."""
        if params.job_file is None and params.rw in READ_ONLY:
            return tuple(m for m in cls.headline_metrics if not m.startswith("write_"))
        if params.job_file is None and params.rw in WRITE_ONLY:
            return tuple(m for m in cls.headline_metrics if not m.startswith("read_"))
        return cls.headline_metrics

    @classmethod
    def guest_findings(  # type: ignore[override]
        cls, params: FioParams, guests: Mapping[str, Sequence[PlannedGuest]]
    ) -> list[Finding]:
        refs = fio_disks.disk_refs(params.filename)
        for guest in guests.get(ROLE, ()) if refs else ():
            why = fio_disks.plan_problem(refs, guest)
            if why:  # one line: the first guest that cannot have the disks
                return [Finding("error", "filename", why)]
        return []

    # ------------------------------------------------------------------ planning

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        d = "<workdir>/<run_id>/fio-<guest>-p<point>-t<trial>"
        cmds: list[PlannedCommand] = []
        if self.params.needs_prepare():
            cmds.append(PlannedCommand(
                ROLE, "prepare", tuple(fio_argv(f"{d}/{PREPARE_RESULT}", f"{d}/{PREPARE_JOB}")),
                files=(PREPARE_JOB,)))
        elif self.params.needs_layout():
            cmds.append(PlannedCommand(
                ROLE, "prepare", tuple(fio_argv(f"{d}/{PREPARE_RESULT}", f"{d}/{PREPARE_JOB}")),
                files=(PREPARE_JOB,)))  # layout only: creates the data file
        cmds.append(PlannedCommand(
            ROLE, "run", tuple(fio_argv(f"{d}/{RESULT}", f"{d}/{MEASURE_JOB}")),
            files=(MEASURE_JOB,), background=True))
        cmds.append(PlannedCommand(ROLE, "collect", ("get", f"{d}/{RESULT}")))
        cmds.append(PlannedCommand(ROLE, "teardown", ("rm", "-rf", d)))
        return cmds

    def planned_auto_warmup(self, cap: float) -> list[PlannedCommand]:
        d = "<workdir>/<run_id>/fio-<guest>-p<point>-t<trial>"
        argv = fio_warmup.status_argv(f"{d}/{fio_warmup.RESULT}", f"{d}/{fio_warmup.JOB}",
                                      warmup_rule.observation_interval(cap))
        return [PlannedCommand(ROLE, "warm-up", tuple(argv), files=(fio_warmup.JOB,),
                               background=True)]

    # ------------------------------------------------------------------ prepare

    def prepare(self, ctx: TrialContext) -> None:
        guests = self._guests(ctx)
        user_job = self._read_user_job()
        self._fan_out(ctx, guests, lambda g: self._push(ctx, g, user_job))
        if self.params.needs_prepare() or self.params.needs_layout():
            self._run_prepare(ctx, guests)
        if fio_precondition.applies(self.params, ctx.point, ctx.trial):
            self._run_precondition(ctx, guests)

    def _guests(self, ctx: TrialContext) -> Sequence[Guest]:
        guests = ctx.guests.get(ROLE, ())
        if not guests:
            raise GuestError(ROLE, "the fio workload needs at least one guest in role 'target'")
        return guests

    def _read_user_job(self) -> str | None:
        if self.params.job_file is None:
            return None
        path = Path(self.params.job_file).expanduser()
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GuestError("controller", f"cannot read fio job file {path}: {exc}") from exc

    def _push(self, ctx: TrialContext, guest: Guest, user_job: str | None) -> None:
        # A trial's own modules, imported when one runs: validate and plan never need them.
        from vbench.workloads.fio import logs as fio_logs
        from vbench.workloads.fio import target as fio_target

        if guest.which("fio") is None:
            raise GuestError(guest.name, "fio not found in PATH (install the fio package)")
        version = guest.run(["fio", "--version"], timeout=30, check=False)
        ctx.log("fio_version", guest=guest.name, version=version.stdout.strip())
        d = self._dir(ctx, guest)
        guest.mkdir(d)
        target = f"{d}/{DATA_FILE}"
        if self.params.filename is not None:  # a named target: make sure it is the right one
            paths = self._named_target(ctx, guest)
            fio_target.check(guest, paths,
                             fio_target.job_writes(self.params.rw, self.params.needs_prepare()))
            target = fio_disks.join_paths(paths)
        header = f"run {ctx.run_id}, point {ctx.point}, trial {ctx.trial}, guest {guest.name}"
        # warmup: auto: the warm-up is a fio of its own (runtime: past the cap, stopped by
        # the detector) and the measured job has no ramp (vbench/workloads/fio/warmup.py).
        ramp = 0.0 if ctx.auto_warmup else ctx.warmup
        if user_job is not None:
            measure = fio_jobs.adapt_user_job(user_job, ramp, ctx.steady, d, header=header,
                                              allow_exec=self.params.allow_exec,
                                              no_ramp=ctx.auto_warmup)
        else:
            measure = fio_jobs.render_measure(
                self.params, ramp, ctx.steady, target, header=header,
                log_prefix=f"{d}/{fio_logs.PREFIX}")
        guest.put_text(measure, f"{d}/{MEASURE_JOB}")
        if ctx.auto_warmup:
            warm = (fio_jobs.adapt_user_job(user_job, 0.0, ctx.warmup + GRACE_SECONDS, d,
                                            header=header, allow_exec=self.params.allow_exec,
                                            no_ramp=True)
                    if user_job is not None else fio_jobs.render_measure(
                        self.params.model_copy(update={"per_second_logs": False}), 0.0,
                        ctx.warmup + GRACE_SECONDS, target, header=header))
            guest.put_text(warm, f"{d}/{fio_warmup.JOB}")
        if fio_precondition.applies(self.params, ctx.point, ctx.trial):
            guest.put_text(fio_precondition.render(self.params, target, header=header),
                           f"{d}/{fio_precondition.JOB}")
        if self.params.needs_prepare():
            guest.put_text(fio_jobs.render_prepare(self.params, target, header=header),
                           f"{d}/{PREPARE_JOB}")
        elif self.params.needs_layout():
            guest.put_text(fio_jobs.render_layout(self.params, target, header=header),
                           f"{d}/{PREPARE_JOB}")

    def _named_target(self, ctx: TrialContext, guest: Guest) -> list[str]:
        """The paths of ``filename`` in this guest, each ``disk:N`` resolved to its device
        (logged: which disk became which device, through which uuid)."""
        assert self.params.filename is not None
        entries = fio_disks.split_entries(self.params.filename)
        paths, resolved = fio_disks.resolve_in(guest, entries)
        if resolved:
            ctx.log("fio_disks", guest=guest.name, disks=[r.to_json() for r in resolved])
        return paths

    def _run_prepare(self, ctx: TrialContext, guests: Sequence[Guest]) -> None:
        """Fill (or lay out) the target on every guest at once; not measured."""
        kind = "prepare" if self.params.needs_prepare() else "layout"
        started = time.time()
        procs = {}
        for g in guests:
            d = self._dir(ctx, g)
            procs[g.name] = g.start(
                fio_argv(f"{d}/{PREPARE_RESULT}", f"{d}/{PREPARE_JOB}"), log=f"{d}/{PREPARE_LOG}")
            self._procs[g.name] = procs[g.name]
        for g in guests:
            self._wait(ctx, g, procs[g.name], None, f"fio {kind} job")
            self._procs.pop(g.name, None)
        ctx.log("fio_prepare", kind=kind, seconds=round(time.time() - started, 3),
                guests=len(guests))

    def _run_precondition(self, ctx: TrialContext, guests: Sequence[Guest]) -> None:
        """Write the named target whole ``passes`` times on every guest at once (SNIA
        PTS preconditioning, before the run's first trial); not measured."""
        pc = self.params.precondition
        assert pc is not None
        started = time.time()
        procs = {}
        for g in guests:
            d = self._dir(ctx, g)
            procs[g.name] = g.start(
                fio_argv(f"{d}/{fio_precondition.RESULT}", f"{d}/{fio_precondition.JOB}"),
                log=f"{d}/{fio_precondition.LOG}")
            self._procs[g.name] = procs[g.name]
        for g in guests:
            self._wait(ctx, g, procs[g.name], None, "fio precondition job")
            self._procs.pop(g.name, None)
        ctx.log("fio_precondition", rw=pc.rw, bs=pc.bs, passes=pc.passes,
                seconds=round(time.time() - started, 3), guests=len(guests))

    # ------------------------------------------------------------------ run

    def run(self, ctx: TrialContext) -> None:
        guests = self._guests(ctx)
        if ctx.auto_warmup:
            self._auto_warmup(ctx, guests)
        for g in guests:
            d = self._dir(ctx, g)
            self._procs[g.name] = g.start(
                fio_argv(f"{d}/{RESULT}", f"{d}/{MEASURE_JOB}"), log=f"{d}/{LOG}")
        started = time.monotonic()
        ramp = 0.0 if ctx.auto_warmup else ctx.warmup  # the measured job's own warm-up
        if not ctx.auto_warmup:
            ctx.mark("warmup_start")
            if ctx.warmup > 0 and ctx.cancel.wait(ctx.warmup):
                self._kill_all()
                raise Interrupted("fio run interrupted during warm-up")
        ctx.mark("steady_start")
        steady_start = time.time()
        self._window = (steady_start, None)
        deadline = started + ramp + ctx.steady + GRACE_SECONDS
        for g in guests:
            self._wait(ctx, g, self._procs[g.name], deadline, "fio")
        ctx.mark("steady_end")
        # fio's runtime ends the steady state, not the last guest's exit seen here.
        self._window = (steady_start, min(time.time(), steady_start + ctx.steady))
        self._procs.clear()

    def _auto_warmup(self, ctx: TrialContext, guests: Sequence[Guest]) -> None:
        """``phases.warmup: auto``: a warm-up fio per guest, stopped when the detector
        says the throughput settled, or at the cap (vbench/workloads/fio/warmup.py)."""
        for g in guests:
            d = self._dir(ctx, g)
            self._procs[g.name] = g.start(
                fio_warmup.status_argv(f"{d}/{fio_warmup.RESULT}", f"{d}/{fio_warmup.JOB}",
                                       warmup_rule.observation_interval(ctx.warmup)),
                log=f"{d}/{fio_warmup.LOG}")
        ctx.mark("warmup_start")
        fio_warmup.run_warmup(ctx, guests, self._procs, lambda g: self._dir(ctx, g),
                              self._kill_all)
        self._kill_all()  # the warm-up fio: the measured one starts now

    def _wait(
        self, ctx: TrialContext, guest: Guest, proc: RemoteProcess,
        deadline: float | None, what: str,
    ) -> None:
        guest_trial.wait_exit(proc, guest.name, what, deadline, ctx.cancel, self._kill_all)

    def _kill_all(self) -> None:
        guest_trial.stop_all(self._procs.values())
        self._procs.clear()

    # ------------------------------------------------------------------ collect

    def collect(self, ctx: TrialContext) -> list[Sample]:
        guests = self._guests(ctx)
        results = dict(zip(
            (g.name for g in guests), self._fan_out(ctx, guests, lambda g: self._fetch(ctx, g)),
            strict=True,
        ))
        samples: list[Sample] = []
        for g in guests:
            samples += fio_parser.guest_samples(results[g.name], g.name)
        samples += fio_parser.aggregate_guests(results)
        offsets = dict(zip((g.name for g in guests),
                           self._fan_out(ctx, guests, lambda g: g.clock_offset(rounds=3)[0]),
                           strict=True))
        windows = self._fio_windows(ctx, results, offsets)
        if self.params.per_second_logs and self.params.job_file is None:
            per_second = self._fan_out(ctx, guests, lambda g: self._per_second(
                ctx, g, offsets[g.name], windows.get(g.name, self._window)))
            for more in per_second:
                samples += more
        return samples

    @staticmethod
    def _fio_windows(
        ctx: TrialContext, results: Mapping[str, FioResult], offsets: Mapping[str, float]
    ) -> dict[str, tuple[float, float]]:
        """Each guest's window as fio measured it (its runtime, ending at its output time
        stamp), in controller time. The trial's window lasts what fio measured (the
        longest guest's runtime) from the first guest's start; how far apart the guests
        started (they are started one after the other) goes to the run log. Without
        fio's own times the controller's marks stay."""
        windows = {}
        for name, result in results.items():
            own = fio_parser.measured_window(result)
            if own is not None:
                windows[name] = (own[0] - offsets[name], own[1] - offsets[name])
        if windows and len(windows) == len(results):
            starts = [s for s, _ in windows.values()]
            longest = max(e - s for s, e in windows.values())
            ctx.workload_window(min(starts), min(starts) + longest)
            ctx.log("fio_window", seconds=round(longest, 6),
                    start_spread=round(max(starts) - min(starts), 6), guests=len(windows))
        return windows

    def _per_second(
        self, ctx: TrialContext, guest: Guest, offset: float,
        window: tuple[float | None, float | None],
    ) -> list[Sample]:
        """Fetch the guest's per-second logs, keep them whole as a series file, and
        return the figures of the steady window (fio's own for this guest)."""
        from vbench.results.collected import SERIES_DIR, safe_name
        from vbench.workloads.fio import logs as fio_logs

        d = self._dir(ctx, guest)
        listing = guest.run(["ls", "-1", "--", d], timeout=60).stdout.splitlines()
        files = fio_logs.log_files(listing)
        if not files:
            raise GuestError(guest.name, f"fio wrote no per-second logs in {d}")
        logs = {}
        for name, kind, job in files:
            rows = fio_logs.parse_log(guest.read_text(f"{d}/{name}"), kind, f"{guest.name}:{name}")
            # Guest clock -> controller clock, as for every other series of the run.
            logs[kind, job] = [fio_logs.LogRow(r.time - offset, r.value, r.direction)
                               for r in rows]  # fmt: skip
        frame = fio_logs.series_frame(guest.name, logs)
        fio_logs.write_guest_series(
            ctx.raw_path(guest.name, fio_logs.SERIES_FILE), frame, guest=guest.name,
            point=ctx.point, trial=ctx.trial, window=window, clock_offset=offset,
        )
        # raw/<p>-<t>/ -> series/<p>-<t>/fio/<guest>.parquet: the report's time series.
        charted = ctx.raw_dir.parents[1] / SERIES_DIR / ctx.raw_dir.name / "fio" / safe_name(
            f"{guest.name}.parquet")
        fio_logs.write_guest_series(
            charted, fio_logs.per_second_frame(frame, guest.name), guest=guest.name,
            point=ctx.point, trial=ctx.trial, window=window, clock_offset=offset,
        )
        return fio_logs.window_samples(fio_logs.trim(frame, *window), guest.name)

    def _fetch(self, ctx: TrialContext, guest: Guest) -> FioResult:
        d = self._dir(ctx, guest)
        local = ctx.raw_path(guest.name, RESULT)
        try:
            guest.get(f"{d}/{RESULT}", local)
        except OSError as exc:
            raise GuestError(guest.name, f"cannot fetch {d}/{RESULT}: {exc}") from exc
        for name in (LOG, MEASURE_JOB):  # kept beside the result for a reviewer
            # The JSON is what counts; a missing log does not fail the trial.
            with contextlib.suppress(VbenchError, OSError):
                guest.get(f"{d}/{name}", ctx.raw_path(guest.name, name))
        text = local.read_text(encoding="utf-8", errors="replace")
        try:
            result = fio_parser.parse_fio_json(text, source=f"{guest.name}:{d}/{RESULT}")
        except ParseError as exc:
            raise GuestError(guest.name, f"unreadable fio output: {exc}") from exc
        if result.errors:
            raise GuestError(guest.name, result.error_message())
        if not result.jobs:
            raise GuestError(guest.name, f"fio reported no jobs in {d}/{RESULT}")
        return result

    # ------------------------------------------------------------------ teardown

    def teardown(self, ctx: TrialContext) -> None:
        self._kill_all()
        # The data file is inside this directory unless the user named one, and a
        # user-named file is never removed.
        guest_trial.remove_trial_dirs(ctx.guests.get(ROLE, ()), lambda g: self._dir(ctx, g))

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _dir(ctx: TrialContext, guest: Guest) -> str:
        return guest_dir(str(guest.spec.workdir), ctx.run_id, guest.name, ctx.point, ctx.trial)

    @staticmethod
    def _fan_out(
        ctx: TrialContext, guests: Sequence[Guest], fn: Callable[[Guest], T]
    ) -> list[T]:
        if len(guests) == 1:
            return [fn(guests[0])]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(ctx.max_parallel, len(guests)))) as ex:
            return list(ex.map(fn, guests))
