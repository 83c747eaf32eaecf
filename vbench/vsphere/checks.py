"""Preflight of the vSphere side: what `vbench lab check` shows and `vbench run` requires.

For every vCenter: it answers, the credentials work, the user holds the privileges
provisioning needs. For every `vm:` group of a scenario: each object it names exists
(with did-you-mean suggestions), and the datastore, the memory of the hosts and the
lab's address pool have room for what will be created. Nothing is modified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyVmomi import vim

from vbench.config.lab import Lab
from vbench.config.scenario import Scenario, VmSpec
from vbench.errors import ConfigError, LabError
from vbench.vsphere.connection import SessionPool, VSphereSession
from vbench.vsphere.faults import fault_text
from vbench.vsphere.inventory import Inventory, NotInInventory, Obj
from vbench.vsphere.specs import expand_addresses, resolve_placement

MIB = 1024 * 1024
LINKED_CLONE_BYTES = 1024**3  # a linked clone's delta disk starts small; count 1 GiB

# What cloning, reconfiguring, customizing, powering and removing VMs needs.
PROVISION_PRIVILEGES = (
    "VirtualMachine.Provisioning.Clone",
    "VirtualMachine.Inventory.CreateFromExisting",
    "VirtualMachine.Inventory.Delete",
    "VirtualMachine.Interact.PowerOn",
    "VirtualMachine.Interact.PowerOff",
    "VirtualMachine.Config.CPUCount",
    "VirtualMachine.Config.Memory",
    "VirtualMachine.Config.Resource",
    "VirtualMachine.Config.EditDevice",
    "VirtualMachine.Config.AdvancedConfig",
    "Resource.AssignVMToPool",
    "Datastore.AllocateSpace",
    "Network.Assign",
    "Global.SetCustomField",
)
CUSTOMIZE_PRIVILEGE = "VirtualMachine.Provisioning.Customize"


@dataclass(frozen=True)
class Check:
    target: str  # what was checked: "vcenter vc1", "group web", "node guest1"
    check: str  # "connect", "privileges", "template", "capacity", "tools" …
    ok: bool
    detail: str


def vm_groups_by_vcenter(
    scenario: Scenario, vcenters: Mapping[str, str]
) -> dict[str, dict[str, VmSpec]]:
    """vCenter -> {group: vm spec} for the groups vSphere provides."""
    out: dict[str, dict[str, VmSpec]] = {}
    for group, vc in vcenters.items():
        spec = scenario.topology[group].vm
        if spec is not None:
            out.setdefault(vc, {})[group] = spec
    return out


def check_vcenter(session: VSphereSession, privileges: Sequence[str]) -> list[Check]:
    target = session.target.label
    about = session.content.about
    out = [Check(target, "connect", True, f"{about.fullName} (API {about.apiVersion})")]
    if privileges:
        out.append(_privileges(session, privileges))
    return out


def _privileges(session: VSphereSession, privileges: Sequence[str]) -> Check:
    target = session.target.label
    try:
        key = session.session_key
        root = session.content.rootFolder
        auth = session.content.authorizationManager
        granted = session.call(lambda: auth.HasPrivilegeOnEntity(root, key, list(privileges)))
    except vim.fault.NoPermission as exc:
        return Check(target, "privileges", False, fault_text(exc))
    missing = [p for p, ok in zip(privileges, granted or (), strict=False) if not ok]
    if missing:
        return Check(
            target,
            "privileges",
            False,
            f"user {session.target.user} lacks {', '.join(missing)} on the root folder",
        )
    return Check(target, "privileges", True, f"{len(privileges)} needed privileges held")


def check_groups(
    inv: Inventory,
    lab: Lab,
    vcenter: str,
    groups: Mapping[str, VmSpec],
    counts: Mapping[str, int],
) -> list[Check]:
    """Names, then capacity, of one vCenter's `vm:` groups."""
    out: list[Check] = []
    datacenter = lab.vcenters[vcenter].datacenter
    need_disk: dict[str, tuple[Obj, float]] = {}
    need_mem: dict[str, tuple[Obj, float]] = {}
    clones = 0
    for group, spec in groups.items():
        target = f"group {group}"
        if spec.existing is not None:
            out.extend(_check_existing(inv, datacenter, target, spec.existing[: counts[group]]))
            continue
        try:
            placement = resolve_placement(inv, spec, datacenter)
        except (NotInInventory, ConfigError) as exc:
            cause = exc.cause if isinstance(exc, LabError) else str(exc)
            out.append(Check(target, "names", False, cause))
            continue
        out.append(Check(target, "names", True, _named(spec)))
        n = counts[group]
        clones += n
        tmpl = placement.template
        ds = inv.get(placement.datastore) or inv.get((tmpl.get("datastore") or [None])[0])
        per_vm = (
            LINKED_CLONE_BYTES if spec.linked else float(tmpl.get("summary.storage.committed") or 0)
        )
        if ds is not None:
            prev = need_disk.get(ds.moid, (ds, 0.0))[1]
            need_disk[ds.moid] = (ds, prev + n * per_vm)
        compute = _compute_of_pool(inv, placement.pool)
        mem_mib = spec.memory or tmpl.get("summary.config.memorySizeMB") or 0
        if compute is not None:
            prev = need_mem.get(compute.moid, (compute, 0.0))[1]
            need_mem[compute.moid] = (compute, prev + n * float(mem_mib) * MIB)
    out.extend(_disk_checks(need_disk.values()))
    out.extend(_memory_checks(inv, need_mem.values()))
    pool = lab.vcenters[vcenter].ip_pool
    if pool is not None and clones:
        free = len(expand_addresses(pool.addresses))
        out.append(
            Check(
                f"vcenter {vcenter}",
                "ip_pool",
                free >= clones,
                f"{free} addresses for {clones} clones",
            )
        )
    return out


def _named(spec: VmSpec) -> str:
    parts = [f"template {spec.template}"]
    for f in ("cluster", "host", "resource_pool", "datastore", "folder", "network"):
        if getattr(spec, f):
            parts.append(f"{f.replace('_', ' ')} {getattr(spec, f)}")
    return ", ".join(parts) + " found"


def _check_existing(
    inv: Inventory, datacenter: str | None, target: str, names: Sequence[str]
) -> list[Check]:
    out = []
    dc = inv.datacenter(datacenter)
    for name in names:
        try:
            vm = inv.find("vm", name, dc)
        except NotInInventory as exc:
            out.append(Check(target, f"VM {name}", False, exc.cause))
            continue
        on = vm.get("runtime.powerState") == "poweredOn"
        detail = "found, powered on" if on else "is powered off (vbench will not power it on)"
        out.append(Check(target, f"VM {name}", on, detail))
    return out


def _compute_of_pool(inv: Inventory, pool_ref: object) -> Obj | None:
    pool = inv.get(pool_ref)
    return inv.get(pool.get("owner")) if pool is not None else None


def _disk_checks(needs: object) -> list[Check]:
    out = []
    for ds, need in needs:  # type: ignore[attr-defined]
        free = float(ds.get("summary.freeSpace") or 0)
        out.append(
            Check(
                f"datastore {ds.name}",
                "capacity",
                free >= need,
                f"{free / 1024**3:.1f} GiB free for {need / 1024**3:.1f} GiB of clones",
            )
        )
    return out


def _memory_checks(inv: Inventory, needs: object) -> list[Check]:
    out = []
    for compute, need in needs:  # type: ignore[attr-defined]
        hosts = [inv.get(h) for h in compute.get("host", ())]
        total = used = 0.0
        for h in hosts:
            if h is None or h.get("runtime.connectionState") != "connected":
                continue
            total += float(h.get("summary.hardware.memorySize") or 0)
            used += float(h.get("summary.quickStats.overallMemoryUsage") or 0) * MIB
        free = total - used
        out.append(
            Check(
                f"compute {compute.name}",
                "memory",
                free >= need,
                f"{free / 1024**3:.1f} GiB free for {need / 1024**3:.1f} GiB of VMs",
            )
        )
    return out


def vsphere_checks(
    lab: Lab,
    sessions: SessionPool,
    scenario: Scenario | None = None,
    group_vcenters: Mapping[str, str] | None = None,
    counts: Mapping[str, int] | None = None,
    *,
    all_vcenters: bool = True,
    extra_vcenters: Sequence[str] = (),
) -> tuple[list[Check], dict[str, Inventory]]:
    """Every vSphere check; the inventories read on the way are returned for reuse.
    ``extra_vcenters``: vCenters a workload works in (connection checked)."""
    by_vc = vm_groups_by_vcenter(scenario, group_vcenters or {}) if scenario else {}
    wanted = [*by_vc, *extra_vcenters]
    names = list(lab.vcenters) if all_vcenters else list(dict.fromkeys(wanted))
    checks: list[Check] = []
    inventories: dict[str, Inventory] = {}
    for name in names:
        try:
            session = sessions.get(name)
        except LabError as exc:
            checks.append(Check(f"vcenter {name}", "connect", False, exc.cause))
            continue
        groups = by_vc.get(name, {})
        privileges = list(PROVISION_PRIVILEGES) if groups else []
        if groups and lab.vcenters[name].ip_pool is not None:
            privileges.append(CUSTOMIZE_PRIVILEGE)
        checks.extend(check_vcenter(session, privileges))
        if not groups:
            continue
        inventories[name] = inv = Inventory.load(session)
        n = counts or {g: scenario.topology[g].count for g in groups}  # type: ignore[union-attr]
        checks.extend(check_groups(inv, lab, name, groups, n))
    return checks, inventories


def first_failure(checks: Sequence[Check]) -> LabError | None:
    failed = [c for c in checks if not c.ok]
    if not failed:
        return None
    c = failed[0]
    more = f" (and {len(failed) - 1} more failed checks: `vbench lab check`)" if failed[1:] else ""
    return LabError(c.target, f"{c.check}: {c.detail}{more}")
