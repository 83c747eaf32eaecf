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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vbench.report.units import choose

SERIES_DIR = "series"
_TIME_COLUMNS = ("ts", "time", "timestamp")
_ENTITY_COLUMNS = ("guest", "host", "entity")
MAX_SINGLE_TRACES = 12  # beyond this, one mean trace per point keeps a chart readable


def series_files(run_dir: str | Path | None, source: str | None = None) -> list[Path]:
    """The run's series files; with ``source``, only those of that collector or driver
    (``series/<point>-<trial>/<source>/``)."""
    if not run_dir:
        return []
    root = Path(run_dir) / SERIES_DIR
    found = sorted(root.rglob("*.parquet")) if root.is_dir() else []
    return [f for f in found if source is None or f.parent.name == source]


def _epoch(col: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(col):
        if col.dt.tz is None:
            col = col.dt.tz_localize("UTC")
        return (col - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    return pd.to_numeric(col, errors="coerce")


def read_series(run_dir: str | Path | None, source: str | None = None
                ) -> tuple[pd.DataFrame | None, list[str]]:
    """All series of a run (or of one ``source``) as one frame (columns: metric, value,
    ts, point, trial, unit, source, entity), and problems with files that do not follow
    the contract."""
    frames, problems = [], []
    for path in series_files(run_dir, source):
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
    ends = np.array([s[1] for s in spans])
    df = series.copy()
    missing = (df["point"].isna() | df["trial"].isna()).to_numpy()
    if missing.any():
        ts = df.loc[missing, "ts"].to_numpy(dtype=float)
        idx = np.searchsorted(starts, ts, side="right") - 1
        at = np.clip(idx, 0, None)
        inside = (idx >= 0) & (ts <= ends[at])
        df.loc[missing, "point"] = np.where(inside, [spans[i][2] for i in at], np.nan)
        df.loc[missing, "trial"] = np.where(inside, [spans[i][3] for i in at], np.nan)
    df = df.dropna(subset=["point", "trial"])
    # The origin of each row's trial, looked up for all rows at once by a numeric key.
    width = max([s[3] for s in spans] + [int(df["trial"].max()) if len(df) else 0]) + 1
    span_keys = np.array([s[2] * width + s[3] for s in spans])
    order = np.argsort(span_keys)
    span_keys, origins = span_keys[order], starts[order]
    keys = df["point"].to_numpy(dtype=np.int64) * width + df["trial"].to_numpy(dtype=np.int64)
    at = np.clip(np.searchsorted(span_keys, keys), 0, len(span_keys) - 1)
    found = span_keys[at] == keys
    df["t"] = np.where(found, df["ts"].to_numpy(dtype=float) - origins[at], np.nan)
    return df.dropna(subset=["t"])


def flat_series(series: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Metrics whose every sample is 0, and those with one constant other value: a chart
    of a flat line says nothing the names do not (sysstat reports dozens of these)."""
    stats = series.groupby("metric")["value"].agg(["min", "max"])
    zero = stats[(stats["min"] == 0) & (stats["max"] == 0)].index
    const = stats[(stats["min"] == stats["max"]) & (stats["max"] != 0)].index
    return sorted(map(str, zero)), sorted(map(str, const))


@dataclass(frozen=True)
class _Columns:
    """A series frame as arrays, taken once: per-metric pandas selections of text
    columns cost more than the charts themselves."""

    point: np.ndarray
    trial: np.ndarray
    entity: np.ndarray  # codes into entity_names
    entity_names: np.ndarray
    t: np.ndarray
    value: np.ndarray
    unit: np.ndarray
    source: np.ndarray  # codes into source_names
    source_names: np.ndarray

    @classmethod
    def of(cls, df: pd.DataFrame) -> _Columns:
        codes, names = pd.factorize(df["entity"].astype(object))
        sources, source_names = pd.factorize(df["source"].astype(object))
        return cls(df["point"].to_numpy(dtype=np.int64), df["trial"].to_numpy(dtype=np.int64),
                   codes, np.asarray(names, dtype=object), df["t"].to_numpy(dtype=float),
                   df["value"].to_numpy(dtype=float), df["unit"].to_numpy(dtype=object),
                   sources, np.asarray(source_names, dtype=object))


def series_charts(
    series: pd.DataFrame, trials: Sequence[Mapping[str, Any]], point_titles: Mapping[int, str],
    next_id: Any,
    settled: Mapping[str, float] | None = None,
    events: Sequence[tuple[int, int, float, str]] = (),
) -> list[dict[str, Any]]:
    """One small chart per metric: every trial's trace over time since its warm-up,
    coloured by point, the (median) steady-state window shaded, and where the warm-up
    detector found the metric settled (``settled``: seconds, median over its trials).
    ``events``: (point, trial, seconds, what) of the disturbances of trials drawn
    (vbench/report/disturbed.py: event_times), a dotted line on each chart of that trial."""
    from markupsafe import Markup

    from vbench.report.charts_xy import timeseries_svg

    df = assign_trials(series, trials)
    if df.empty:
        return []
    window = _median_window(trials)
    order = sorted(point_titles)
    names = [point_titles[p] for p in order]
    group = {p: i for i, p in enumerate(order)}
    cols = _Columns.of(df)
    codes, metrics = pd.factorize(df["metric"].astype(object), sort=True)
    by_metric = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[by_metric])) + 1
    out = []
    for idx in np.split(by_metric, cuts):
        metric = str(metrics[codes[idx[0]]])
        values = np.abs(cols.value[idx])
        nonzero = values[values != 0]
        sc = choose(str(cols.unit[idx[0]] or ""),
                    [float(np.median(nonzero))] if len(nonzero) else [])
        unit = sc.unit
        traces, merged = _traces(cols, idx, group, sc.factor)
        entities = sorted({str(e) for e in cols.entity_names[np.unique(cols.entity[idx])]}
                          - {""})
        ylabel = f"{metric} ({unit})" if unit else metric
        mark = (settled or {}).get(metric)
        mine = _events_in(cols, idx, events)
        svg = timeseries_svg(traces, ylabel, chart_id=next_id(), window=window,
                             group_names=names, small=True, settled=mark,
                             events=[(at, what) for _p, _t, at, what in mine])
        sources = ", ".join(sorted(
            str(x) for x in cols.source_names[np.unique(cols.source[idx])]))
        what = (f"one line per point = mean over its {merged} traces (trials"
                f"{' and entities' if entities else ''}) per time bucket" if merged
                else f"{len(traces)} trace(s), one per trial"
                + (" and entity" if entities else ""))
        cap = (f"{metric} from {sources}"
               + (f" over {', '.join(entities[:6])}{' …' if len(entities) > 6 else ''}"
                  if entities else "")
               + f": {len(idx):,} samples; {what}; one colour per point; shaded = "
               "steady-state window (median over trials), the only part that enters the "
               "statistics."
               + (f" Dashed line: the series settled {mark:.0f} s after the warm-up began "
                  "(MSER-5, median over its trials)." if mark is not None else "")
               + (" Dotted orange: a disturbance — " + "; ".join(
                   _event_text(p, t, at) for p, t, at, _w in mine[:8])
                  + (f"; {len(mine) - 8} more (each line's tooltip names it)"
                     if len(mine) > 8 else "") + "."
                  if mine else ""))
        out.append({"svg": Markup(svg), "caption": cap, "title": metric, "kind": "series"})
    return out


def _event_text(point: int, trial: int, at: float) -> str:
    """Where a caption says a disturbance is (one before the trial's warm-up, a task
    that began earlier, is drawn at the trace's start: said so)."""
    if at < 0:
        return (f"point {point + 1} trial {trial} before its warm-up ({-at:.0f} s before; "
                "drawn at its start)")
    return f"point {point + 1} trial {trial} at {at:.0f} s"


def _events_in(cols: _Columns, rows: np.ndarray,
               events: Sequence[tuple[int, int, float, str]]
               ) -> list[tuple[int, int, float, str]]:
    """The ``events`` of the trials that have samples among ``rows`` (one metric's)."""
    if not events:
        return []
    width = int(max(cols.trial.max(initial=0), *(e[1] for e in events))) + 1
    drawn = set(np.unique(cols.point[rows] * width + cols.trial[rows]).tolist())
    return [e for e in events if e[0] * width + e[1] in drawn]


def _traces(cols: _Columns, rows: np.ndarray, group: Mapping[int, int], factor: float = 1.0
            ) -> tuple[list[Any], int]:
    """Each trace (a trial's, per entity) of the ``rows`` of one metric as it is when
    there are few; else one mean trace per point. Returns the traces and how many were
    merged into the busiest point's line (0 when none were)."""
    from vbench.report.charts_xy import Trace, downsample

    points, trials, entities = cols.point[rows], cols.trial[rows], cols.entity[rows]
    t_all, v_all = cols.t[rows], cols.value[rows] * factor
    order = np.lexsort((t_all, entities, trials, points))
    key = np.stack([points[order], trials[order], entities[order]])
    cuts = np.flatnonzero((key[:, 1:] != key[:, :-1]).any(axis=0)) + 1
    parts = np.split(order, cuts)
    if len(parts) <= MAX_SINGLE_TRACES:
        return [Trace(f"{points[i[0]]}-{trials[i[0]]}-{entities[i[0]]}",
                      group.get(int(points[i[0]]), 0), *downsample(t_all[i], v_all[i]))
                for i in parts], 0
    per_point = np.unique(points[[i[0] for i in parts]], return_counts=True)[1]
    by_point = np.lexsort((t_all, points))
    cuts = np.flatnonzero(points[by_point][1:] != points[by_point][:-1]) + 1
    traces = []
    for idx in np.split(by_point, cuts):
        p = int(points[idx[0]])
        traces.append(Trace(str(p), group.get(p, 0), *downsample(t_all[idx], v_all[idx])))
    return traces, int(per_point.max())


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


def workload_settlings(run_dir: str | Path | None, driver: str | None,
                       trials: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Where each successful trial's trace of the workload's own per-second series
    (``series/<p>-<t>/<driver>/``: fio, vcbench) settled (vbench/analysis/warmup.py)."""
    from vbench.analysis.warmup import settlings

    if not run_dir or not driver:
        return []
    frame, _ = read_series(run_dir, driver)
    ok = [t for t in trials if t.get("status") == "ok"]
    if frame is None or frame.empty or not ok:
        return []
    return settlings(assign_trials(frame, ok), ok)
