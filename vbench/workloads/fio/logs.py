"""fio's per-second logs (``write_iops_log``, ``write_lat_log``, ``log_avg_msec=1000``):
read, kept whole as a time series, and trimmed to the steady window for statistics.

fio writes one file per job and kind, ``<prefix>_<kind>.<job>.log``, one line per
direction and interval: ``time, value, direction, block size, offset``. vbench asks for
``log_unix_epoch=1``, so ``time`` is the guest's epoch in milliseconds (vbench removes the
guest's clock offset); ``value`` is the
interval's IOPS (``iops``) or mean latency in nanoseconds (``lat``, ``clat``).

The whole series goes to ``raw/<point>-<trial>/<guest>/fio-series.parquet`` (the
columns of :func:`vbench.results.collected.series_schema`; ``object`` = guest,
``instance`` = job number, ``counter`` = direction); one row per second and guest
(``fio_iops``, ``fio_read_lat``, ``fio_write_lat``) goes to
``series/<point>-<trial>/fio/<guest>.parquet``, where the report draws it over time.
Statistics use only the seconds inside the steady window, so a warm-up or a ramp-down
never enters them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.errors import ParseError
from vbench.lazy import lazy_module
from vbench.results.collected import write_series
from vbench.results.records import Sample

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

PREFIX = "fiolog"
SERIES_FILE = "fio-series.parquet"
KINDS = ("iops", "lat", "clat")
_DIRECTIONS = {"0": "read", "1": "write", "2": "trim"}
_NAME = re.compile(rf"^{PREFIX}_(iops|lat|clat)\.(\d+)\.log$")
_UNITS = {"iops": "1/s", "lat": "ms", "clat": "ms"}


@dataclass(frozen=True)
class LogRow:
    time: float  # epoch seconds (guest clock)
    value: float  # IOPS, or latency in ms
    direction: str


def log_files(names: Iterable[str]) -> list[tuple[str, str, int]]:
    """(name, kind, job) of the per-second log files among ``names``."""
    out = []
    for n in names:
        m = _NAME.match(n)
        if m:
            out.append((n, m.group(1), int(m.group(2))))
    return sorted(out, key=lambda x: (x[1], x[2]))


def parse_log(text: str, kind: str, source: str = "fio log") -> list[LogRow]:
    """One fio log file; a torn last line (fio killed mid-write) is dropped."""
    rows: list[LogRow] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        try:
            t, v = int(parts[0]), float(parts[1])
            direction = _DIRECTIONS[parts[2]]
        except (IndexError, ValueError, KeyError):
            if number == len(lines):
                break
            raise ParseError(f"{source}:{number}: not a fio log line: {line[:80]!r}") from None
        value = v / 1e6 if kind in ("lat", "clat") else v  # ns -> ms
        rows.append(LogRow(t / 1000.0, value, direction))
    return rows


def series_frame(guest: str, logs: Mapping[tuple[str, int], list[LogRow]]) -> pd.DataFrame:
    """Every row of every log of one guest, as a series frame (time-ordered)."""
    records = [
        (r.time, f"{r.direction}_{kind}", r.value, _UNITS[kind], guest, f"job{job}", r.direction)
        for (kind, job), rows in logs.items()
        for r in rows
    ]
    cols = ["time", "metric", "value", "unit", "object", "instance", "counter"]
    frame = pd.DataFrame(records, columns=cols)
    return frame.sort_values(["time", "metric", "instance"], kind="stable").reset_index(drop=True)


def write_guest_series(
    path: Path, frame: pd.DataFrame, *, guest: str, point: int, trial: int,
    window: tuple[float | None, float | None], clock_offset: float,
) -> int:
    """The whole series in controller time (the guest's clock offset removed)."""
    meta = {"source": "fio per-second logs", "steady_window": list(window),
            "clock_offset": clock_offset}
    return write_series(path, frame, source="fio", entity=guest, point=point, trial=trial,
                        metadata=meta)  # fmt: skip


def per_second_frame(frame: pd.DataFrame, guest: str) -> pd.DataFrame:
    """One row per second and figure of the guest, for the report's time-series charts:
    ``fio_iops`` (summed over jobs and directions) and ``fio_read_lat``/``fio_write_lat``
    (mean over jobs). The whole per-job series stays in the raw file."""
    cols = ["time", "metric", "value", "unit", "object", "instance", "counter"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    second = np.round(frame["time"])
    parts = []
    iops = frame[frame["metric"].str.endswith("_iops")]
    total = iops.groupby(second[iops.index])["value"].sum()
    parts.append(pd.DataFrame({"time": total.index, "metric": "fio_iops", "value": total.values,
                               "unit": "1/s", "counter": "all"}))  # fmt: skip
    for direction in ("read", "write"):
        lat = frame[frame["metric"] == f"{direction}_lat"]
        if lat.empty:
            continue
        mean = lat.groupby(second[lat.index])["value"].mean()
        parts.append(pd.DataFrame({"time": mean.index, "metric": f"fio_{direction}_lat",
                                   "value": mean.values, "unit": "ms", "counter": direction}))
    out = pd.concat(parts, ignore_index=True).assign(object=guest, instance="")
    return out[cols].sort_values(["time", "metric"], kind="stable").reset_index(drop=True)


def trim(frame: pd.DataFrame, start: float | None, end: float | None) -> pd.DataFrame:
    """The rows inside the steady window. A log line stamps the end of its interval, so
    an interval counts when it ends inside [start, end] (plus half a second of slack for
    the stamp's rounding)."""
    if start is None or end is None or frame.empty:
        return frame.iloc[0:0]
    t = frame["time"]
    return frame[(t > start + 0.5) & (t <= end + 0.5)]


def window_samples(frame: pd.DataFrame, guest: str) -> list[Sample]:
    """Per guest, from the seconds of the steady window: per-second total IOPS (all jobs
    and directions) mean, min, max and coefficient of variation, and per direction the
    mean of the per-second mean latency. Missing stays missing (None)."""
    labels = (("from", "per-second log"),)
    iops = frame[frame["metric"].str.endswith("_iops")]
    per_second = iops.groupby(np.round(iops["time"]))["value"].sum()
    mean = _f(per_second.mean()) if len(per_second) else None
    sd = _f(per_second.std(ddof=1)) if len(per_second) > 1 else None
    out = [
        Sample("iops_ts_mean", mean, "1/s", "fio", guest, labels),
        Sample("iops_ts_min", _f(per_second.min()) if len(per_second) else None, "1/s", "fio",
               guest, labels),
        Sample("iops_ts_max", _f(per_second.max()) if len(per_second) else None, "1/s", "fio",
               guest, labels),
        Sample("iops_ts_cv", sd / mean if sd is not None and mean else None, "ratio", "fio",
               guest, labels),
        Sample("ts_seconds", float(len(per_second)), "s", "fio", guest, labels),
    ]  # fmt: skip
    for direction in ("read", "write"):
        lat = frame[frame["metric"] == f"{direction}_lat"]["value"]
        value = _f(lat.mean()) if len(lat) else None
        out.append(Sample(f"{direction}_lat_ts_mean", value, "ms", "fio", guest, labels))
    return out


def _f(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None
