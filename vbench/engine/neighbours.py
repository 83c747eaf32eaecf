"""Busy VMs that are not the run's, on the run's hosts, read from esxtop after each trial.

A source of the trial watch (engine/disturbances.py) on any run that collects esxtop —
a vSphere run or a lab of static nodes and `hosts:` without vCenter. After a trial it
reads the trial's stored esxtop series (``series/<point>-<trial>/``: what the report
shows), takes each VM's ``% Used`` over the steady window
(vbench/collectors/esxtop/neighbours.py), and says every VM that is not the benchmark's
and used more than ``disturbance.other_vm_cpu`` % of a core on average. The
benchmark's VMs: the lab nodes the run uses (their ``vm:``, default their name), its
`vm:` groups' VMs, the VMs it clones (``vb-<run id>-…``, ``vb-keep-<scenario>-…``), and
the VMs ``disturbance.ignore`` names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.collectors.esxtop.neighbours import (
    DISK_READ,
    GROUP_CPU,
    USED,
    VCPU,
    VIRTUAL_DISK,
    Benchmarks,
    busy_neighbours,
    neighbour_event,
    neighbour_text,
    vm_cpu,
)
from vbench.collectors.series import in_window
from vbench.engine.disturbances import PartlyRead, Said
from vbench.lazy import lazy_module
from vbench.results.collected import MANIFEST, SERIES_DIR
from vbench.results.records import TrialResult, Window

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.parquet as pq

    from vbench.config.hygiene import DisturbanceSpec
    from vbench.config.lab import Lab
    from vbench.config.scenario import Scenario
else:
    pd = lazy_module("pandas")
    pq = lazy_module("pyarrow.parquet")

KIND = "esxtop"


def group_cpu_series(run_dir: Path, point: int, trial: int, window: Window
                     ) -> tuple[list[tuple[str, pd.DataFrame, float]], list[str]]:
    """(host, its ``Group Cpu % Used`` rows in controller time, interval) of each esxtop
    series the trial stored (one per host: a second esxtop on a host is not read), and
    why each host esxtop ran on cannot be watched (failed, no sample in ``window``)."""
    folder = run_dir / SERIES_DIR / f"{point}-{trial}"
    try:
        records = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [], []  # no collector ran in this trial
    out: list[tuple[str, pd.DataFrame, float]] = []
    unread: dict[str, str] = {}  # host -> why (the first esxtop on it that failed)
    for rec in records:
        host = str(rec.get("target"))
        if rec.get("kind") != KIND or host in {h for h, *_ in out}:
            continue
        if not rec.get("file"):
            unread.setdefault(host, f"esxtop on {host} failed: {rec.get('error')}")
            continue
        interval = float(rec.get("interval") or 0)
        times = pq.read_table(run_dir / rec["file"], columns=["time"]).column("time")
        if not in_window(times.cast("int64").to_numpy() / 1e6, window, interval).any():
            # Said with the lengths: an interval longer than the window is the usual cause.
            unread.setdefault(host, f"esxtop on {host}: no sample in the "
                              f"{window.end - window.start:g} s steady window (a sample "
                              f"covers the {interval:g} s before it)")
            continue
        out.append((host, _group_cpu(run_dir / rec["file"]), interval))
    read = {h for h, *_ in out}
    return out, [why for host, why in unread.items() if host not in read]


def _group_cpu(path: Path) -> pd.DataFrame:
    """A stored series' ``Group Cpu % Used`` rows (a few of a capture's thousands of
    columns), one ``Virtual Disk`` counter's and the vmx worlds' ``Vcpu % Used`` when
    stored (the VMs they name: vm_cpu tells a VM named like a user world by them, as for
    its ``vm_cpu_used`` figure), ``time`` in epoch seconds, the text columns as str."""
    # One column's filter, then the pairs: a filter of two (object, counter) terms took
    # ~1.4x as long on an all-counter capture (1.05 M rows).
    frame = pq.read_table(path, columns=["time", "object", "instance", "counter", "value"],
                          filters=[("counter", "in", [USED, DISK_READ])]).to_pandas()
    frame = frame[(frame["object"].eq(GROUP_CPU) & frame["counter"].eq(USED))
                  | (frame["object"].eq(VIRTUAL_DISK) & frame["counter"].eq(DISK_READ))
                  | (frame["object"].eq(VCPU) & frame["counter"].eq(USED)
                     & frame["instance"].isin(_vmx_worlds(frame["instance"])))]
    seconds = frame["time"].astype("int64") / 1e6 if len(frame) else frame["time"]
    return frame.assign(time=seconds, object=frame["object"].astype(str),
                        instance=frame["instance"].astype(str),
                        counter=frame["counter"].astype(str))


def _vmx_worlds(instances: pd.Series) -> list[str]:
    """The vmx worlds' instances among ``instances`` (each distinct name tested once: a
    test of every row cost ~15 % of the read on an all-counter capture)."""
    return [i for i in pd.unique(instances) if str(i).endswith(":vmx")]


class BusyNeighbours:
    """The trial watch's esxtop source (see the module)."""

    name, what, noun = KIND, "esxtop's VM CPU", "VM CPU"

    def __init__(self, run_dir: Path, benchmarks: Benchmarks, threshold: float) -> None:
        self.run_dir, self.benchmarks, self.threshold = run_dir, benchmarks, threshold

    def __call__(self, result: TrialResult, window: tuple[float, float]) -> list[Said]:
        """The busy VMs that are not the benchmark's; PartlyRead when a host esxtop ran on
        could not be read (its failure, or no sample in the window: never passed as
        undisturbed)."""
        # The window vm_cpu_used is stored over: the workload's own when known.
        steady = result.phases.steady or Window(*window)
        series, unread = group_cpu_series(self.run_dir, result.point, result.trial, steady)
        used = [u for host, frame, interval in series
                for u in vm_cpu(frame, host, steady, interval)]
        found = [Said(u.peak_at, neighbour_text(u), neighbour_event(u))
                 for u in busy_neighbours(used, self.benchmarks, self.threshold)]
        if unread:
            raise PartlyRead("; ".join(unread), found)
        return found


def benchmarks_of(scenario: Scenario, lab: Lab, run_id: str, nodes: Iterable[str],
                  vms: Callable[[], Iterable[Any]]) -> Benchmarks:
    """The benchmark's VMs: the lab nodes ``nodes`` (by their ``vm:``), the run's
    vSphere VMs (``vms()``: ProvisionedVm, asked after each trial as points add and drop
    them) and `vm: existing` names, the clones' prefixes, ``disturbance.ignore``."""
    from vbench.vsphere.specs import kept_vm_name, vm_name

    static = {(lab.nodes[n].vm or n) for n in nodes if n in lab.nodes}
    existing = {name for g in scenario.topology.values() if g.vm is not None
                for name in g.vm.existing or ()}
    fixed = frozenset(static | existing)

    def names() -> Collection[str]:
        return fixed | {v.vm_name for v in vms()}

    spec = scenario.disturbance
    return Benchmarks(names, (vm_name(run_id, ""), kept_vm_name(scenario.name, "")),
                      tuple(spec.ignore) if spec is not None else ())


def esxtop_source(scenario: Scenario, benchmarks: Benchmarks, run_dir: Path
                  ) -> BusyNeighbours | None:
    """The esxtop source of a run that collects esxtop (else None)."""
    if not any(c.kind == KIND for c in scenario.collectors):
        return None
    spec: DisturbanceSpec | None = scenario.disturbance
    from vbench.config.hygiene import OTHER_VM_CPU

    return BusyNeighbours(run_dir, benchmarks,
                          spec.other_vm_cpu if spec is not None else OTHER_VM_CPU)
