"""Change points of a nightly series (vbench/analysis/changepoints.py): pure code."""

from __future__ import annotations

import random

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
