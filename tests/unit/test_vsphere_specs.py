"""Pure parts of provisioning: the `vm:` model, group binding, names, pools, specs,
ownership and orphan rules, fault and thumbprint text, vcsim's command line."""

from __future__ import annotations

import calendar
import time

import pytest
from pydantic import ValidationError
from pyVmomi import vim

from vbench.config.lab import IpPool, Lab
from vbench.config.resolve import bind_groups, vm_groups
from vbench.config.scenario import Scenario, VmSpec
from vbench.config.yamlsrc import Source
from vbench.errors import ConfigError, ConfigValidationError
from vbench.vsphere.cleanup import MarkedVm, owned_by, run_started, select_orphans
from vbench.vsphere.connection import format_thumbprint, normalize_thumbprint, parse_url
from vbench.vsphere.faults import fault_text
from vbench.vsphere.simulator import VcsimOptions, vcsim_argv
from vbench.vsphere.specs import (
    MARK_KEY,
    customization_spec,
    expand_addresses,
    kept_vm_name,
    mark_options,
    plan_requests,
    reconfig_spec,
    vm_name,
)
from vbench.vsphere.tasks import guest_ipv4

RUN = "20250102-030405-abcd1234"


def test_vm_spec_needs_exactly_one_source_and_parses_memory() -> None:
    assert VmSpec(template="t", memory="4g").memory == 4096
    assert VmSpec(template="t", memory=512).memory == 512
    with pytest.raises(ValidationError, match="either `template`"):
        VmSpec()
    with pytest.raises(ValidationError, match="either `template`"):
        VmSpec(template="t", existing=["a"])
    with pytest.raises(ValidationError, match="used as they are: remove cpus"):
        VmSpec(existing=["a"], cpus=2)
    with pytest.raises(ValidationError, match="not a memory size"):
        VmSpec(template="t", memory="lots")


def _scenario(vm: dict, count: int = 2, **group: object) -> Scenario:
    return Scenario.model_validate(
        {
            "version": 1,
            "name": "s",
            "topology": {"web": {"count": count, "vm": vm, **group}},
            "workload": {"driver": "fio", "params": {}},
            "phases": {"steady": 1},
        }
    )


def _lab(vcenters: dict | None = None) -> Lab:
    vc = {"url": "https://vc", "user": "u", "password": "${env:X}"}
    return Lab.model_validate(
        {
            "version": 1,
            "name": "l",
            "nodes": {
                "n1": {"address": "a", "roles": ["web"]},
                "n2": {"address": "b", "roles": ["web"]},
            },
            "vcenters": {"vc1": vc} if vcenters is None else vcenters,
        }
    )


def test_groups_bind_to_vms_in_a_vcenter_lab_and_to_nodes_without_one() -> None:
    sc = _scenario({"template": "t"})
    src = Source("s.yaml", {})
    assert bind_groups(sc, _lab(), src, "lab.yaml") == {"web": ("web-1", "web-2")}
    assert vm_groups(sc, _lab()) == {"web": "vc1"}
    assert bind_groups(sc, _lab({}), src, "lab.yaml") == {"web": ("n1", "n2")}
    assert vm_groups(sc, _lab({})) == {}
    existing = _scenario({"existing": ["db-a", "db-b", "db-c"]})
    assert bind_groups(existing, _lab(), src, "lab.yaml") == {"web": ("db-a", "db-b")}


def test_binding_errors_are_located() -> None:
    src = Source("s.yaml", {})
    with pytest.raises(ConfigValidationError, match=r"no vCenter 'vc2'.*did you mean 'vc1'"):
        bind_groups(_scenario({"template": "t", "vcenter": "vc2"}), _lab(), src, "lab.yaml")
    with pytest.raises(ConfigValidationError, match=r"needs 3 guests but `vm\.existing` names 1"):
        bind_groups(_scenario({"existing": ["a"]}, count=3), _lab(), src, "lab.yaml")
    two = {
        "vc1": {"url": "https://a", "user": "u", "password": "${env:X}"},
        "vc2": {"url": "https://b", "user": "u", "password": "${env:X}"},
    }
    with pytest.raises(ConfigValidationError, match="several vCenters"):
        bind_groups(_scenario({"template": "t"}), _lab(two), src, "lab.yaml")


def test_names_and_requests() -> None:
    assert vm_name(RUN, "web-1") == f"vb-{RUN}-web-1"
    assert kept_vm_name("scen", "web-1") == "vb-keep-scen-web-1"
    specs = {
        "web": VmSpec(template="t"),
        "db": VmSpec(template="t", keep=True),
        "old": VmSpec(existing=["legacy"]),
    }
    reqs = plan_requests(
        "scen",
        specs,
        {"web": ["web-1", "web-2"], "db": ["db-1"], "old": ["legacy"]},
        {"web": "vc1", "db": "vc1", "old": "vc1"},
        RUN,
    )
    assert [(r.guest, r.vm_name, r.index) for r in reqs] == [
        ("web-1", f"vb-{RUN}-web-1", 0),
        ("web-2", f"vb-{RUN}-web-2", 1),
        ("db-1", "vb-keep-scen-db-1", 0),
        ("legacy", "legacy", 0),
    ]
    assert reqs[-1].existing and not reqs[0].existing


def test_address_ranges_expand_in_order() -> None:
    assert expand_addresses(["10.0.0.9", "10.0.0.254-10.0.1.1"]) == [
        "10.0.0.9",
        "10.0.0.254",
        "10.0.0.255",
        "10.0.1.0",
        "10.0.1.1",
    ]
    with pytest.raises(ConfigError, match="ends before"):
        expand_addresses(["10.0.0.9-10.0.0.1"])
    with pytest.raises(ConfigError, match="not an IPv4"):
        expand_addresses(["ten"])


def test_reconfigure_swaps_controller_and_moves_its_disks() -> None:
    ctrl = vim.vm.device.VirtualLsiLogicController(key=1000, busNumber=0, sharedBus="noSharing")
    disk = vim.vm.device.VirtualDisk(key=2000, controllerKey=1000, unitNumber=0)
    nic = vim.vm.device.VirtualE1000(key=4000)
    spec = VmSpec(
        template="t",
        cpus=4,
        memory="2g",
        scsi_type="pvscsi",
        nic_type="vmxnet3",
        reservations={"cpu_mhz": 1000, "memory": "all"},
        latency_sensitivity="high",
    )
    config = reconfig_spec(spec, [ctrl, disk, nic], marks=mark_options(RUN, spec, "web-1"))
    assert config is not None
    ops = [(c.operation, type(c.device).__name__.rsplit(".", 1)[-1]) for c in config.deviceChange]
    assert ops == [
        ("remove", "VirtualLsiLogicController"),
        ("add", "ParaVirtualSCSIController"),
        ("edit", "VirtualDisk"),
        ("remove", "VirtualE1000"),
        ("add", "VirtualVmxnet3"),
    ]
    new_ctrl = config.deviceChange[1].device
    assert config.deviceChange[2].device.controllerKey == new_ctrl.key < 0
    assert new_ctrl.busNumber == 0
    assert (config.numCPUs, config.memoryMB) == (4, 2048)
    assert config.memoryReservationLockedToMax is True
    assert config.cpuAllocation.reservation == 1000
    assert config.latencySensitivity.level == "high"
    assert [(o.key, o.value) for o in config.extraConfig] == [(MARK_KEY, RUN)]


def test_reconfigure_of_a_plain_clone_only_marks_it() -> None:
    config = reconfig_spec(VmSpec(template="t"), [])
    assert config is None
    marked = reconfig_spec(
        VmSpec(template="t"), [], marks=mark_options(RUN, VmSpec(template="t"), "g")
    )
    assert marked is not None and marked.deviceChange == []


def test_customization_gives_the_first_nic_a_fixed_address() -> None:
    pool = IpPool(addresses=["10.0.0.5"], gateway="10.0.0.1", dns=["10.0.0.2"])
    spec = customization_spec("vb-run_x.y", "10.0.0.5", pool)
    adapter = spec.nicSettingMap[0].adapter
    assert adapter.ip.ipAddress == "10.0.0.5" and adapter.gateway == ["10.0.0.1"]
    assert spec.identity.hostName.name == "vb-run-x-y"
    assert spec.globalIPSettings.dnsServerList == ["10.0.0.2"]


def test_only_a_vm_with_our_name_and_mark_is_ours() -> None:
    name = f"vb-{RUN}-web-1"
    assert owned_by(name, {MARK_KEY: RUN}, RUN, name) is None
    assert "not marked" in (owned_by(name, {}, RUN, name) or "")
    assert "marked 2024" in (owned_by(name, {MARK_KEY: "2024"}, RUN, name) or "")
    assert "its name is" in (owned_by("web-1", {MARK_KEY: RUN}, RUN, name) or "")
    # the object our own clone task returned, before its mark was set
    assert owned_by(name, {}, RUN, name, moid="vm-7", created_moid="vm-7") is None
    assert owned_by(name, {}, RUN, name, moid="vm-8", created_moid="vm-7") is not None


def test_orphans_are_marked_inactive_and_old_enough() -> None:
    started = run_started(RUN)
    assert started == calendar.timegm(time.strptime("20250102-030405", "%Y%m%d-%H%M%S"))
    assert run_started("garbage") is None
    vms = [
        MarkedVm("vc", "vb-a", "vm-1", RUN, False, "poweredOn"),
        MarkedVm("vc", "vb-b", "vm-2", "20250102-040405-00000000", False, None),
        MarkedVm("vc", "vb-keep-s-x", "vm-3", RUN, True, None),
    ]
    now = started + 7200
    active = {"20250102-040405-00000000"}
    picked = select_orphans(vms, lambda r: r in active, 3600, now)
    assert [v.name for v in picked] == ["vb-a"]
    assert [v.name for v in select_orphans(vms, lambda r: False, 5400, now)] == ["vb-a"]
    assert len(select_orphans(vms, lambda r: False, 0, now, include_kept=True)) == 3


def test_fault_text_is_one_specific_line() -> None:
    assert fault_text(vim.fault.DuplicateName(name="vm1", msg="*types.DuplicateName")) == (
        "DuplicateName: the name 'vm1' already exists"
    )
    denied = vim.fault.NoPermission(privilegeId="VirtualMachine.Provisioning.Clone")
    assert fault_text(denied) == (
        "NoPermission: permission denied: missing privilege VirtualMachine.Provisioning.Clone"
    )
    text = fault_text(vim.fault.InvalidDatastore(msg="The datastore is not accessible.\\nmore"))
    assert text == "InvalidDatastore: The datastore is not accessible.\\nmore".splitlines()[0]
    assert fault_text(ValueError("plain")) == "plain"


def test_thumbprints_and_urls() -> None:
    hexed = "ab" * 32
    assert normalize_thumbprint(format_thumbprint(hexed)) == hexed
    assert format_thumbprint(hexed).startswith("AB:AB:")
    with pytest.raises(ConfigError, match="SHA-1 thumbprints are not accepted"):
        normalize_thumbprint("ab" * 20)
    assert parse_url("https://vc.example.com") == ("vc.example.com", 443, "/sdk")
    assert parse_url("vc:8443/sdk") == ("vc", 8443, "/sdk")
    with pytest.raises(ConfigError, match="only https"):
        parse_url("http://vc")


def test_guest_ipv4_skips_link_local_and_ipv6() -> None:
    nic = vim.vm.GuestInfo.NicInfo(ipAddress=["fe80::1", "169.254.3.3", "10.1.2.3"])
    assert guest_ipv4({"guest.ipAddress": "fe80::1", "guest.net": [nic]}) == "10.1.2.3"
    assert guest_ipv4({"guest.ipAddress": None}) is None


def test_vcsim_command_line() -> None:
    argv = vcsim_argv(
        "vcsim",
        "127.0.0.1",
        8989,
        VcsimOptions(hosts=5, method_delay_ms=(("CloneVM_Task", 500),), username="u", password="p"),
        credential_files=("/private/u", "/private/p"),
    )
    assert argv[:3] == ["vcsim", "-l", "127.0.0.1:8989"]
    assert argv[argv.index("-host") + 1] == "5"
    assert argv[argv.index("-method-delay") + 1] == "CloneVM_Task:500"
    # The credentials are files vcsim reads, never values on its command line.
    assert "-tlscert" not in argv and argv[argv.index("-username") + 1] == "/private/u"
    assert argv[argv.index("-password") + 1] == "/private/p" and "p" not in argv


def test_the_simulated_lab_provisions_the_quickstart_group() -> None:
    from pathlib import Path

    from vbench.config.load import load_lab, load_scenario
    from vbench.engine.plan import build_plan

    root = Path(__file__).resolve().parents[2]
    lab = load_lab(root / "examples" / "labs" / "sim.yaml")
    plan = build_plan(load_scenario(root / "examples" / "quickstart.yaml"), lab)
    assert plan.groups["storage"] == ("storage-1", "storage-2")
    assert vm_groups(plan.scenario, lab.model) == {"storage": "sim"}
    vc = lab.model.vcenters["sim"]
    assert vc.simulator is not None and vc.ip_pool is not None
    assert vc.simulator.templates == [plan.scenario.topology["storage"].vm.template]  # type: ignore[union-attr]
    # every address the pool hands out is mapped onto a loopback guest
    assert set(expand_addresses(vc.ip_pool.addresses)) == set(lab.model.address_map)
