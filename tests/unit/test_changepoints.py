"""Change points of a nightly series (vbench/analysis/changepoints.py): pure code."""

from __future__ import annotations

import random

import pytest

from vbench.analysis.changepoints import changes_of


def _noisy(levels: list[float], cv: float = 0.02, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [x * (1 + rng.gauss(0, cv)) for x in levels]


def test_a_step_is_found_at_its_night_with_its_size() -> None:
    values = _noisy([1000.0] * 20 + [800.0] * 10)
    (change,) = changes_of(values)
    assert abs(change.index - 20) <= 1
    assert -0.23 < change.relative < -0.17
    assert change.p_value < 1e-4
    assert change.worse("higher") is True and change.worse("lower") is False
    assert change.worse("none") is None
    assert change.n_before + change.n_after == 30


def test_a_flat_series_and_a_one_night_outlier_have_no_change() -> None:
    flat = _noisy([500.0] * 40, seed=3)
    assert changes_of(flat) == ()
    blip = list(flat)
    blip[25] *= 0.6  # one bad night: not a new level
    assert changes_of(blip) == ()


def test_a_change_below_the_noise_floor_is_not_reported() -> None:
    values = _noisy([100.0] * 20 + [103.0] * 20, cv=0.002)
    assert [c.index for c in changes_of(values)] == [20]
    assert changes_of(values, min_effect=0.05) == ()


def test_nights_without_a_figure_keep_their_positions() -> None:
    values: list[float | None] = list(_noisy([10.0] * 15 + [14.0] * 15))
    values[5] = None
    values[22] = float("nan")
    (change,) = changes_of(values)
    assert abs(change.index - 15) <= 1
    assert values[change.index] is not None


def test_too_short_a_history_has_no_change() -> None:
    assert changes_of([1.0, 1.0, 1.0, 5.0, 5.0]) == ()


def test_segmentation_splits_as_ruptures_binseg_does() -> None:
    """vbench computes ruptures' Binseg (l2 cost, penalty) from prefix sums: the same
    breakpoints on series with steps, drift, outliers and none."""
    import numpy as np
    import ruptures as rpt

    from vbench.analysis.changepoints import MIN_SEGMENT, _Segmentation

    rng = np.random.default_rng(11)
    for case in range(40):
        n = int(rng.integers(8, 120))
        x = rng.normal(100, 5, n)
        for _ in range(case % 4):
            x[int(rng.integers(1, n)):] += rng.choice([-1, 1]) * rng.uniform(5, 40)
        if case % 5 == 0:
            x += np.linspace(0, 20, n)
        pen = float(rng.uniform(10, 3000))
        theirs = rpt.Binseg(model="l2", min_size=MIN_SEGMENT, jump=1).fit(x).predict(pen=pen)
        assert _Segmentation(x, MIN_SEGMENT).splits(pen) == [b for b in theirs if b < n], case


def test_welch_p_is_scipys() -> None:
    import numpy as np
    from scipy.stats import ttest_ind

    from vbench.analysis.changepoints import welch_p

    rng = np.random.default_rng(5)
    for _ in range(20):
        a, b = rng.normal(10, 2, int(rng.integers(3, 30))), rng.normal(11, 4, 7)
        assert welch_p(a, b) == pytest.approx(ttest_ind(a, b, equal_var=False).pvalue,
                                               rel=1e-9)
