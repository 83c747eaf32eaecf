"""A factor (or search) path into ``topology.<group>`` must name an existing group: a
typo would create a phantom group and every point would run on one guest."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError

SCENARIO = """\
version: 1
name: scaling
topology:
  workers:
    count: 1
workload:
  driver: fio
  params: {rw: randread, size: 8m}
factors:
  guests:
    path: topology.worker.count
    levels: [1, 2]
phases: {steady: 2s}
"""

LAB = """\
version: 1
name: two
defaults: {user: u, key_file: /nonexistent-key}
nodes:
  a: {address: 127.0.0.2, roles: [workers]}
  b: {address: 127.0.0.3, roles: [workers]}
"""


def _issues(tmp_path: Path, text: str, lab: bool = False) -> list[str]:
    sc = tmp_path / "s.yaml"
    sc.write_text(text)
    lab_loaded = None
    if lab:
        (tmp_path / "lab.yaml").write_text(LAB)
        lab_loaded = load_lab(tmp_path / "lab.yaml")
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(sc), lab_loaded)
    return [str(i) for i in exc.value.issues]


def test_factor_path_to_a_missing_group_is_located_with_did_you_mean(tmp_path: Path) -> None:
    got = _issues(tmp_path, SCENARIO)
    assert got == [
        f"{tmp_path / 's.yaml'}:11:11: factors.guests.path: topology.worker.count: no group "
        "'worker' in topology (groups: workers); did you mean topology.workers.count?"
    ]


def test_with_a_lab_the_message_names_the_scenario_not_the_lab(tmp_path: Path) -> None:
    got = _issues(tmp_path, SCENARIO, lab=True)
    assert len(got) == 1
    assert "no group 'worker' in topology" in got[0]
    assert "lab.yaml" not in got[0] and "offers" not in got[0]
    assert got[0].startswith(f"{tmp_path / 's.yaml'}:11:11: ")


def test_level_set_and_search_paths_are_checked_too(tmp_path: Path) -> None:
    text = SCENARIO.replace(
        "    path: topology.worker.count\n    levels: [1, 2]\n",
        "    levels:\n      - {label: one, set: {topology.wrkers.count: 1}}\n",
    )
    got = _issues(tmp_path, text)
    assert len(got) == 1 and ":12:" in got[0] and "no group 'wrkers'" in got[0]
    search = SCENARIO.replace(
        "factors:\n  guests:\n    path: topology.worker.count\n    levels: [1, 2]\n",
        "search: {factor: n, path: topology.worker.count, min: 1, max: 4}\n"
        "qos: [{metric: total_iops, op: '>=', threshold: 1}]\n",
    )
    got = _issues(tmp_path, search)
    assert len(got) == 1 and "search.path" in got[0] and "topology.workers.count" in got[0]


def test_a_path_to_an_existing_group_still_scales(tmp_path: Path) -> None:
    sc = tmp_path / "s.yaml"
    sc.write_text(SCENARIO.replace("topology.worker.count", "topology.workers.count"))
    plan = build_plan(load_scenario(sc))
    assert [len(p.guests["target"]) for p in plan.points] == [1, 2]
