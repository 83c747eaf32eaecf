"""Capacity preflight with missing data: a size vCenter did not report stays unknown and
is said (a warning), never counted as 0 so that the check passes on nothing."""

from __future__ import annotations

from pyVmomi import vim

from vbench.vsphere.checks import MIB, _disk_checks, _memory_checks, _Need
from vbench.vsphere.inventory import Inventory, Obj

GIB = 1024**3


def datastore(free: float | None) -> Obj:
    props = {"name": "ds1"} if free is None else {"name": "ds1", "summary.freeSpace": free}
    return Obj(vim.Datastore("datastore-1"), props)


def test_known_sizes_pass_or_fail_as_before() -> None:
    need = _Need(datastore(100 * GIB))
    need.add("web", 4, 10 * GIB)
    (ok,) = _disk_checks([need])
    assert (ok.ok, ok.level) == (True, "info")
    assert ok.detail == "100.0 GiB free for 40.0 GiB of clones"
    need.add("db", 10, 10 * GIB)
    (full,) = _disk_checks([need])
    assert (full.ok, full.detail) == (False, "100.0 GiB free for 140.0 GiB of clones")


def test_unknown_template_size_warns_instead_of_passing_on_zero() -> None:
    need = _Need(datastore(100 * GIB))
    need.add("web", 4, None)  # the template's committed size was not reported
    (c,) = _disk_checks([need])
    assert (c.ok, c.level) == (True, "warning")
    assert "unknown: vCenter reports no size for group web" in c.detail
    assert c.detail.endswith("(not checked)")


def test_known_part_already_too_big_fails_even_with_unknowns() -> None:
    need = _Need(datastore(10 * GIB))
    need.add("web", 2, 20 * GIB)
    need.add("db", 2, None)
    (c,) = _disk_checks([need])
    assert not c.ok and "40.0 GiB of clones + unknown" in c.detail


def test_unknown_free_space_warns() -> None:
    need = _Need(datastore(None))
    need.add("web", 1, GIB)
    (c,) = _disk_checks([need])
    assert (c.ok, c.level) == (True, "warning") and c.detail.startswith("unknown free for")


def _compute(host_props: dict) -> tuple[Inventory, Obj]:
    host = Obj(vim.HostSystem("host-1"), {"name": "esx1", **host_props})
    cluster = Obj(vim.ClusterComputeResource("domain-c1"), {"name": "c1", "host": [host.ref]})
    return Inventory("vc1", [host, cluster]), cluster


def test_host_memory_not_reported_is_unknown_not_zero() -> None:
    inv, cluster = _compute({"runtime.connectionState": "connected"})
    need = _Need(cluster)
    need.add("web", 2, 1024 * MIB)
    (c,) = _memory_checks(inv, [need])
    assert (c.ok, c.level, c.check) == (True, "warning", "memory")
    assert c.detail.startswith("unknown free for 2.0 GiB of VMs")


def test_host_memory_reported_is_checked() -> None:
    inv, cluster = _compute({
        "runtime.connectionState": "connected",
        "summary.hardware.memorySize": 8 * GIB,
        "summary.quickStats.overallMemoryUsage": 2048,  # MiB
    })  # fmt: skip
    need = _Need(cluster)
    need.add("web", 2, 1024 * MIB)
    need.add("db", 1, None)  # a group of unknown memory size: said, not counted as 0
    (c,) = _memory_checks(inv, [need])
    assert (c.ok, c.level) == (True, "warning")
    assert c.detail.startswith("6.0 GiB free for 2.0 GiB of VMs + unknown")
    need.unknown.clear()
    need.add("big", 1, 8 * GIB)
    (full,) = _memory_checks(inv, [need])
    assert not full.ok
