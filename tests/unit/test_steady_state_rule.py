"""SNIA PTS steady state: the rule against rounds whose answer is known by hand, its
scenario key, and the schedule's rounds (one trial of every point per round)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.analysis.steady_state import SteadyRule, judge, rounds_of, rule_of, window_of
from vbench.config.steady import SteadyStateSpec

RULE = SteadyRule("total_iops")  # window 5, range 20 %, slope 10 %, cap 25


def test_a_device_settling_after_its_fresh_out_of_box_rounds_is_steady_at_round_7() -> None:
    # FOB rounds far above, then a plateau: rounds 3..7 are the first window that passes.
    rounds = [52000, 31000, 20500, 19800, 20300, 19900, 20100, 20000]
    state = judge(rounds, RULE)
    assert state.reached and state.done
    assert state.at_round == 7
    assert (state.window.first, state.window.last) == (3, 7)
    assert state.text().startswith("steady state reached at round 7 (rounds 3–7: range ")


def test_the_data_excursion_is_the_windows_range_within_20_percent_of_its_mean() -> None:
    # The PTS: Max(y) - Min(y) within the window <= 20 % of Ave(y). Mean 100: a range of
    # 21 (89..110) fails, 19 (90..109) passes; the fit is flat in both.
    assert not judge([100, 89, 110, 100, 101], RULE).reached
    state = judge([100, 90, 109, 100, 101], RULE)
    assert state.reached
    assert state.window.excursion == pytest.approx(0.19)


def test_every_round_within_20_percent_of_the_mean_is_not_steady_when_they_range_over_40(
) -> None:
    # The older reading (each round within ±20 % of the mean) passed this window: its
    # range, 38 % of the mean, is nearly twice what the PTS allows.
    state = judge([100, 81, 119, 100, 100], RULE)
    assert not state.reached
    assert "the rounds range over 38.0 % of their mean (limit 20 %)" in state.reason


def test_the_slope_limit_is_the_fitted_lines_change_across_the_window() -> None:
    # A steady climb: the rounds range over 12 % (< 20 %), but the line rises 12 % of the mean.
    rising = [97.0, 98.5, 100.0, 101.5, 103.0]
    w = window_of(rising, 1)
    assert w.excursion < 0.2
    assert w.fit_change == pytest.approx(6.0 / 100.0)  # 1.5/round × 4 rounds
    assert judge(rising, RULE).reached
    climbing = [94.0, 97.0, 100.0, 103.0, 106.0]
    assert window_of(climbing, 1).fit_change == pytest.approx(0.12)
    state = judge(climbing, RULE)
    assert not state.reached and not state.done
    assert "the fit changes 12.0 % (limit 10 %)" in state.reason


def test_a_device_that_never_settles_stops_at_the_cap_and_says_so() -> None:
    rule = SteadyRule("total_iops", max_rounds=8)
    rounds = [100, 60, 140, 70, 130, 65, 135, 60]
    state = judge(rounds, rule)
    assert not state.reached and state.done
    assert state.reason.startswith("steady state not reached in 8 rounds: in the last "
                                   "window (rounds 4–8) the rounds range over")
    assert state.reason.endswith("stopped at the cap of 8 rounds")
    assert not judge(rounds[:7], rule).done  # below the cap: more rounds are wanted


def test_a_failed_round_breaks_the_window_until_a_full_one_follows() -> None:
    rounds = rounds_of({1: 100.0, 2: 101.0, 4: 99.0, 5: 100.0, 6: 100.0, 7: 101.0}, 7)
    assert rounds[2] is None
    assert not judge(rounds[:6], RULE).reached  # every 5-round window holds round 3
    state = judge([*rounds, 100.0], RULE)
    assert state.at_round == 8


def test_the_scenario_key_takes_percentages_and_defaults_to_the_pts() -> None:
    spec = SteadyStateSpec.model_validate({"metric": "total_iops", "max_excursion": "20%",
                                           "max_slope": "10%", "at": {"bs": "4k"}})
    rule = rule_of(spec)
    assert rule == SteadyRule("total_iops", 5, 0.2, 0.1, 25, (("bs", "4k"),))
    assert rule_of(spec.model_dump()) == rule  # the stored mapping reads back the same
    assert rule.decides({"bs": "4k", "rw": "randwrite"})
    assert not rule.decides({"bs": "128k"})
    with pytest.raises(ValueError, match="max_rounds \\(3\\) must be at least the window"):
        SteadyStateSpec.model_validate({"metric": "m", "max_rounds": 3})
    with pytest.raises(ValueError, match="share such as 20%"):
        SteadyStateSpec.model_validate({"metric": "m", "max_excursion": "lots%"})


def test_precondition_writes_the_named_target_whole_passes_times_before_the_first_trial(
) -> None:
    from vbench.workloads.fio import precondition
    from vbench.workloads.fio.jobs import FioParams

    params = FioParams.model_validate({"rw": "randwrite", "filename": "/dev/sdb",
                                       "precondition": {"bs": "128k", "passes": 2}})
    job = precondition.render(params, "/dev/sdb", header="run r, point 0")
    for line in ("rw=write", "bs=128k", "loops=2", "filename=/dev/sdb", "direct=1"):
        assert line in job.splitlines()
    assert "size=" not in job  # the whole device
    assert precondition.applies(params, 0, 1)
    assert not precondition.applies(params, 0, 2) and not precondition.applies(params, 1, 1)
    with pytest.raises(ValueError, match="precondition conditions the device or file you name"):
        FioParams.model_validate({"precondition": {}})


def test_the_chart_draws_the_rounds_window_band_and_fitted_line() -> None:
    from vbench.report.steady_chart import steady_svg

    state = judge([52000, 31000, 20500, 19800, 20300, 19900, 20100], RULE)
    svg = steady_svg(state, "steady-state rounds of total_iops at bs=4k", "IO/s", "c1")
    assert svg.count("<circle") == 7  # every round
    assert svg.count('fill="#4c72b0" fill-opacity="0.1"') == 1  # the window, shaded
    assert svg.count('stroke-dasharray="5 3"') == 2  # the band: 90 % and 110 % of the mean
    assert svg.count('stroke-dasharray="2 2"') == 1  # the fitted line
    assert "±10 %" in svg and ">round<" in svg
    unsteady = steady_svg(judge([100, 60, 140], RULE), "t", "", "c2")
    assert "stroke-dasharray" not in unsteady  # no window yet: rounds only


def test_a_zero_mean_window_is_steady_only_at_zero_and_warned() -> None:
    swing = judge([-5, 5, -5, 5, 0], RULE)
    assert not swing.reached
    assert "the rounds differ around a mean of 0" in swing.text()
    zeros = judge([0, 0, 0, 0, 0], RULE)
    assert zeros.reached
    assert zeros.warning == "steady at zero: every round 1–5 measured 0 total_iops"
    assert zeros.text() == ("steady state reached at round 5 (warning: steady at zero: every "
                            "round 1–5 measured 0 total_iops)")
    assert judge([100, 100, 100, 100, 100], RULE).warning is None


@pytest.mark.parametrize(("extra", "why"), [
    ('repeat: {min: 3, max: 6, target: {ci_half_width: 5%}}\n',
     "cannot be combined with an adaptive repeat: rounds are one time series"),
    ('qos:\n  - {metric: total_iops, op: ">=", threshold: 10}\n'
     "search: {factor: iodepth, min: 1, max: 8}\n",
     "cannot be combined with search: each find-max level would need rounds of its own"),
])
def test_steady_state_with_a_search_or_an_adaptive_repeat_is_refused_at_it_with_why(
    tmp_path: Path, extra: str, why: str
) -> None:
    from vbench.config.load import load_scenario
    from vbench.errors import ConfigValidationError

    path = tmp_path / "s.yaml"
    path.write_text("version: 1\nname: s\ntopology:\n  storage: {count: 1}\nworkload:\n"
                    "  driver: fio\n  params: {rw: randread, size: 8m}\n"
                    "phases: {steady: 1s}\nsteady_state:\n  metric: total_iops\n" + extra)
    with pytest.raises(ConfigValidationError) as exc:
        load_scenario(path)
    assert f"s.yaml:10:3: steady_state: {why}" in str(exc.value)
