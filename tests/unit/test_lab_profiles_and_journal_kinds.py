"""Lab profiles resolved purely (labels, node swaps, guests placed by a profile, lab
validation) and the journal's object kinds (folding, reverse-order cleanup segments)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from vbench.config.lab import Lab
from vbench.config.profiles import (
    apply_to_groups,
    placement_key,
    profile_labels,
    vm_placements,
)
from vbench.config.scenario import GroupSpec
from vbench.vsphere.cleanup import _segments
from vbench.vsphere.journal import items, pending
from vbench.vsphere.resources import point_placement

VC = {"url": "https://127.0.0.1:8989/sdk", "user": "u", "password": "${env:X}"}


def lab(**profiles: Any) -> Lab:
    return Lab.model_validate({
        "version": 1, "name": "l", "vcenters": {"vc1": VC, "vc2": VC},
        "nodes": {"n1": {"address": "127.0.0.2"}, "n2": {"address": "127.0.0.3"}},
        "profiles": profiles,
    })


def test_profile_labels_name_the_profile_and_carry_its_labels() -> None:
    lb = lab(a={"vcenter": "vc2", "labels": {"site": "x"}}, b={"labels": {"disk": "ssd"}})
    assert profile_labels(lb, ("a", "b")) == {"profile": "a+b", "site": "x", "disk": "ssd"}
    assert profile_labels(lb, ()) == {}


def test_first_profile_naming_a_field_wins_for_the_point_placement() -> None:
    lb = lab(a={"datastore": "ds-a"}, b={"vcenter": "vc2", "datastore": "ds-b"})
    p = point_placement(lb, ("a", "b"), None)
    assert p is not None and (p.vcenter, p.datastore, p.profile) == ("vc2", "ds-a", "a")
    assert point_placement(lb, (), None) is None  # two vCenters, none chosen
    assert point_placement(lb, (), "vc1").vcenter == "vc1"  # type: ignore[union-attr]


def test_profile_swaps_nodes_and_renames_guests_it_places_elsewhere() -> None:
    lb = lab(nfs={"vcenter": "vc2", "nodes": {"n1": "n2"}}, tag={"labels": {"k": "v"}})
    topology = {
        "web": GroupSpec.model_validate({"count": 2, "vm": {"template": "t", "vcenter": "vc1"}}),
        "cli": GroupSpec.model_validate({"count": 1, "nodes": ["n1"]}),
    }
    groups = {"web": ("web-1", "web-2"), "cli": ("n1",)}
    moved = apply_to_groups(groups, topology, lb, ("nfs",), {"web": "vc1"})
    assert moved == {"web": ("web-nfs-1", "web-nfs-2"), "cli": ("n2",)}
    # A profile that only labels places nothing elsewhere.
    assert apply_to_groups(groups, topology, lb, ("tag",), {"web": "vc1"}) == groups
    assert placement_key(lb, ("tag",)) is None
    placed = vm_placements(topology, lb, {"web": "vc1"},
                           {"web": ("web-1", "web-2", "web-nfs-1", "web-nfs-2")},
                           [(), ("nfs",)])
    assert [(p.key, p.vcenter, p.guests) for p in placed] == [
        ("web", "vc1", ("web-1", "web-2")),
        ("web@nfs", "vc2", ("web-nfs-1", "web-nfs-2")),
    ]


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"vcenter": "vc9"}, "profiles.p.vcenter: vcenter 'vc9' is not in vcenters"),
        ({"nodes": {"n1": "n9"}}, "profiles.p.nodes.n1: node 'n9' (for n1) is not in nodes"),
        ({"datastre": "x"}, "datastre"),
    ],
)
def test_lab_refuses_a_profile_naming_what_it_lacks(profile: dict, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        lab(p=profile)
    assert message in str(err.value)


def _e(event: str, name: str, kind: str | None = None, **kw: Any) -> dict[str, Any]:
    return {"event": event, "vcenter": "vc1", "name": name, **({"kind": kind} if kind else {}),
            **kw}


def test_journal_folds_each_kind_apart_and_keeps_its_data() -> None:
    entries = [
        _e("intent", "vb-r-a", action="clone"),
        _e("created", "vb-r-a", moid="vm-1"),
        _e("intent", "vb-r-a", "snapshot", action="create", data={"vm": "vm-1"}),
        _e("created", "vb-r-a", "snapshot", moid="snapshot-2"),
        _e("intent", "lib", "library", action="create", data={"plugin": "p"}),
        _e("destroyed", "lib", "library"),
    ]
    got = {(i.kind, i.name): i for i in items(entries)}
    assert got[("vm", "vb-r-a")].moid == "vm-1"  # the VM and its namesake snapshot differ
    assert got[("snapshot", "vb-r-a")].moid == "snapshot-2"
    assert got[("snapshot", "vb-r-a")].data == {"vm": "vm-1"}
    assert [(i.kind, i.name) for i in pending(entries)] == [("vm", "vb-r-a"),
                                                           ("snapshot", "vb-r-a")]


def test_cleanup_goes_newest_first_in_runs_of_one_kind() -> None:
    entries = [
        _e("intent", "v1"), _e("intent", "v2"),
        _e("intent", "s1", "snapshot"),
        _e("intent", "v3"),
        _e("intent", "f1", "folder"), _e("intent", "f2", "folder"),
    ]
    segs = [(k, [i.name for i in b]) for _, k, b in _segments(pending(entries))]
    assert segs == [("folder", ["f1", "f2"]), ("vm", ["v3"]), ("snapshot", ["s1"]),
                    ("vm", ["v1", "v2"])]


def test_an_object_made_again_under_its_name_is_cleaned_as_the_newest() -> None:
    # v1 is unregistered and registered back after the library was made: it is newer.
    entries = [
        _e("intent", "v1"), _e("intent", "lib", "library"),
        _e("unregistered", "v1"),
        _e("intent", "v1"),
    ]
    assert [(i.kind, i.name) for i in pending(entries)] == [("library", "lib"), ("vm", "v1")]


def test_a_vcenter_driver_without_a_chosen_vcenter_is_refused_before_the_run() -> None:
    from vbench.config.scenario import Scenario
    from vbench.engine.vsphere_run import VSphereRun
    from vbench.errors import ConfigError

    scenario = Scenario.model_validate({
        "version": 1, "name": "s", "workload": {"driver": "fio", "params": {}},
        "phases": {"steady": 1},
    })
    with pytest.raises(ConfigError, match="no vCenter is chosen for a point with profiles"):
        VSphereRun(scenario, lab(), {}, {}, workload_profiles=[()])  # two vCenters, no profile
    run = VSphereRun(scenario, lab(p={"vcenter": "vc2"}), {}, {}, workload_profiles=[("p",)])
    assert run.active and run.vcenters == ["vc2"]
    run.close()


def test_indexed_journal_answers_about_one_object_from_memory(tmp_path: Any) -> None:
    from vbench.vsphere.journal import IndexedJournal

    j = IndexedJournal.in_run_dir(tmp_path)
    j.write("intent", vcenter="vc1", name="lib", kind="library", data={"x": 1})
    j.write("created", vcenter="vc1", name="lib", kind="library", moid="id-1")
    j.path.write_text("")  # what it answers does not come from reading the file back
    item = j.item("vc1", "library", "lib")
    assert item is not None and (item.moid, item.state, item.data) == ("id-1", "created", {"x": 1})
    assert j.item("vc1", "vm", "lib") is None
