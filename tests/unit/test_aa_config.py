"""The scenario's `aa:` setting (an A/A test of `vbench run`) and the noise of a series."""

from __future__ import annotations

import pytest

from vbench.analysis.noise import SeriesNoise
from vbench.config.aa import AaSpec
from vbench.config.scenario import Scenario
from vbench.engine.aa import aa_count
from vbench.errors import ConfigError

BASE = {"version": 1, "name": "n", "topology": {"storage": {"count": 1}},
        "workload": {"driver": "fio", "params": {"rw": "read"}}, "phases": {"steady": "1s"}}


def test_aa_runs_default_to_five_and_need_at_least_three() -> None:
    assert Scenario.model_validate({**BASE, "aa": {}}).aa.runs == 5  # type: ignore[union-attr]
    assert Scenario.model_validate(BASE).aa is None
    with pytest.raises(ValueError, match="greater than or equal to 3"):
        Scenario.model_validate({**BASE, "aa": {"runs": 2}})
    with pytest.raises(ValueError, match="expected one of: runs"):
        Scenario.model_validate({**BASE, "aa": {"nights": 3}})


def test_noise_is_the_relative_spread_of_the_run_means() -> None:
    s = SeriesNoise("total_iops", "IO/s", {}, (90.0, 100.0, 110.0))
    assert s.cv == pytest.approx(0.1)
    assert SeriesNoise("m", "", {}, (5.0,)).cv is None
    assert SeriesNoise("m", "", {}, (0.0, 0.0, 0.0)).cv is None


def test_how_many_aa_runs_the_flag_and_the_scenario_ask_for() -> None:
    assert aa_count(None, None) is None  # an ordinary run
    assert aa_count(None, AaSpec(runs=4)) == 4  # the scenario's aa: alone
    assert aa_count(0, None) == 5 and aa_count(0, AaSpec(runs=7)) == 7  # --aa alone
    assert aa_count(6, AaSpec(runs=4)) == 6  # --aa N wins
    with pytest.raises(ConfigError, match="at least 3 runs"):
        aa_count(2, None)
