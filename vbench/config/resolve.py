"""Bind a scenario's topology to a lab: which nodes, reached how."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from vbench.config.lab import Lab, Node, SshEndpoint
from vbench.config.scenario import Scenario
from vbench.config.secrets import expand_path, resolve_secret
from vbench.config.yamlsrc import Source
from vbench.errors import ConfigIssue, ConfigValidationError
from vbench.guest.ssh import GuestSpec


@dataclass(frozen=True)
class Binding:
    """Group name -> node names, and driver role -> group name."""

    groups: Mapping[str, tuple[str, ...]]
    roles: Mapping[str, str]


def bind_roles(scenario: Scenario, driver_roles: tuple[str, ...], src: Source) -> dict[str, str]:
    """Map every driver role to a topology group."""
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
        else:
            issues.append(
                src.issue(
                    ("workload", "roles"),
                    f"role {role!r} is not bound to a group (add roles: {{{role}: GROUP}})",
                )
            )
    if issues:
        raise ConfigValidationError(issues)
    return roles


def bind_groups(
    scenario: Scenario, lab: Lab, src: Source, lab_file: str
) -> dict[str, tuple[str, ...]]:
    """Choose the lab nodes of every topology group."""
    issues: list[ConfigIssue] = []
    out: dict[str, tuple[str, ...]] = {}
    for name, group in scenario.topology.items():
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


def guest_spec(lab: Lab, name: str) -> GuestSpec:
    """Resolve a lab node (defaults, jump host, secrets) into a connectable GuestSpec."""
    node = lab.nodes[name]
    jump_name = node.jump or lab.defaults.jump
    jump = (
        _endpoint_spec(lab, f"jump_hosts.{jump_name}", jump_name, lab.jump_hosts[jump_name])
        if jump_name
        else None
    )
    return _endpoint_spec(lab, f"nodes.{name}", name, node, jump=jump)


def _endpoint_spec(
    lab: Lab, where: str, name: str, ep: SshEndpoint, jump: GuestSpec | None = None
) -> GuestSpec:
    d = lab.defaults
    password_ref = ep.password or d.password
    key_file = ep.key_file or d.key_file
    known = ep.known_hosts or d.known_hosts
    workdir = (ep.workdir if isinstance(ep, Node) else None) or d.workdir
    return GuestSpec(
        name=name,
        address=ep.address,
        port=ep.port or d.port,
        user=ep.user or d.user,
        key_file=expand_path(key_file) if key_file else None,
        password=resolve_secret(password_ref, f"{where}.password") if password_ref else None,
        host_key_policy=ep.host_key_policy or d.host_key_policy,
        known_hosts=expand_path(known) if known else None,
        jump=jump,
        workdir=workdir,
        connect_timeout=d.connect_timeout,
    )
