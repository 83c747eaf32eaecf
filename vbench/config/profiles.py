"""Lab profiles per factor level: what a point's profiles change, resolved purely.

A factor level may name a lab profile (``levels: [{label: nfs, profile: nfs}]``). For the
points at that level the profile switches:

- `vm:` groups: the vCenter, datacenter, cluster, resource pool, folder, datastore and
  network their clones are placed in. A group whose placement a profile changes gets
  its own guests for that profile (``<group>-<profile>-<i>``), provisioned up front with
  the others and removed with them; ``storage_policy`` replaces the policy of the
  group's data disks (such a group is moved too); groups of existing VMs are used as
  they are;
- static groups: ``nodes`` swaps a lab node for another;
- a driver acting on vCenter (``needs_vcenter``): the vCenter its resources point at.

The run records ``profile=<name>`` and the profile's ``labels`` on the point. When a
point has several profiles (one per factor), the first one naming a field wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.config.scenario import GroupSpec, VmSpec

if TYPE_CHECKING:  # the lab's models are built only when a lab is loaded
    from vbench.config.lab import Lab, Profile

# Profile fields that are also `vm:` placement fields (datacenter is the lab's, per vCenter).
VM_FIELDS = ("vcenter", "cluster", "resource_pool", "folder", "datastore", "network")
# storage_policy applies to every data disk of the group (a per-disk field of `vm:`).
PLACEMENT_FIELDS = (*VM_FIELDS, "datacenter", "storage_policy")


def chosen(lab: Lab, names: Sequence[str]) -> list[tuple[str, Profile]]:
    return [(n, lab.profiles[n]) for n in names if n in lab.profiles]


def merged(lab: Lab, names: Sequence[str]) -> Profile:
    """The point's profiles as one (the first naming a field wins; nodes and labels
    of later profiles fill in what earlier ones leave)."""
    from vbench.config.lab import Profile

    values: dict[str, object] = {}
    nodes: dict[str, str] = {}
    labels: dict[str, str] = {}
    for _, p in reversed(chosen(lab, names)):
        values.update({f: getattr(p, f) for f in PLACEMENT_FIELDS if getattr(p, f)})
        nodes.update(p.nodes)
        labels.update(p.labels)
    return Profile.model_validate({**values, "nodes": nodes, "labels": labels})


def default_vcenter(lab: Lab, group_vcenters: Mapping[str, str]) -> str | None:
    """A point's vCenter when its profiles name none: the lab's only one, else its
    `default_vcenter:`, else the only one the scenario's `vm:` groups use."""
    if len(lab.vcenters) != 1 and lab.default_vcenter:
        return lab.default_vcenter
    for names in (list(lab.vcenters), list(dict.fromkeys(group_vcenters.values()))):
        if len(names) == 1:
            return names[0]
    return None


def point_vcenter(lab: Lab, names: Sequence[str], default: str | None) -> str | None:
    """The vCenter a point works in: its first profile naming one, else ``default``."""
    return next((p.vcenter for _, p in chosen(lab, names) if p.vcenter), None) or default


def profile_labels(lab: Lab, names: Sequence[str]) -> dict[str, str]:
    """What a point records of its profiles: ``profile`` and each profile's labels."""
    found = chosen(lab, names)
    if not found:
        return {}
    return {"profile": "+".join(n for n, _ in found), **merged(lab, names).labels}


def placement_key(lab: Lab, names: Sequence[str]) -> str | None:
    """The part of a guest name telling the profile that placed it: the names of the
    point's profiles that change a placement, joined; None when none does."""
    keys = [n for n, p in chosen(lab, names) if any(getattr(p, f) for f in PLACEMENT_FIELDS)]
    return "-".join(keys) or None


def vm_overrides(profile: Profile, spec: VmSpec, group_vcenter: str | None) -> dict[str, Any]:
    """The `vm:` fields ``profile`` changes for a group (nothing for existing VMs)."""
    if spec.existing is not None:
        return {}
    out: dict[str, Any] = {f: getattr(profile, f) for f in VM_FIELDS if getattr(profile, f)}
    if profile.storage_policy and spec.disks:
        out["disks"] = [d.model_copy(update={"storage_policy": profile.storage_policy})
                        for d in spec.disks]  # fmt: skip
    if out.get("vcenter") == (spec.vcenter or group_vcenter):
        out.pop("vcenter")
    if "host" not in out and any(k in out for k in ("cluster", "resource_pool")):
        out["host"] = None  # a cluster or pool replaces a named host
    return out


def changes_group(lab: Lab, names: Sequence[str], group: GroupSpec, vc: str | None) -> bool:
    """Whether the point's profiles place this `vm:` group elsewhere."""
    if group.vm is None or group.vm.existing is not None:
        return False
    p = merged(lab, names)
    return bool(vm_overrides(p, group.vm, vc) or p.datacenter)


def profiled_names(group: str, names: Sequence[str], key: str) -> tuple[str, ...]:
    """``web-1`` -> ``web-<key>-1``: the group's guests placed by a profile."""
    prefix = f"{group}-"
    return tuple(f"{group}-{key}-{n[len(prefix):]}" if n.startswith(prefix) else f"{n}-{key}"
                 for n in names)


def apply_to_groups(
    groups: Mapping[str, tuple[str, ...]],
    topology: Mapping[str, GroupSpec],
    lab: Lab,
    names: Sequence[str],
    vcenters: Mapping[str, str],
) -> dict[str, tuple[str, ...]]:
    """A point's groups with its profiles applied: `vm:` groups placed elsewhere get the
    profile's guests; static groups get the profile's node swaps."""
    if not chosen(lab, names):
        return dict(groups)
    profile = merged(lab, names)
    key = placement_key(lab, names)
    out: dict[str, tuple[str, ...]] = {}
    for g, members in groups.items():
        spec = topology.get(g)
        if spec is not None and spec.vm is not None:
            moved = key is not None and changes_group(lab, names, spec, vcenters.get(g))
            out[g] = profiled_names(g, members, key) if moved and key else members
        else:
            out[g] = tuple(profile.nodes.get(n, n) for n in members)
    return out


@dataclass(frozen=True)
class VmPlacement:
    """The guests of one `vm:` group placed one way: the group's own, or a profile's."""

    key: str  # "web", or "web@nfs" for the guests profile "nfs" places elsewhere
    group: str
    vcenter: str
    spec: VmSpec
    datacenter: str | None
    guests: tuple[str, ...]


def vm_placements(
    topology: Mapping[str, GroupSpec],
    lab: Lab,
    group_vcenters: Mapping[str, str],
    group_guests: Mapping[str, Sequence[str]],
    point_profiles: Sequence[Sequence[str]],
) -> list[VmPlacement]:
    """Every `vm:` group split by placement: guests named by a profile (see
    :func:`profiled_names`) get the profile's vCenter, datacenter and `vm:` fields."""
    by_key: dict[str, tuple[str, ...]] = {}
    for profs in point_profiles:
        key = placement_key(lab, profs)
        if key is not None:
            by_key.setdefault(key, tuple(profs))
    out: list[VmPlacement] = []
    for g, vc in group_vcenters.items():
        spec = topology[g].vm
        assert spec is not None
        names = tuple(group_guests.get(g, ()))
        taken: set[str] = set()
        moved: list[VmPlacement] = []
        for key, profs in by_key.items():
            if not changes_group(lab, profs, topology[g], vc):
                continue
            wanted = {f"{g}-{key}-{i}" for i in range(1, len(names) + 1)}
            mine = tuple(n for n in names if n in wanted)
            if not mine:
                continue
            taken.update(mine)
            profile = merged(lab, profs)
            changes = vm_overrides(profile, spec, vc)
            where = changes.pop("vcenter", None) or vc
            placed = spec.model_copy(update={**changes, "vcenter": where})
            moved.append(VmPlacement(f"{g}@{key}", g, where, placed, profile.datacenter, mine))
        own = tuple(n for n in names if n not in taken)
        if own:
            out.append(VmPlacement(g, g, vc, spec, None, own))
        out.extend(moved)
    return out
