"""Scenario mistakes are reported as file:line:column: path: what is wrong (expected)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.errors import EXIT_CONFIG, ConfigValidationError

GOOD = """\
version: 1
name: demo
topology:
  storage:
    count: 2
workload:
  driver: fio
  params:
    rw: randread
    bs: 4k
factors:
  iodepth: [1, 16]
repeat: 3
phases:
  warmup: 5s
  steady: 1m
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def messages(tmp_path: Path, text: str, sets: list[str] | None = None) -> list[str]:
    with pytest.raises(ConfigValidationError) as exc:
        load_scenario(write(tmp_path, text), sets)
    assert exc.value.exit_code == EXIT_CONFIG
    return [str(i) for i in exc.value.issues]


def test_valid_scenario_loads_with_durations_in_seconds(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD)).model
    assert sc.phases.warmup == 5.0 and sc.phases.steady == 60.0 and sc.phases.cooldown == 0.0
    assert sc.factors["iodepth"].level_labels() == ["1", "16"]


def test_unknown_key_names_position_and_suggests(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("repeat: 3", "repaet: 3"))
    assert msgs == [
        f"{tmp_path / 's.yaml'}:13:1: repaet: unknown key 'repaet' (did you mean 'repeat'? "
        "expected one of: aa, budget, collectors, derived, description, disturbance, exclude, "
        "factors, lab_hygiene, label, name, phases, profile, "
        "qos, regression, repeat, report, search, settings, steady_state, tiles, topology, "
        "version, workload, workloads, zip)"
    ]


def test_nested_unknown_key_is_located_at_the_key(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("    count: 2", "    cuont: 2"))
    assert len(msgs) == 1
    assert msgs[0].startswith(f"{tmp_path / 's.yaml'}:5:5: topology.storage.cuont: unknown key")
    assert "did you mean 'count'?" in msgs[0]


def test_wrong_type_says_what_was_expected(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("repeat: 3", "repeat: three"))
    assert msgs == [f"{tmp_path / 's.yaml'}:13:9: repeat: expected a whole number, got 'three'"]


def test_out_of_range_value(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("repeat: 3", "repeat: 0"))
    assert msgs == [
        f"{tmp_path / 's.yaml'}:13:9: repeat: out of range: got 0 "
        "(expected a value greater than or equal to 1)"
    ]


def test_bad_duration(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("steady: 1m", "steady: 1 minute"))
    assert len(msgs) == 1 and ":16:11: phases.steady: '1 minute' is not a duration" in msgs[0]


def test_missing_required_field(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("  steady: 1m\n", ""))
    assert msgs == [f"{tmp_path / 's.yaml'}:15:3: phases.steady: required field is missing"]


def test_yaml_syntax_error_is_located(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD.replace("    bs: 4k", "    bs: [4k"))
    assert len(msgs) == 1
    assert msgs[0].startswith(f"{tmp_path / 's.yaml'}:")
    assert "YAML syntax:" in msgs[0]


def test_duplicate_key_is_refused(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD + "repeat: 4\n")
    assert msgs == [f"{tmp_path / 's.yaml'}:17:1: repeat: duplicate key (each key may appear once)"]


def test_several_mistakes_reported_together(tmp_path: Path) -> None:
    text = GOOD.replace("repeat: 3", "repeat: -1").replace("name: demo", "name: 'bad name'")
    msgs = messages(tmp_path, text)
    assert len(msgs) == 2
    assert any(":2:7: name:" in m for m in msgs) and any(":13:9: repeat:" in m for m in msgs)


def test_set_override_changes_value(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD), ["repeat=5", "workload.params.bs=64k"]).model
    assert sc.repeat == 5 and sc.workload.params["bs"] == "64k"


def test_set_override_error_names_the_option(tmp_path: Path) -> None:
    msgs = messages(tmp_path, GOOD, ["repeat=zero"])
    assert msgs == ["--set repeat=zero: repeat: expected a whole number, got 'zero'"]


def test_factor_level_typo_is_located(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  iodepth: [1, 16]", "  iodepth:\n    levels:\n      - {label: a, vaule: 1}"
    )
    msgs = messages(tmp_path, text)
    assert len(msgs) == 1
    assert (
        ":14:20: factors.iodepth.levels.0.vaule: unknown key 'vaule' (did you mean 'value'?"
        in msgs[0]
    )


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    msgs = messages(tmp_path, "- just\n- a list\n")
    assert msgs == [f"{tmp_path / 's.yaml'}:1:1: expected a scenario mapping at the top level"]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError) as exc:
        load_scenario(tmp_path / "nope.yaml")
    assert str(exc.value) == f"{tmp_path / 'nope.yaml'}: file not found"
