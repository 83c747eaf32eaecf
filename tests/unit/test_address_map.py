"""Address maps: where SSH really connects for lab nodes and provisioned VMs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vbench.config.lab import Lab
from vbench.guest.labspec import guest_spec, map_address, vm_guest_spec


def _lab(**extra: object) -> Lab:
    data = {
        "version": 1,
        "name": "t",
        "defaults": {"port": 2200, "user": "perf"},
        "nodes": {"n1": {"address": "10.0.0.5"}, "n2": {"address": "10.0.0.6", "port": 22}},
        "address_map": {
            "10.0.0.5": "gw:2205",
            "10.0.0.6": "gw6",
            "vm-a": "127.0.0.9:2222",
            "10.1.0.7": "127.0.0.7:2201",
        },
    }
    data.update(extra)
    return Lab.model_validate(data)


def test_map_address_rewrites_host_and_port() -> None:
    m = {"10.0.0.5": "gw:2205", "10.0.0.6": "gw6"}
    assert map_address(m, "10.0.0.5", 22) == ("gw", 2205)
    assert map_address(m, "10.0.0.6", 22) == ("gw6", 22)
    assert map_address(m, "10.0.0.7", 22) == ("10.0.0.7", 22)


def test_names_are_tried_before_the_address() -> None:
    m = {"10.0.0.5": "a:1", "vm-a": "b:2"}
    assert map_address(m, "10.0.0.5", 22, "vm-a") == ("b", 2)
    assert map_address(m, "10.0.0.5", 22, "vm-b") == ("a", 1)


def test_lab_nodes_go_through_the_map() -> None:
    lab = _lab()
    s1, s2 = guest_spec(lab, "n1"), guest_spec(lab, "n2")
    assert (s1.address, s1.port, s1.user) == ("gw", 2205, "perf")
    assert (s2.address, s2.port) == ("gw6", 22)


def test_provisioned_vms_become_guests_by_name_or_ip() -> None:
    lab = _lab()
    by_name = vm_guest_spec(lab, "web-1", "vm-a", "10.1.0.99")
    by_ip = vm_guest_spec(lab, "web-2", "vm-b", "10.1.0.7")
    plain = vm_guest_spec(lab, "web-3", "vm-c", "10.1.0.8")
    assert (by_name.name, by_name.address, by_name.port) == ("web-1", "127.0.0.9", 2222)
    assert (by_ip.address, by_ip.port) == ("127.0.0.7", 2201)
    assert (plain.address, plain.port, plain.user) == ("10.1.0.8", 2200, "perf")


def test_a_malformed_target_is_refused() -> None:
    with pytest.raises(ValidationError, match="not host or host:port"):
        _lab(address_map={"10.0.0.5": "gw:port:x"})


def test_lab_check_reaches_esxi_hosts_through_their_jump_host() -> None:
    # lab check must reach a host the way esxtop does (host_spec): through its jump host.
    from vbench.cli.vsphere_cmds import ssh_check_specs

    lab = _lab(
        jump_hosts={"bastion": {"address": "10.9.9.9"}},
        hosts={"esx1": {"address": "10.0.1.1", "jump": "bastion"}, "esx2": {"address": "10.0.1.2"}},
    )
    specs = {s.name: s for s in ssh_check_specs(lab)}
    assert set(specs) == {"n1", "n2", "esxi:esx1", "esxi:esx2"}
    assert specs["esxi:esx1"].jump is not None and specs["esxi:esx1"].jump.address == "10.9.9.9"
    assert specs["esxi:esx2"].jump is None and specs["esxi:esx2"].address == "10.0.1.2"


@pytest.mark.parametrize("hosts, defaults, where", [
    ({"esx1": {"address": "10.0.1.1", "jump": "nope"}}, {}, "hosts.esx1.jump"),
    ({"esx1": {"address": "10.0.1.1"}}, {"jump": "nope"}, "defaults.jump"),
])  # fmt: skip
def test_a_host_naming_an_unknown_jump_host_is_refused(
    hosts: dict, defaults: dict, where: str
) -> None:
    # the message is located at the field naming the jump host (vbench.config.load)
    with pytest.raises(ValidationError, match=f"{where}: jump host 'nope' is not in jump_hosts"):
        _lab(nodes={}, hosts=hosts, defaults=defaults)
