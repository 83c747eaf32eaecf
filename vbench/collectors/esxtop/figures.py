"""Host figures from esxtop series: CPU utilisation, cores used, guest-visible disk
latency (see docs/metrics.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vbench.collectors.derived import window_mean
from vbench.lazy import lazy_module
from vbench.results.records import Sample, Window

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")


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
    return out
