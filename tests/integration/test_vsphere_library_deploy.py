"""Topology groups deployed from a content library item (`vm: {library_item, library}`)
against a real vCenter simulator: both item kinds, placed, marked, reconfigured,
customized, powered on and removed like clones; a missing library or item stops the run
before anything is created; a deploy whose call never answered is still cleaned up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyVmomi import vim

from tests import content_library_env as env
from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.config.scenario import Scenario
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import LabError
from vbench.vsphere import content_library_deploy as dp
from vbench.vsphere.cleanup import cleanup_journal
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory, retrieve_refs
from vbench.vsphere.journal import IndexedJournal, Journal, pending
from vbench.vsphere.specs import MARK_KEY
from vbench.vsphere.tasks import Watcher

pytestmark = pytest.mark.integration
Factory = Callable[..., VcsimServer]
RUN_ID = "20250607-080910-cafe0001"


def make_lab(server: VcsimServer) -> Lab:
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    vc["ip_pool"] = {"addresses": ["10.9.1.10-10.9.1.20"]}
    return Lab.model_validate({"version": 1, "name": "sim", "vcenters": {"vc1": vc}})


def make_scenario(groups: dict[str, dict[str, Any]]) -> Scenario:
    return Scenario.model_validate({
        "version": 1, "name": "libdeploy",
        "topology": {g: {"count": 2, "vm": vm} for g, vm in groups.items()},
        "workload": {"driver": "fio", "params": {}},
        "phases": {"steady": 1},
    })  # fmt: skip


def vsphere_run(lab: Lab, scenario: Scenario) -> VSphereRun:
    guests = {g: [f"{g}-{i + 1}" for i in range(t.count)] for g, t in scenario.topology.items()}
    return VSphereRun(scenario, lab, {g: "vc1" for g in guests}, guests)


def ours(lab: Lab) -> dict[str, Any]:
    """The simulator's VMs and templates vbench named, by name."""
    with SessionPool.for_lab(lab) as pool:
        inv = Inventory.load(pool.get("vc1"))
        return {o.name: o for o in [*inv.candidates("vm"), *inv.candidates("template")]
                if o.name.startswith("vb-")}  # fmt: skip


def test_groups_deploy_from_ovf_and_template_items_marked_configured_and_removed(
    vcsim_factory: Factory, tmp_path: Path
) -> None:
    server = vcsim_factory()
    lib = env.deploy_library(server, tmp_path)
    lab = make_lab(server)
    common = {"library": lib.library, "spread": True, "cpus": 2, "memory": "1g",
              "nic_type": "e1000e", "ip_timeout": "20s"}  # fmt: skip
    scenario = make_scenario({
        "app": {"library_item": lib.ovf_item, "cluster": "DC0_C0", **common},
        # Nothing named: the datacenter's only cluster (vcsim's DC0_C0, beside a host).
        "lnx": {"library_item": lib.template_item, **common},
    })  # fmt: skip
    run = vsphere_run(lab, scenario)
    run_dir = tmp_path / "run"
    try:
        run.preflight()
        library_checks = [c for c in run.checks if c.check == "library item"]
        assert [c.ok for c in library_checks] == [True, True], library_checks
        run.provision(RUN_ID, run_dir)
        names = [f"vb-{RUN_ID}-{g}-{i}" for g in ("app", "lnx") for i in (1, 2)]
        assert [vm.vm_name for vm in run.vms] == names
        assert [vm.ip for vm in run.vms] == [f"10.9.1.{n}" for n in (10, 11, 12, 13)]
        session = run.sessions.get("vc1")
        props = {vim.VirtualMachine: [
            "name", "config.template", "config.extraConfig", "config.hardware.numCPU",
            "config.hardware.memoryMB", "config.hardware.device", "runtime.powerState",
            "runtime.host", "resourcePool", "customValue"]}  # fmt: skip
        found = retrieve_refs(session, [vm.ref for vm in run.vms], props)
        hosts = set()
        cluster_pool = Inventory.load(session).find("resource_pool", "DC0/host/DC0_C0/Resources")
        for obj in found:
            marks = {o.key: o.value for o in obj.get("config.extraConfig") or ()}
            assert marks.get(MARK_KEY) == RUN_ID, obj.name
            assert [c.value for c in obj.get("customValue") or ()] == [RUN_ID], obj.name
            assert not obj.get("config.template"), obj.name  # a VM, even from vcsim's deploy
            assert obj.get("runtime.powerState") == "poweredOn", obj.name
            assert (obj.get("config.hardware.numCPU"), obj.get("config.hardware.memoryMB")) \
                == (2, 1024)
            nics = [type(d).__name__ for d in obj.get("config.hardware.device")
                    if isinstance(d, vim.vm.device.VirtualEthernetCard)]  # fmt: skip
            assert nics == ["vim.vm.device.VirtualE1000e"], obj.name
            assert obj.get("resourcePool")._moId == cluster_pool.moid, obj.name
            hosts.add((obj.name.rsplit("-", 2)[1], obj.get("runtime.host")._moId))
        for group in ("app", "lnx"):  # spread over the cluster's hosts
            assert len({h for g, h in hosts if g == group}) == 2, hosts
        intents = [e for e in Journal.in_run_dir(run_dir).read() if e["event"] == "intent"]
        assert sorted((e["name"], e["action"], e["source"]) for e in intents) == [
            (n, "deploy", f"item {item!r} of content library {lib.library!r}")
            for n, item in zip(names, [lib.ovf_item] * 2 + [lib.template_item] * 2,
                               strict=True)
        ]  # VMs are deployed in parallel: the journal's order is theirs
    finally:
        report = run.cleanup()
        run.close()
    assert sorted(report.destroyed) == sorted(names) and not report.errors
    assert ours(lab) == {}


@pytest.mark.parametrize(
    ("library", "item", "expected"),
    [
        ("golde", "appliance", "no content library named 'golde' (did you mean 'golden'?)"),
        ("golden", "aplliance", "content library 'golden' has no item 'aplliance' (did you "
                                "mean 'appliance'?)"),
    ],
)
def test_a_missing_library_or_item_stops_the_run_before_anything_is_created(
    vcsim_factory: Factory, tmp_path: Path, library: str, item: str, expected: str
) -> None:
    server = vcsim_factory()
    lib = env.deploy_library(server, tmp_path)
    lab = make_lab(server)
    scenario = make_scenario({
        "app": {"library_item": lib.ovf_item, "library": lib.library, "cluster": "DC0_C0"},
        "bad": {"library_item": item, "library": library, "cluster": "DC0_C0"},
    })  # fmt: skip
    run = vsphere_run(lab, scenario)
    try:
        with pytest.raises(LabError) as err:
            run.preflight()
    finally:
        run.close()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        f"group bad: library item: vcenter vc1 ({server.host}:{server.port}): {expected}"
    ), message
    assert ours(lab) == {}


def test_a_deploy_whose_call_never_answered_is_removed_by_cleanup(
    vcsim_factory: Factory, tmp_path: Path
) -> None:
    """kill -9 with the deploy call on the wire: the journal holds only the intent; the
    VM (unmarked: the reconfigure never came) is found by the name only this run gives."""
    server = vcsim_factory()
    lib = env.deploy_library(server, tmp_path)
    lab = make_lab(server)
    run_dir = tmp_path / "run"
    journal = IndexedJournal.in_run_dir(run_dir)
    journal.open(RUN_ID)
    name = f"vb-{RUN_ID}-app-1"
    journal.write("intent", vcenter="vc1", name=name, action="deploy",
                  source="item 'appliance' of content library 'golden'", group="app",
                  keep=False)  # fmt: skip
    ids = env.sim_ids(server)
    with env.rest(server) as s:  # the call lands after the process died
        from vbench.vsphere import content_library as cl

        lib_id = cl.find_libraries(s, lib.library)[0]
        item_id = cl.find_item(s, lib_id, lib.ovf_item)
        assert item_id is not None
        dp.deploy_ovf(s, item_id, name, env.placement(ids))
    assert name in ours(lab)
    with SessionPool.for_lab(lab) as pool, Watcher(pool.get("vc1")) as watcher:
        report = cleanup_journal(pool.get, lambda _vc: watcher, journal, RUN_ID,
                                 pending(journal.read()), parallel=1)  # fmt: skip
    assert report.destroyed == [name] and not report.errors and not report.skipped
    assert ours(lab) == {}


def test_with_several_clusters_and_none_named_the_check_asks_for_one(
    vcsim_factory: Factory, tmp_path: Path
) -> None:
    server = vcsim_factory(clusters=2)
    lib = env.deploy_library(server, tmp_path)
    lab = make_lab(server)
    scenario = make_scenario({"app": {"library_item": lib.ovf_item, "library": lib.library}})
    run = vsphere_run(lab, scenario)
    try:
        with pytest.raises(LabError) as err:
            run.preflight()
    finally:
        run.close()
    assert str(err.value) == (
        "group app: names: library item appliance: name a cluster, host or resource_pool in "
        "`vm:` or the point's lab profile (datacenter DC0 has no single cluster to default "
        "to: it has 2 (DC0_C0, DC0_C1))"
    )
    assert ours(lab) == {}
