"""Trial statistics (vbench.analysis.stats) and per-point aggregation (aggregate)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from scipy import stats as sp

from vbench.analysis.aggregate import point_summaries, summarize_points, trial_values
from vbench.analysis.stats import summarize, trials_needed


def test_summary_of_three_trials_matches_textbook_t_interval() -> None:
    s = summarize([10.0, 12.0, 14.0])
    assert s.n == 3
    assert s.mean == pytest.approx(12.0)
    assert s.median == pytest.approx(12.0)
    assert s.stdev == pytest.approx(2.0)  # sample stdev, ddof=1
    assert (s.min, s.max) == (10.0, 14.0)
    assert s.cv == pytest.approx(2.0 / 12.0)
    half = 4.302652729911275 * 2.0 / math.sqrt(3)  # t(0.975, df=2)
    assert s.ci_low == pytest.approx(12.0 - half)
    assert s.ci_high == pytest.approx(12.0 + half)
    assert s.ci_half == pytest.approx(half)


def test_missing_values_are_skipped_and_not_counted() -> None:
    s = summarize([None, 5.0, float("nan"), 7.0, float("inf")])
    assert s.n == 2
    assert s.mean == pytest.approx(6.0)
    assert s.median == pytest.approx(6.0)


def test_no_value_gives_none_not_zero() -> None:
    s = summarize([None, float("nan")])
    assert s.n == 0
    assert s.mean is None and s.median is None and s.min is None and s.max is None
    assert s.stdev is None and s.cv is None and s.ci_low is None and s.ci_high is None
    assert s.noisy is False and s.trials_needed is None


def test_one_trial_has_no_spread_and_no_interval() -> None:
    s = summarize([42.0])
    assert (s.n, s.mean, s.min, s.max) == (1, 42.0, 42.0, 42.0)
    assert s.stdev is None and s.cv is None and s.ci_low is None and s.ci_half is None
    assert s.noisy is False


def test_zero_mean_has_no_cv() -> None:
    s = summarize([-1.0, 1.0])
    assert s.mean == 0.0
    assert s.cv is None and s.noisy is False and s.trials_needed is None
    assert s.ci_low is not None and s.ci_low < 0 < s.ci_high  # type: ignore[operator]


def test_identical_trials_are_not_noisy_and_need_two_trials() -> None:
    s = summarize([3.0, 3.0, 3.0])
    assert s.stdev == 0.0 and s.cv == 0.0
    assert s.ci_low == s.ci_high == 3.0
    assert s.noisy is False
    assert s.trials_needed == 2


def test_noisy_flag_follows_the_threshold() -> None:
    values = [90.0, 100.0, 110.0]  # cv = 0.1
    assert summarize(values).noisy is True
    assert summarize(values, cv_threshold=0.2).noisy is False


def test_even_count_median_is_midpoint() -> None:
    assert summarize([4.0, 1.0, 3.0, 2.0]).median == pytest.approx(2.5)


@pytest.mark.parametrize("cv", [0.02, 0.05, 0.1, 0.3, 1.0])
def test_trials_needed_is_the_smallest_n_reaching_the_target(cv: float) -> None:
    n = trials_needed(cv, 0.05)
    assert n is not None and n >= 2

    def half(k: int) -> float:
        return float(sp.t.ppf(0.975, k - 1)) * cv / math.sqrt(k)

    assert half(n) <= 0.05
    if n > 2:
        assert half(n - 1) > 0.05


def test_trials_needed_for_cv_equal_to_target_is_seven() -> None:
    # t(0.975, 6) * 0.05 / sqrt(7) = 0.0462 <= 0.05; with 6 trials 0.0525 > 0.05.
    assert trials_needed(0.05, 0.05) == 7


def test_trials_needed_gives_up_on_absurd_noise() -> None:
    assert trials_needed(1000.0, 0.001) is None
    assert trials_needed(0.1, 0.0) is None


def test_summary_reports_trials_needed_from_its_cv() -> None:
    s = summarize([80.0, 100.0, 120.0])
    assert s.cv is not None
    assert s.trials_needed == trials_needed(s.cv, 0.05)
    assert s.trials_needed is not None and s.trials_needed > s.n


# ---------------------------------------------------------------- aggregation


def _row(point: int, trial: int, metric: str, value: float | None, **kw: object) -> dict:
    return {
        "point": point,
        "trial": trial,
        "guest": kw.get("guest"),
        "metric": metric,
        "value": value,
        "unit": kw.get("unit", "IO/s"),
        "source": "fio",
        "labels": kw.get("labels", "{}"),
        "window_start": 0.0,
        "window_end": 60.0,
    }


@pytest.fixture()
def samples() -> pd.DataFrame:
    rows = []
    for point, base in ((0, 100.0), (1, 200.0)):
        for trial in range(3):
            rows.append(_row(point, trial, "read_iops", base + trial))
            rows.append(_row(point, trial, "read_clat_p99", 1.0 + trial, unit="ms"))
            # Per-guest and per-job samples must not leak into the trial figure.
            rows.append(_row(point, trial, "read_iops", 9999.0, guest="g1"))
            rows.append(_row(point, trial, "read_iops", 7777.0, guest="g2"))
            rows.append(_row(point, trial, "read_iops", 5555.0, labels=json.dumps({"job": "a"})))
    rows.append(_row(1, 2, "read_clat_p99", None, unit="ms"))  # a second, missing value
    rows.append(_row(0, 3, "read_iops", float("nan")))  # a trial without the figure
    return pd.DataFrame(rows)


def test_point_summaries_use_aggregate_samples_per_trial(samples: pd.DataFrame) -> None:
    df = point_summaries(samples)
    iops = df[df["metric"] == "read_iops"].set_index("point")
    assert iops.loc[0, "n"] == 3  # trial 3 has no value: not counted
    assert iops.loc[0, "mean"] == pytest.approx(101.0)
    assert iops.loc[1, "mean"] == pytest.approx(201.0)
    assert (iops.loc[0, "min"], iops.loc[0, "max"]) == (100.0, 102.0)
    assert iops.loc[0, "unit"] == "IO/s"
    assert iops.loc[0, "stdev"] == pytest.approx(1.0)
    assert iops.loc[0, "ci_low"] < 101.0 < iops.loc[0, "ci_high"]
    assert list(df.columns[:3]) == ["point", "metric", "unit"]


def test_duplicate_trial_samples_are_averaged_and_missing_ignored(samples: pd.DataFrame) -> None:
    per_trial = trial_values(samples, ["read_clat_p99"])
    p1t2 = per_trial[(per_trial["point"] == 1) & (per_trial["trial"] == 2)]
    assert len(p1t2) == 1 and p1t2["value"].iloc[0] == pytest.approx(3.0)


def test_metrics_restrict_and_order(samples: pd.DataFrame) -> None:
    df = point_summaries(samples, ["read_iops", "read_clat_p99"])
    assert list(df["metric"]) == ["read_iops", "read_clat_p99"] * 2
    only = point_summaries(samples, ["read_clat_p99"])
    assert set(only["metric"]) == {"read_clat_p99"}


def test_per_guest_summaries_take_guest_samples_only(samples: pd.DataFrame) -> None:
    df = point_summaries(samples, per_guest=True)
    assert set(df["guest"]) == {"g1", "g2"}
    g1 = df[(df["guest"] == "g1") & (df["point"] == 0)].iloc[0]
    assert g1["mean"] == pytest.approx(9999.0) and g1["n"] == 3


def test_include_trials_keeps_only_the_given_trials(samples: pd.DataFrame) -> None:
    found = summarize_points(samples, ["read_iops"], include_trials=[(0, 0), (0, 2)])
    assert [(f.point, f.summary.n) for f in found] == [(0, 2)]
    assert found[0].summary.mean == pytest.approx(101.0)


def test_empty_samples_give_an_empty_frame_with_the_columns() -> None:
    empty = pd.DataFrame(columns=list(_row(0, 0, "m", 1.0)))
    df = point_summaries(empty)
    assert df.empty
    assert {"point", "metric", "unit", "mean", "ci_low", "noisy", "trials_needed"} <= set(df)


def test_missing_figures_are_nan_not_zero() -> None:
    df = point_summaries(pd.DataFrame([_row(0, 0, "read_iops", 5.0)]))
    row = df.iloc[0]
    assert row["n"] == 1 and row["mean"] == 5.0
    assert pd.isna(row["stdev"]) and pd.isna(row["ci_low"]) and pd.isna(row["trials_needed"])
