"""esxtop: host counters of every ESXi host of the lab, from ``esxtop -b`` over SSH.

esxtop runs on the host in batch mode for the whole trial and its output is compressed
by gzip on the host as it arrives (a capture with ``-a`` is ~100 KB per sample
uncompressed). After cool-down vbench stops it, fetches the ``.csv.gz`` into the run's
raw folder (kept whole) and reads only the selected counters from it — and always the
host's CPU, the guests' disk latency and each VM's CPU (``vm_cpu_used``; the VMs that are
not the run's are watched as disturbances: vbench/engine/neighbours.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from vbench.analysis.catalogue import Metric, labelled, metric, same_unit
from vbench.collectors.base import (
    Collector,
    CollectorContext,
    CollectorOptions,
    Series,
    Target,
    register,
)
from vbench.collectors.checks import near
from vbench.collectors.esxtop.figures import VM_CPU_UNIT, host_figures
from vbench.collectors.esxtop.neighbours import (
    DISK_READ,
    GROUP_CPU,
    USED,
    VIRTUAL_DISK,
    vm_of_group,
    vms_shown,
)
from vbench.config.localfiles import file_problem, shown_path
from vbench.errors import ConfigError, GuestError, VbenchError
from vbench.lazy import lazy_module
from vbench.parsers.esxtop import EsxtopReader
from vbench.parsers.esxtop.catalog import KNOWN_COUNTERS
from vbench.parsers.esxtop.names import check_known, compile_selection

if TYPE_CHECKING:
    from vbench.collectors.base import TrialContext
    from vbench.collectors.runtime import RunEnv
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec, Scenario
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.results.records import Sample, Window


if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

# Always read: the derived figures (host CPU, cores used, guest latency per virtual disk,
# each VM's CPU) are computed from these whatever else a scenario selects.
BASE_COUNTERS = (
    "Physical Cpu(*)\\% Util Time",
    f"{VIRTUAL_DISK}(*)\\{DISK_READ}",
    "Virtual Disk(*)\\Average MilliSec/Write",
    f"{GROUP_CPU}(*)\\{USED}",
)


class EsxtopOptions(CollectorOptions):
    counters: list[str] = Field(
        default_factory=lambda: ["cpu", "virtual-disk"],
        description="patterns Object(instance)\\Counter and counter sets (cpu, vcpu, memory, "
        "disk-adapter, disk-device, virtual-disk, network, power) to read",
    )
    all: bool = Field(False, description="esxtop -a: export every counter, not the default set")
    config: str | None = Field(
        None, description="esxtoprc file on the controller, pushed and passed with -c"
    )
    command: str = Field("esxtop", description="esxtop on the host (a path if not in PATH)")
    compress: bool = Field(True, description="gzip the output on the host as it arrives")
    allow_unknown_counters: bool = Field(
        False, description="accept counter names vbench does not know (other ESXi builds)"
    )


@register
class Esxtop(Collector):
    kind: ClassVar[str] = "esxtop"
    target_kind: ClassVar[str] = "host"
    Options: ClassVar[type[CollectorOptions]] = EsxtopOptions
    min_interval: ClassVar[float] = 2.0  # esxtop's own lower bound for -d
    whole_seconds: ClassVar[bool] = False

    @classmethod
    def target_problems(
        cls, spec: CollectorSpec, scenario: Scenario, lab: Lab | None
    ) -> list[tuple[int | None, str]]:
        if lab is None:
            return []
        out: list[tuple[int | None, str]] = []
        hosts = list(lab.hosts)
        if not spec.targets and not hosts:
            out.append((None, "esxtop needs ESXi hosts: the lab has no `hosts:`"))
        for j, t in enumerate(spec.targets):
            if t not in lab.hosts:
                out.append((j, f"no ESXi host {t!r} in the lab's `hosts:`{near(t, hosts)}"))
        return out

    @classmethod
    def metric_catalogue(cls, options: CollectorOptions) -> tuple[Metric, ...]:
        assert isinstance(options, EsxtopOptions)
        # Counter units follow the counter's name (%, ms, MB/s …): not checked here.
        objects = {} if options.allow_unknown_counters else {"object": tuple(KNOWN_COUNTERS)}
        return (
            # A counter's direction is the reader's to say (report.better): none here.
            *same_unit(("<object>(<instance>)\\<counter>", "<object>\\<counter>"), None,
                       "none", **objects),
            metric("host_cpu_util", "%", "none"), metric("host_cores_used", "cores", "none"),
            *same_unit(("vdisk_read_latency", "vdisk_write_latency"), "ms", "lower"),
            *labelled((metric("vm_cpu_used", VM_CPU_UNIT, "none"),), host=()),
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
        return host_figures(name, target, frame, window, interval)

    def __init__(self, name: str, interval: float, options: CollectorOptions, target: Target):
        super().__init__(name, interval, options, target)
        self.proc: RemoteProcess | None = None
        self.files: dict[str, str] = {}

    @property
    def opts(self) -> EsxtopOptions:
        assert isinstance(self.options, EsxtopOptions)
        return self.options

    @classmethod
    def check(cls, options: CollectorOptions, interval: float) -> list[str]:
        problems = super().check(options, interval)
        assert isinstance(options, EsxtopOptions)
        valid = []
        for item in options.counters:  # one message per bad item, then check the rest
            try:
                compile_selection([item])
                valid.append(item)
            except ConfigError as exc:
                problems.append(str(exc))
        problems += check_known(compile_selection(valid), options.allow_unknown_counters)
        if options.config:  # a name too long to look up is said too, not an OSError
            problem = file_problem(Path(options.config).expanduser())
            if problem is not None:
                problems.append(f"esxtop config {shown_path(options.config)!r}: {problem}")
        return problems

    @classmethod
    def targets(cls, spec: CollectorSpec, env: RunEnv, ctx: TrialContext) -> list[Target]:
        hosts = list(spec.targets) or (list(env.lab.hosts) if env.lab else [])
        return [Target(h, "host", env.host(h)) for h in hosts]

    @property
    def guest(self) -> Guest:
        assert self.target.guest is not None
        return self.target.guest

    def command(self, count: int) -> str:
        """The host-side script: esxtop in the background (its pid and exit status kept)
        inside a subshell whose output gzip compresses as it arrives. An earlier attempt's
        pid and exit status are removed first: a trial run again (``disturbance: retry``)
        collects into the same folder, and its exit status read as this one's made the
        stop wait for an esxtop never told to end (and fetch an empty capture)."""
        f = {k: shlex.quote(v) for k, v in self.files.items()}
        argv = [self.opts.command, "-b", "-d", f"{self.interval:g}", "-n", str(count)]
        if self.opts.all:
            argv.append("-a")
        if self.opts.config:
            argv += ["-c", self.files["config"]]
        esxtop = " ".join(shlex.quote(a) for a in argv)
        inner = f"( {esxtop} 2>{f['err']} & echo $! >{f['pid']}; wait $!; echo $? >{f['rc']} )"
        sink = f"gzip -c >{f['out']}" if self.opts.compress else f"cat >{f['out']}"
        return f"rm -f {f['pid']} {f['rc']}; {inner} | {sink}"

    def start(self, ctx: CollectorContext) -> None:
        remote = ctx.remote_dir(self.guest)
        base = f"{remote}/{self.name}"
        out = f"{base}.csv.gz" if self.opts.compress else f"{base}.csv"
        self.files = {"out": out, "pid": f"{base}.pid", "rc": f"{base}.rc",
                      "err": f"{base}.err", "log": f"{base}.log"}  # fmt: skip
        self.guest.mkdir(remote)
        if self.opts.config:
            self.files["config"] = f"{base}.esxtoprc"
            self.guest.put(Path(self.opts.config).expanduser(), self.files["config"])
        if self.guest.which(self.opts.command) is None:
            raise GuestError(self.guest.target, f"{self.opts.command} not found on the host")
        count = self.samples_needed(ctx.planned_seconds)
        self.proc = self.guest.start(["sh", "-c", self.command(count)], log=self.files["log"])

    def _stop_remote(self) -> str | None:
        """TERM esxtop (gzip then ends on its own); the error if esxtop had ended already."""
        f = {k: shlex.quote(v) for k, v in self.files.items()}
        script = (
            f"if [ -f {f['rc']} ]; then echo ended $(cat {f['rc']}); "
            f"tail -n 3 {f['err']} 2>/dev/null; "
            f"else kill -TERM $(cat {f['pid']}) 2>/dev/null; echo stopped; fi"
        )
        out = self.guest.run_script(script, timeout=30, check=False).stdout.strip().splitlines()
        assert self.proc is not None
        try:
            self.proc.wait(timeout=30)
        except VbenchError:
            self.proc.kill(grace=2.0)
        if out and out[0].startswith("ended"):
            status = out[0].split()[-1]
            detail = "; ".join(x.strip() for x in out[1:] if x.strip())
            tail = f": {detail}" if detail else ""
            return f"esxtop ended before the trial did (exit {status}){tail}"
        return None

    def stop(self, ctx: CollectorContext) -> Series:
        died = self._stop_remote()
        local = ctx.raw_path(Path(self.files["out"]).name)
        self.guest.get(self.files["out"], local)
        selection = [*self.opts.counters, *BASE_COUNTERS]
        with EsxtopReader(local, selection, require_match=False) as reader:
            frame = without_unasked_groups(tidy_frame(reader), reader, self.opts.counters)
            notes = [n for n in reader.notes if "matches no column" not in n or not _base(n)]
        return Series(frame, tuple(notes), (), died)

    def abort(self, ctx: CollectorContext) -> None:
        if self.proc is not None:
            self.proc.kill(grace=1.0)


def _base(note: str) -> bool:
    """A note about one of the always-read counters (absent on hosts without VMs)."""
    return any(repr(b) in note for b in BASE_COUNTERS)


def without_unasked_groups(frame: pd.DataFrame, reader: EsxtopReader,
                           counters: Sequence[str]) -> pd.DataFrame:
    """``frame`` without the always-read ``Group Cpu % Used`` of the host's own groups and
    user worlds (a few dozen, named by pid) unless the scenario selected them: the VMs'
    are kept (``vm_cpu_used`` and the neighbours' watch read them)."""
    asked = set(compile_selection(counters).select(reader.columns))
    shown = vms_shown((c.object, c.instance) for c in reader.columns)  # the header's VMs
    unasked = {c.instance for i, c in enumerate(reader.columns)
               if i not in asked and c.object == GROUP_CPU and c.counter == USED
               and vm_of_group(c.instance, shown) is None}
    if not unasked:
        return frame
    drop = frame["object"].eq(GROUP_CPU) & frame["counter"].eq(USED) \
        & frame["instance"].isin(unasked)
    return frame[~drop].reset_index(drop=True)


def tidy_frame(reader: EsxtopReader) -> pd.DataFrame:
    """All samples of the reader's selected columns as tidy rows (time in host clock)."""
    batch = reader.read_all()
    n, k = batch.values.shape
    cols = reader.columns
    return pd.DataFrame(
        {
            "time": np.repeat(batch.times, k),
            "object": np.tile(np.array([c.object for c in cols], dtype=object), n),
            "instance": np.tile(np.array([c.instance for c in cols], dtype=object), n),
            "counter": np.tile(np.array([c.counter for c in cols], dtype=object), n),
            "value": batch.values.reshape(-1),
            "unit": np.tile(np.array(reader.units, dtype=object), n),
        }
    )
