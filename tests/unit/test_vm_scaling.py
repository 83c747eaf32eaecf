"""VMs that follow the points: only the difference between consecutive points is cloned
or destroyed, per placement; the plan counts the clones each point makes."""

from __future__ import annotations

from pathlib import Path

from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import Plan, build_plan
from vbench.engine.schedule import MatrixSchedule
from vbench.engine.vm_scaling import (
    plan_text,
    plan_units,
    planned_vms,
    point_vm_guests,
    up_front,
    vm_change,
)

UNITS = {"w-1": "w", "w-2": "w", "w-3": "w", "w-4": "w", "w-nfs-1": "w@nfs", "w-nfs-2": "w@nfs"}

LAB = """version: 1
name: l
vcenters:
  vc1: {url: https://127.0.0.1:1/sdk, user: u, password: "${env:VBENCH_UNIT_NO_SUCH}"}
profiles:
  nfs: {datastore: nfs-ds}
"""

SCENARIO = """version: 1
name: scale
topology:
  w:
    count: 1
    vm: {{template: tmpl, cluster: C0{extra}}}
workload:
  driver: fio
  params: {{rw: randread, size: 8m}}
factors:
  vms:
    path: topology.w.count
    levels: [{levels}]
{more}phases: {{steady: 1s}}
{settings}"""


def _plan(tmp_path: Path, levels: str, *, extra: str = "", more: str = "",
          settings: str = "") -> tuple[Plan, dict[str, str]]:
    (tmp_path / "lab.yaml").write_text(LAB)
    (tmp_path / "s.yaml").write_text(
        SCENARIO.format(levels=levels, extra=extra, more=more, settings=settings)
    )
    lab = load_lab(tmp_path / "lab.yaml")
    plan = build_plan(load_scenario(tmp_path / "s.yaml"), lab)
    return plan, plan_units(plan, lab.model)


def test_a_smaller_point_destroys_the_surplus_and_a_larger_one_clones_the_missing() -> None:
    down = vm_change(["w-1", "w-2", "w-3", "w-4"], ["w-1", "w-2"], UNITS)
    assert (down.create, down.destroy, down.use) == ((), ("w-3", "w-4"), ("w-1", "w-2"))
    up = vm_change(["w-1", "w-2"], ["w-1", "w-2", "w-3"], UNITS)
    assert (up.create, up.destroy) == (("w-3",), ())


def test_vms_of_a_placement_the_point_does_not_use_are_left_alone() -> None:
    change = vm_change(["w-1", "w-2", "static-1"], ["w-nfs-1"], UNITS)
    assert (change.create, change.destroy) == (("w-nfs-1",), ())


def test_up_front_are_the_vms_every_point_of_a_placement_uses() -> None:
    points = [["w-1", "w-2", "w-3", "w-4"], ["w-1", "w-2"], ["w-nfs-1", "w-nfs-2"], ["w-nfs-1"]]
    assert up_front(points, UNITS) == ["w-1", "w-2", "w-nfs-1"]


def test_a_count_matrix_clones_each_vm_once(tmp_path: Path) -> None:
    plan, units = _plan(tmp_path, "1, 2, 4")
    assert [point_vm_guests(p.nodes, units) for p in plan.points] == [
        ["w-1"], ["w-1", "w-2"], ["w-1", "w-2", "w-3", "w-4"]]
    vms = planned_vms(plan, units)
    assert vms is not None
    assert (vms.created, vms.destroyed, vms.from_scratch) == (4, 0, 7)
    assert [(len(c.create), len(c.destroy)) for _, c in vms.changes] == [(1, 0), (1, 0), (2, 0)]
    head, per_point = plan_text(vms)
    assert head == ["VMs: 4 cloned and 0 destroyed over the run, point by point (7 clones if "
                    "every point made its own)"]
    assert per_point[2] == "  VMs: 4 in use; before it 2 cloned, 0 destroyed"


def test_a_smaller_point_after_a_larger_one_destroys_the_difference(tmp_path: Path) -> None:
    plan, units = _plan(tmp_path, "4, 2, 3")
    vms = planned_vms(plan, units)
    assert vms is not None
    assert [(c.create, c.destroy) for _, c in vms.changes] == [
        (("w-1", "w-2", "w-3", "w-4"), ()), ((), ("w-3", "w-4")), (("w-3",), ())]
    assert vms.to_json()["steps"][1] == {"point": 1, "create": 0, "destroy": 2, "in_use": 2}


def test_a_random_order_is_counted_in_the_order_its_seed_draws(tmp_path: Path) -> None:
    seeded = "repeat: 3\nsettings: {order: random, seed: 7}\n"
    plan, units = _plan(tmp_path, "1, 4", settings=seeded)
    vms = planned_vms(plan, units)
    assert vms is not None and vms.order == "random"
    # Each change of point moves between 1 and 4 VMs: 3 clones or 3 removals.
    assert len(vms.changes) >= 2
    assert all(len(c.create) + len(c.destroy) in (1, 3, 4) for _, c in vms.changes)
    assert vms.created - vms.destroyed == len(vms.changes[-1][1].use)
    # The same changes of point as the run's schedule makes with that seed.
    schedule = MatrixSchedule(plan.points, plan.repeat, order="random", seed=7)
    ran = [s.point.index for s in iter(schedule.next, None)]
    assert [i for i, _ in vms.changes] == [p for k, p in enumerate(ran)
                                          if k == 0 or ran[k - 1] != p]
    drawn, _ = _plan(tmp_path, "1, 4", settings="settings: {order: random}\n")
    unknown = planned_vms(drawn, units)
    assert unknown is not None and unknown.changes == ()
    assert "the order is drawn when the run starts" in plan_text(unknown)[0][0]


def test_kept_vms_are_not_scaled(tmp_path: Path) -> None:
    plan, units = _plan(tmp_path, "1, 2", extra=", keep: true")
    assert units == {}
    assert planned_vms(plan, units) is None


def test_profiles_keep_their_own_vms(tmp_path: Path) -> None:
    more = "  store:\n    levels: [{label: local}, {label: nfs, profile: nfs}]\n"
    plan, units = _plan(tmp_path, "1, 2", more=more)
    vms = planned_vms(plan, units)
    assert vms is not None
    # count 1 local, count 1 nfs, count 2 local, count 2 nfs: each placement grows once.
    steps = {plan.points[i].title: (c.create, c.destroy) for i, c in vms.changes}
    assert sorted(c for c, _ in steps.values()) == [
        ("w-1",), ("w-2",), ("w-nfs-1",), ("w-nfs-2",)]
    assert all(d == () for _, d in steps.values())
