"""What to create and where: VM names, placement, and the vSphere specs for each step.

Naming and marking are the safety net of cleanup: a VM vbench creates is named
``vb-<run id>-<guest>`` (``vb-keep-<scenario>-<guest>`` when the scenario keeps it) and
carries the run id in its ``extraConfig`` (set by the clone itself, so no instant exists
where the VM is unmarked) and, for people, in the ``vbench.run`` custom attribute.
"""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyVmomi import vim

from vbench.config.lab import IpPool
from vbench.config.scenario import VmSpec
from vbench.errors import ConfigError
from vbench.vsphere.disks import disk_changes
from vbench.vsphere.inventory import Inventory, NotInInventory, Obj

NAME_PREFIX = "vb-"
KEEP_PREFIX = "vb-keep-"
MARK_KEY = "vbench.run"
KEEP_KEY = "vbench.keep"
ENABLE_UUID_KEY = "disk.EnableUUID"


def vm_name(run_id: str, guest: str) -> str:
    return f"{NAME_PREFIX}{run_id}-{guest}"


def kept_vm_name(scenario: str, guest: str) -> str:
    return f"{KEEP_PREFIX}{scenario}-{guest}"


@dataclass(frozen=True)
class VmRequest:
    """One VM a group needs: created (clone) or used (existing)."""

    group: str
    guest: str  # the guest's name in the run
    vm_name: str  # its name in vCenter
    vcenter: str
    spec: VmSpec
    index: int  # position in its group (spreading)
    datacenter: str | None = None  # a lab profile's; default: the vCenter's

    @property
    def existing(self) -> bool:
        return self.spec.existing is not None


def plan_requests(
    scenario_name: str,
    topology: Mapping[str, VmSpec],
    guests: Mapping[str, Sequence[str]],
    vcenters: Mapping[str, str],
    run_id: str,
) -> list[VmRequest]:
    """The VMs of every `vm:` group, in group order. ``guests`` holds each group's guest
    names (the plan's, covering its largest size); ``vcenters`` the group's vCenter."""
    out = []
    for group, spec in topology.items():
        for i, guest in enumerate(guests.get(group, ())):
            if spec.existing is not None:
                name = guest
            elif spec.keep:
                name = kept_vm_name(scenario_name, guest)
            else:
                name = vm_name(run_id, guest)
            out.append(VmRequest(group, guest, name, vcenters[group], spec, i))
    return out


def expand_addresses(addresses: Sequence[str]) -> list[str]:
    """``["10.0.0.5", "10.0.0.10-10.0.0.12"]`` -> every IPv4 address, in order."""
    out: list[str] = []
    for item in addresses:
        first, _, last = item.partition("-")
        try:
            a = ipaddress.IPv4Address(first.strip())
            b = ipaddress.IPv4Address(last.strip()) if last else a
        except ValueError:
            raise ConfigError(f"ip_pool: {item!r} is not an IPv4 address or range") from None
        if b < a:
            raise ConfigError(f"ip_pool: range {item!r} ends before it starts")
        out.extend(str(ipaddress.IPv4Address(n)) for n in range(int(a), int(b) + 1))
    return out


# --- placement -------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where a group's clones go (references into one vCenter)."""

    template: Obj | None  # None: deployed from a content library item, not cloned
    pool: Any
    folder: Any
    datastore: Any | None
    hosts: tuple[Any, ...]  # spread over these; () lets vCenter (DRS) choose
    network: Obj | None

    def host_for(self, index: int) -> Any | None:
        return self.hosts[index % len(self.hosts)] if self.hosts else None


def _compute_of_host(inv: Inventory, host: Obj) -> Obj:
    parent = inv.parent(host)
    assert parent is not None
    return parent


def _usable_hosts(inv: Inventory, compute: Obj) -> tuple[Any, ...]:
    hosts = [inv.get(h) for h in compute.get("host", ())]
    return tuple(
        h.ref
        for h in hosts
        if h is not None
        and h.get("runtime.connectionState") == "connected"
        and not h.get("runtime.inMaintenanceMode")
    )


def resolve_placement(inv: Inventory, spec: VmSpec, datacenter: str | None) -> Placement:
    """Find the template and the named places; NotInInventory (with suggestions) when
    a name does not exist. A group deployed from a library item has no template: its
    compute resource is the one named, else the datacenter's only cluster."""
    assert spec.template is not None or spec.library_item is not None
    dc = inv.datacenter(datacenter)
    template = _clone_source(inv, spec.template, dc) if spec.template is not None else None
    compute: Obj | None = None
    host: Obj | None = None
    if spec.host:
        host = inv.find("host", spec.host, dc)
        compute = _compute_of_host(inv, host)
    elif spec.cluster:
        compute = inv.find("cluster", spec.cluster, dc)
    if spec.resource_pool:
        pool = inv.find("resource_pool", spec.resource_pool, compute or dc)
        compute = compute or _owner(inv, pool)
    elif compute is not None:
        pool = inv.get(compute.get("resourcePool"))
    elif template is None:
        compute = _only_cluster(inv, dc, spec)
        pool = inv.get(compute.get("resourcePool"))
    else:
        # Default: where the template lives.
        t_host = inv.get(template.get("runtime.host"))
        if t_host is None:
            raise ConfigError(f"template {spec.template}: name a cluster, host or resource_pool")
        compute = _compute_of_host(inv, t_host)
        pool = inv.get(compute.get("resourcePool"))
    assert pool is not None and compute is not None
    if host is not None:
        hosts: tuple[Any, ...] = (host.ref,)
    elif spec.spread:
        hosts = _usable_hosts(inv, compute)
    else:
        hosts = ()
    folder = inv.find("folder", spec.folder, dc).ref if spec.folder else dc.get("vmFolder")
    datastore = inv.find("datastore", spec.datastore, dc).ref if spec.datastore else None
    network = inv.find("network", spec.network, dc) if spec.network else None
    return Placement(template, pool.ref, folder, datastore, hosts, network)


def _clone_source(inv: Inventory, name: str, dc: Obj) -> Obj:
    """A template of that name, else a VM (vSphere clones either); a name that is
    neither gets the closest templates and VMs as its did-you-mean."""
    vms = {o.name for o in inv.candidates("vm", dc)}
    templates = {o.name for o in inv.candidates("template", dc)}
    if name in vms and name not in templates:
        return inv.find("vm", name, dc)
    like_vms = difflib.get_close_matches(name, sorted(vms), n=3, cutoff=0.5)
    if name in templates or "/" in name or not like_vms or difflib.get_close_matches(
            name, sorted(templates), n=1, cutoff=0.5):
        return inv.find("template", name, dc)
    raise NotInInventory(
        f"vcenter {inv.vcenter}",
        f"no template named {name!r}; did you mean VM {' or '.join(map(repr, like_vms))}? "
        f"(templates: {', '.join(sorted(templates)[:8]) or 'none'})",
    )


def _only_cluster(inv: Inventory, dc: Obj, spec: VmSpec) -> Obj:
    """Where VMs deployed from a library item go when nothing names a place: the
    datacenter's cluster, when it has exactly one (never a guess between several)."""
    clusters = inv.candidates("cluster", dc)
    if len(clusters) == 1:
        return clusters[0]
    which = f"it has {len(clusters)} ({', '.join(sorted(c.name for c in clusters)[:5])})" \
        if clusters else "it has none"
    raise ConfigError(
        f"library item {spec.library_item}: name a cluster, host or resource_pool in `vm:` "
        f"or the point's lab profile (datacenter {dc.name} has no single cluster to "
        f"default to: {which})"
    )


def _owner(inv: Inventory, pool: Obj) -> Obj | None:
    return inv.get(pool.get("owner"))


# --- specs -----------------------------------------------------------------------------


def clone_spec(
    req: VmRequest, placement: Placement, run_id: str, snapshot: Any = None
) -> vim.vm.CloneSpec:
    """Clone powered off, marked with the run id from the first instant."""
    config = vim.vm.ConfigSpec(extraConfig=mark_options(run_id, req.spec, req.guest))
    if req.spec.cpus:
        config.numCPUs = req.spec.cpus
    if req.spec.memory:
        config.memoryMB = req.spec.memory
    location = vim.vm.RelocateSpec(pool=placement.pool)
    host = placement.host_for(req.index)
    if host is not None:
        location.host = host
    if placement.datastore is not None:
        location.datastore = placement.datastore
    spec = vim.vm.CloneSpec(location=location, powerOn=False, template=False, config=config)
    if req.spec.linked:
        location.diskMoveType = "createNewChildDiskBacking"
        spec.snapshot = snapshot
    return spec


_NIC_TYPES = {
    "vmxnet3": vim.vm.device.VirtualVmxnet3,
    "e1000": vim.vm.device.VirtualE1000,
    "e1000e": vim.vm.device.VirtualE1000e,
}
_SCSI_TYPES = {
    "pvscsi": vim.vm.device.ParaVirtualSCSIController,
    "lsilogic": vim.vm.device.VirtualLsiLogicController,
    "lsilogic-sas": vim.vm.device.VirtualLsiLogicSASController,
    "buslogic": vim.vm.device.VirtualBusLogicController,
}


def _scsi_changes(devices: Sequence[Any], kind: str) -> list[Any]:
    cls = _SCSI_TYPES[kind]
    changes: list[Any] = []
    new_key = -100
    for ctrl in devices:
        if not isinstance(ctrl, vim.vm.device.VirtualSCSIController) or type(ctrl) is cls:
            continue
        new_key -= 1
        Spec = vim.vm.device.VirtualDeviceSpec
        changes.append(Spec(operation="remove", device=ctrl))
        new = cls(key=new_key, busNumber=ctrl.busNumber, sharedBus=ctrl.sharedBus)
        changes.append(Spec(operation="add", device=new))
        # Disks (and anything else on that bus) move to the new controller, same units.
        for d in devices:
            if getattr(d, "controllerKey", None) == ctrl.key:
                d.controllerKey = new_key
                changes.append(Spec(operation="edit", device=d))
    return changes


def _nic_backing(network: Obj | None, dvs_uuid: str | None) -> Any:
    if network is None:
        return None
    if network.kind == "DistributedVirtualPortgroup":
        conn = vim.dvs.PortConnection(portgroupKey=network.get("key"), switchUuid=dvs_uuid)
        return vim.vm.device.VirtualEthernetCard.DistributedVirtualPortBackingInfo(port=conn)
    return vim.vm.device.VirtualEthernetCard.NetworkBackingInfo(
        deviceName=network.name, network=network.ref
    )


def _nic_changes(
    devices: Sequence[Any], kind: str | None, network: Obj | None, dvs_uuid: str | None
) -> list[Any]:
    Spec = vim.vm.device.VirtualDeviceSpec
    backing = _nic_backing(network, dvs_uuid)
    nics = [d for d in devices if isinstance(d, vim.vm.device.VirtualEthernetCard)]
    changes: list[Any] = []
    for i, nic in enumerate(nics):
        new_backing = backing if (backing is not None and i == 0) else nic.backing
        if kind and type(nic) is not _NIC_TYPES[kind]:
            changes.append(Spec(operation="remove", device=nic))
            connect = vim.vm.device.VirtualDevice.ConnectInfo(
                startConnected=True, allowGuestControl=True, connected=True
            )
            new = _NIC_TYPES[kind](
                key=-200 - i, backing=new_backing, addressType="generated", connectable=connect
            )
            changes.append(Spec(operation="add", device=new))
        elif backing is not None and i == 0:
            nic.backing = new_backing
            changes.append(Spec(operation="edit", device=nic))
    return changes


def mark_options(run_id: str, spec: VmSpec, guest: str) -> list[Any]:
    extra = [vim.option.OptionValue(key=MARK_KEY, value=run_id)]
    if spec.keep:
        extra.append(vim.option.OptionValue(key=KEEP_KEY, value=guest))
    return extra


def reconfig_spec(
    spec: VmSpec,
    devices: Sequence[Any],
    network: Obj | None = None,
    dvs_uuid: str | None = None,
    marks: Sequence[Any] = (),
    policy_ids: Mapping[str, str] | None = None,
) -> vim.vm.ConfigSpec | None:
    """Size, reservations, latency sensitivity, vNIC and SCSI types, network and marks of
    a clone. The clone spec carries size and marks already; vCenters that ignore parts of
    a clone spec's config (as vcsim does) get them here, and setting them twice is
    harmless."""
    config = vim.vm.ConfigSpec()
    changed = False
    extra = list(marks)
    if spec.disks:  # the guest sees each disk's uuid as its WWN: fio's disk:N finds it
        extra.append(vim.option.OptionValue(key=ENABLE_UUID_KEY, value="TRUE"))
    if extra:
        config.extraConfig = extra
        changed = True
    if spec.cpus:
        config.numCPUs = spec.cpus
        changed = True
    if spec.memory:
        config.memoryMB = spec.memory
        changed = True
    r = spec.reservations
    if r is not None and r.cpu_mhz is not None:
        config.cpuAllocation = vim.ResourceAllocationInfo(reservation=r.cpu_mhz)
        changed = True
    if r is not None and r.memory == "all":
        config.memoryReservationLockedToMax = True
        changed = True
    elif r is not None and r.memory is not None:
        config.memoryAllocation = vim.ResourceAllocationInfo(reservation=int(r.memory))
        changed = True
    if spec.latency_sensitivity:
        config.latencySensitivity = vim.LatencySensitivity(level=spec.latency_sensitivity)
        changed = True
    device_changes: list[Any] = []
    if spec.scsi_type:
        device_changes += _scsi_changes(devices, spec.scsi_type)
    if spec.nic_type or network is not None:
        device_changes += _nic_changes(devices, spec.nic_type, network, dvs_uuid)
    if spec.disks:  # data disks are created with the VM's reconfigure, removed with it
        device_changes += disk_changes(devices, spec.disks, lambda ds: f"[{ds}]", policy_ids)
    if device_changes:
        config.deviceChange = device_changes
        changed = True
    return config if changed else None


def customization_spec(hostname: str, ip: str, pool: IpPool) -> vim.vm.customization.Specification:
    """Linux guest customization giving the first NIC a fixed address from the pool."""
    c = vim.vm.customization
    adapter = c.IPSettings(ip=c.FixedIp(ipAddress=ip), subnetMask=pool.netmask)
    if pool.gateway:
        adapter.gateway = [pool.gateway]
    return c.Specification(
        identity=c.LinuxPrep(hostName=c.FixedName(name=_hostname(hostname)), domain=pool.domain),
        globalIPSettings=c.GlobalIPSettings(dnsServerList=list(pool.dns)),
        nicSettingMap=[c.AdapterMapping(adapter=adapter)],
    )


def _hostname(name: str) -> str:
    """A VM name as a host name: letters, digits and hyphens, at most 63 characters."""
    cleaned = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in name)
    return cleaned.strip("-")[:63] or "vbench"
