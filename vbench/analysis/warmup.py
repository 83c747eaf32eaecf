"""Where a per-second series settled: the warm-up found in the data, not guessed.

MSER-5 (White, 1997): the series is cut into batches of 5 observations; for every
truncation point ``d`` (in batches) the statistic is the variance of the remaining batch
means divided by their count, ``sum((b[d:] - mean(b[d:]))**2) / (k - d)**2``. The
``d`` that minimises it (sought in the first half) is where the series settled: dropping
the transient lowers the spread faster than losing observations raises the standard error
of the mean, and no further. When the batch means left after that point still trend (the
least-squares slope more than 4 standard errors from 0) the series is called **not
settled**: a drift, or a transient as long as the run.

:func:`settlings` applies it to every trial's trace of the workload's own series (time
since the trial's warm-up started, entities averaged per second) and
:func:`settling_warnings` says, per metric and point, when a trace settled after the
configured warm-up ended ("settled 42 s into a 30 s warm-up") or did not settle —
when the difference matters: by ``MIN_SHIFT`` (3 %) of the settled level or more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

BATCH = 5  # observations per batch mean (the "5" of MSER-5)
MIN_BATCHES = 4  # fewer batch means than this cannot say anything
# The truncation is sought in the first half of the batches (MSER's usual guard: past it,
# too few observations remain to trust the statistic, and a chance low near the end wins).
MAX_TRUNCATION = 0.5
# What is left after the truncation must not trend: a slope this many standard errors
# from 0 means the series is still moving (a drift, or a transient as long as the run).
# 4 rather than ~2 because batch means of correlated seconds are themselves correlated.
MAX_TREND_T = 4.0
# What matters in practice, not only statistically: a rate-capped fio at 600 IOPS with
# one second at 602 "settles" after it, and a 0.5 % drift on a quiet series is
# significant. A late settling or a trend counts only when it moves the level by this
# share of the settled mean (vbench's default minimum effect, docs/reports.md).
MIN_SHIFT = 0.03
BACK_OFF_Z = 2.0  # see _back_off


@dataclass(frozen=True)
class Settled:
    """MSER-5 on one series: the index of the first settled observation (None: the
    series did not settle, or is too short to tell — ``reason`` says which)."""

    index: int | None
    length: int
    reason: str = ""

    @property
    def settled(self) -> bool:
        return self.index is not None


def mser(values: Sequence[float] | np.ndarray, batch: int = BATCH) -> Settled:
    """The MSER-``batch`` truncation point of ``values`` (see the module docstring)."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    k = len(y) // batch
    if k < MIN_BATCHES:
        return Settled(None, len(y), f"too short: {len(y)} values, at least "
                       f"{MIN_BATCHES * batch} needed")
    b = y[: k * batch].reshape(k, batch).mean(axis=1)
    # Sums over every suffix b[d:], for all d at once.
    s1 = np.cumsum(b[::-1])[::-1]
    s2 = np.cumsum((b * b)[::-1])[::-1]
    n = np.arange(k, 0, -1, dtype=float)
    stat = np.maximum(s2 - s1 * s1 / n, 0.0) / n**2
    best = int(np.argmin(stat[: int(MAX_TRUNCATION * k) + 1]))
    rest = b[best:]
    if _trend(rest) > MAX_TREND_T and _change(rest) >= MIN_SHIFT:
        return Settled(None, len(y), "not settled: the series keeps changing to its end")
    return Settled(_back_off(b, best) * batch, len(y))


def _back_off(b: np.ndarray, best: int) -> int:
    """MSER alone cuts late on noise (dropping a batch that happens to lie far from the
    mean lowers its statistic): the earliest ``d`` before ``best`` whose batches
    ``b[d:best]`` average within ``BACK_OFF_Z`` standard errors of the settled mean
    (a block, so one stray batch neither stops the step back nor is taken for a trend)."""
    rest = b[best:]
    if best == 0 or len(rest) < 2:
        return best
    sd, mean = float(rest.std(ddof=1)), float(rest.mean())
    for d in range(best):
        block = b[d:best]
        if abs(float(block.mean()) - mean) <= BACK_OFF_Z * sd / np.sqrt(len(block)):
            return d
    return best


def _change(b: np.ndarray) -> float:
    """How much the least-squares line through ``b`` changes from its first batch to its
    last, relative to their mean."""
    if len(b) < 2 or not b.mean():
        return 0.0
    x = np.arange(len(b), dtype=float)
    slope = float(np.polyfit(x, b, 1)[0])
    return abs(slope) * (len(b) - 1) / abs(float(b.mean()))


def _trend(b: np.ndarray) -> float:
    """|t| of the least-squares slope of the batch means ``b`` (0 when flat)."""
    if len(b) < 3:
        return 0.0
    x = np.arange(len(b), dtype=float) - (len(b) - 1) / 2
    slope = float((x * (b - b.mean())).sum() / (x * x).sum())
    resid = b - b.mean() - slope * x
    se = float(np.sqrt((resid * resid).sum() / (len(b) - 2) / (x * x).sum()))
    if se == 0.0:
        return 0.0 if slope == 0.0 else float("inf")
    return abs(slope) / se


@dataclass(frozen=True)
class TraceSettling:
    """Where one trial's trace of one metric settled, in seconds since its warm-up
    started (``at`` None: it did not), against the warm-up the scenario configured."""

    point: int
    trial: int
    metric: str
    at: float | None
    warmup: float | None
    span: float  # seconds of trace examined (warm-up start to steady end)
    reason: str = ""
    # The seconds from the warm-up's end to ``at``: their mean's difference from the
    # settled mean, relative to it (None: no such seconds).
    shift: float | None = None

    @property
    def late(self) -> bool:
        """Settled after the configured warm-up ended (by more than one batch), and the
        seconds in between differ from the settled level by MIN_SHIFT or more."""
        if self.at is None or self.warmup is None:
            return False
        return self.at > self.warmup + BATCH and (self.shift or 0.0) >= MIN_SHIFT


def _origin_and_warmup(trial: Mapping[str, Any]) -> tuple[float | None, float | None, float]:
    ph = trial.get("phases") or {}
    origin = ph.get("warmup_start") or ph.get("steady_start") or trial.get("started")
    steady = ph.get("steady_start")
    end = ph.get("steady_end") or trial.get("ended")
    if origin is None:
        return None, None, float("inf")
    warm = float(steady) - float(origin) if steady is not None else None
    span = float(end) - float(origin) if end is not None else float("inf")
    return float(origin), warm, span


def settlings(frame: pd.DataFrame, trials: Iterable[Mapping[str, Any]]) -> list[TraceSettling]:
    """MSER-5 on every (point, trial, metric) trace of ``frame`` (columns point, trial,
    metric, t = seconds since the trial's warm-up started, value), from warm-up start to
    the end of the steady window, the entities (guests) averaged per second."""
    if frame is None or frame.empty:
        return []
    by_trial = {(int(t["point"]), int(t["trial"])): t for t in trials}
    df = frame[["point", "trial", "metric", "t", "value"]].copy()
    df["second"] = np.floor(df["t"].to_numpy(dtype=float))
    per_second = df.groupby(["point", "trial", "metric", "second"], sort=True)["value"].mean()
    out = []
    for (p, tr, metric), trace in per_second.groupby(level=[0, 1, 2], sort=True):
        trial = by_trial.get((int(p), int(tr)))
        if trial is None:
            continue
        _, warm, span = _origin_and_warmup(trial)
        seconds = trace.index.get_level_values(3).to_numpy(dtype=float)
        values = trace.to_numpy(dtype=float)
        # Non-finite seconds (a gap) leave both arrays together: mser's index must name
        # the same second in `seconds` as in the values it judged.
        keep = (seconds >= 0) & (seconds < span) & np.isfinite(values)
        seconds, values = seconds[keep], values[keep]
        found = mser(values)
        at = float(seconds[found.index]) if found.index is not None else None
        examined = float(seconds[-1] + 1) if len(seconds) else 0.0
        out.append(TraceSettling(int(p), int(tr), str(metric), at, warm, examined,
                                 found.reason, _shift(seconds, values, warm, at)))
    return out


def _shift(seconds: np.ndarray, values: np.ndarray, warm: float | None, at: float | None
           ) -> float | None:
    """The relative difference of the seconds in [warm, at) from the settled mean."""
    if warm is None or at is None or at <= warm:
        return None
    between = values[(seconds >= warm) & (seconds < at)]
    settled = values[seconds >= at]
    if not len(between) or not len(settled) or not settled.mean():
        return None
    return abs(float(between.mean() - settled.mean())) / abs(float(settled.mean()))


def _secs(x: float) -> str:
    return f"{x:.0f} s"


def settling_warnings(found: Sequence[TraceSettling], titles: Mapping[int, str]
                      ) -> list[str]:
    """One line per metric and point whose traces settled late or not at all: the worst
    trace, and how many of the point's traces did the same."""
    groups: dict[tuple[str, int], list[TraceSettling]] = {}
    for s in found:
        groups.setdefault((s.metric, s.point), []).append(s)
    out = []
    for (metric, point), items in sorted(groups.items()):
        where = titles.get(point, f"point {point}")
        unsettled = [s for s in items if s.at is None and "too short" not in s.reason]
        late = sorted((s for s in items if s.late), key=lambda s: -(s.at or 0.0))
        if unsettled:
            s = unsettled[0]
            out.append(f"{metric} at {where}: did not settle within the {_secs(s.span)} "
                       f"examined (MSER-5) in {len(unsettled)} of {len(items)} trial(s); "
                       "its figure may still carry the warm-up or a drift")
        elif late:
            s = late[0]
            out.append(f"{metric} at {where}: settled {_secs(s.at or 0.0)} into a "
                       f"{_secs(s.warmup or 0.0)} warm-up (trial {s.trial}; {len(late)} of "
                       f"{len(items)} trial(s) late, MSER-5): the steady window's first "
                       f"{_secs((s.at or 0.0) - (s.warmup or 0.0))} differ by "
                       f"{(s.shift or 0.0) * 100:.0f} % from the settled level")
    return out


def settled_marks(found: Sequence[TraceSettling]) -> dict[str, float]:
    """Per metric, the median settling time over its traces that settled (the point a
    time-series chart marks)."""
    times: dict[str, list[float]] = {}
    for s in found:
        if s.at is not None:
            times.setdefault(s.metric, []).append(s.at)
    return {m: float(np.median(v)) for m, v in times.items()}


# -- phases.warmup: auto -------------------------------------------------------------------
# The detector ends the warm-up while the workload runs: after each new observation the
# warm-up so far is cut by MSER-5, and it ends once the part after the cut is long
# enough to be believed and flat, or at the cap (the documented fallback: the whole cap
# was the warm-up, "not settled"). Live, a slow rise looks like noise for a while, so
# the rule is stricter than the after-the-fact one (bench/warmup_detect.py --online
# measured it: with 4 batches and mser's own trend check it ended before an exponential
# warm-up had settled in 81 % of series, leaving a median bias of 3.5 % in the minute
# after; with these, 11 % and 0.75 %, the noise floor):
SETTLED_BATCHES = 8  # batch means after the cut, at least; and no fewer than before it
LIVE_TREND_T = 2.0  # a slope this many standard errors from 0 still moves
# Observations per second: one a second (the per-second series) when the cap leaves room
# for twice the fewest the rule can end on, finer for a short cap.
OBSERVATIONS_BY_CAP = 2 * SETTLED_BATCHES * BATCH
FINEST_INTERVAL = 0.25
# raw/<point>-<trial>/: the observations a driver's automatic warm-up kept (the report
# draws them: vbench/report/warmup_chart.py).
AUTO_WARMUP_FILE = "warmup-auto.json"


@dataclass(frozen=True)
class WarmupEnd:
    """The detector's answer after an observation of an automatic warm-up."""

    end: bool  # end the warm-up now
    settled_at: int | None  # the observation MSER-5 found the series settled from
    reason: str  # why not yet, or why it ended without settling


def shortest_auto_warmup() -> float:
    """The shortest cap under which the detector can end a warm-up: its fewest
    observations at the finest interval (a shorter cap always ends at the cap)."""
    return SETTLED_BATCHES * BATCH * FINEST_INTERVAL


def observation_interval(cap: float) -> float:
    """Seconds between observations of an automatic warm-up of at most ``cap`` seconds."""
    return min(1.0, max(FINEST_INTERVAL, cap / OBSERVATIONS_BY_CAP))


def warmup_end(values: Sequence[float], cap_reached: bool) -> WarmupEnd:
    """End an automatic warm-up after these observations (``values``, one per interval
    since the workload started)? When MSER-5 finds where the series settled, at least
    ``SETTLED_BATCHES`` batches (and no fewer observations than before the cut) follow
    it, and they are flat: no slope ``LIVE_TREND_T`` standard errors from 0, and a
    fitted change under ``MIN_SHIFT`` of their mean. Else at the cap (the fallback)."""
    found = mser(values)
    whole = len(values) // BATCH * BATCH  # mser judges whole batches only
    why = found.reason
    if found.index is not None:
        rest = whole - found.index
        if rest < max(SETTLED_BATCHES * BATCH, found.index):
            why = f"settled at observation {found.index}, too few observations after it yet"
        elif not _flat(np.asarray(values[found.index:whole], dtype=float)):
            why = f"settled at observation {found.index}, but what follows still moves"
        else:
            return WarmupEnd(True, found.index, "settled")
    if cap_reached:
        return WarmupEnd(True, None, f"the cap: not settled ({why})")
    return WarmupEnd(False, None, why)


def _flat(rest: np.ndarray) -> bool:
    b = rest[np.isfinite(rest)]
    b = b[: len(b) // BATCH * BATCH].reshape(-1, BATCH).mean(axis=1)
    return _trend(b) < LIVE_TREND_T and _change(b) < MIN_SHIFT


@dataclass(frozen=True)
class AutoWarmup:
    """One trial's automatic warm-up as stored: its phase marks."""

    point: int
    trial: int
    seconds: float  # warm-up start to steady start
    capped: bool  # reached the cap (the fallback), not the detector


def auto_warmups(trials: Iterable[Mapping[str, Any]], cap: float,
                 interval: float | None = None,
                 settled: Mapping[tuple[int, int], bool] | None = None) -> list[AutoWarmup]:
    """Every trial's automatic warm-up from its stored phase marks (so a resumed run and
    every report read the same). ``settled[(point, trial)]``: whether the detector ended
    it (the observations the driver kept, AUTO_WARMUP_FILE); the marks also hold the
    workload's start and stop, so they can pass the cap for a warm-up the detector
    ended at it. Without a kept answer, a warm-up within one observation of the cap hit
    it."""
    step = interval if interval is not None else observation_interval(cap)
    out = []
    for t in trials:
        ph = t.get("phases") or {}
        start, steady = ph.get("warmup_start"), ph.get("steady_start")
        if start is None or steady is None:
            continue
        seconds = float(steady) - float(start)
        ended = (settled or {}).get((int(t["point"]), int(t["trial"])))
        capped = seconds >= cap - step if ended is None else not ended
        out.append(AutoWarmup(int(t["point"]), int(t["trial"]), seconds, capped))
    return sorted(out, key=lambda a: (a.point, a.trial))


def auto_warmup_lines(found: Sequence[AutoWarmup], cap: float, titles: Mapping[int, str]
                      ) -> list[str]:
    """Per point, the warm-up each trial took under ``phases.warmup: auto``:
    "warm-up (auto, cap 60 s) at bs=4k: trial 1 24 s, trial 2 22 s, trial 3 60 s (the cap:
    not settled)"."""
    by_point: dict[int, list[AutoWarmup]] = {}
    for a in found:
        by_point.setdefault(a.point, []).append(a)
    out = []
    for point, items in sorted(by_point.items()):
        parts = [f"trial {a.trial} {a.seconds:.1f} s" + (" (the cap: not settled)"
                                                         if a.capped else "")
                 for a in items]
        out.append(f"warm-up (auto, cap {_secs(cap)}) at {titles.get(point, f'point {point}')}"
                   f": {', '.join(parts)}")
    return out
