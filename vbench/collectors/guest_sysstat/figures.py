"""Guest figures from sysstat series: CPU utilisation and cores used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vbench.collectors.derived import window_mean
from vbench.lazy import lazy_module
from vbench.results.records import Sample, Window

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")


def guest_figures(
    name: str, guest: str, frame: pd.DataFrame, window: Window, interval: float,
    cpus: float | None,
) -> list[Sample]:  # fmt: skip
    idle = frame["object"].eq("cpu-load") & frame["instance"].eq("all")
    idle &= frame["counter"].eq("idle")
    means = window_mean(frame, window, interval, idle)
    if "all" not in means:
        return []
    util = 100.0 - float(means["all"])
    out = [Sample("guest_cpu_util", util, "%", name, guest)]
    if cpus:
        out.append(Sample("guest_cores_used", util / 100 * cpus, "cores", name, guest))
    return out
