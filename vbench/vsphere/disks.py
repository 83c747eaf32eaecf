"""Data disks on cloned VMs (``vm: {disks: [...]}``): the device changes that add them.

Each disk is created with the VM's reconfigure (``fileOperation=create``), so it is part
of the VM: destroying the VM (cleanup, journaled like every clone) deletes its disks.
A disk goes on a controller of the asked kind: an existing one with free units first,
else a new one (SCSI: up to 4 controllers × 15 units, unit 7 is the controller's own;
NVMe: up to 4 controllers × 15 namespaces).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyVmomi import vim

from vbench.config.scenario import DataDisk
from vbench.errors import ConfigError

_CONTROLLERS: dict[str, Any] = {
    "pvscsi": vim.vm.device.ParaVirtualSCSIController,
    "lsilogic": vim.vm.device.VirtualLsiLogicController,
    "nvme": vim.vm.device.VirtualNVMEController,
}
_MAX_CONTROLLERS = 4
_SCSI_RESERVED_UNIT = 7


@dataclass
class _Slot:
    key: int
    bus: int
    used: set[int] = field(default_factory=set)


def _family(kind: str) -> Any:
    return (vim.vm.device.VirtualNVMEController if kind == "nvme"
            else vim.vm.device.VirtualSCSIController)  # fmt: skip


def _units(kind: str) -> list[int]:
    if kind == "nvme":
        return list(range(15))
    return [u for u in range(16) if u != _SCSI_RESERVED_UNIT]


class _Plan:
    """Controllers of a VM, with the units taken, as disks are placed one by one."""

    def __init__(self, devices: Sequence[Any]) -> None:
        self.devices = devices
        self.taken = {(d.controllerKey, d.unitNumber) for d in devices
                      if getattr(d, "controllerKey", None) is not None}  # fmt: skip
        self.slots: dict[str, list[_Slot]] = {}
        self.buses: dict[Any, set[int]] = {}
        self.next_key = -300
        self.changes: list[Any] = []

    def key(self) -> int:
        self.next_key -= 1
        return self.next_key

    def slot(self, kind: str) -> _Slot:
        cls, family = _CONTROLLERS[kind], _family(kind)
        if kind not in self.slots:
            self.slots[kind] = [_Slot(c.key, c.busNumber, {u for k, u in self.taken if k == c.key})
                                for c in self.devices if type(c) is cls]  # fmt: skip
        if family not in self.buses:
            self.buses[family] = {c.busNumber for c in self.devices if isinstance(c, family)}
        free_slot = next((s for s in self.slots[kind] if len(s.used) < len(_units(kind))), None)
        if free_slot is not None:
            return free_slot
        free = [b for b in range(_MAX_CONTROLLERS) if b not in self.buses[family]]
        if not free:
            raise ConfigError(f"vm.disks: no room for another {kind} controller "
                              f"(vSphere allows {_MAX_CONTROLLERS})")  # fmt: skip
        ctrl = cls(key=self.key(), busNumber=free[0])
        if kind != "nvme":
            ctrl.sharedBus = "noSharing"
        self.changes.append(vim.vm.device.VirtualDeviceSpec(operation="add", device=ctrl))
        self.buses[family].add(free[0])
        slot = _Slot(ctrl.key, free[0])
        self.slots[kind].append(slot)
        return slot


def disk_changes(
    devices: Sequence[Any],
    disks: Sequence[DataDisk],
    datastore_path: Callable[[str], str] | None = None,
    policy_ids: Mapping[str, str] | None = None,
) -> list[Any]:
    """Device specs adding ``disks`` (and any controller they need) to a VM whose current
    devices are ``devices``. ``datastore_path(name)`` gives ``[ds]`` for a disk that names
    its datastore (default: the VM's own); ``policy_ids`` maps a disk's storage policy
    name to its SPBM profile id (resolved beforehand: see :mod:`vbench.vsphere.spbm`)."""
    plan = _Plan(devices)
    for disk in disks:
        for _ in range(disk.count):
            slot = plan.slot(disk.controller)
            unit = next(u for u in _units(disk.controller) if u not in slot.used)
            slot.used.add(unit)
            device = _disk(disk, slot.key, unit, plan.key(), datastore_path)
            change = vim.vm.device.VirtualDeviceSpec(
                operation="add", fileOperation="create", device=device)
            if disk.storage_policy:
                change.profile = [_policy_spec(disk.storage_policy, policy_ids)]
            plan.changes.append(change)
    return plan.changes


def _policy_spec(name: str, policy_ids: Mapping[str, str] | None) -> Any:
    profile_id = (policy_ids or {}).get(name)
    if profile_id is None:  # a caller bug: policies are resolved (and checked) first
        raise ConfigError(f"vm.disks: storage policy {name!r} was not resolved")
    return vim.vm.DefinedProfileSpec(profileId=profile_id)


def _disk(d: DataDisk, controller: int, unit: int, key: int,
          datastore_path: Callable[[str], str] | None) -> Any:
    backing = vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
        diskMode="persistent",
        thinProvisioned=d.provisioning == "thin",
        eagerlyScrub=d.provisioning == "eager_zeroed",
        fileName=datastore_path(d.datastore) if d.datastore and datastore_path else "",
    )
    return vim.vm.device.VirtualDisk(
        key=key, controllerKey=controller, unitNumber=unit, backing=backing,
        capacityInKB=d.size * 1024,
    )  # fmt: skip


def data_disks(devices: Sequence[Any]) -> list[tuple[str, int, int, int, str]]:
    """(controller kind, bus, unit, capacity in MiB, provisioning) of every disk: what a
    test or the testbed record reads back."""
    by_key = {c.key: c for c in devices if isinstance(c, vim.vm.device.VirtualController)}
    out = []
    for d in devices:
        if not isinstance(d, vim.vm.device.VirtualDisk):
            continue
        ctrl = by_key.get(d.controllerKey)
        kinds = [k for k, cls in _CONTROLLERS.items() if type(ctrl) is cls]
        kind = kinds[0] if kinds else type(ctrl).__name__
        b = d.backing
        prov = ("thin" if getattr(b, "thinProvisioned", False) else
                "eager_zeroed" if getattr(b, "eagerlyScrub", False) else "lazy_zeroed")  # fmt: skip
        out.append((kind, ctrl.busNumber if ctrl else -1, d.unitNumber,
                    int(d.capacityInKB // 1024), prov))  # fmt: skip
    return out


# --- the added disks' uuids (fio's `filename: disk:N`) ------------------------------------


def _bus(ctrl: Any) -> tuple[str, int]:
    """A controller's place: SCSI controllers of every type share bus numbers, NVMe
    controllers have their own."""
    family = "nvme" if isinstance(ctrl, vim.vm.device.VirtualNVMEController) else (
        "scsi" if isinstance(ctrl, vim.vm.device.VirtualSCSIController) else type(ctrl).__name__)
    return family, int(ctrl.busNumber)


def added_slots(config: Any, devices: Sequence[Any]) -> list[tuple[str, int, int]]:
    """(controller family, bus, unit) of each disk the reconfigure ``config`` creates on
    a VM whose devices were ``devices``, in the order of its changes: the order of
    ``vm.disks`` with counts expanded (see :func:`disk_changes`)."""
    buses = {c.key: _bus(c) for c in devices if isinstance(c, vim.vm.device.VirtualController)}
    changes = list(getattr(config, "deviceChange", None) or ())
    for ch in changes:  # controllers the reconfigure adds (their keys are placeholders)
        if ch.operation == "add" and isinstance(ch.device, vim.vm.device.VirtualController):
            buses[ch.device.key] = _bus(ch.device)
    return [(*buses[ch.device.controllerKey], int(ch.device.unitNumber)) for ch in changes
            if ch.operation == "add" and ch.fileOperation == "create"
            and isinstance(ch.device, vim.vm.device.VirtualDisk)]  # fmt: skip


def disk_uuids(devices: Sequence[Any], slots: Sequence[tuple[str, int, int]]) -> tuple[str, ...]:
    """The ``backing.uuid`` of the disk in each slot, read back from the VM's devices
    after the reconfigure (vCenter gives a created disk its uuid); empty when one of
    them has none, so that no index ever points at another disk."""
    buses = {c.key: _bus(c) for c in devices if isinstance(c, vim.vm.device.VirtualController)}
    by_slot = {(*buses[d.controllerKey], int(d.unitNumber)): getattr(d.backing, "uuid", None)
               for d in devices if isinstance(d, vim.vm.device.VirtualDisk)
               and d.controllerKey in buses}  # fmt: skip
    found = [by_slot.get(s) for s in slots]
    return tuple(str(u) for u in found) if all(found) else ()
