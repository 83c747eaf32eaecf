"""A lab's nodes, ESXi hosts and VMs as SSH guests: defaults, jump hosts, address map
and secrets resolved into connectable :class:`GuestSpec` values."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from vbench.config.guestname import check_guest_name
from vbench.config.lab import Lab, Node, SshEndpoint
from vbench.config.secrets import expand_path
from vbench.errors import ConfigError
from vbench.guest.spec import GuestSpec


def guest_spec(lab: Lab, name: str) -> GuestSpec:
    """Resolve a lab node (defaults, jump host, secrets) into a connectable GuestSpec."""
    node = lab.nodes[name]
    return _endpoint_spec(lab, f"nodes.{name}", name, node, jump=_jump(lab, node.jump))


def _jump(lab: Lab, own: str | None) -> GuestSpec | None:
    """The jump host an endpoint goes through: its own, else the lab default's."""
    name = own or lab.defaults.jump
    if not name:
        return None
    return _endpoint_spec(lab, f"jump_hosts.{name}", name, lab.jump_hosts[name])


def _endpoint_spec(
    lab: Lab, where: str, name: str, ep: SshEndpoint, jump: GuestSpec | None = None
) -> GuestSpec:
    # The lab model checks its names; a VM's guest name (an `existing:` VM's own name)
    # arrives here too, and reaches the guests' files: checked again where it enters.
    try:
        check_guest_name(name, "guest name")
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    d = lab.defaults
    password_ref = ep.password or d.password
    key_file = ep.key_file or d.key_file
    known = ep.known_hosts or d.known_hosts
    workdir = (ep.workdir if isinstance(ep, Node) else None) or d.workdir
    address, port = map_address(lab.address_map, ep.address, ep.port or d.port)
    return GuestSpec(
        name=name,
        address=address,
        port=port,
        user=ep.user or d.user,
        key_file=expand_path(key_file) if key_file else None,
        password=lab.secret(_password_path(where, ep), password_ref) if password_ref else None,
        host_key_policy=ep.host_key_policy or d.host_key_policy,
        known_hosts=expand_path(known) if known else None,
        jump=jump,
        workdir=workdir,
        connect_timeout=d.connect_timeout,
        data_disks=tuple(ep.disks) if isinstance(ep, Node) else (),
        start_hint=_local_start(lab, address, port),
    )


def _local_start(lab: Lab, address: str, port: int) -> str | None:
    """`vbench lab up LAB` for an address and port the lab's `local:` sshd serves."""
    local = lab.local
    if local is None or port != local.port or address not in local.addresses:
        return None
    return lab.up_command()


def _password_path(where: str, ep: SshEndpoint) -> tuple[str, ...]:
    """Where the endpoint's password reference is written: its own, else the defaults'."""
    if ep.password is None:
        return ("defaults", "password")
    kind, _, name = where.partition(".")  # "nodes.db1": names may hold dots, kinds do not
    return (kind, name, "password")


def map_address(
    address_map: Mapping[str, str], address: str, port: int, *also: str
) -> tuple[str, int]:
    """Where SSH really connects for ``address`` (or one of the names in ``also``, e.g. a
    VM name, tried first): the lab's ``address_map`` entry ``host[:port]``, else as is."""
    for key in (*also, address):
        target = address_map.get(key)
        if target is not None:
            host, sep, mapped_port = target.rpartition(":")
            if sep and mapped_port.isdigit():
                return host, int(mapped_port)
            return target, port
    return address, port


def vm_guest_spec(lab: Lab, name: str, vm_name: str, ip: str) -> GuestSpec:
    """A provisioned (or existing) VM as an SSH guest: the lab's defaults, reached at its
    IP, or where the address map sends its name or IP."""
    endpoint = SshEndpoint(address=ip)
    spec = _endpoint_spec(lab, f"VM {vm_name}", name, endpoint, jump=_jump(lab, None))
    address, port = map_address(lab.address_map, ip, lab.defaults.port, vm_name)
    return dataclasses.replace(spec, address=address, port=port)


def reached_guest_spec(lab: Lab, name: str, address: str, port: int | None) -> GuestSpec:
    """A guest as a run reached it (a VM: its address after the address map, recorded in
    the run's guest ledger), with the lab's defaults for everything else."""
    endpoint = SshEndpoint(address=address)
    spec = _endpoint_spec(lab, f"guest {name}", name, endpoint, jump=_jump(lab, None))
    return dataclasses.replace(spec, address=address, port=port or spec.port)


def host_spec(lab: Lab, name: str) -> GuestSpec:
    """Resolve a lab ESXi host (`hosts:`) into a connectable GuestSpec (SSH for esxtop)."""
    host = lab.hosts[name]
    return _endpoint_spec(lab, f"hosts.{name}", name, host, jump=_jump(lab, host.jump))
