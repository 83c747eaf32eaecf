"""A find-max search whose other factor selects a lab profile: every level it creates is
labelled like its first level (the profile and the profile's labels), so the run, the
report and `--resume` see one search per combination, not one per label set."""

from __future__ import annotations

from pathlib import Path

from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan
from vbench.engine.search import SearchSchedule
from vbench.results.records import RunInfo
from vbench.results.store import Store

LAB = """version: 1
name: l
nodes:
  n1: {address: 127.0.0.2}
profiles:
  ssd: {labels: {disk: fast}}
  hdd: {labels: {disk: slow}}
"""

SCENARIO = """version: 1
name: fm
topology:
  storage: {nodes: [n1]}
workload:
  driver: fio
  params: {rw: randread, size: 8m, ioengine: psync, direct: false}
factors:
  media:
    levels:
      - {label: a, profile: ssd}
      - {label: b, profile: hdd}
phases: {steady: 1s}
qos:
  - {name: lat, metric: read_clat_p99_max, op: "<=", threshold: 5, unit: ms}
search: {factor: iodepth, min: 1, max: 64, start: 4}
"""


def _schedule(tmp_path: Path, *, resume: bool = False) -> tuple[SearchSchedule, Store]:
    (tmp_path / "lab.yaml").write_text(LAB)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    scenario, lab = load_scenario(tmp_path / "s.yaml"), load_lab(tmp_path / "lab.yaml")
    plan = build_plan(scenario, lab)
    store = Store.open(None, tmp_path)
    if not resume:
        store.create_run(RunInfo(run_id="r1", scenario_name="fm", started=1.0))
        store.add_points("r1", [(p.index, p.labels) for p in plan.points])
    return SearchSchedule(plan, scenario, lab, store, "r1", resume=resume), store


def test_a_level_created_mid_search_carries_the_profile_of_its_combination(
    tmp_path: Path,
) -> None:
    schedule, _store = _schedule(tmp_path)
    for combo, (media, disk) in zip(schedule.combos, [("a", "fast"), ("b", "slow")],
                                    strict=True):
        start = combo.points[4.0]
        level = schedule._point(combo, 16.0)
        assert start.labels == {"media": media, "iodepth": "4",
                                "profile": {"a": "ssd", "b": "hdd"}[media], "disk": disk}
        assert level.labels == {**start.labels, "iodepth": "16"}


def test_resume_finds_the_stored_levels_of_a_profile_combination(tmp_path: Path) -> None:
    first, store = _schedule(tmp_path)
    made = first._point(first.combos[1], 16.0)
    store.add_points("r1", [(made.index, made.labels)])
    resumed, _ = _schedule(tmp_path, resume=True)
    assert sorted(resumed.combos[1].points) == [4.0, 16.0]
    assert resumed.combos[1].points[16.0].index == made.index
    assert sorted(resumed.combos[0].points) == [4.0]
