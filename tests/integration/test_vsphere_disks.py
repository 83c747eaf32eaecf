"""Data disks on cloned VMs against vcsim: every clone gets its disks with the asked
size, provisioning and controller (a controller added when the template has none of
that kind), and the disks go with the VM at cleanup."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyVmomi import vim

from tests.integration.test_vsphere_provision import (
    RUN_ID,
    TEMPLATE,
    make_lab,
    make_scenario,
    vm_names,
    vsphere_run,
)
from tests.vcsim import VcsimServer
from vbench.config.scenario import VmSpec
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.disks import data_disks, disk_changes
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.simulator import ensure_templates

pytestmark = pytest.mark.integration

DISKS = [
    {"size": "2g", "count": 2, "provisioning": "thin", "controller": "pvscsi"},
    {"size": "1g", "provisioning": "eager_zeroed", "controller": "nvme"},
]


def _devices(lab, name: str) -> list:  # type: ignore[no-untyped-def]
    with SessionPool.for_lab(lab) as pool:
        inv = Inventory.load(pool.get("vc1"))
        (vm,) = [o.ref for o in inv.objects.values() if o.kind == "VirtualMachine"
                 and o.name == name]  # a template too  # fmt: skip
        return list(vm.config.hardware.device)


def test_clones_get_their_data_disks_and_lose_them_with_the_vm(
    vcsim_factory, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    server: VcsimServer = vcsim_factory()
    lab = make_lab(server)
    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    before = data_disks(_devices(lab, TEMPLATE))
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "ip_timeout": "20s",
                                          "disks": DISKS}, count=2))  # fmt: skip
    try:
        run.preflight()
        run.provision(RUN_ID, tmp_path)
        for i in (1, 2):
            disks = data_disks(_devices(lab, f"vb-{RUN_ID}-web-{i}"))
            added = [d for d in disks if d not in before]
            # (controller, bus, unit, MiB, provisioning): two thin 2 GiB disks on the
            # paravirtual controller the VM now has, one eager-zeroed 1 GiB on NVMe.
            assert sorted((d[0], d[3], d[4]) for d in added) == [
                ("nvme", 1024, "eager_zeroed"), ("pvscsi", 2048, "thin"),
                ("pvscsi", 2048, "thin")]  # fmt: skip
            units = [(d[0], d[1], d[2]) for d in disks]
            assert len(set(units)) == len(units)  # no two disks share a slot
    finally:
        report = run.cleanup()
        run.close()
    assert len(report.destroyed) == 2 and not report.errors
    assert not any(n.startswith("vb-") for n in vm_names(lab))


def test_clones_with_data_disks_enable_uuids_and_their_guests_know_them_in_order(
    vcsim_factory, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    """fio's `filename: disk:N`: the clone gets disk.EnableUUID=TRUE, and the guest spec
    of each VM carries the uuids vCenter gave the disks the reconfigure added, in
    vm.disks order (the NVMe disk, first in vm.disks, first), the template's own left
    out. vcsim assigns a created disk a uuid of the standard form (not 6000C29…)."""
    server: VcsimServer = vcsim_factory()
    lab = make_lab(server)
    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    own = {d.backing.uuid for d in _devices(lab, TEMPLATE)
           if isinstance(d, vim.vm.device.VirtualDisk)}  # fmt: skip
    disks = [{"size": "1g", "controller": "nvme"}, {"size": "2g", "count": 2}]
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "ip_timeout": "20s",
                                          "disks": disks}, count=2))  # fmt: skip
    try:
        run.preflight()
        specs = run.provision(RUN_ID, tmp_path)
        seen: set[str] = set()
        for i in (1, 2):
            name = f"vb-{RUN_ID}-web-{i}"
            devices = _devices(lab, name)
            vm = next(v for v in run.vms if v.vm_name == name)
            extra = {o.key: o.value for o in vm.ref.config.extraConfig}
            assert extra["disk.EnableUUID"] == "TRUE"
            ctrl = {c.key: c for c in devices if isinstance(c, vim.vm.device.VirtualController)}
            by_kind = {(type(ctrl[d.controllerKey]).__name__.split(".")[-1], d.unitNumber):
                       d.backing.uuid for d in devices
                       if isinstance(d, vim.vm.device.VirtualDisk)}  # fmt: skip
            uuids = specs[f"web-{i}"].data_disks
            assert uuids == (by_kind["VirtualNVMEController", 0],
                             by_kind["ParaVirtualSCSIController", 1],
                             by_kind["ParaVirtualSCSIController", 2])  # fmt: skip
            assert not set(uuids) & own and not set(uuids) & seen and len(set(uuids)) == 3
            seen |= set(uuids)
        testbed = run.testbed()
        assert testbed is not None
        rows = {v["name"]: v for v in testbed["vms"]}
        row = rows[f"vb-{RUN_ID}-web-1"]
        assert row["disk_enable_uuid"] is True
        assert set(specs["web-1"].data_disks) <= {d["uuid"] for d in row["disks"]}
    finally:
        run.cleanup()
        run.close()


def test_controllers_fill_up_then_a_new_one_is_added() -> None:
    spec = VmSpec.model_validate({"template": "t", "disks": [
        {"size": "1g", "count": 15, "controller": "pvscsi"},
        {"size": "1g", "count": 3, "controller": "lsilogic"}]})  # fmt: skip
    existing = vim.vm.device.ParaVirtualSCSIController(key=1000, busNumber=0)
    boot = vim.vm.device.VirtualDisk(key=2000, controllerKey=1000, unitNumber=0)
    changes = disk_changes([existing, boot], spec.disks)
    controller = vim.vm.device.VirtualController
    added_ctrl = [c.device for c in changes if isinstance(c.device, controller)]
    # 14 units left on bus 0 (unit 7 is the controller's, unit 0 the boot disk), so the
    # 15th pvscsi disk needs a second controller; lsilogic gets its own on the next bus.
    assert [(type(c).__name__, c.busNumber) for c in added_ctrl] == [
        ("vim.vm.device.ParaVirtualSCSIController", 1),
        ("vim.vm.device.VirtualLsiLogicController", 2)]  # fmt: skip
    disks = [c.device for c in changes if isinstance(c.device, vim.vm.device.VirtualDisk)]
    assert len(disks) == 18 and all(c.fileOperation == "create" for c in changes
                                    if isinstance(c.device, vim.vm.device.VirtualDisk))
    on_first = sorted(d.unitNumber for d in disks if d.controllerKey == 1000)
    assert on_first == [u for u in range(1, 16) if u != 7]


def test_existing_vms_refuse_disks() -> None:
    with pytest.raises(ValueError, match="remove disks"):
        VmSpec.model_validate({"existing": ["vm1"], "disks": [{"size": "1g"}]})
