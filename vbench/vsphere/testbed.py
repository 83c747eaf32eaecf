"""The testbed a run used, as the studies' opening tables show it.

:func:`capture_testbed` reads, in three PropertyCollector calls, the VMs of the run, then
their hosts and datastores (and the performance manager's statistics intervals), then
the hosts' clusters. The ``shape_*`` functions turn the raw properties into plain,
JSON-ready dicts; they are pure, and a missing figure stays ``None``.

The result (stored as ``testbed.json`` and in the store)::

    {"vcenter": {...}, "hosts": [...], "datastores": [...], "clusters": [...], "vms": [...]}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyVmomi import vim

from vbench.errors import LabError
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.inventory import Obj, kind_of, retrieve_refs
from vbench.vsphere.spbm import disk_policies, storage_policies

GIB = 1024**3

VM_PROPS = (
    "name", "config.hardware.numCPU", "config.hardware.numCoresPerSocket",
    "config.hardware.memoryMB", "config.version", "config.latencySensitivity",
    "config.cpuAllocation", "config.memoryAllocation", "config.hardware.device",
    "config.guestFullName", "runtime.host", "runtime.powerState", "datastore",
    "guest.ipAddress", "resourcePool", "config.extraConfig",
)  # fmt: skip
HOST_PROPS = (
    "name", "parent", "summary.hardware", "config.hyperThread", "config.powerSystemInfo",
    "config.product", "config.network.pnic", "config.storageDevice.hostBusAdapter",
    "config.storageDevice.scsiLun",
    "runtime.connectionState", "runtime.inMaintenanceMode",
)  # fmt: skip
DATASTORE_PROPS = ("name", "summary", "info")
CLUSTER_PROPS = ("name", "configurationEx", "summary.currentEVCModeKey", "host")


def _gib(n: Any, digits: int = 1) -> float | None:
    return round(n / GIB, digits) if isinstance(n, int | float) else None


def _text(v: Any) -> str | None:
    return str(v) if v not in (None, "") else None


# --- pure shaping ----------------------------------------------------------------------


def shape_vcenter(name: str, about: Any, intervals: Sequence[Any] | None) -> dict[str, Any]:
    enabled = [i for i in intervals or () if getattr(i, "enabled", False)]
    return {
        "name": name,
        "product": _text(getattr(about, "fullName", None)),
        "version": _text(getattr(about, "version", None)),
        "build": _text(getattr(about, "build", None)),
        "api_version": _text(getattr(about, "apiVersion", None)),
        # The level of the shortest interval decides what real-time-ish rollups keep.
        "stats_level": enabled[0].level if enabled else None,
        "stats_intervals": [
            {"name": i.name, "period_s": i.samplingPeriod, "level": i.level} for i in enabled
        ],
    }


_HBA = {
    "ParallelScsiHba": "SCSI",
    "BlockHba": "block",
    "FibreChannelHba": "Fibre Channel",
    "FibreChannelOverEthernetHba": "FCoE",
    "InternetScsiHba": "iSCSI",
    "SerialAttachedHba": "SAS",
    "PcieHba": "PCIe (NVMe)",
    "TcpHba": "NVMe/TCP",
    "RdmaHba": "RDMA",
}


def _hyperthreading(ht: Any) -> str | None:
    if ht is None:
        return None
    return "active" if ht.active else "available" if ht.available else "not available"


def shape_host(p: Mapping[str, Any], cluster: str | None = None) -> dict[str, Any]:
    # summary.hardware holds vendor, model and the CPU topology in one small object.
    hw = p.get("summary.hardware")
    ht = p.get("config.hyperThread")
    power = p.get("config.powerSystemInfo")
    policy = getattr(power, "currentPolicy", None)
    product = p.get("config.product")
    return {
        "name": p.get("name"),
        "cluster": cluster,
        "vendor": _text(getattr(hw, "vendor", None)),
        "model": _text(getattr(hw, "model", None)),
        "cpu_model": _text(getattr(hw, "cpuModel", None)),
        "sockets": getattr(hw, "numCpuPkgs", None),
        "cores": getattr(hw, "numCpuCores", None),
        "threads": getattr(hw, "numCpuThreads", None),
        "cpu_mhz": getattr(hw, "cpuMhz", None),
        "hyperthreading": _hyperthreading(ht),
        "power_policy": _text(getattr(policy, "shortName", None))
        or _text(getattr(policy, "name", None)),
        "memory_gib": _gib(getattr(hw, "memorySize", None)),
        "esxi_version": _text(getattr(product, "version", None)),
        "esxi_build": _text(getattr(product, "build", None)),
        "connection": _text(p.get("runtime.connectionState")),
        "maintenance": p.get("runtime.inMaintenanceMode"),
        "nics": [
            {
                "device": n.device,
                "driver": _text(n.driver),
                "speed_mbps": n.linkSpeed.speedMb if n.linkSpeed else None,
            }
            for n in p.get("config.network.pnic") or ()
        ],
        "storage_adapters": [
            {
                "device": a.device,
                "type": _HBA.get(kind_of(a), kind_of(a)),
                "model": _text(a.model),
                "driver": _text(a.driver),
            }
            for a in p.get("config.storageDevice.hostBusAdapter") or ()
        ],
    }


def lun_support(scsi_luns: Sequence[Any] | None) -> dict[str, str]:
    """canonical name -> vStorageSupport of a host's SCSI LUNs (VAAI)."""
    out = {}
    for lun in scsi_luns or ():
        name, support = getattr(lun, "canonicalName", None), getattr(lun, "vStorageSupport", None)
        if name and support:
            out[str(name)] = str(support)
    return out


_ACCEL = {
    "vStorageSupported": "supported",
    "vStorageUnsupported": "not supported",
    "vStorageUnknown": "unknown",
}


def shape_datastore(p: Mapping[str, Any], luns: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A datastore; hardware acceleration (VAAI) of a VMFS datastore comes from the
    support its extents' LUNs report on the hosts (``luns``: canonical name -> support)."""
    s = p.get("summary")
    vmfs = getattr(p.get("info"), "vmfs", None)
    extents = [e.diskName for e in getattr(vmfs, "extent", None) or () if e.diskName]
    support = sorted({(luns or {}).get(d) for d in extents} - {None})
    return {
        "name": p.get("name"),
        "type": _text(getattr(s, "type", None)),
        "capacity_gib": _gib(getattr(s, "capacity", None)),
        "free_gib": _gib(getattr(s, "freeSpace", None)),
        "ssd": getattr(vmfs, "ssd", None),
        "hardware_acceleration": ", ".join(_ACCEL.get(v, v) for v in support if v) or None,
    }


def shape_cluster(p: Mapping[str, Any]) -> dict[str, Any]:
    cfg = p.get("configurationEx")
    drs = getattr(cfg, "drsConfig", None)
    das = getattr(cfg, "dasConfig", None)
    return {
        "name": p.get("name"),
        "hosts": len(p.get("host") or ()),
        "drs": getattr(drs, "enabled", None),
        "drs_behavior": _text(getattr(drs, "defaultVmBehavior", None)),
        "ha": getattr(das, "enabled", None),
        "ha_admission_control": getattr(das, "admissionControlEnabled", None),
        "evc_mode": _text(p.get("summary.currentEVCModeKey")),
    }


_CONTROLLERS = {
    "ParaVirtualSCSIController": "pvscsi",
    "VirtualLsiLogicController": "lsilogic",
    "VirtualLsiLogicSASController": "lsilogic-sas",
    "VirtualBusLogicController": "buslogic",
    "VirtualNVMEController": "nvme",
    "VirtualAHCIController": "sata",
}
_NICS = {
    "VirtualVmxnet3": "vmxnet3",
    "VirtualE1000": "e1000",
    "VirtualE1000e": "e1000e",
    "VirtualVmxnet2": "vmxnet2",
    "VirtualPCNet32": "pcnet32",
}


def _disk(d: Any, controllers: Mapping[int, str]) -> dict[str, Any]:
    backing = d.backing
    thin = getattr(backing, "thinProvisioned", None)
    eager = getattr(backing, "eagerlyScrub", None)
    provisioning = None
    if thin is not None:
        provisioning = "thin" if thin else "eager zeroed thick" if eager else "thick"
    size = d.capacityInBytes or ((d.capacityInKB or 0) * 1024) or None
    return {
        "label": d.deviceInfo.label if d.deviceInfo else None,
        "size_gib": _gib(size),
        "controller": controllers.get(d.controllerKey),
        "provisioning": provisioning,
        # What the guest sees as the disk's WWN with disk.EnableUUID (fio's disk:N).
        "uuid": _text(getattr(backing, "uuid", None)),
    }


def _enable_uuid(extra: Any) -> bool | None:
    """``disk.EnableUUID`` of a VM's extraConfig: the guest sees its disks' uuids."""
    for o in extra or ():
        if str(getattr(o, "key", "")).lower() == "disk.enableuuid":
            return str(o.value).strip().lower() in ("true", "1", "yes")
    return None


def shape_vm(p: Mapping[str, Any], host: str | None, datastores: Sequence[str]) -> dict[str, Any]:
    devices = p.get("config.hardware.device") or ()
    controllers = {
        d.key: _CONTROLLERS.get(kind_of(d), kind_of(d))
        for d in devices
        if isinstance(d, vim.vm.device.VirtualController)
    }
    ls = p.get("config.latencySensitivity")
    cpu_alloc = p.get("config.cpuAllocation")
    mem_alloc = p.get("config.memoryAllocation")
    return {
        "name": p.get("name"),
        "host": host,
        "datastores": list(datastores),
        "vcpus": p.get("config.hardware.numCPU"),
        "cores_per_socket": p.get("config.hardware.numCoresPerSocket"),
        "memory_mib": p.get("config.hardware.memoryMB"),
        "hardware_version": _text(p.get("config.version")),
        "latency_sensitivity": _text(getattr(ls, "level", None)),
        "cpu_reservation_mhz": getattr(cpu_alloc, "reservation", None),
        "memory_reservation_mib": getattr(mem_alloc, "reservation", None),
        "guest_os": _text(p.get("config.guestFullName")),
        "disk_enable_uuid": _enable_uuid(p.get("config.extraConfig")),
        "ip": _text(p.get("guest.ipAddress")),
        "disks": [
            _disk(d, controllers) for d in devices if isinstance(d, vim.vm.device.VirtualDisk)
        ],
        "nics": [
            {
                "label": d.deviceInfo.label if d.deviceInfo else None,
                "type": _NICS.get(kind_of(d), kind_of(d)),
            }
            for d in devices
            if isinstance(d, vim.vm.device.VirtualEthernetCard)
        ],
        "scsi_controllers": sorted(
            {v for k, v in controllers.items() if v in _CONTROLLERS.values()}
        ),
    }


def merge_testbeds(parts: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """One testbed for a run that used several vCenters (first vCenter leads)."""
    if not parts:
        return None
    out: dict[str, Any] = {"vcenter": parts[0]["vcenter"]}
    if len(parts) > 1:
        out["vcenters"] = [p["vcenter"] for p in parts]
    for key in ("hosts", "datastores", "clusters", "vms"):
        out[key] = [row for p in parts for row in p.get(key, ())]
    if any("storage_policies" in p for p in parts):  # only runs that asked for policies
        out["storage_policies"] = [row for p in parts for row in p.get("storage_policies", ())]
    return out


# --- capture ---------------------------------------------------------------------------


def capture_testbed(
    session: VSphereSession,
    vms: Iterable[Any] = (),
    hosts: Iterable[Any] = (),
    datastores: Iterable[Any] = (),
    policies: Iterable[str] = (),
) -> dict[str, Any]:
    """The testbed of the given VMs plus any further hosts and datastores (references),
    and the storage policies ``policies`` names (id and rules, read from SPBM)."""
    vm_objs = retrieve_refs(session, list(vms), {vim.VirtualMachine: VM_PROPS})
    host_refs = list(hosts) + [o.get("runtime.host") for o in vm_objs]
    ds_refs = list(datastores) + [d for o in vm_objs for d in o.get("datastore", ())]
    perf = session.content.perfManager
    second = retrieve_refs(
        session,
        [*host_refs, *ds_refs, perf],
        {
            vim.HostSystem: HOST_PROPS,
            vim.Datastore: DATASTORE_PROPS,
            vim.PerformanceManager: ("historicalInterval",),
        },
    )
    host_objs = [o for o in second if o.kind == "HostSystem"]
    ds_objs = [o for o in second if o.kind == "Datastore"]
    perf_obj = next((o for o in second if o.kind == "PerformanceManager"), None)
    cluster_refs = [o.get("parent") for o in host_objs]
    cluster_refs = [c for c in cluster_refs if isinstance(c, vim.ClusterComputeResource)]
    cluster_objs = retrieve_refs(session, cluster_refs, {vim.ClusterComputeResource: CLUSTER_PROPS})
    out = shape_testbed(session, vm_objs, host_objs, ds_objs, cluster_objs, perf_obj)
    return _with_policies(session, out, vm_objs, list(dict.fromkeys(policies)))


def _with_policies(
    session: VSphereSession, testbed: dict[str, Any], vm_objs: Sequence[Obj], names: list[str]
) -> dict[str, Any]:
    """The policies asked for (name, id, rules; id and rules None when SPBM did not
    answer) and, per disk, ``storage_policy``: the policy vCenter reports as associated
    with it (None when it reports none, as vcsim does). Only runs asking for policies."""
    if not names:
        return testbed
    try:
        known = storage_policies(session)
    except LabError:
        known = {}
    testbed["storage_policies"] = [
        known[n].to_json() if n in known else {"name": n, "id": None, "rules": None}
        for n in names
    ]
    by_id = {p.profile_id: p.name for p in known.values()}
    disks = [(o.moid, d.key) for o in vm_objs for d in o.get("config.hardware.device") or ()
             if isinstance(d, vim.vm.device.VirtualDisk)]  # fmt: skip
    associated = disk_policies(session, disks)
    for o, vm in zip(vm_objs, testbed["vms"], strict=True):
        keys = [d.key for d in o.get("config.hardware.device") or ()
                if isinstance(d, vim.vm.device.VirtualDisk)]  # fmt: skip
        for key, row in zip(keys, vm["disks"], strict=True):
            pid = associated.get(f"{o.moid}:{key}")
            row["storage_policy"] = by_id.get(pid, pid) if pid else None
    return testbed


def shape_testbed(
    session: VSphereSession,
    vm_objs: Sequence[Obj],
    host_objs: Sequence[Obj],
    ds_objs: Sequence[Obj],
    cluster_objs: Sequence[Obj],
    perf_obj: Obj | None,
) -> dict[str, Any]:
    host_name = {o.moid: o.name for o in host_objs}
    ds_name = {o.moid: o.name for o in ds_objs}
    cluster_name = {o.moid: o.name for o in cluster_objs}

    def moid(ref: Any) -> str | None:
        return ref._moId if ref is not None else None

    intervals = perf_obj.get("historicalInterval") if perf_obj else None
    luns: dict[str, str] = {}
    for o in host_objs:
        luns.update(lun_support(o.get("config.storageDevice.scsiLun")))
    return {
        "vcenter": shape_vcenter(session.target.name, session.content.about, intervals),
        "hosts": [
            shape_host(o.props, cluster_name.get(moid(o.get("parent")) or "")) for o in host_objs
        ],
        "datastores": [shape_datastore(o.props, luns) for o in ds_objs],
        "clusters": [shape_cluster(o.props) for o in cluster_objs],
        "vms": [
            shape_vm(
                o.props,
                host_name.get(moid(o.get("runtime.host")) or ""),
                [ds_name.get(d._moId, d._moId) for d in o.get("datastore", ())],
            )
            for o in vm_objs
        ],
    }
