"""Provisioning against a real vCenter simulator: clone, reconfigure, place, customize,
power on, wait for the IP; task failures; cleanup that removes only what was created."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyVmomi import vim

from tests.e2e.helpers import wait_for
from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.config.scenario import Scenario
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import Interrupted, LabError
from vbench.vsphere.connection import SessionPool, server_thumbprint, target_from_lab
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.journal import Journal, pending
from vbench.vsphere.simulator import ensure_templates
from vbench.vsphere.tasks import Watcher

RUN_ID = "20250102-030405-abcd1234"
TEMPLATE = "tmpl-linux"

Factory = Callable[..., VcsimServer]


def make_lab(server: VcsimServer, **extra: Any) -> Lab:
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    vc["ip_pool"] = {"addresses": ["10.9.0.10-10.9.0.40"]}
    data: dict[str, Any] = {
        "version": 1,
        "name": "sim",
        "vcenters": {"vc1": vc},
        "address_map": {"10.9.0.10": "127.0.0.2:2222", "10.9.0.11": "127.0.0.3"},
        "defaults": {"port": 2200},
    }
    data.update(extra)
    return Lab.model_validate(data)


def make_scenario(vm: dict[str, Any], count: int = 2, **settings: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "version": 1,
            "name": "prov",
            "topology": {"web": {"count": count, "vm": vm}},
            "workload": {"driver": "fio", "params": {}},
            "phases": {"steady": 1},
            "settings": settings,
        }
    )


def vsphere_run(lab: Lab, scenario: Scenario, **kw: Any) -> VSphereRun:
    guests = {"web": [f"web-{i + 1}" for i in range(scenario.topology["web"].count)]}
    return VSphereRun(scenario, lab, {"web": "vc1"}, guests, **kw)


@pytest.fixture
def sim(vcsim_factory: Factory) -> VcsimServer:
    server = vcsim_factory()
    lab = make_lab(server)
    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    return server


def when_journaled(run_dir: Path, event: str, action: Callable[[], None]) -> threading.Thread:
    """Do ``action`` (in a thread) once the run's journal holds ``event`` ("intent": a clone
    call is about to go out; "started": a clone task is under way): the moment itself, not
    a guess of how long preflight and the first clone call take."""

    def seen() -> bool:
        path = run_dir / "vsphere-journal.jsonl"
        return path.exists() and f'"event": "{event}"' in path.read_text()

    def go() -> None:
        wait_for(seen, 60, f"{event} in the journal")
        action()

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def vm_names(lab: Lab) -> set[str]:
    with SessionPool.for_lab(lab) as pool:
        return {o.name for o in Inventory.load(pool.get("vc1")).candidates("vm")}


def test_clones_reconfigures_places_and_cleans_up(sim: VcsimServer, tmp_path: Path) -> None:
    lab = make_lab(sim)
    scenario = make_scenario(
        {
            "template": TEMPLATE,
            "cluster": "DC0_C0",
            "spread": True,
            "cpus": 2,
            "memory": "1g",
            "reservations": {"cpu_mhz": 500, "memory": "all"},
            "latency_sensitivity": "high",
            "nic_type": "vmxnet3",
            "scsi_type": "lsilogic-sas",
            "ip_timeout": "20s",
        },
        count=3,
    )
    run = vsphere_run(lab, scenario)
    try:
        run.preflight()
        guests = run.provision(RUN_ID, tmp_path)
        # IPs come from the pool by guest customization; the address map redirects SSH.
        assert [vm.ip for vm in run.vms] == ["10.9.0.10", "10.9.0.11", "10.9.0.12"]
        assert (guests["web-1"].address, guests["web-1"].port) == ("127.0.0.2", 2222)
        assert (guests["web-2"].address, guests["web-2"].port) == ("127.0.0.3", 2200)
        assert (guests["web-3"].address, guests["web-3"].port) == ("10.9.0.12", 2200)
        tb = run.testbed()
        assert tb is not None
        vms = {v["name"]: v for v in tb["vms"]}
        assert set(vms) == {f"vb-{RUN_ID}-web-{i}" for i in (1, 2, 3)}
        for v in vms.values():
            assert v["vcpus"] == 2 and v["memory_mib"] == 1024
            assert v["latency_sensitivity"] == "high" and v["cpu_reservation_mhz"] == 500
            assert [n["type"] for n in v["nics"]] == ["vmxnet3"]
            assert v["scsi_controllers"] == ["lsilogic-sas"]
            assert v["disks"] and v["disks"][0]["controller"] == "lsilogic-sas"
        # spread: three VMs on the three hosts of the cluster
        assert sorted(v["host"] for v in vms.values()) == ["DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2"]
        assert {h["name"] for h in tb["hosts"]} == {"DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2"}
        assert tb["clusters"][0]["name"] == "DC0_C0" and tb["vcenter"]["version"]
        assert tb["datastores"] and tb["datastores"][0]["capacity_gib"] > 0
    finally:
        report = run.cleanup()
        run.close()
    assert len(report.destroyed) == 3 and not report.errors
    assert not any(n.startswith("vb-") for n in vm_names(lab))
    assert pending(Journal.in_run_dir(tmp_path).read()) == []


def test_clone_failure_names_vm_operation_and_fault_and_spares_unmarked_vm(
    sim: VcsimServer, tmp_path: Path
) -> None:
    lab = make_lab(sim)
    clash = f"vb-{RUN_ID}-web-2"
    # Someone else's VM that happens to have the name vbench wants (not marked).
    with SessionPool.for_lab(lab) as pool:
        s = pool.get("vc1")
        inv = Inventory.load(s)
        src = inv.find("vm", "DC0_C0_RP0_VM0")
        with Watcher(s) as w:
            spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(pool=src.get("resourcePool")))
            w.wait_task(src.ref.CloneVM_Task(folder=src.get("parent"), name=clash, spec=spec),
                        "setup", "clone")  # fmt: skip
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "cluster": "DC0_C0"}))
    try:
        run.preflight()
        with pytest.raises(LabError) as err:
            run.provision(RUN_ID, tmp_path)
        assert str(err.value).startswith(f"VM {clash}: clone failed: DuplicateName")
    finally:
        report = run.cleanup()
        run.close()
    assert f"vb-{RUN_ID}-web-1" in report.destroyed
    assert any(s.startswith(clash) and "not marked" in s for s in report.skipped)
    names = vm_names(lab)
    assert clash in names and f"vb-{RUN_ID}-web-1" not in names


def test_missing_datastore_fails_preflight_with_a_suggestion(sim: VcsimServer) -> None:
    lab = make_lab(sim)
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "datastore": "LocalDS-0"}))
    try:
        with pytest.raises(LabError) as err:
            run.preflight()
    finally:
        run.close()
    assert "no datastore named 'LocalDS-0'; did you mean 'LocalDS_0'?" in str(err.value)
    assert run.checks and not all(c.ok for c in run.checks)


def test_interrupt_while_cloning_leaves_nothing(vcsim_factory: Factory, tmp_path: Path) -> None:
    server = vcsim_factory(method_delay_ms=(("CloneVM_Task", 1500),))
    lab = make_lab(server)
    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    cancel = threading.Event()
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE}, count=6), cancel=cancel)
    when_journaled(tmp_path, "started", cancel.set)
    try:
        run.preflight()
        with pytest.raises(Interrupted):
            run.provision(RUN_ID, tmp_path)
    finally:
        report = run.cleanup()
        run.close()
    assert report.destroyed and not report.errors
    assert not any(n.startswith("vb-") for n in vm_names(lab))


def test_session_terminated_during_provisioning_is_survived(
    vcsim_factory: Factory, tmp_path: Path
) -> None:
    server = vcsim_factory(method_delay_ms=(("CloneVM_Task", 1200),))
    lab = make_lab(server)
    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "ip_timeout": "20s"}, count=4),
                      )  # fmt: skip
    admin = SessionPool.for_lab(lab)

    def terminate_all() -> None:
        s = admin.get("vc1")
        own = s.session_key
        keys = [x.key for x in s.content.sessionManager.sessionList if x.key != own]
        s.content.sessionManager.TerminateSession(keys)

    try:
        run.preflight()
        when_journaled(tmp_path, "intent", terminate_all)  # clone calls on the wire
        run.provision(RUN_ID, tmp_path)
        # The session logged in again (maybe from the watcher thread: wait for it).
        session = run.sessions.get("vc1")
        wait_for(lambda: session.relogins >= 1, 30, "a new login after the termination")
        assert len(run.vms) == 4
    finally:
        report = run.cleanup()
        run.close()
        admin.close()
    assert len(report.destroyed) == 4


def test_target_from_lab_resolves_the_password_reference(sim: VcsimServer) -> None:
    target = target_from_lab(make_lab(sim), "vc1")
    assert target.password == sim.password and target.thumbprint and len(target.thumbprint) == 64


def test_kept_vms_stay_and_are_reused_by_the_next_run(sim: VcsimServer, tmp_path: Path) -> None:
    lab = make_lab(sim)
    scenario = make_scenario({"template": TEMPLATE, "keep": True, "ip_timeout": "20s"})
    first = vsphere_run(lab, scenario)
    try:
        first.preflight()
        first.provision(RUN_ID, tmp_path / "one")
        assert [v.vm_name for v in first.vms] == ["vb-keep-prov-web-1", "vb-keep-prov-web-2"]
        assert all(v.created and v.kept for v in first.vms)
    finally:
        report = first.cleanup()
        first.close()
    # In the journal's order, which is the clones' (web-2 may finish first under load).
    assert sorted(report.kept) == ["vb-keep-prov-web-1", "vb-keep-prov-web-2"]
    assert not report.destroyed
    second = vsphere_run(lab, scenario)
    try:
        second.preflight()
        second.provision("20250102-040000-00000002", tmp_path / "two")
        assert [(v.vm_name, v.created, v.kept) for v in second.vms] == [
            ("vb-keep-prov-web-1", False, True),
            ("vb-keep-prov-web-2", False, True),
        ]
    finally:
        again = second.cleanup()
        second.close()
    assert not again.destroyed and {"vb-keep-prov-web-1", "vb-keep-prov-web-2"} <= vm_names(lab)
