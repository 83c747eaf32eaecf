"""Preflight of the vSphere side: what `vbench lab check` shows and `vbench run` requires.

For every vCenter: it answers, the credentials work, the user holds the privileges
provisioning needs. For every `vm:` group of a scenario: each object it names exists
(with did-you-mean suggestions), and the datastore, the memory of the hosts and the
lab's address pool have room for what will be created. Nothing is modified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pyVmomi import vim

from vbench.config.lab import Lab
from vbench.config.scenario import Scenario, VmSpec
from vbench.errors import ConfigError, LabError
from vbench.vsphere import content_library as cl
from vbench.vsphere.connection import SessionPool, VCenterTarget, VSphereSession
from vbench.vsphere.faults import fault_text
from vbench.vsphere.inventory import Inventory, NotInInventory, Obj
from vbench.vsphere.library_deploy import find_source
from vbench.vsphere.spbm import missing_policy_text, storage_policies
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
    # "warning": not failed, but not proven either (e.g. a capacity vCenter did not
    # report): shown as such by `lab check` and said by `vbench run`, never a silent pass.
    level: Literal["info", "warning"] = "info"


@dataclass
class _Need:
    """What the clones of one datastore or compute resource need; ``unknown`` names the
    groups whose size vCenter did not report (their share is not in ``amount``)."""

    obj: Obj
    amount: float = 0.0
    unknown: list[str] = field(default_factory=list)

    def add(self, group: str, n: int, each: float | None) -> None:
        if each is None:
            self.unknown.append(group)
        else:
            self.amount += n * each


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
    datacenters: Mapping[str, str] | None = None,
) -> list[Check]:
    """Names, then capacity, of one vCenter's `vm:` groups (``datacenters``: a group's
    datacenter when a lab profile names one)."""
    out: list[Check] = []
    default_dc = lab.vcenters[vcenter].datacenter
    need_disk: dict[str, _Need] = {}
    need_mem: dict[str, _Need] = {}
    clones = 0
    for group, spec in groups.items():
        target = f"group {group}"
        datacenter = (datacenters or {}).get(group) or default_dc
        if spec.existing is not None:
            out.extend(_check_existing(inv, datacenter, target, spec.existing[: counts[group]]))
            continue
        try:
            placement = resolve_placement(inv, spec, datacenter)
        except (NotInInventory, ConfigError) as exc:
            cause = exc.cause if isinstance(exc, LabError) else str(exc)
            out.append(Check(target, "names", False, cause))
            out.extend(_other_names(inv, spec, datacenter, target, cause))
            continue
        out.append(Check(target, "names", True, _named(spec)))
        n = counts[group]
        clones += n
        tmpl = placement.template
        if tmpl is None:  # deployed from a library item: sized by the item, read at deploy
            out.append(Check(target, "capacity", True, "VMs deployed from a library item: "
                             "disk and memory sizes are the item's (not checked)",
                             level="warning"))
            continue
        ds = inv.get(placement.datastore) or inv.get((tmpl.get("datastore") or [None])[0])
        # Missing sizes stay missing (None): an unknown is said, never counted as 0.
        per_vm = LINKED_CLONE_BYTES if spec.linked else _num(tmpl.get("summary.storage.committed"))
        if ds is not None:
            need_disk.setdefault(ds.moid, _Need(ds)).add(group, n, per_vm)
        compute = _compute_of_pool(inv, placement.pool)
        mem_mib = spec.memory or _num(tmpl.get("summary.config.memorySizeMB"))
        if compute is not None:
            mem = None if mem_mib is None else float(mem_mib) * MIB
            need_mem.setdefault(compute.moid, _Need(compute)).add(group, n, mem)
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


def _other_names(
    inv: Inventory, spec: VmSpec, datacenter: str | None, target: str, first: str
) -> list[Check]:
    """Every other place a `vm:` spec names that does not exist either: one failure each,
    not one at a time over as many lab checks."""
    out = []
    for f in ("cluster", "host", "resource_pool", "datastore", "folder", "network"):
        value = getattr(spec, f)
        if not value:
            continue
        try:
            inv.find(f, value, inv.datacenter(datacenter))
        except NotInInventory as exc:
            if exc.cause != first:
                out.append(Check(target, f"{f.replace('_', ' ')} {value}", False, exc.cause))
    return out


def _named(spec: VmSpec) -> str:
    parts = [f"template {spec.template}"] if spec.template is not None else []
    for f in ("cluster", "host", "resource_pool", "datastore", "folder", "network"):
        if getattr(spec, f):
            parts.append(f"{f.replace('_', ' ')} {getattr(spec, f)}")
    return (", ".join(parts) or "placement") + " found"


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


def _num(value: object) -> float | None:
    """A size vCenter reported, or None when it did not (never 0 in its place)."""
    return None if value is None else float(value)  # type: ignore[arg-type]


def _room_check(target: str, check: str, free: float | None, need: _Need, what: str) -> Check:
    """Room vs need. Enough for what is known but something unknown: a warning that says
    what is unknown. Not enough even for what is known: a failure, unknowns or not."""
    gib = 1024**3
    have = "unknown free" if free is None else f"{free / gib:.1f} GiB free"
    detail = f"{have} for {need.amount / gib:.1f} GiB of {what}"
    if need.unknown:
        detail += f" + unknown: vCenter reports no size for group {', '.join(need.unknown)}"
    if free is not None and free < need.amount:
        return Check(target, check, False, detail)
    if free is None or need.unknown:
        return Check(target, check, True, f"{detail} (not checked)", level="warning")
    return Check(target, check, True, detail)


def _disk_checks(needs: Iterable[_Need]) -> list[Check]:
    return [
        _room_check(
            f"datastore {n.obj.name}", "capacity", _num(n.obj.get("summary.freeSpace")), n, "clones"
        )
        for n in needs
    ]


def _free_memory(inv: Inventory, compute: Obj) -> float | None:
    """Free memory of the connected hosts; None if any of them does not report it."""
    total = used = 0.0
    for ref in compute.get("host", ()):
        h = inv.get(ref)
        if h is None or h.get("runtime.connectionState") != "connected":
            continue
        size = h.get("summary.hardware.memorySize")
        usage = h.get("summary.quickStats.overallMemoryUsage")
        if size is None or usage is None:
            return None
        total += float(size)
        used += float(usage) * MIB
    return total - used


def _memory_checks(inv: Inventory, needs: Iterable[_Need]) -> list[Check]:
    return [
        _room_check(f"compute {n.obj.name}", "memory", _free_memory(inv, n.obj), n, "VMs")
        for n in needs
    ]


def vsphere_checks(
    lab: Lab,
    sessions: SessionPool,
    scenario: Scenario | None = None,
    group_vcenters: Mapping[str, str] | None = None,
    counts: Mapping[str, int] | None = None,
    *,
    all_vcenters: bool = True,
    extra_vcenters: Sequence[str] = (),
    datacenters: Mapping[str, str] | None = None,
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
        checks.extend(check_groups(inv, lab, name, groups, n, datacenters))
        checks.extend(check_library_items(session.target, groups))
        checks.extend(check_policies(session, name, groups))
    return checks, inventories


def check_library_items(target: VCenterTarget, groups: Mapping[str, VmSpec]) -> list[Check]:
    """The content library and item of every group deployed from one exist in the
    group's vCenter and can make a VM (one REST session, read only)."""
    wanted = {g: s for g, s in groups.items() if s.library_item is not None}
    if not wanted:
        return []
    out: list[Check] = []
    try:
        rest = cl.session_for(target)
    except LabError as exc:
        return [Check(f"group {g}", "library item", False, str(exc)) for g in wanted]
    with rest:
        for group, spec in wanted.items():
            assert spec.library is not None and spec.library_item is not None
            try:
                src = find_source(rest, spec.library, spec.library_item)
            except LabError as exc:
                out.append(Check(f"group {group}", "library item", False, str(exc)))
                continue
            out.append(Check(f"group {group}", "library item", True,
                             f"{src.label} found ({src.kind}) in {target.label}"))
    return out


def check_policies(
    session: VSphereSession, vcenter: str, groups: Mapping[str, VmSpec]
) -> list[Check]:
    """Every storage policy the groups' data disks name exists in the vCenter."""
    names = list(dict.fromkeys(d.storage_policy for spec in groups.values()
                               if spec.existing is None
                               for d in spec.disks if d.storage_policy))  # fmt: skip
    if not names:
        return []
    target = f"vcenter {vcenter}"
    try:
        known = storage_policies(session)
    except LabError as exc:
        return [Check(target, "storage policies", False, exc.cause)]
    out = []
    for name in names:
        policy = known.get(name)
        detail = (f"found (id {policy.profile_id})" if policy is not None
                  else missing_policy_text(name, known))  # fmt: skip
        out.append(Check(target, f"storage policy {name}", policy is not None, detail))
    return out


INVENTORY_KINDS = ("vm", "template", "datastore", "network", "folder", "resource_pool",
                   "host", "cluster")


def check_named(
    session: VSphereSession, inv: Inventory, datacenter: str | None, target: str,
    objects: Sequence[tuple[str, str, str | None]],
) -> list[Check]:
    """Each ``(kind, name, library)`` a workload names exists in this vCenter: inventory
    objects in the datacenter (``datacenter``: the point's, else the lab's), content
    libraries and their items, storage policies; a missing one with the did-you-mean the
    run would give. ``target`` names the workload and the vCenter."""
    out: list[Check] = []
    try:
        dc = inv.datacenter(datacenter)
    except NotInInventory as exc:
        return [Check(target, "datacenter", False, exc.cause)]
    for kind, name, _lib in objects:
        if kind not in INVENTORY_KINDS:
            continue
        try:
            inv.find(kind, name, dc)
        except NotInInventory as exc:
            out.append(Check(target, f"{kind.replace('_', ' ')} {name}", False, exc.cause))
            continue
        out.append(Check(target, f"{kind.replace('_', ' ')} {name}", True, "found"))
    policies = [n for k, n, _ in objects if k == "storage_policy"]
    if policies:
        known = storage_policies(session)
        out += [Check(target, f"storage policy {n}", n in known,
                      "found" if n in known else missing_policy_text(n, known))
                for n in policies]  # fmt: skip
    libraries = [(k, n, lib) for k, n, lib in objects if k in ("library", "library_item")]
    if libraries:
        out += _library_checks(session.target, target, libraries)
    return out


def _library_checks(
    vc: VCenterTarget, target: str, objects: Sequence[tuple[str, str, str | None]]
) -> list[Check]:
    """Existing content libraries (and items deployed from them), one REST session."""
    try:
        rest = cl.session_for(vc)
    except LabError as exc:
        return [Check(target, f"{k.replace('_', ' ')} {n}", False, str(exc))
                for k, n, _ in objects]  # fmt: skip
    out = []
    with rest:
        for kind, name, library in objects:
            what = f"{kind.replace('_', ' ')} {name}"
            try:
                if kind == "library":
                    cl.library_by_name(rest, name)
                else:
                    find_source(rest, library or "", name)
            except LabError as exc:
                out.append(Check(target, what, False, exc.cause))
                continue
            out.append(Check(target, what, True, "found"))
    return out


PROFILE_NAMES = ("cluster", "resource_pool", "folder", "datastore", "network")


def check_profiles(lab: Lab, sessions: SessionPool) -> list[Check]:
    """Every lab profile: its vCenter answers and each object it names exists there."""
    out: list[Check] = []
    inventories: dict[str, Inventory] = {}
    only = next(iter(lab.vcenters)) if len(lab.vcenters) == 1 else None
    for name, prof in lab.profiles.items():
        target = f"profile {name}"
        named = [(k, getattr(prof, k)) for k in PROFILE_NAMES if getattr(prof, k)]
        vc = prof.vcenter or only
        if vc is None:
            if named or prof.datacenter:
                out.append(Check(target, "names", False, "names vSphere objects but no "
                                 "`vcenter:` (the lab has several)"))
            continue
        try:
            inv = inventories.get(vc) or Inventory.load(sessions.get(vc))
        except LabError as exc:
            out.append(Check(target, "vcenter", False, f"vcenter {vc}: {exc.cause}"))
            continue
        inventories[vc] = inv
        try:
            dc = inv.datacenter(prof.datacenter or lab.vcenters[vc].datacenter)
            for kind, value in named:
                inv.find(kind, value, dc)
        except NotInInventory as exc:
            out.append(Check(target, "names", False, f"vcenter {vc}: {exc.cause}"))
            continue
        if prof.storage_policy:
            out.extend(_profile_policy(sessions, vc, target, prof.storage_policy))
        found = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in named)
        out.append(Check(target, "names", True, f"vcenter {vc}: {found or 'reachable'}"
                         + (" found" if found else "")))
    return out


def _profile_policy(sessions: SessionPool, vc: str, target: str, name: str) -> list[Check]:
    try:
        known = storage_policies(sessions.get(vc))
    except LabError as exc:
        return [Check(target, "storage policy", False, f"vcenter {vc}: {exc.cause}")]
    policy = known.get(name)
    detail = f"found (id {policy.profile_id})" if policy else missing_policy_text(name, known)
    return [Check(target, f"storage policy {name}", policy is not None, f"vcenter {vc}: {detail}")]


def first_failure(checks: Sequence[Check]) -> LabError | None:
    failed = [c for c in checks if not c.ok]
    if not failed:
        return None
    c = failed[0]
    more = f" (and {len(failed) - 1} more failed checks: `vbench lab check`)" if failed[1:] else ""
    return LabError(c.target, f"{c.check}: {c.detail}{more}")
