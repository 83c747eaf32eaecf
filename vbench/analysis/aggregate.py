"""From stored samples to one summary per (point, metric, unit).

Trials are the unit of repetition. The figure of a trial is its *aggregate* sample:
``guest`` is None (summed/averaged over guests by the driver) and ``labels`` is empty
(not a per-job or per-operation figure). With ``per_guest=True`` the same is done per
guest instead, from the samples that carry a guest name and no labels.

A label that only says where a figure came from (``from``: "per-second log") is no
breakdown, so it does not hide the figure. A figure a driver makes only per guest and
marks with its provenance (fio's ``iops_ts_cv``) is the trial's figure when one guest
made it in that trial — several guests' ratios do not combine, so then the trial has
none (issue 22: the Iometer example's headline was in samples.csv and in no output). A
collector's per-target counters carry no such mark and stay per guest. Per guest, a
labelled sample
that is its guest's only one of the metric in the trial (CloudStone's ``{instance}``
figures, one instance per server guest) is that guest's figure: the label names the
guest's part, it does not split it. :func:`why_no_figure` says why a metric has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.analysis.stats import DEFAULT_CV_THRESHOLD, Summary, summarize
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import json

    import numpy as np
    import pandas as pd
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")
    json = lazy_module("json")  # stored labels: `vbench validate` reads none

SUMMARY_COLUMNS = (
    "n", "mean", "median", "stdev", "min", "max", "cv",
    "ci_low", "ci_high", "noisy", "trials_needed",
)  # fmt: skip

_EMPTY_LABELS = frozenset({"", "{}", "null", "None"})
_PROVENANCE = frozenset({"from"})  # label keys that say where a figure came from


@dataclass(frozen=True)
class MetricSummary:
    """The summary of one metric at one point (and one guest when per guest)."""

    point: int
    metric: str
    unit: str
    guest: str | None
    summary: Summary


def _keys(v: object) -> frozenset[str] | None:
    """The label keys of a stored ``labels`` value (None: not a mapping)."""
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return frozenset()
    if isinstance(v, dict):
        return frozenset(map(str, v))
    text = str(v).strip()
    if text in _EMPTY_LABELS:
        return frozenset()
    try:  # tolerate spacing differences such as "{ }"
        parsed = json.loads(text)
    except ValueError:
        return None
    if not parsed:
        return frozenset()
    return frozenset(map(str, parsed)) if isinstance(parsed, dict) else None


def _label_kinds(labels: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(no label or only provenance labels, provenance labels only and some): each
    distinct stored labels value parsed once."""
    cache: dict[str, frozenset[str] | None] = {}

    def keys(v: object) -> frozenset[str] | None:
        if not isinstance(v, str):  # None, NaN or a mapping: cheap, and maybe unhashable
            return _keys(v)
        if v not in cache:
            cache[v] = _keys(v)
        return cache[v]

    def kind(v: object, marked: bool) -> bool:
        k = keys(v)
        return k is not None and k <= _PROVENANCE and (bool(k) or not marked)

    return (labels.map(lambda v: kind(v, False)).astype(bool),
            labels.map(lambda v: kind(v, True)).astype(bool))


def _has_no_labels(labels: pd.Series) -> pd.Series:
    """No label, or only labels saying where the figure came from."""
    return _label_kinds(labels)[0]


def trial_values(
    samples: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    per_guest: bool = False,
    include_trials: Iterable[tuple[int, int]] | None = None,
) -> pd.DataFrame:
    """One row per (point, [guest,] metric, unit, trial) with that trial's ``value``.

    Several rows for one trial (which a driver should not produce) are averaged.
    A trial whose figure is missing keeps a NaN value, so it is visible but not counted.
    """
    keys = ["point", *(["guest"] if per_guest else []), "metric", "unit", "trial"]
    if samples.empty:
        return pd.DataFrame(columns=[*keys, "value"])
    df = samples
    guest_missing = df["guest"].isna()
    plain, marked = _label_kinds(df["labels"])
    mask = plain & (~guest_missing if per_guest else guest_missing)
    if not per_guest:  # a collector's per-target counters stay per guest
        mask |= _only_guest(df, marked & ~guest_missing, mask)
    else:
        mask |= _sole_row(df, ~plain & ~guest_missing, mask)
    if metrics is not None:
        mask &= df["metric"].isin(list(metrics))
    if include_trials is not None:
        wanted = {(int(p), int(t)) for p, t in include_trials}
        pairs = zip(df["point"].astype(int), df["trial"].astype(int), strict=True)
        mask &= pd.Series([pair in wanted for pair in pairs], index=df.index)
    df = df.loc[mask, [*keys, "value"]].copy()
    df["unit"] = df["unit"].fillna("").astype(str)
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    return df.groupby(keys, sort=True, dropna=False)["value"].mean().reset_index()


def _only_guest(df: pd.DataFrame, per_guest: pd.Series, aggregate: pd.Series) -> pd.Series:
    """The per-guest rows standing for a trial's figure: the trial has no aggregate
    row of the metric and exactly one guest made it."""
    key = ["point", "trial", "metric"]
    if not per_guest.any():
        return per_guest
    have = set(map(tuple, df.loc[aggregate, key].itertuples(index=False, name=None)))
    rows = df.loc[per_guest, [*key, "guest"]]
    guests = rows.groupby(key)["guest"].nunique()
    single = {k for k, n in guests.items() if n == 1 and k not in have}
    keys = rows[key].itertuples(index=False, name=None)
    picked = pd.Series([k in single for k in keys], index=rows.index, dtype=bool)
    return per_guest & picked.reindex(df.index, fill_value=False)


def _sole_row(df: pd.DataFrame, labelled: pd.Series, taken: pd.Series) -> pd.Series:
    """Labelled per-guest rows that are their guest's only row of the metric in the
    trial, where no unlabelled row gives that guest's figure."""
    key = ["point", "trial", "guest", "metric"]
    if not labelled.any():
        return labelled
    have = set(df.loc[taken, key].itertuples(index=False, name=None))
    rows = df.loc[labelled, key]
    counts = rows.groupby(key).size()
    sole = {k for k, n in counts.items() if n == 1 and k not in have}
    picked = pd.Series([k in sole for k in rows.itertuples(index=False, name=None)],
                       index=rows.index, dtype=bool)
    return labelled & picked.reindex(df.index, fill_value=False)


def why_no_figure(
    samples: pd.DataFrame, metric: str, include_trials: Iterable[tuple[int, int]] | None = None
) -> str:
    """Why ``metric`` has no figure at any point, in words for a report ("" when it
    has one): never stored, stored without a value, only in failed trials, only per
    guest, or only broken down by labels."""
    if samples.empty or not (samples["metric"] == metric).any():
        return "no sample stored"
    rows = samples[samples["metric"] == metric]
    valued = rows[pd.to_numeric(rows["value"], errors="coerce").notna()]
    if valued.empty:
        return f"stored without a value ({len(rows)} samples)"
    if include_trials is not None:
        wanted = {(int(p), int(t)) for p, t in include_trials}
        pairs = zip(valued["point"].astype(int), valued["trial"].astype(int), strict=True)
        ok = valued[[pair in wanted for pair in pairs]]
        if ok.empty:
            return "values only in failed trials"
        valued = ok
    if not trial_values(valued).empty:
        return ""
    plain = _has_no_labels(valued["labels"])
    guests = valued["guest"].dropna().unique()
    if plain.any():
        return f"only per guest ({len(guests)} guests each trial: not combined)"
    keys = sorted({k for v in valued["labels"] for k in _label_keys(v)} - _PROVENANCE)
    return f"only per {', '.join(keys) or 'label'} ({len(valued)} values)"


def _label_keys(raw: object) -> list[str]:
    if isinstance(raw, dict):
        return [str(k) for k in raw]
    try:
        parsed = json.loads(str(raw))
    except ValueError:
        return []
    return [str(k) for k in parsed] if isinstance(parsed, dict) else []


def summarize_points(
    samples: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    per_guest: bool = False,
    include_trials: Iterable[tuple[int, int]] | None = None,
    cv_threshold: float = DEFAULT_CV_THRESHOLD,
) -> list[MetricSummary]:
    """Summaries over trials, ordered by point, [guest,] then metric.

    ``metrics`` restricts (and orders) the metrics; otherwise all are taken,
    alphabetically. ``include_trials`` restricts to these (point, trial) pairs, e.g.
    the successful trials only.
    """
    per_trial = trial_values(samples, metrics, per_guest=per_guest, include_trials=include_trials)
    if per_trial.empty:
        return []
    order = {m: i for i, m in enumerate(metrics)} if metrics is not None else {}
    group_keys = ["point", *(["guest"] if per_guest else []), "metric", "unit"]
    # per_trial is sorted by these keys: a group ends where any of them changes. Slicing
    # arrays at those boundaries costs a fraction of a pandas group-by (a frame per
    # group), which dominated a report of hundreds of point × metric groups.
    columns = [per_trial[k].to_numpy(dtype=object) for k in group_keys]
    values = per_trial["value"].to_numpy(dtype=float)
    change = np.zeros(len(values), dtype=bool)
    change[0] = True
    for col in columns:
        change[1:] |= col[1:] != col[:-1]
    starts = np.flatnonzero(change).tolist()
    out: list[MetricSummary] = []
    for start, end in zip(starts, [*starts[1:], len(values)], strict=True):
        fields = {k: col[start] for k, col in zip(group_keys, columns, strict=True)}
        out.append(
            MetricSummary(
                point=int(fields["point"]),
                metric=str(fields["metric"]),
                unit=str(fields["unit"]),
                guest=str(fields["guest"]) if per_guest else None,
                summary=summarize(values[start:end].tolist(), cv_threshold),
            )
        )
    out.sort(key=lambda s: (s.point, s.guest or "", order.get(s.metric, len(order)), s.metric))
    return out


def point_summaries(
    samples: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    per_guest: bool = False,
    include_trials: Iterable[tuple[int, int]] | None = None,
    cv_threshold: float = DEFAULT_CV_THRESHOLD,
) -> pd.DataFrame:
    """:func:`summarize_points` as a DataFrame: one row per (point, [guest,] metric,
    unit) with the columns of :data:`SUMMARY_COLUMNS`.

    Missing figures are NaN in the float columns (pandas' None); ``trials_needed`` is a
    nullable integer column.
    """
    rows = summarize_points(
        samples,
        metrics,
        per_guest=per_guest,
        include_trials=include_trials,
        cv_threshold=cv_threshold,
    )
    ident = ["point", *(["guest"] if per_guest else []), "metric", "unit"]
    records = [
        {
            "point": r.point,
            **({"guest": r.guest} if per_guest else {}),
            "metric": r.metric,
            "unit": r.unit,
            **{c: getattr(r.summary, c) for c in SUMMARY_COLUMNS},
        }
        for r in rows
    ]
    frame = pd.DataFrame.from_records(records, columns=[*ident, *SUMMARY_COLUMNS])
    floats = ["mean", "median", "stdev", "min", "max", "cv", "ci_low", "ci_high"]
    frame[floats] = frame[floats].astype(float)
    frame["n"] = frame["n"].astype(int)
    frame["noisy"] = frame["noisy"].astype(bool)
    frame["trials_needed"] = frame["trials_needed"].astype("Int64")
    return frame
