"""The ``faban`` workload driver: the user's real Faban driver, its results imported.

For web-tier studies run with Faban (CloudStone/Olio, CloudSuite's web serving), vbench
runs the user's Faban driver command in every guest of the ``clients`` role (one
instance per guest: N client/server pairs are N client guests), with a copy of the
user's run configuration in which it wrote the scenario's phases (``fa:runControl``:
rampUp = warmup, steadyState = steady, rampDown = cooldown, in seconds), the users
(``fa:scale``) and the trial's own output folder. When the command has exited, vbench
fetches what Faban left there — ``summary.xml``, ``detail.xan`` and ``driver.log``
(:mod:`vbench.parsers.faban`) — or, without a summary file, the summary printed in the
command's console output, and turns them into samples named as the ``cloudstone``
driver names them (:mod:`.figures`).

Faban's own verdict is kept as ``faban_passed`` (and ``op_passed`` per operation); a
summary that says ``passed=true`` although no operation was measured fails the trial
with that reason, its figures kept. The steady window is Faban's own when its clock and
the controller's agree (within the run's span); otherwise the controller's marks stand
and the run log says why.

Faban cannot run in vbench's own test lab: the driver is tested with a stand-in that
replays a real recorded Faban run (``tests/tools/faban_replay.py``).

User documentation: ``drivers/faban/README.md``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from vbench.analysis.catalogue import Metric
from vbench.config.localfiles import shown_path
from vbench.errors import ConfigError, GuestError, Interrupted, ParseError, VbenchError
from vbench.parsers.faban import FabanRun, import_run
from vbench.results.records import Sample
from vbench.workloads import guest_trial
from vbench.workloads.base import Finding, PlannedCommand, TrialContext, Workload, register
from vbench.workloads.faban import figures
from vbench.workloads.faban.params import FabanParams, driver_argv
from vbench.workloads.faban.runconfig import RunConfigError, RunShape, rewrite

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess

CLIENTS = "clients"
POLL_SECONDS = 0.5
_FILES = ("summary.xml", "detail.xan", "driver.log")
_TIME_FORMATS = ("%a %b %d %H:%M:%S %Z %Y",)


class Instance:
    def __init__(self, index: int, guest: Guest, folder: str) -> None:
        self.index, self.guest, self.folder = index, guest, folder
        self.proc: RemoteProcess | None = None
        self.started: float | None = None

    @property
    def output(self) -> str:
        return f"{self.folder}/output"

    @property
    def console(self) -> str:
        return f"{self.folder}/console.log"


@register
class FabanWorkload(Workload):
    name: ClassVar[str] = "faban"
    docs: ClassVar[tuple[str, ...]] = ("drivers/faban/README.md",)
    Params: ClassVar[type[FabanParams]] = FabanParams
    roles: ClassVar[tuple[str, ...]] = (CLIENTS,)
    headline_metrics: ClassVar[tuple[str, ...]] = ("ops_per_sec", "rt_avg", "rt_p95",
                                                   "faban_passed")  # fmt: skip
    metrics: ClassVar[tuple[Metric, ...]] = figures.METRICS

    params: FabanParams

    def __init__(self, params: FabanParams) -> None:
        super().__init__(params)
        self._instances: list[Instance] = []
        self._shape: RunShape | None = None
        self._samples: list[Sample] | None = None

    @classmethod
    def findings(cls, params: FabanParams) -> list[Finding]:  # type: ignore[override]
        if params.run_config is None:
            return [Finding("warning", "run_config", (
                "no run configuration: Faban runs with its own phases and users, which may "
                "not be the scenario's; the report keeps Faban's own steady state"))]
        path = Path(params.run_config)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:  # the name once, cut if very long
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            return [Finding("error", "run_config", f"cannot read {shown_path(path)}: {reason}")]
        phases = (0.0, 1.0, 0.0) if params.set_phases else None
        try:
            rewrite(text, output_dir="/", phases=phases, users=params.users, source=str(path))
        except RunConfigError as exc:
            return [Finding("error", "run_config", str(exc))]
        return []

    def tools(self) -> dict[str, tuple[str, ...]]:
        return {CLIENTS: (self.params.command[0],)}

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        d = "<workdir>/<run_id>/faban-<guest>-p<point>-t<trial>"
        config = f"{d}/run.xml" if self.params.run_config else None
        files = ("run.xml",) if config else ()
        return [
            PlannedCommand(CLIENTS, "run", tuple(driver_argv(self.params, config, f"{d}/output")),
                           files=files, background=True),
            PlannedCommand(CLIENTS, "collect", ("get", f"{d}/output/<run>/summary.xml")),
            PlannedCommand(CLIENTS, "teardown", ("rm", "-rf", d)),
        ]

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        return warmup + steady + cooldown + 30.0  # JVM and agents start-up, the report

    # ------------------------------------------------------------------ prepare

    def prepare(self, ctx: TrialContext) -> None:
        clients = list(ctx.guests.get(CLIENTS, ()))
        if not clients:
            raise GuestError(CLIENTS, "the faban workload needs a guest in role 'clients'")
        self._samples, self._instances = None, []
        text = self._config_text()
        for i, g in enumerate(clients):
            x = Instance(i, g, guest_trial.guest_trial_dir(ctx, g, "faban"))
            g.mkdir(x.output)
            if text is not None:
                phases = ((ctx.warmup, ctx.steady, ctx.cooldown) if self.params.set_phases
                          else None)  # fmt: skip
                try:
                    written, self._shape = rewrite(
                        text, output_dir=x.output, phases=phases, users=self.params.users,
                        source=str(self.params.run_config))
                except RunConfigError as exc:
                    raise ConfigError(str(exc)) from None
                g.put_text(written, f"{x.folder}/run.xml")
            self._instances.append(x)
        ctx.log("faban_instances", instances=[
            {"index": x.index, "guest": x.guest.name, "folder": x.folder}
            for x in self._instances])  # fmt: skip

    def _config_text(self) -> str | None:
        if self.params.run_config is None:
            return None
        try:
            return Path(self.params.run_config).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"faban run_config {self.params.run_config}: {exc}") from None

    # ------------------------------------------------------------------ run

    def run(self, ctx: TrialContext) -> None:
        for x in self._instances:
            config = f"{x.folder}/run.xml" if self.params.run_config else None
            x.proc = x.guest.start(driver_argv(self.params, config, x.output), log=x.console,
                                   cwd=x.folder)
            x.started = time.time()
        ctx.log("faban_started", pids={x.guest.name: x.proc.pid
                                       for x in self._instances if x.proc})
        ctx.mark("warmup_start")
        t0 = time.monotonic()
        self._watch_until(ctx, t0 + ctx.warmup)
        ctx.mark("steady_start")
        self._watch_until(ctx, t0 + ctx.warmup + ctx.steady)
        ctx.mark("steady_end")
        deadline = time.monotonic() + ctx.cooldown + self.params.grace
        for x in self._instances:
            assert x.proc is not None
            guest_trial.wait_exit(x.proc, x.guest.name, f"Faban driver on {x.guest.name}",
                                  deadline, ctx.cancel, self._kill_all)

    def _watch_until(self, ctx: TrialContext, until: float) -> None:
        """Until ``until`` (monotonic), failing at once when a driver exits non-zero."""
        while (left := until - time.monotonic()) > 0:
            for x in self._instances:
                assert x.proc is not None
                if x.proc.is_running():
                    continue
                rc = x.proc.wait(timeout=1.0)  # known by now (or GuestError: vanished)
                if rc not in (0, None):
                    tail = guest_trial.log_tail(x.proc)
                    self._kill_all()
                    raise GuestError(x.guest.name, f"Faban driver exited {rc}{tail}")
            if ctx.cancel.wait(min(POLL_SECONDS, left)):
                self._kill_all()
                raise Interrupted("Faban run interrupted")

    def _kill_all(self) -> None:
        guest_trial.stop_all(x.proc for x in self._instances if x.proc is not None)

    # ------------------------------------------------------------------ collect

    def collect(self, ctx: TrialContext) -> list[Sample]:
        if self._samples is not None:  # the runner salvaging after a failure we raised
            return self._samples
        runs: list[tuple[Instance, FabanRun]] = []
        lost: list[VbenchError] = []
        for x in self._instances:
            try:
                runs.append((x, self._fetch(ctx, x)))
            except VbenchError as exc:  # the other instances' figures are still good
                lost.append(exc)
        samples: list[Sample] = []
        for x, r in runs:
            samples += figures.instance_samples(x.index, x.guest.name, r)
        if runs:
            samples += figures.aggregate_samples([r for _, r in runs])
        self._samples = samples
        self._window(ctx, runs)
        for x, r in runs:
            if not r.passed:
                ctx.log("faban_failed", level="warning", guest=x.guest.name, reason=r.reason)
        empty = [(x, r) for x, r in runs if not any(d.total_ops for d in r.summary.drivers)]
        if lost:
            raise lost[0]  # fails the trial; the runner's salvage gets the samples above
        if empty:
            x, r = empty[0]
            raise GuestError(x.guest.name, f"Faban: {r.reason}")
        return samples

    def _fetch(self, ctx: TrialContext, x: Instance) -> FabanRun:
        g = x.guest
        texts: dict[str, str | None] = dict.fromkeys(_FILES)
        folder = self._run_folder(x)
        if folder is not None:
            for name in _FILES:
                local = ctx.raw_path(g.name, f"faban-{x.index}-{name}")
                try:
                    g.get(f"{folder}/{name}", local)
                except (OSError, VbenchError):
                    continue  # detail.xan and driver.log are optional
                texts[name] = local.read_text(encoding="utf-8", errors="replace")
        console = ctx.raw_path(g.name, f"faban-{x.index}-console.log")
        try:
            g.get(x.console, console)
        except (OSError, VbenchError) as exc:
            raise GuestError(g.name, f"cannot fetch {x.console}: {exc}") from exc
        summary = texts["summary.xml"]
        if summary is None:
            printed = console.read_text(encoding="utf-8", errors="replace")
            if "<benchResults" not in printed:
                raise GuestError(g.name, f"Faban left no summary.xml under {x.output} and "
                                 "printed none")
            summary = printed
        try:
            return import_run(summary, texts["detail.xan"], texts["driver.log"],
                              source=f"{g.name}:{folder or x.console}")
        except ParseError as exc:
            raise GuestError(g.name, f"unreadable Faban output: {exc}") from exc

    @staticmethod
    def _run_folder(x: Instance) -> str | None:
        """The newest folder under the output folder holding a summary.xml (Faban makes
        one folder per run, named by its run id)."""
        res = x.guest.run(["find", x.output, "-name", "summary.xml", "-type", "f",
                           "-printf", "%T@ %h\n"], check=False)  # fmt: skip
        found = sorted((float(t), h) for line in res.stdout.splitlines()
                       if len(parts := line.split(" ", 1)) == 2
                       for t, h in [parts])  # fmt: skip
        return found[-1][1] if found else None

    def _window(self, ctx: TrialContext, runs: list[tuple[Instance, FabanRun]]) -> None:
        """Faban's own steady window, when its clock can be trusted (see the module doc)."""
        spans = [faban_window(r, self._shape) for _, r in runs]
        starts = [x.started for x, _ in runs]
        if not spans or None in spans or None in starts:
            ctx.log("faban_window", level="info", kept="controller",
                    why="Faban's start time or steady length is not known")
            return
        lo = min(s[0] for s in spans if s is not None)
        hi = max(s[1] for s in spans if s is not None)
        began = min(t for t in starts if t is not None)
        if lo < began - 60 or hi > time.time() + 60:
            ctx.log("faban_window", level="warning", kept="controller",
                    why="Faban's times lie outside this trial (clock skew, or a replayed run)",
                    faban=[lo, hi])  # fmt: skip
            return
        ctx.workload_window(lo, hi)

    def teardown(self, ctx: TrialContext) -> None:
        self._kill_all()
        guest_trial.remove_trial_dirs((x.guest for x in self._instances),
                                      lambda g: guest_trial.guest_trial_dir(ctx, g, "faban"))


def faban_window(run: FabanRun, shape: RunShape | None) -> tuple[float, float] | None:
    """(start, end) epoch seconds of the steady state: the run's start plus its ramp-up,
    for its steady length. Only a start time in UTC/GMT is trusted: Faban prints the
    zone's abbreviation, which does not name an offset in general."""
    start = _epoch(run.summary.start)
    ramp = shape.ramp_up if shape is not None else None
    steady = run.steady_seconds or (shape.steady if shape is not None else None)
    if start is None or ramp is None or not steady:
        return None
    return start + ramp, start + ramp + steady


def _epoch(text: str | None) -> float | None:
    if not text or not any(z in text for z in (" UTC ", " GMT ")):
        return None
    for fmt in _TIME_FORMATS:
        try:
            when = datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        return when.replace(tzinfo=UTC).timestamp()
    return None
