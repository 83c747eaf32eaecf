"""guest_sysstat: CPU, run queue, memory, disks and NICs of every guest, by sysstat's sadc.

``sadc`` records binary samples in the guest while the trial runs (it is started before
warm-up and stopped after cool-down); ``sadf -j`` converts them afterwards, so nothing
heavier than sadc runs during the measured window. Its own CPU time is read from
``/proc/<pid>/stat`` before it is stopped and reported as ``collector_cpu`` (% of one
core over the collection), so a reviewer sees what the measurement cost.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from vbench.analysis.catalogue import Metric, metric, same_unit
from vbench.collectors.base import (
    Collector,
    CollectorContext,
    CollectorOptions,
    Series,
    Target,
    guest_targets,
    register,
)
from vbench.collectors.checks import near
from vbench.collectors.derived import cpus_of
from vbench.collectors.guest_sysstat.figures import guest_figures
from vbench.errors import GuestError
from vbench.lazy import lazy_module
from vbench.parsers.sysstat import parse_sysstat_json
from vbench.results.records import Sample, Window

if TYPE_CHECKING:
    from vbench.collectors.base import TrialContext
    from vbench.collectors.runtime import RunEnv
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec, Scenario
    from vbench.guest.ssh import Guest, RemoteProcess


if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")

Activity = Literal["cpu", "queue", "memory", "disk", "network"]
# sadf report options per activity (after `--`); -p prints disk names (sda, not dev8-0).
_SADF = {"cpu": ["-u"], "queue": ["-q"], "memory": ["-r"], "disk": ["-d", "-p"],
         "network": ["-n", "DEV"]}  # fmt: skip
_SADC_PLACES = ("/usr/lib/sysstat/sadc", "/usr/lib64/sa/sadc", "/usr/libexec/sa/sadc",
                "/usr/local/lib/sa/sadc")  # fmt: skip


class SysstatOptions(CollectorOptions):
    activities: list[Activity] = Field(
        default_factory=lambda: ["cpu", "queue", "memory", "disk", "network"],
        min_length=1,
        description="what to report: cpu, queue, memory, disk, network",
    )
    per_cpu: bool = Field(False, description="also every CPU, not only the total")
    sadc: str | None = Field(None, description="path of sadc (default: searched)")


@register
class GuestSysstat(Collector):
    kind: ClassVar[str] = "guest_sysstat"
    target_kind: ClassVar[str] = "guest"
    Options: ClassVar[type[CollectorOptions]] = SysstatOptions

    @classmethod
    def target_problems(
        cls, spec: CollectorSpec, scenario: Scenario, lab: Lab | None
    ) -> list[tuple[int | None, str]]:
        out: list[tuple[int | None, str]] = []
        groups = set(scenario.topology)
        nodes = set(lab.nodes) if lab is not None else set()
        for group in scenario.topology.values():
            nodes.update(group.nodes or ())
        for j, t in enumerate(spec.targets):
            if t in groups or (lab is not None and t in nodes):
                continue
            if lab is None:
                continue  # a guest name can only be checked against a lab
            known = sorted(groups | nodes)
            out.append((j, f"{t!r} is neither a topology group nor a guest{near(t, known)}"))
        return out

    @classmethod
    def metric_catalogue(cls, options: CollectorOptions) -> tuple[Metric, ...]:
        # sadf's own names (docs/metrics.md#guest_sysstat); units follow the counter.
        return (
            # A counter's direction is the reader's to say (report.better): none here.
            *same_unit(("<object>(<instance>)\\<counter>", "<object>\\<counter>"), None, "none"),
            metric("collector_cpu", "%", "lower"),  # the collector's own overhead
            metric("guest_cpu_util", "%", "none"), metric("guest_cpus", "CPUs", "none"),
            metric("guest_cores_used", "cores", "none"),
        )  # fmt: skip

    @classmethod
    def figures(
        cls,
        name: str,
        target: str,
        frame: pd.DataFrame,
        window: Window,
        interval: float,
        own: Sequence[Sample],
    ) -> list[Sample]:
        return guest_figures(name, target, frame, window, interval, cpus_of(own, target))

    def __init__(self, name: str, interval: float, options: CollectorOptions, target: Target):
        super().__init__(name, interval, options, target)
        self.proc: RemoteProcess | None = None
        self.files: dict[str, str] = {}

    @classmethod
    def targets(cls, spec: CollectorSpec, env: RunEnv, ctx: TrialContext) -> list[Target]:
        return guest_targets(spec, ctx)

    @property
    def guest(self) -> Guest:
        assert self.target.guest is not None
        return self.target.guest

    def _find_tools(self) -> str:
        opts = self.options
        assert isinstance(opts, SysstatOptions)
        places = " ".join(shlex.quote(p) for p in ((opts.sadc,) if opts.sadc else _SADC_PLACES))
        script = "\n".join(
            [
                "command -v sadf >/dev/null 2>&1 || { echo nosadf; exit 0; }",
                "command -v sadc 2>/dev/null && exit 0" if not opts.sadc else ":",
                f'for p in {places}; do [ -x "$p" ] && {{ echo "$p"; exit 0; }}; done',
                "echo nosadc",
            ]
        )
        out = self.guest.run_script(script, timeout=30).stdout.strip().splitlines()
        found = out[-1] if out else "nosadc"
        if found == "nosadf":
            raise GuestError(self.guest.target, "sadf not found in PATH (install sysstat)")
        if found == "nosadc":
            raise GuestError(self.guest.target, "sadc not found (install sysstat)")
        return found

    def start(self, ctx: CollectorContext) -> None:
        sadc = self._find_tools()
        base = f"{ctx.remote_dir(self.guest)}/{self.name}"
        self.files = {"data": f"{base}.sa", "pid": f"{base}.pid", "log": f"{base}.log"}
        self.guest.mkdir(ctx.remote_dir(self.guest))
        count = self.samples_needed(ctx.planned_seconds)
        data, pid = shlex.quote(self.files["data"]), shlex.quote(self.files["pid"])
        # The shell records sadc's own pid (exec keeps it) so its CPU time can be read.
        # An earlier attempt's file is removed first: a trial run again (`disturbance:
        # retry`) collects into the same folder, and sadc appends to an existing file —
        # the kept attempt's series and raw .sa held the set-aside attempt's samples.
        script = (
            f"rm -f {data} {pid}; echo $$ > {pid}; exec {shlex.quote(sadc)} -S DISK "
            f"{int(self.interval)} {count} {data}"
        )
        self.proc = self.guest.start(["sh", "-c", script], log=self.files["log"])

    def _cpu_cost(self) -> float | None:
        """sadc's CPU time over its lifetime, as % of one core (None if unreadable)."""
        pid = shlex.quote(self.files["pid"])
        script = (
            f'p=$(cat {pid} 2>/dev/null) && [ -r /proc/"$p"/stat ] && '
            'cat /proc/"$p"/stat && getconf CLK_TCK && cut -d" " -f1 /proc/uptime'
        )
        res = self.guest.run_script(script, timeout=30, check=False)
        lines = res.stdout.split("\n")
        if res.status != 0 or len(lines) < 3:
            return None
        try:
            # Fields after the ")" closing the command name: utime is 14th of the line.
            rest = lines[0].rsplit(")", 1)[1].split()
            utime, stime, started = int(rest[11]), int(rest[12]), int(rest[19])
            hz, uptime = float(lines[1]), float(lines[2])
        except (IndexError, ValueError):
            return None
        elapsed = uptime - started / hz
        return 100.0 * (utime + stime) / hz / elapsed if elapsed > 0 else None

    def stop(self, ctx: CollectorContext) -> Series:
        opts = self.options
        assert isinstance(opts, SysstatOptions) and self.proc is not None
        died = self.proc.finished or not self.proc.is_running()
        cost = None if died else self._cpu_cost()
        self.proc.kill(grace=2.0)
        notes: list[str] = []
        error = None
        if died:
            error = f"sadc ended before the trial did{_tail(self.proc.tail(3))}"
        report: list[str] = []
        for a in opts.activities:
            report += _SADF[a]
        if opts.per_cpu and "cpu" in opts.activities:
            report += ["-P", "ALL"]
        res = self.guest.run(
            ["sadf", "-j", self.files["data"], "--", *report], timeout=120, check=False
        )
        if res.status != 0:
            raise GuestError(self.guest.target, f"sadf failed: {res.stderr.strip() or res.stdout}")
        ctx.raw_path(f"{self.name}.json").write_text(res.stdout)
        self.guest.get(self.files["data"], ctx.raw_path(f"{self.name}.sa"))
        hosts = parse_sysstat_json(res.stdout, f"{self.guest.name}:{self.files['data']}")
        frame = hosts[0].frame if hosts else Series.empty()
        notes += hosts[0].notes if hosts else ["sadf printed no host"]
        if opts.per_cpu is False and len(frame):
            frame = frame[~((frame["object"] == "cpu-load") & (frame["instance"] != "all"))]
        cpus = hosts[0].cpus if hosts else None
        samples = (
            Sample("collector_cpu", cost, "%", self.name, self.target.name),
            Sample("guest_cpus", float(cpus) if cpus else None, "CPUs", self.name,
                   self.target.name),
        )  # fmt: skip
        frame = frame.drop(columns=["sample"], errors="ignore")
        return Series(frame.reset_index(drop=True), tuple(notes), samples, error)

    def abort(self, ctx: CollectorContext) -> None:
        if self.proc is not None:
            self.proc.kill(grace=1.0)


def _tail(text: str) -> str:
    last = [ln for ln in text.splitlines() if ln.strip()]
    return f": {last[-1].strip()}" if last else ""
