"""Host figures from esxtop series: CPU utilisation, cores used, guest-visible disk
latency, each VM's CPU (see docs/metrics.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vbench.collectors.derived import window_mean
from vbench.collectors.esxtop.neighbours import vm_cpu
from vbench.lazy import lazy_module
from vbench.results.records import Sample, Window

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")

VM_CPU_UNIT = "% of a core"


def host_figures(
    name: str, host: str, frame: pd.DataFrame, window: Window, interval: float
) -> list[Sample]:
    out: list[Sample] = []
    util = frame["object"].eq("Physical Cpu") & frame["counter"].eq("% Util Time")
    means = window_mean(frame, window, interval, util)
    if "_Total" in means:
        out.append(Sample("host_cpu_util", float(means["_Total"]), "%", name, host))
    pcpus = means.drop("_Total", errors="ignore")
    if len(pcpus):
        out.append(Sample("host_cores_used", float(pcpus.sum() / 100), "cores", name, host))
    for counter, metric in (("Average MilliSec/Read", "vdisk_read_latency"),
                            ("Average MilliSec/Write", "vdisk_write_latency")):  # fmt: skip
        mask = frame["object"].eq("Virtual Disk") & frame["counter"].eq(counter)
        for inst, v in window_mean(frame, window, interval, mask).items():
            if ":" in str(inst):  # "<vm>:scsi0:0" is a disk; "<vm>" alone sums the VM's
                out.append(Sample(metric, float(v), "ms", name, str(inst)))
    # Each VM's CPU on this host (its esxtop group's % Used), labelled with the host: a VM
    # moved during the trial has one figure per host.
    out += [Sample("vm_cpu_used", u.mean, VM_CPU_UNIT, name, u.vm, (("host", host),))
            for u in vm_cpu(frame, host, window, interval)]
    return out
