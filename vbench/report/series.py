"""Time series stored beside a run (Parquet files written by collectors).

Reading contract: every ``*.parquet`` file under ``<run dir>/series/`` holds rows with
``metric`` (text), ``value`` (number) and the sample time in ``ts``, ``time`` or
``timestamp`` (epoch seconds, or a timestamp type); optionally ``point`` and ``trial``
(else each row is assigned to the trial whose phases contain its time), ``unit``,
``source`` and the entity measured in ``guest``, ``host`` or ``entity``.

Nothing is invented: a run without such files has no time-series charts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SERIES_DIR = "series"
_TIME_COLUMNS = ("ts", "time", "timestamp")
_ENTITY_COLUMNS = ("guest", "host", "entity")
MAX_SINGLE_TRACES = 12  # beyond this, one mean trace per point keeps a chart readable


def series_files(run_dir: str | Path | None) -> list[Path]:
    if not run_dir:
        return []
    root = Path(run_dir) / SERIES_DIR
    return sorted(root.rglob("*.parquet")) if root.is_dir() else []


def _epoch(col: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(col):
        if col.dt.tz is None:
            col = col.dt.tz_localize("UTC")
        return (col - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    return pd.to_numeric(col, errors="coerce")


def read_series(run_dir: str | Path | None) -> tuple[pd.DataFrame | None, list[str]]:
    """All series of a run as one frame (columns: metric, value, ts, point, trial, unit,
    source, entity), and problems with files that do not follow the contract."""
    frames, problems = [], []
    for path in series_files(run_dir):
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types
            problems.append(f"time series {path.name} unreadable: {type(exc).__name__}: {exc}")
            continue
        time_col = next((c for c in _TIME_COLUMNS if c in df.columns), None)
        if time_col is None or "metric" not in df.columns or "value" not in df.columns:
            problems.append(
                f"time series {path.name} ignored: needs metric, value and one of "
                f"{', '.join(_TIME_COLUMNS)}"
            )
            continue
        entity = next((c for c in _ENTITY_COLUMNS if c in df.columns), None)
        out = pd.DataFrame({
            "metric": df["metric"].astype(str),
            "value": pd.to_numeric(df["value"], errors="coerce"),
            "ts": _epoch(df[time_col]),
            "point": pd.to_numeric(df["point"], errors="coerce") if "point" in df else np.nan,
            "trial": pd.to_numeric(df["trial"], errors="coerce") if "trial" in df else np.nan,
            "unit": df["unit"].astype(str) if "unit" in df else "",
            "source": df["source"].astype(str) if "source" in df else path.stem,
            "entity": df[entity].astype(str) if entity else "",
        })
        frames.append(out.dropna(subset=["value", "ts"]))
    if not frames:
        return None, problems
    return pd.concat(frames, ignore_index=True), problems


def assign_trials(series: pd.DataFrame, trials: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Fill missing point/trial from the trials' time spans (rows outside every trial
    are dropped) and add ``t``: seconds since the trial's warm-up (or start)."""
    spans = []
    for t in trials:
        ph = t.get("phases") or {}
        start = ph.get("warmup_start") or ph.get("steady_start") or t.get("started")
        end = ph.get("cooldown_end") or ph.get("steady_end") or t.get("ended")
        if start is not None and end is not None:
            spans.append((float(start), float(end), int(t["point"]), int(t["trial"])))
    if not spans:
        return series.iloc[0:0].assign(t=np.nan)
    spans.sort()
    starts = np.array([s[0] for s in spans])
    df = series.copy()
    missing = df["point"].isna() | df["trial"].isna()
    if missing.any():
        idx = np.searchsorted(starts, df.loc[missing, "ts"].to_numpy(), side="right") - 1
        inside = [i >= 0 and ts <= spans[i][1]
                  for i, ts in zip(idx, df.loc[missing, "ts"], strict=True)]
        df.loc[missing, "point"] = [spans[i][2] if ok else np.nan
                                    for i, ok in zip(idx, inside, strict=True)]
        df.loc[missing, "trial"] = [spans[i][3] if ok else np.nan
                                    for i, ok in zip(idx, inside, strict=True)]
    df = df.dropna(subset=["point", "trial"])
    origin = {(s[2], s[3]): s[0] for s in spans}
    keys = zip(df["point"].astype(int), df["trial"].astype(int), strict=True)
    df["t"] = df["ts"].to_numpy() - np.array([origin.get(k, np.nan) for k in keys])
    return df.dropna(subset=["t"])


def series_charts(
    series: pd.DataFrame, trials: Sequence[Mapping[str, Any]], point_titles: Mapping[int, str],
    next_id: Any,
) -> list[dict[str, Any]]:
    """One chart per metric: every trial's trace over time since its warm-up, coloured
    by point, the (median) steady-state window shaded."""
    from markupsafe import Markup

    from vbench.report.parallel import render_many

    df = assign_trials(series, trials)
    if df.empty:
        return []
    window = _median_window(trials)
    order = sorted(point_titles)
    names = [point_titles[p] for p in order]
    group = {p: i for i, p in enumerate(order)}
    jobs, captions = [], []
    for metric, rows in df.groupby("metric", sort=True):
        unit = str(rows["unit"].iloc[0] or "")
        traces, merged = _traces(rows, group)
        entities = sorted(set(rows["entity"].unique().tolist()) - {""})
        ylabel = f"{metric} ({unit})" if unit else str(metric)
        jobs.append((traces, ylabel, next_id(), window, names))
        sources = ", ".join(sorted(str(x) for x in rows["source"].unique()))
        what = (f"one line per point = mean over its {merged} traces (trials"
                f"{' and entities' if entities else ''}) per time bucket" if merged
                else f"{len(traces)} trace(s), one per trial"
                + (" and entity" if entities else ""))
        captions.append((str(metric), (
            f"{metric} from {sources}"
            + (f" over {', '.join(entities[:6])}{' …' if len(entities) > 6 else ''}"
               if entities else "")
            + f": {len(rows):,} samples; {what}; one colour per point; shaded = steady-state "
            "window (median over trials), the only part that enters the statistics."
        )))
    svgs = render_many(_render, jobs)
    return [
        {"svg": Markup(svg), "caption": cap, "title": title, "kind": "series"}
        for svg, (title, cap) in zip(svgs, captions, strict=True)
    ]


def _render(job: tuple[Any, ...]) -> str:
    from vbench.report.charts_xy import timeseries_svg

    traces, ylabel, chart_id, window, names = job
    return timeseries_svg(traces, ylabel, chart_id=chart_id, window=window, group_names=names)


def _traces(rows: pd.DataFrame, group: Mapping[int, int]) -> tuple[list[Any], int]:
    """Each trace as it is when there are few; else one mean trace per point (returns
    the traces and how many were merged per point, 0 when none were)."""
    from vbench.report.charts_xy import Trace, downsample

    keys = ["point", "trial", "entity"]
    parts = list(rows.groupby(keys, sort=True))
    if len(parts) <= MAX_SINGLE_TRACES:
        return [
            Trace(f"{p}-{t}-{e}", group.get(int(p), 0), *downsample(
                g["t"].to_numpy(dtype=float), g["value"].to_numpy(dtype=float)))
            for (p, t, e), g in ((k, g.sort_values("t")) for k, g in parts)
        ], 0
    traces, merged = [], 0
    counts = rows.groupby("point")[["trial", "entity"]].nunique()
    merged = int((counts["trial"] * counts["entity"]).max())
    # One sort, then split at the point boundaries: cheaper than a groupby per metric.
    ordered = rows.sort_values(["point", "t"], kind="stable")
    pts = ordered["point"].to_numpy()
    t_all = ordered["t"].to_numpy(dtype=float)
    v_all = ordered["value"].to_numpy(dtype=float)
    cuts = np.flatnonzero(pts[1:] != pts[:-1]) + 1
    for idx in np.split(np.arange(len(pts)), cuts):
        p = int(pts[idx[0]])
        traces.append(Trace(str(p), group.get(p, 0), *downsample(t_all[idx], v_all[idx])))
    return traces, merged


def _median_window(trials: Sequence[Mapping[str, Any]]) -> tuple[float, float] | None:
    starts, ends = [], []
    for t in trials:
        ph = t.get("phases") or {}
        origin = ph.get("warmup_start") or ph.get("steady_start") or t.get("started")
        s, e = ph.get("steady_start"), ph.get("steady_end")
        if origin is not None and s is not None and e is not None:
            starts.append(float(s) - float(origin))
            ends.append(float(e) - float(origin))
    if not starts:
        return None
    return float(np.median(starts)), float(np.median(ends))
