"""Warm-up found, not guessed: MSER-5 on series whose settling point is known, the
per-trial traces of a stored series frame, the verdict's warning lines and the chart's
dashed line."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from tests.seed import SEED
from vbench.analysis.warmup import (
    TraceSettling,
    mser,
    settled_marks,
    settling_warnings,
    settlings,
)
from vbench.report.charts_xy import Trace, timeseries_svg


def _noise(n: int, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 20.0, n)  # cv 2 % of 1,000


# A statistical rule is judged over many series, not one: 20 seeds (fixed, so a failure
# repeats) per shape; bench/warmup_detect.py measures the same on 2,000 series.
SEEDS = range(1000, 1020)


def _found(make: Callable[[int], np.ndarray]) -> list[int | None]:
    return [mser(make(seed)).index for seed in SEEDS]


def test_a_step_is_found_within_5_percent_of_the_length() -> None:
    found = _found(lambda seed: np.r_[np.full(40, 500.0), np.full(160, 1000.0)]
                   + _noise(200, seed))
    assert None not in found
    errors = [abs(f - 40) for f in found if f is not None]
    assert statistics.median(errors) <= 10 and min(found) >= 40, found  # never before it


def test_an_exponential_rise_settles_where_its_bias_is_lost_in_the_noise() -> None:
    t = np.arange(300.0)
    # The bias falls under one batch mean's standard error (20/sqrt(5)) at 77 s.
    found = _found(lambda seed: 1000.0 * (1 - 0.8 * np.exp(-t / 15.0)) + _noise(300, seed))
    assert None not in found
    assert statistics.median(abs(f - 77) for f in found if f is not None) <= 15, found


def test_a_stationary_series_settles_at_its_start() -> None:
    found = _found(lambda seed: 1000.0 + _noise(240, seed))
    assert None not in found
    assert statistics.median(f for f in found if f is not None) <= 12, found
    assert sum(f is not None and f > 24 for f in found) <= 1, found  # 10 % of the length


def test_a_drift_never_settles() -> None:
    found = [mser(1000.0 + np.linspace(0.0, 300.0, 240) + _noise(240, seed)) for seed in SEEDS]
    assert all(not f.settled and "not settled" in f.reason for f in found)


def test_a_series_too_short_says_so_rather_than_guessing() -> None:
    found = mser([1.0, 2.0, 3.0] * 5)
    assert found.index is None
    assert "too short" in found.reason


def _frame(traces: dict[tuple[int, int, str], np.ndarray]) -> pd.DataFrame:
    rows = []
    for (point, trial, guest), values in traces.items():
        for i, v in enumerate(values):
            rows.append({"point": point, "trial": trial, "metric": "fio_iops", "t": i + 0.5,
                         "value": v, "entity": guest})
    return pd.DataFrame(rows)


def _trial(point: int, trial: int, warmup: float, steady: float) -> dict[str, object]:
    return {"point": point, "trial": trial, "status": "ok",
            "phases": {"warmup_start": 1000.0, "steady_start": 1000.0 + warmup,
                       "steady_end": 1000.0 + warmup + steady}}


def test_traces_are_judged_per_trial_with_guests_averaged_per_second() -> None:
    late = np.r_[np.full(42, 300.0), np.full(118, 1000.0)]
    frame = _frame({
        (0, 1, "g1"): late + _noise(160, SEED), (0, 1, "g2"): late + _noise(160, SEED + 1),
        (0, 2, "g1"): 1000.0 + _noise(160, SEED + 2),
    })  # fmt: skip
    trials = [_trial(0, 1, 30, 120), _trial(0, 2, 30, 120)]
    found = {(s.point, s.trial): s for s in settlings(frame, trials)}
    # Where exactly is the benchmark's business (bench/warmup_detect.py): MSER may cut a
    # batch or a few late, never before the step.
    assert (found[0, 1].at or 0) >= 40 and found[0, 1].late
    assert found[0, 1].warmup == 30 and found[0, 1].span == 150
    assert found[0, 2].at is not None and not found[0, 2].late
    lines = settling_warnings(list(found.values()), {0: "bs=4k"})
    assert len(lines) == 1
    assert lines[0].startswith(f"fio_iops at bs=4k: settled {found[0, 1].at:.0f} s into a "
                               "30 s warm-up (trial 1; 1 of 2 trial(s) late")


def test_samples_after_the_steady_window_are_not_examined() -> None:
    # A ramp-down in the cool-down must not make a settled trace look unsettled.
    y = np.r_[1000.0 + _noise(150), np.linspace(1000.0, 0.0, 30)]
    found = settlings(_frame({(0, 1, "g"): y}), [_trial(0, 1, 30, 120)])
    assert found[0].at is not None and found[0].span == 150


def test_seconds_without_a_finite_value_do_not_shift_where_a_trace_settles() -> None:
    # Review: mser dropped the NaN seconds but its index was read in the unfiltered
    # seconds: a step at 60 s after 30 NaN seconds reported at=30, shift=nan.
    y = np.r_[np.full(60, 300.0), np.full(130, 1000.0)] + _noise(190)
    y[5:35] = np.nan
    (found,) = settlings(_frame({(0, 1, "g"): y}), [_trial(0, 1, 30, 160)])
    # never before the step (MSER may cut a few batches late: 60 s in 258 of 300 seeds,
    # at most 110 s); the seconds between are 300 against 1,000 settled
    assert found.at is not None and 60 <= found.at < 120, found
    assert found.shift is not None and np.isfinite(found.shift) and found.shift > 0.2


def test_unsettled_and_on_time_traces_are_worded_apart() -> None:
    found = [
        TraceSettling(0, 1, "ops", None, 30.0, 90.0, "not settled: …"),
        TraceSettling(1, 1, "ops", 10.0, 30.0, 90.0),
        TraceSettling(2, 1, "ops", 33.0, 30.0, 90.0),  # within one batch of the warm-up
        TraceSettling(3, 1, "ops", None, 30.0, 12.0, "too short: 12 values"),
    ]
    lines = settling_warnings(found, {0: "a", 1: "b", 2: "c", 3: "d"})
    assert lines == ["ops at a: did not settle within the 90 s examined (MSER-5) in 1 of 1 "
                     "trial(s); its figure may still carry the warm-up or a drift"]
    assert settled_marks(found) == {"ops": pytest.approx(21.5)}


def test_the_time_series_chart_marks_where_the_series_settled() -> None:
    t = np.arange(60.0)
    trace = Trace("0-1", 0, t, 1000.0 - 500.0 * np.exp(-t / 8.0))
    with_mark = timeseries_svg([trace], "ops", chart_id="c1", window=(10.0, 60.0),
                               small=True, settled=42.0)
    without = timeseries_svg([trace], "ops", chart_id="c1", window=(10.0, 60.0), small=True)
    assert "settled 42 s" in with_mark and 'stroke-dasharray="4 3"' in with_mark
    assert "settled" not in without


def test_a_difference_too_small_to_matter_is_no_late_warm_up_nor_a_drift() -> None:
    # fio capped at 600 IOPS is nearly noiseless: a 0.5 % step at 15 s is "significant"
    # (MSER settles after it) but moves no figure anyone would act on.
    capped = np.r_[np.full(15, 600.0), np.full(20, 603.0)]
    capped[[2, 26]] = [601.0, 602.0]
    found = settlings(_frame({(0, 1, "g"): capped}), [_trial(0, 1, 5, 30)])
    assert found[0].at is not None and found[0].at >= 15
    assert found[0].shift is None or found[0].shift < 0.03
    assert not found[0].late and settling_warnings(found, {0: "bs=4k"}) == []
    # A drift of 1 % over 4 minutes is significant at this noise, but no drift to report.
    quiet = 1000.0 + np.linspace(0.0, 10.0, 240) + np.random.default_rng(7).normal(0, 1, 240)
    assert mser(quiet).settled
    # The same slow start at full scale is reported with its size.
    slow = np.r_[np.full(12, 200.0), np.full(23, 600.0)]
    found = settlings(_frame({(0, 1, "g"): slow}), [_trial(0, 1, 5, 30)])
    assert found[0].late and found[0].shift == pytest.approx(400 * 7 / 10 / 600, rel=0.3)
