"""The find-max search on a synthetic system with a known boundary: exact answers,
bounded levels, noisy levels retried, limits honoured, replay after an interrupt."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from vbench.analysis.findmax import (
    CONVERGED,
    MAX_LEVELS,
    MAX_PASSES,
    MAX_TIME,
    MIN_FAILS,
    RETRY,
    FindMax,
    SearchParams,
    replay,
)


def drive(
    search: FindMax, verdict: Callable[[float, int], bool], seconds_per_trial: float = 0.0
) -> list[tuple[float, int, str]]:
    """Run the search against ``verdict(level, nth trial at that level)``."""
    asked: list[tuple[float, int, str]] = []
    elapsed = 0.0
    while (req := search.next(elapsed)) is not None:
        asked.append((req.level, req.trials, req.reason))
        lv = search.levels[req.level]
        done = list(lv.verdicts)
        done += [verdict(req.level, len(done) + i) for i in range(req.trials)]
        elapsed += seconds_per_trial * req.trials
        search.record(req.level, done, sum(done) * 2 > len(done))
    return asked


@pytest.mark.parametrize("boundary", [1, 2, 17, 63, 64, 250, 511, 999])
def test_whole_number_levels_find_the_exact_boundary(boundary: int) -> None:
    search = FindMax(SearchParams(min=1, max=1000, integer=True, verify_trials=1, gap=0.01))
    drive(search, lambda level, _n: level <= boundary)
    out = search.outcome()
    assert out.status == CONVERGED
    assert (out.highest_pass, out.lowest_fail) == (boundary, boundary + 1)
    # Ramp (≤ 5 levels to cover 1..1000 with step 125 doubling) + bisection of ≤ 500.
    assert len(out.levels) <= 5 + math.ceil(math.log2(500)) + 1


@pytest.mark.parametrize("boundary", [3.7, 42.0, 618.0, 987.6])
def test_real_levels_stop_within_the_gap(boundary: float) -> None:
    search = FindMax(SearchParams(min=1, max=1000, integer=False, gap=1.0))
    drive(search, lambda level, _n: level <= boundary)
    out = search.outcome()
    assert out.status == CONVERGED
    assert out.highest_pass is not None and out.lowest_fail is not None
    assert out.highest_pass <= boundary < out.lowest_fail
    assert out.gap_percent is not None and out.gap_percent <= 1.0


def test_every_level_passing_answers_the_max_and_every_level_failing_the_min() -> None:
    top = FindMax(SearchParams(min=2, max=40))
    drive(top, lambda _l, _n: True)
    assert top.outcome().status == MAX_PASSES and top.outcome().highest_pass == 40
    bottom = FindMax(SearchParams(min=2, max=40))
    drive(bottom, lambda _l, _n: False)
    out = bottom.outcome()
    assert out.status == MIN_FAILS and out.highest_pass is None and out.lowest_fail == 2


def test_a_noisy_level_is_retried_and_reported_never_decided_by_one_trial() -> None:
    # Level 30 alternates pass/fail trial by trial; the true boundary is 30.
    def verdict(level: float, n: int) -> bool:
        return level < 30 or (level == 30 and n % 2 == 0)

    search = FindMax(SearchParams(min=1, max=64, trials=2, noisy_retries=2, verify_trials=2))
    asked = drive(search, verdict)
    retries = [a for a in asked if a[0] == 30 and a[2] == RETRY]
    assert len(retries) == 2  # the limit, then decided over all its trials
    level = search.levels[30.0]
    assert level.noisy and len(level.verdicts) >= 2 * 3
    assert 30.0 in search.outcome().noisy


def test_a_wrong_verdict_is_caught_by_verification() -> None:
    # The first trial at 40 fails by accident (boundary 50): verification must turn it.
    def verdict(level: float, n: int) -> bool:
        return level <= 50 and not (level == 40 and n == 0)

    search = FindMax(SearchParams(min=1, max=100, trials=1, verify_trials=3, noisy_retries=0))
    drive(search, verdict)
    out = search.outcome()
    assert out.status == CONVERGED and (out.highest_pass, out.lowest_fail) == (50, 51)


def test_max_levels_and_max_time_are_honoured() -> None:
    capped = FindMax(SearchParams(min=1, max=10_000, max_levels=4, verify_trials=0))
    drive(capped, lambda level, _n: level <= 7777)
    assert capped.outcome().status == MAX_LEVELS and len(capped.levels) == 4
    timed = FindMax(SearchParams(min=1, max=10_000, max_time=100.0, trials=2, verify_trials=0))
    asked = drive(timed, lambda level, _n: level <= 7777, seconds_per_trial=30.0)
    assert timed.outcome().status == MAX_TIME
    assert sum(t for _l, t, _r in asked) * 30.0 < 100.0 + 2 * 30.0  # stops at the limit


def test_a_replayed_search_continues_where_it_was_interrupted() -> None:
    params = SearchParams(min=1, max=500, trials=2, verify_trials=2, gap=0.01)
    truth = FindMax(params)
    asked = drive(truth, lambda level, _n: level <= 321)
    # Keep what the first 7 requests stored, and half of the 8th: an interrupt.
    stored: dict[float, list[tuple[bool, bool]]] = {}
    for level, trials, _reason in asked[:7]:
        for _ in range(trials):
            stored.setdefault(level, []).append((level <= 321, level <= 321))
    eighth = asked[7]
    stored.setdefault(eighth[0], []).append((eighth[0] <= 321, eighth[0] <= 321))
    search, pending, have = replay(params, stored)
    assert pending is not None and (pending.level, pending.trials) == eighth[:2] and have == 1
    rest = [(pending.level, pending.trials, pending.reason)]
    lv = search.levels[pending.level]
    search.record(pending.level, [*lv.verdicts, *[pending.level <= 321] * 2],
                  pending.level <= 321)
    rest += drive(search, lambda level, _n: level <= 321)
    assert asked[:7] + rest == asked
    assert search.outcome().highest_pass == truth.outcome().highest_pass == 321


@pytest.mark.parametrize("gap", [1e-5, 1e-4])
def test_a_gap_finer_than_the_level_resolution_ends_instead_of_repeating_a_level(
    gap: float,
) -> None:
    # Levels are kept to 6 significant digits: once no level lies between the highest pass
    # and the lowest fail, the search has converged (it asked for the same level forever).
    boundary = 123.456789
    search = FindMax(SearchParams(min=1.0, max=1000.0, integer=False, gap=gap))
    asked = drive(search, lambda level, _n: level <= boundary)
    assert search.status == CONVERGED and len(asked) <= 40
    out = search.outcome()
    assert out.highest_pass is not None and out.lowest_fail is not None
    assert out.highest_pass <= boundary < out.lowest_fail
    assert out.lowest_fail - out.highest_pass <= 1e-3


@pytest.mark.parametrize("passes_at_zero", [False, True])
def test_a_real_valued_search_down_to_a_min_of_zero_ends(passes_at_zero: bool) -> None:
    # Everything above 0 fails: no relative gap can shrink towards 0, so the search stops
    # at the levels' resolution (a millionth of the range) and answers min.
    search = FindMax(SearchParams(min=0.0, max=100.0, integer=False, gap=1.0))
    asked = drive(search, lambda level, _n: passes_at_zero and level == 0.0)
    assert len(asked) <= 40
    out = search.outcome()
    assert out.lowest_fail is not None and out.lowest_fail <= 100.0 * 1e-6
    if passes_at_zero:
        assert search.status == CONVERGED and out.highest_pass == 0.0
    else:
        assert search.status == MIN_FAILS and out.lowest_fail == 0.0 and out.highest_pass is None


def test_everything_failing_above_a_real_min_tests_min_within_the_gap() -> None:
    search = FindMax(SearchParams(min=0.5, max=1.5, start=1.0, integer=False, gap=5.0,
                                  verify_trials=0))
    asked = drive(search, lambda _level, _n: False)
    assert search.status == MIN_FAILS and asked[-1][0] == 0.5 and len(asked) <= 8
