"""Bind a scenario's topology to a lab: which nodes, reached how."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.config.scenario import GroupSpec, Scenario
from vbench.config.yamlsrc import Source
from vbench.errors import ConfigError, ConfigIssue, ConfigValidationError

if TYPE_CHECKING:  # the lab's models are built only when a lab is loaded
    from vbench.config.lab import Lab


@dataclass(frozen=True)
class Binding:
    """Group name -> node names, and driver role -> group name."""

    groups: Mapping[str, tuple[str, ...]]
    roles: Mapping[str, str]


def bind_roles(
    scenario: Scenario,
    driver_roles: tuple[str, ...],
    src: Source,
    optional: tuple[str, ...] = (),
) -> dict[str, str]:
    """Map every driver role to a topology group; ``optional`` roles may stay unbound."""
    if scenario.workload is None:  # `workloads:` bind per member (engine/bundle_plan.py)
        return {}
    groups = list(scenario.topology)
    roles: dict[str, str] = {}
    issues: list[ConfigIssue] = []
    for role, group in scenario.workload.roles.items():
        if role not in driver_roles:
            issues.append(
                src.issue(
                    ("workload", "roles", role),
                    f"driver {scenario.workload.driver!r} has no role {role!r} "
                    f"(roles: {', '.join(driver_roles)})",
                    key=True,
                )
            )
        elif group not in scenario.topology:
            issues.append(
                src.issue(
                    ("workload", "roles", role),
                    f"no topology group {group!r} (groups: {', '.join(groups)})",
                )
            )
        else:
            roles[role] = group
    for role in driver_roles:
        if role in roles:
            continue
        if role in scenario.topology:
            roles[role] = role
        elif len(groups) == 1:
            roles[role] = groups[0]
        elif role not in optional:
            issues.append(
                src.issue(
                    ("workload", "roles"),
                    f"role {role!r} is not bound to a group (add roles: {{{role}: GROUP}})",
                )
            )
    if issues:
        raise ConfigValidationError(issues)
    return roles


def provisioning_vcenter(group: GroupSpec, lab: Lab) -> str | None:
    """The lab vCenter a `vm:` group's VMs come from; None when the group binds to lab
    nodes (no `vm:`, or a lab without vCenters). Raises ConfigError when ambiguous."""
    if group.vm is None or not lab.vcenters:
        return None
    if group.vm.vcenter:
        return group.vm.vcenter
    if len(lab.vcenters) == 1:
        return next(iter(lab.vcenters))
    if lab.default_vcenter:
        return lab.default_vcenter
    raise ConfigError(
        f"the lab has several vCenters ({', '.join(lab.vcenters)}): name one in `vm.vcenter` "
        "(or give the lab a `default_vcenter:`)"
    )


def vm_guest_names(name: str, group: GroupSpec) -> tuple[str, ...]:
    """Guest names of a `vm:` group: the existing VMs' names, else ``<group>-<i>``."""
    assert group.vm is not None
    if group.vm.existing is not None:
        return tuple(group.vm.existing[: group.count])
    return tuple(f"{name}-{i + 1}" for i in range(group.count))


def vm_groups(scenario: Scenario, lab: Lab) -> dict[str, str]:
    """Group name -> vCenter name, for the groups vSphere provides in this lab."""
    out = {}
    for name, group in scenario.topology.items():
        vc = provisioning_vcenter(group, lab)
        if vc is not None:
            out[name] = vc
    return out


def _bind_vm_group(
    name: str, group: GroupSpec, lab: Lab, src: Source, lab_file: str
) -> tuple[tuple[str, ...] | None, list[ConfigIssue]]:
    """(guest names, issues) of a group provisioned in vSphere; (None, []) otherwise."""
    try:
        vc = provisioning_vcenter(group, lab)
    except ConfigError as exc:
        return (), [src.issue(("topology", name, "vm"), str(exc))]
    if vc is None:
        return None, []
    assert group.vm is not None
    issues = []
    if vc not in lab.vcenters:
        close = difflib.get_close_matches(vc, list(lab.vcenters), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        issues.append(
            src.issue(
                ("topology", name, "vm", "vcenter"), f"no vCenter {vc!r} in lab {lab_file}{hint}"
            )
        )
    names = vm_guest_names(name, group)
    if group.vm.existing is not None and len(group.vm.existing) < group.count:
        issues.append(
            src.issue(
                ("topology", name, "count"),
                f"needs {group.count} guests but `vm.existing` names {len(group.vm.existing)}",
            )
        )
    clash = [n for n in names if n in lab.nodes]
    if clash:
        issues.append(
            src.issue(
                ("topology", name),
                f"guest names {', '.join(clash)} are also lab nodes in {lab_file}: rename "
                "the group or the nodes",
            )
        )
    return names, issues


def bind_groups(
    scenario: Scenario, lab: Lab, src: Source, lab_file: str
) -> dict[str, tuple[str, ...]]:
    """Choose the lab nodes of every topology group."""
    issues: list[ConfigIssue] = []
    out: dict[str, tuple[str, ...]] = {}
    for name, group in scenario.topology.items():
        vm_names, vm_issues = _bind_vm_group(name, group, lab, src, lab_file)
        if vm_names is not None:
            issues.extend(vm_issues)
            out[name] = vm_names
            continue
        if group.nodes is not None:
            for i, node in enumerate(group.nodes):
                if node not in lab.nodes:
                    close = difflib.get_close_matches(node, list(lab.nodes), n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    issues.append(
                        src.issue(
                            ("topology", name, "nodes", i),
                            f"no node {node!r} in lab {lab_file}{hint}",
                        )
                    )
            chosen = list(group.nodes)
        else:
            role = group.role or name
            chosen = [n for n, node in lab.nodes.items() if role in node.roles]
        if len(chosen) < group.count:
            issues.append(
                src.issue(
                    ("topology", name, "count"),
                    f"needs {group.count} guests but lab {lab_file} offers {len(chosen)} "
                    f"({', '.join(chosen) or 'none'}) for group {name!r}",
                )
            )
        out[name] = tuple(chosen[: group.count])
    if issues:
        raise ConfigValidationError(issues)
    return out
