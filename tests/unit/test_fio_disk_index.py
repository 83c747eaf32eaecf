"""fio's ``filename: disk:N``: a data disk named by its index, found in each guest by the
uuid vSphere gave it (its WWN/serial there, with disk.EnableUUID), or a path the lab
lists for a node; a guest that cannot have the disk is refused by the plan, in one line
naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from pyVmomi import vim

from vbench.config.lab import Lab
from vbench.config.load import load_lab, load_scenario
from vbench.config.scenario import VmSpec
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError
from vbench.guest.labspec import guest_spec
from vbench.vsphere.disks import added_slots, disk_uuids
from vbench.vsphere.specs import ENABLE_UUID_KEY, reconfig_spec
from vbench.workloads.base import PlannedGuest
from vbench.workloads.fio.disks import (
    DiskRef,
    find_uuid,
    join_paths,
    parse_lsblk,
    plan_problem,
    resolve,
    split_entries,
)
from vbench.workloads.fio.jobs import FioParams

# Hand-written (not captured from a VM): what `lsblk -J -d -p -o NAME,WWN,SERIAL,TYPE,SIZE`
# prints in a Linux guest of a VM with disk.EnableUUID=TRUE, a 16 GiB system disk from
# the template and two data disks whose devices enumerated in the other order than the
# disks were added (disk 1 became sdc). util-linux 2.38 prints null for a missing value.
LSBLK_VM = """{
   "blockdevices": [
      {"name": "/dev/sda", "wwn": "0x6000c2912f1b3e5d8e0a4c7b1d2e3f40",
       "serial": "6000c2912f1b3e5d8e0a4c7b1d2e3f40", "type": "disk", "size": "16G"},
      {"name": "/dev/sdb", "wwn": "0x6000c29b7a5c1e2d3f4a5b6c7d8e9f01",
       "serial": "6000c29b7a5c1e2d3f4a5b6c7d8e9f01", "type": "disk", "size": "100G"},
      {"name": "/dev/sdc", "wwn": "0x6000c29e0d1c2b3a495867f8e9d0c1b2",
       "serial": "6000c29e0d1c2b3a495867f8e9d0c1b2", "type": "disk", "size": "100G"},
      {"name": "/dev/sr0", "wwn": null, "serial": "00000000000000000001", "type": "rom",
       "size": "1024M"}
   ]
}"""
# The same disks' uuids as vSphere reports them (VirtualDisk.backing.uuid), in vm.disks order.
UUID_1 = "6000C29e-0d1c-2b3a-4958-67f8e9d0c1b2"
UUID_2 = "6000C29b-7a5c-1e2d-3f4a-5b6c7d8e9f01"


def test_filename_entries_are_paths_and_disk_indexes_in_fios_colon_list() -> None:
    assert split_entries("disk:1") == [DiskRef(1)]
    assert split_entries("disk:1:disk:2") == [DiskRef(1), DiskRef(2)]
    assert split_entries("/dev/sdb:disk:12") == ["/dev/sdb", DiskRef(12)]
    # An escaped colon stays inside its path (fio's own rule).
    assert split_entries(r"/dev/disk/by-path/pci-0000\:03\:00.0:disk:1") == [
        "/dev/disk/by-path/pci-0000:03:00.0", DiskRef(1)]  # fmt: skip
    assert join_paths(["/dev/disk/by-path/pci-0000:03:00.0", "/dev/sdb"]) == (
        r"/dev/disk/by-path/pci-0000\:03\:00.0:/dev/sdb")


@pytest.mark.parametrize(("value", "why"), [
    ("disk:0", "not a data disk index"),
    ("disk:x", "not a data disk index"),
    ("disk:", "not a data disk index"),
    ("disk:1:disk:1", "disk:1 named twice"),
    ("dev/sdb", "absolute path in the guest"),
    ("/dev/sdb:disk", "not a data disk index"),
])  # fmt: skip
def test_bad_filenames_are_refused_saying_why(value: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        FioParams.model_validate({"filename": value})


def test_filename_may_name_disks_by_index() -> None:
    assert FioParams.model_validate({"filename": "disk:2:disk:1"}).filename == "disk:2:disk:1"


def test_lsblk_json_gives_the_disk_carrying_each_uuid_whatever_its_name() -> None:
    devices = parse_lsblk(LSBLK_VM)
    assert [d.name for d in devices] == ["/dev/sda", "/dev/sdb", "/dev/sdc", "/dev/sr0"]
    paths, done = resolve([DiskRef(1), DiskRef(2)], [UUID_1, UUID_2], devices)
    # disk 1 is /dev/sdc: the order of device names is not the order of vm.disks.
    assert paths == ["/dev/sdc", "/dev/sdb"]
    assert [r.to_json() for r in done] == [
        {"disk": 1, "device": "/dev/sdc", "uuid": UUID_1},
        {"disk": 2, "device": "/dev/sdb", "uuid": UUID_2}]  # fmt: skip
    mixed, _ = resolve(["/data/f", DiskRef(2)], [UUID_1, UUID_2], devices)
    assert mixed == ["/data/f", "/dev/sdb"]


def test_an_older_lsblk_showing_half_the_wwn_matches_only_when_one_disk_has_it() -> None:
    # udev's ID_WWN without its vendor extension: the first 16 hex digits.
    short = parse_lsblk('{"blockdevices": [{"name": "sdb", "wwn": "0x6000c29b7a5c1e2d", '
                        '"serial": null, "type": "disk"}, {"name": "sdc", "wwn": '
                        '"0x6000c29e0d1c2b3a", "serial": null, "type": "disk"}]}')
    assert [d.name for d in short] == ["/dev/sdb", "/dev/sdc"]  # names without -p
    found = find_uuid(UUID_2, short)
    assert found is not None and found.name == "/dev/sdb"
    twins = parse_lsblk('{"blockdevices": [{"name": "/dev/sdb", "wwn": "0x6000c29b7a5c1e2d", '
                        '"type": "disk"}, {"name": "/dev/sdc", "wwn": "0x6000c29b7a5c1e2d", '
                        '"type": "disk"}]}')
    assert find_uuid(UUID_2, twins) is None  # ambiguous: never a guess


def test_a_uuid_no_disk_carries_is_an_error_listing_the_disks() -> None:
    no_wwn = parse_lsblk('{"blockdevices": [{"name": "/dev/sdb", "wwn": null, "serial": null, '
                         '"type": "disk", "size": "100G"}]}')
    with pytest.raises(ValueError) as err:
        resolve([DiskRef(1)], [UUID_1], no_wwn)
    text = str(err.value)
    assert f"disk:1 (virtual disk uuid {UUID_1}) is not among" in text
    assert "/dev/sdb 100G" in text and "disk.EnableUUID=TRUE" in text


def test_indexes_beyond_the_known_disks_and_guests_without_any_are_errors() -> None:
    with pytest.raises(ValueError, match=r"disk:3: this guest has 2 data disk\(s\)"):
        resolve([DiskRef(3)], [UUID_1, UUID_2], parse_lsblk(LSBLK_VM))
    with pytest.raises(ValueError, match="no data disks are known for this guest"):
        resolve([DiskRef(1)], [], None)


def test_a_lab_nodes_listed_disks_need_no_lsblk() -> None:
    paths, done = resolve([DiskRef(2)], ["/dev/sdb", "/dev/disk/by-id/wwn-0x5000c5"], None)
    assert paths == ["/dev/disk/by-id/wwn-0x5000c5"] and done[0].uuid is None


def test_the_plan_refuses_what_a_guest_cannot_have() -> None:
    node = PlannedGuest("guest1", "lab node", "storage", None)
    assert plan_problem([DiskRef(2)], node) == (
        "disk:2 needs a cloned VM with vm.disks; guest1 is a lab node: name its device, "
        "or list its data disks (nodes.guest1.disks)")
    listed = PlannedGuest("guest1", "lab node", "storage", 1)
    assert plan_problem([DiskRef(1)], listed) is None
    assert plan_problem([DiskRef(1), DiskRef(2)], listed) == (
        "disk:2: guest1 has 1 data disk(s) (nodes.guest1.disks)")
    clone = PlannedGuest("w-1", "clone", "w", 2)
    assert plan_problem([DiskRef(2)], clone) is None
    assert "(vm.disks of group w)" in (plan_problem([DiskRef(3)], clone) or "")
    bare = PlannedGuest("w-1", "clone", "w", None)
    assert "the VMs of group w get none" in (plan_problem([DiskRef(1)], bare) or "")
    existing = PlannedGuest("db1", "existing VM", "db", None)
    assert "db1 is an existing VM" in (plan_problem([DiskRef(1)], existing) or "")
    assert plan_problem([], node) is None


# --- the plan, with a lab ------------------------------------------------------------------

LOCAL_LAB = """version: 1
name: l
nodes:
  guest1: {address: 127.0.0.2, roles: [storage]%s}
"""
VC_LAB = """version: 1
name: v
vcenters:
  vc1: {url: https://127.0.0.1:1/sdk, user: u, password: "${env:VBENCH_UNIT_NO_SUCH}"}
"""
SCENARIO = """version: 1
name: d
topology:
  storage:
    count: 1
    vm: {template: tmpl, disks: [{size: 10g, count: 2}]}
workload:
  driver: fio
  params: {rw: randread, filename: "%s"}
phases: {steady: 1s}
"""


def _plan(tmp_path: Path, lab: str, filename: str) -> None:
    (tmp_path / "lab.yaml").write_text(lab)
    (tmp_path / "s.yaml").write_text(SCENARIO % filename)
    build_plan(load_scenario(tmp_path / "s.yaml"), load_lab(tmp_path / "lab.yaml"))


def test_disk_index_on_a_lab_node_is_refused_at_the_filename_naming_the_guest(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigValidationError) as err:
        _plan(tmp_path, LOCAL_LAB % "", "disk:1")
    (issue,) = err.value.issues
    text = str(issue)
    assert "s.yaml:9:" in text and "workload.params.filename" in text
    assert "guest1 is a lab node" in text
    _plan(tmp_path, LOCAL_LAB % ", disks: [/dev/sdb]", "disk:1")  # listed: fine
    with pytest.raises(ConfigValidationError, match=r"disk:2: guest1 has 1 data disk"):
        _plan(tmp_path, LOCAL_LAB % ", disks: [/dev/sdb]", "disk:2")


def test_disk_index_on_clones_is_checked_against_their_vm_disks(tmp_path: Path) -> None:
    _plan(tmp_path, VC_LAB, "disk:2:disk:1")
    with pytest.raises(ConfigValidationError, match=r"disk:3: storage-1 has 2 data disk"):
        _plan(tmp_path, VC_LAB, "disk:3")
    # Without a lab nobody knows what the guests are: nothing to refuse.
    build_plan(load_scenario(tmp_path / "s.yaml"))


def test_lab_node_disks_are_paths_and_reach_the_guest_spec() -> None:
    lab = Lab.model_validate({"version": 1, "name": "l", "nodes": {"g": {
        "address": "10.0.0.1", "disks": ["/dev/sdb", "/dev/disk/by-path/pci-0000:03:00.0"]}}})
    assert guest_spec(lab, "g").data_disks == ("/dev/sdb", "/dev/disk/by-path/pci-0000:03:00.0")
    for bad in ("sdb", "/dev/sdb;rm", "/dev/../etc/passwd", "/dev/sd b"):
        with pytest.raises(ValidationError, match="data disk"):
            Lab.model_validate({"version": 1, "name": "l", "nodes": {"g": {
                "address": "10.0.0.1", "disks": [bad]}}})  # fmt: skip


# --- vSphere: which added disk is disk N ---------------------------------------------------


def _template() -> list:  # type: ignore[type-arg]
    ctrl = vim.vm.device.ParaVirtualSCSIController(key=1000, busNumber=0)
    boot = vim.vm.device.VirtualDisk(
        key=2000, controllerKey=1000, unitNumber=0,
        backing=vim.vm.device.VirtualDisk.FlatVer2BackingInfo(uuid="6000C291-boot"))  # fmt: skip
    return [ctrl, boot]


def test_clones_with_data_disks_get_enable_uuid_and_disks_are_known_in_vm_disks_order() -> None:
    spec = VmSpec.model_validate({"template": "t", "disks": [
        {"size": "1g", "controller": "nvme"}, {"size": "2g", "count": 2}]})  # fmt: skip
    config = reconfig_spec(spec, _template())
    assert config is not None
    extra = {o.key: o.value for o in config.extraConfig}
    assert extra[ENABLE_UUID_KEY] == "TRUE"
    # vm.disks order with counts expanded: the NVMe disk first, though bus/unit order
    # would put the SCSI ones first.
    slots = added_slots(config, _template())
    assert slots == [("nvme", 0, 0), ("scsi", 0, 1), ("scsi", 0, 2)]
    # The VM after the reconfigure, as vCenter reports it (its own keys, a uuid each).
    nvme = vim.vm.device.VirtualNVMEController(key=31000, busNumber=0)

    def disk(key: int, ctrl: int, unit: int, uuid: str | None) -> object:
        return vim.vm.device.VirtualDisk(
            key=key, controllerKey=ctrl, unitNumber=unit,
            backing=vim.vm.device.VirtualDisk.FlatVer2BackingInfo(uuid=uuid))  # fmt: skip

    after = [*_template(), nvme, disk(2001, 1000, 2, "u-scsi-2"), disk(2002, 1000, 1, "u-scsi-1"),
             disk(2003, 31000, 0, "u-nvme")]  # fmt: skip
    assert disk_uuids(after, slots) == ("u-nvme", "u-scsi-1", "u-scsi-2")  # boot disk left out
    after[-1] = disk(2003, 31000, 0, None)
    assert disk_uuids(after, slots) == ()  # one unknown: none, never a shifted index
    plain = reconfig_spec(VmSpec.model_validate({"template": "t", "cpus": 2}), _template())
    assert plain is not None and not any(
        o.key == ENABLE_UUID_KEY for o in plain.extraConfig or ())
