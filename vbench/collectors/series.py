"""Clock alignment and steady-window summaries of collector series."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vbench.lazy import lazy_module
from vbench.results.records import ClockOffset, Sample, Window

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

__all__ = ["ClockOffset", "in_window", "window_summaries"]


def in_window(times: pd.Series | np.ndarray, window: Window, interval: float) -> Any:
    """Samples whose whole interval lies inside the window.

    Every tool here stamps a sample at the *end* of the interval it averages, so a sample
    at ``t`` covers ``(t - interval, t]``; a small tolerance absorbs stamp rounding.
    """
    slack = min(0.5, interval / 4)
    t = np.asarray(times, dtype="float64")
    return (t - interval >= window.start - slack) & (t <= window.end + slack)


def window_summaries(
    frame: pd.DataFrame, window: Window | None, interval: float, source: str, entity: str
) -> list[Sample]:
    """The mean of every metric over the steady window (None when no sample fell in it)."""
    if frame.empty:
        return []
    units = frame.groupby("metric", sort=False)["unit"].first()
    if window is None:
        return [Sample(m, None, str(u), source, entity) for m, u in units.items()]
    inside = frame[in_window(frame["time"], window, interval)]
    means = inside.groupby("metric", sort=False)["value"].mean()
    out = []
    for metric, unit in units.items():
        v = means.get(metric)
        value = None if v is None or pd.isna(v) else float(v)
        out.append(Sample(str(metric), value, str(unit), source, entity))
    return out
