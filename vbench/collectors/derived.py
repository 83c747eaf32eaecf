"""Figures computed from collector series over the steady window (see docs/metrics.md).

- ``host_cpu_util`` (%): esxtop ``Physical Cpu(_Total)\\% Util Time``, per host and the
  mean over hosts;
- ``host_cores_used`` (cores): the sum over a host's PCPUs of ``% Util Time`` / 100, per
  host and summed over hosts;
- ``guest_cpu_util`` (%) and ``guest_cores_used`` (cores): sysstat, 100 − idle, per guest;
- ``cpu_efficiency`` (<throughput unit>/core): the workload's headline figure divided by
  the cores used (hosts when esxtop ran, else guests);
- ``cpu_cost_per_1k_iops`` (% of a core per 1,000 IO/s): cores used × 100 / (IOPS / 1000);
- ``vdisk_read_latency`` / ``vdisk_write_latency`` (ms): esxtop ``Virtual Disk`` latency
  of every virtual disk (guest = ``<vm>:<scsiX:Y>``), i.e. what the guest sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from vbench.analysis.catalogue import Metric
from vbench.analysis.catalogue import metric as entry
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import pandas as pd

    # Made when a trial's figures are: validate and plan read only METRICS.
    from vbench.results.records import Sample, Window
else:
    pd = lazy_module("pandas")

SOURCE = "derived"
# Trial-wide figures made when collectors ran (host_* from esxtop, the others from the
# cores used by hosts or guests).
METRICS: tuple[Metric, ...] = (
    entry("host_cpu_util", "%", "none"), entry("host_cores_used", "cores", "none"),
    entry("cpu_efficiency", None, "higher"),  # <headline unit>/core
    entry("cpu_cost_per_1k_iops", "% of a core per 1K IO/s", "lower"),
)  # fmt: skip
_IOPS = ("total_iops", "iops")


def window_mean(frame: pd.DataFrame, window: Window, interval: float, mask: pd.Series) -> pd.Series:
    """Window mean of the selected rows, per instance."""
    from vbench.collectors.series import in_window

    rows = frame[mask & in_window(frame["time"], window, interval)]
    return rows.groupby("instance")["value"].mean().dropna()


def _aggregate(samples: Iterable[Sample], metric: str) -> list[float]:
    return [s.value for s in samples if s.metric == metric and s.value is not None]


def _workload_figure(samples: Sequence[Sample], metric: str) -> Sample | None:
    for s in samples:
        if s.metric == metric and s.guest is None and not s.labels and s.value is not None:
            return s
    return None


def _iops(samples: Sequence[Sample]) -> float | None:
    for m in _IOPS:
        s = _workload_figure(samples, m)
        if s is not None and s.value is not None:
            return s.value
    parts = [_workload_figure(samples, m) for m in ("read_iops", "write_iops")]
    vals = [p.value for p in parts if p is not None and p.value is not None]
    return sum(vals) if vals else None


def combined_figures(
    per_target: Sequence[Sample], workload: Sequence[Sample], headline: Sequence[str]
) -> list[Sample]:
    """Run-level figures (guest None) from the per-target ones and the workload's."""
    from vbench.results.records import Sample

    out: list[Sample] = []
    host_util = _aggregate(per_target, "host_cpu_util")
    if host_util:
        out.append(Sample("host_cpu_util", sum(host_util) / len(host_util), "%", SOURCE))
    host_cores = _aggregate(per_target, "host_cores_used")
    guest_cores = _aggregate(per_target, "guest_cores_used")
    if host_cores:
        out.append(Sample("host_cores_used", sum(host_cores), "cores", SOURCE))
    cores = sum(host_cores) if host_cores else (sum(guest_cores) if guest_cores else None)
    if not cores:
        return out
    for metric in headline[:1]:
        thr = _workload_figure(workload, metric)
        if thr is not None and thr.value is not None:
            unit = f"{thr.unit}/core" if thr.unit else "per core"
            out.append(Sample("cpu_efficiency", thr.value / cores, unit, SOURCE,
                              labels=()))  # fmt: skip
    iops = _iops(workload)
    if iops:
        out.append(
            Sample(
                "cpu_cost_per_1k_iops",
                cores * 100 / (iops / 1000),
                "% of a core per 1K IO/s",
                SOURCE,
            )
        )
    return out


def cpus_of(samples: Sequence[Sample], guest: str) -> float | None:
    for s in samples:
        if s.metric == "guest_cpus" and s.guest == guest:
            return s.value
    return None


def all_figures(
    series: Mapping[tuple[str, str], tuple[str, pd.DataFrame, float]],
    own: Sequence[Sample],
    window: Window | None,
    workload: Sequence[Sample],
    headline: Sequence[str],
) -> list[Sample]:
    """Every derived figure of a trial. ``series`` maps (collector, target) to
    (kind, frame in controller time, interval)."""
    if window is None:
        return []
    from vbench.collectors.base import get_collector

    per_target: list[Sample] = []
    for (name, target), (kind, frame, interval) in series.items():
        per_target += get_collector(kind).figures(name, target, frame, window, interval, own)
    return per_target + combined_figures(per_target, workload, headline)
