"""`search:` in a scenario: checked with file:line before anything runs; the plan shows
each combination at its first level and binds the guests of the largest level."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError

BASE = """version: 1
name: fm
topology:
  storage: {{count: 1}}
workload:
  driver: fio
  params: {{rw: randread, size: 8m, ioengine: psync, direct: false}}
factors:
  bs: [4k, 64k]
repeat: 2
phases: {{steady: 1s}}
qos:
  - {{name: lat, metric: read_clat_p99_max, op: "<=", threshold: 5, unit: ms}}
search:
{search}
"""


def _plan(tmp_path: Path, search: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "s.yaml"
    path.write_text(BASE.format(search=search))
    return build_plan(load_scenario(path))


def _error(tmp_path: Path, search: str) -> str:
    with pytest.raises(ConfigValidationError) as exc:
        _plan(tmp_path, search)
    return str(exc.value)


def test_one_search_per_combination_at_its_first_level(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "  {factor: iodepth, min: 1, max: 64, start: 4}")
    assert [p.labels for p in plan.points] == [
        {"bs": "4k", "iodepth": "4"}, {"bs": "64k", "iodepth": "4"}
    ]
    assert all(p.params["iodepth"] == 4 for p in plan.points)
    assert plan.scenario.search is not None and plan.scenario.search.integer is True


def test_bounds_are_checked_with_their_line(tmp_path: Path) -> None:
    msg = _error(tmp_path, "  factor: iodepth\n  min: 64\n  max: 1")
    assert "s.yaml:15:3" in msg and "min (64) must be below max (1)" in msg


def test_an_unknown_criterion_is_located(tmp_path: Path) -> None:
    msg = _error(tmp_path, "  factor: iodepth\n  min: 1\n  max: 8\n  criteria: [latency]")
    assert "s.yaml:18:14" in msg and "no qos criterion named 'latency' (criteria: lat)" in msg


def test_a_level_the_driver_refuses_is_reported_at_the_search(tmp_path: Path) -> None:
    # fio's iodepth must be ≥ 1: the search's min is validated before the run.
    msg = _error(tmp_path, "  factor: iodepth\n  min: 0\n  max: 8")
    assert "iodepth: out of range: got 0" in msg and "s.yaml:15:3" in msg


def test_a_searched_factor_cannot_also_be_a_factor(tmp_path: Path) -> None:
    msg = _error(tmp_path, "  factor: bs\n  path: workload.params.iodepth\n  min: 1\n  max: 8")
    assert "'bs' is also a factor" in msg


def test_a_group_size_search_binds_the_guests_of_its_largest_level(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "  {factor: vms, path: topology.storage.count, min: 1, max: 3}")
    assert plan.groups["storage"] == ("storage[1]", "storage[2]", "storage[3]")
    assert [len(p.guests["target"]) for p in plan.points] == [1, 1]


def test_an_infinite_bound_is_refused_with_its_line(tmp_path: Path) -> None:
    # `.inf` is a YAML float: a level of inf would be written into the workload.
    text = _error(tmp_path, "  {factor: iodepth, min: 1, max: .inf}")
    assert "s.yaml:" in text and "finite number" in text and "search.max" in text


def test_size_bounds_are_printed_as_written(tmp_path: Path) -> None:
    # Issue 23 item 7: 1m and 4k, not 1.04858e+06 and 4096.
    msg = _error(tmp_path, "  factor: iodepth\n  min: 1m\n  max: 4k")
    assert "min (1m) must be below max (4k)" in msg
    msg = _error(tmp_path, "  factor: iodepth\n  min: 4k\n  max: 1m\n  start: 2m")
    assert "start (2m) must lie within min..max" in msg
