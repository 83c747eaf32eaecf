"""The adaptive repetitions rule (vbench/analysis/adaptive.py) on known series."""

from __future__ import annotations

import math

import pytest

from vbench.analysis.adaptive import RepeatRule, gain, progress, rel_half_width, rule_of, wants_more

RULE = RepeatRule(min=3, max=12, target=0.05)


def test_half_width_of_a_known_series_is_the_student_t_interval() -> None:
    # mean 100, sd 10, n 4: t(3, 97.5 %) = 3.182 -> 3.182 * 10 / 2 / 100
    xs = [90.0, 110.0, 90.0, 110.0]
    sd = math.sqrt(sum((x - 100) ** 2 for x in xs) / 3)
    assert rel_half_width(xs) == pytest.approx(3.1824 * sd / 2 / 100, rel=1e-3)
    assert rel_half_width([5.0]) is None
    assert rel_half_width([7.0, 7.0, 7.0]) == 0.0


def test_the_minimum_always_runs_even_for_a_quiet_point() -> None:
    quiet = [100.0, 100.1, 99.9]
    assert wants_more(RULE, 0, {"m": []})
    assert wants_more(RULE, 2, {"m": quiet[:2]})
    assert not wants_more(RULE, 3, {"m": quiet})


def test_a_noisy_point_gets_more_trials_and_never_more_than_max() -> None:
    noisy = [80.0, 120.0, 95.0, 105.0, 70.0, 130.0, 90.0, 110.0, 85.0, 115.0, 100.0, 100.0]
    assert wants_more(RULE, 3, {"m": noisy[:3]})
    assert wants_more(RULE, 11, {"m": noisy[:11]})
    assert not wants_more(RULE, 12, {"m": noisy})
    p = progress(RULE, 12, {"m": noisy})
    assert not p.met and p.at_max
    assert p.text().startswith("not met at max 12: ±")


def test_any_target_metric_keeps_the_point_going() -> None:
    quiet, noisy = [100.0, 100.2, 99.8], [50.0, 150.0, 100.0]
    assert wants_more(RULE, 3, {"a": quiet, "b": noisy})
    assert not wants_more(RULE, 3, {"a": quiet, "b": quiet})


def test_a_metric_without_values_is_not_met() -> None:
    assert wants_more(RULE, 3, {"m": [None, None, None]})
    assert not progress(RULE, 3, {"m": []}).met


def test_the_stop_is_decided_at_a_stricter_level_than_the_reported_interval() -> None:
    # A series whose 95 % interval is just within ±5 % but whose 99.5 % one is not.
    xs = [100.0, 104.0, 96.0, 102.0, 98.0]
    w95 = rel_half_width(xs)
    assert w95 is not None and w95 < 0.05
    assert RULE.decision_confidence == pytest.approx(1 - 0.05 / 10)
    assert wants_more(RULE, 5, {"m": xs})
    p = progress(RULE, 5, {"m": xs})
    assert not p.met and p.widest == pytest.approx(w95)


def test_met_after_text_and_stopped_early() -> None:
    quiet = [100.0, 100.1, 99.9, 100.0]
    assert progress(RULE, 4, {"m": quiet}).text() == "met after 4"
    cut = progress(RULE, 4, {"m": [80.0, 120.0, 100.0, 90.0]}, stopped_early=True)
    assert "budget spent" in cut.text() and not cut.at_max


def test_budget_goes_to_reachable_points_first() -> None:
    near = [100.0, 106.0, 94.0, 103.0, 97.0]  # wide now, reachable by 12
    hopeless = [50.0, 150.0, 100.0, 60.0, 140.0]
    done = [100.0, 100.0, 100.0]
    assert gain(RULE, 5, {"m": near}) > gain(RULE, 5, {"m": hopeless}) > 0
    assert gain(RULE, 3, {"m": done}) == 0.0
    assert gain(RULE, 1, {"m": [1.0]}) == math.inf


def test_rule_of_reads_a_stored_scenario_and_ignores_a_fixed_count() -> None:
    assert rule_of(3) is None
    r = rule_of({"min": 4, "max": 9, "target": {"ci_half_width": 0.03},
                 "metrics": ["iops"], "require": True})
    assert r == RepeatRule(4, 9, 0.03, ("iops",), True)


def test_a_point_cut_short_within_target_at_95_but_not_at_the_stop_level_says_why() -> None:
    xs = [100.0, 104.0, 96.0, 102.0, 98.0]
    p = progress(RepeatRule(3, 7, 0.05), 5, {"m": xs}, stopped_early=True)
    assert not p.met
    text = p.text()
    assert text.startswith("not met after 5 (budget spent): ±") and "not yet held at 99.0 %" in text


def test_at_max_the_reported_95_interval_alone_decides_met() -> None:
    # Within ±5 % at 95 % but not at the stricter stop level: at max the stop did not
    # depend on the data, so the point is met (and require: true does not fail the run).
    xs = [100.0, 104.0, 96.0, 102.0, 98.0]
    p = progress(RepeatRule(3, 5, 0.05, require=True), 5, {"m": xs})
    assert p.met and p.at_max and p.text() == "met after 5"
    wide = [80.0, 120.0, 95.0, 105.0, 70.0]
    assert not progress(RepeatRule(3, 5, 0.05), 5, {"m": wide}).met


def test_without_the_correction_the_stop_is_decided_at_95() -> None:
    xs = [100.0, 104.0, 96.0, 102.0, 98.0]  # within ±5 % at 95 %, not at 99.5 %
    plain = RepeatRule(3, 12, 0.05, spend_alpha=False)
    assert plain.decision_confidence == pytest.approx(0.95)
    assert not wants_more(plain, 5, {"m": xs}) and wants_more(RULE, 5, {"m": xs})


def test_a_find_max_level_with_an_adaptive_repeat_is_decided_by_its_interval() -> None:
    from vbench.analysis.findmax_qos import search_params
    from vbench.config.findmax import SearchSpec

    spec = SearchSpec.model_validate({"factor": "rate", "min": 1, "max": 100})
    assert search_params(spec, 3).noisy_retries == 2  # a fixed repeat: the spec's own
    adaptive = search_params(spec, 3, 12)
    # One trial at a time while uncertain, up to 12 (tests/unit/test_findmax_ci.py).
    assert adaptive.trials == 3 and adaptive.decide_by_ci and adaptive.max_trials == 12


def test_ls_shows_an_adaptive_repeat_as_a_range() -> None:
    from vbench.report.terminal import _points_by_trials

    row = {"points": 2, "scenario": {"repeat": {"min": 3, "max": 6}}, "n_trials": 9}
    assert _points_by_trials(row) == "2×3–6 (9 run)"


def test_a_target_metric_the_point_never_reports_does_not_hold_it_back() -> None:
    quiet = [100.0, 100.1, 99.9]
    # A write latency of a read-only job: more trials cannot make it precise.
    assert not wants_more(RULE, 3, {"read": quiet, "write_lat": [None, None, None]})
    assert progress(RULE, 3, {"read": quiet, "write_lat": []}).text() == "met after 3"
    assert wants_more(RULE, 3, {"read": [None] * 3, "write_lat": [None] * 3})
