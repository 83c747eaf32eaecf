"""Run resources against a real vCenter simulator, in process: what a driver gets in
``ctx.vsphere`` — the profile's placement, VMs and snapshots created journal-first,
early removal, a kind of one's own with a registered destroyer, refusal to touch a VM
the run did not create — and the run-end cleanup of whatever is left."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pyVmomi import vim

from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.config.scenario import Scenario
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import ConfigError
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.destroyers import DestroyRequest, destroyer_for, register_destroyer
from vbench.vsphere.inventory import Inventory, retrieve_refs
from vbench.vsphere.journal import Journal, pending
from vbench.vsphere.resources import Created
from vbench.vsphere.simulator import ensure_templates

RUN_ID = "20250102-030405-res12345"
TEMPLATE = "tmpl-res"
TAG_KIND = "test-tag-folder"


def _destroy_tag_folder(req: DestroyRequest) -> str:
    if req.item.moid is None:  # the create failed before vCenter named it
        return "missing"
    folder = vim.Folder(req.item.moid, req.session.stub)
    req.watcher.wait_task(req.session.call(folder.Destroy_Task), req.item.name, "destroy")
    return "destroyed"


if destroyer_for(TAG_KIND) is None:
    register_destroyer(TAG_KIND, _destroy_tag_folder)


@pytest.fixture
def lab(vcsim_factory: Callable[..., VcsimServer]) -> Lab:
    server = vcsim_factory(datastores=2)
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    model = Lab.model_validate({
        "version": 1, "name": "res", "vcenters": {"vc1": vc},
        "profiles": {"ds1": {"datastore": "LocalDS_1", "cluster": "DC0_C0",
                             "network": "DC0_DVPG0"}},
    })
    with SessionPool.for_lab(model) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    return model


def _scenario() -> Scenario:
    return Scenario.model_validate({
        "version": 1, "name": "res", "workload": {"driver": "fio", "params": {}},
        "phases": {"steady": 1},
    })


def _names(lab: Lab) -> set[str]:
    with SessionPool.for_lab(lab) as pool:
        inv = Inventory.load(pool.get("vc1"))
        return {o.name for o in inv.of_kind("VirtualMachine", "Folder")}


def test_resources_create_in_the_profile_placement_and_clean_up(lab: Lab, tmp_path: Path) -> None:
    run = VSphereRun(_scenario(), lab, {}, {}, workload_profiles=[("ds1",)])
    try:
        run.preflight()
        assert run.provision(RUN_ID, tmp_path) == {}  # no vm: groups: nothing provisioned
        res = run.resources(("ds1",))
        assert res is not None and res.vcenter == "vc1" and res.placement.cluster == "DC0_C0"
        vm = res.create_vm("load-1", TEMPLATE, power_on=True)
        assert vm.name == f"vb-{RUN_ID}-load-1"
        props = retrieve_refs(res.session(), [vm.ref], {vim.VirtualMachine: [
            "datastore", "network", "runtime.powerState", "config.extraConfig"]})[0]
        inv = res.inventory(refresh=True)
        assert inv.get(props.get("datastore")[0]).name == "LocalDS_1"
        assert [inv.get(n).name for n in props.get("network")] == ["DC0_DVPG0"]
        assert props.get("runtime.powerState") == "poweredOn"
        marks = {o.key: o.value for o in props.get("config.extraConfig")}
        assert marks["vbench.run"] == RUN_ID
        snap = res.create_snapshot(vm, "base")
        # A kind of one's own: journaled before the call, removed by its destroyer.
        dc = res.inventory().datacenter(None)
        name = res.object_name("tags")
        with res.creating(TAG_KIND, name) as handle:
            folder = res.session().call(lambda: dc.get("vmFolder").CreateFolder(name))
            handle.created(folder._moId, folder)
        # Early removal of one object, journaled.
        early = res.create_vm("load-2", TEMPLATE)
        res.destroy(early)
        assert early.name not in _names(lab)
        # A VM the run did not create is never changed.
        other = res.inventory().find("vm", "DC0_H0_VM0")
        with pytest.raises(ConfigError, match="not created by this run"):
            res.create_snapshot(Created("vm", other.name, "vc1", other.moid, other.ref), "x")
        assert {vm.name, name} <= _names(lab) and snap.moid
    finally:
        report = run.cleanup()
        run.close()
    assert not report.errors, report.errors
    assert report.destroyed == [f"{TAG_KIND} {name}", f"snapshot vb-{RUN_ID}-base", vm.name]
    assert not {n for n in _names(lab) if n.startswith("vb-")}
    journal = Journal.in_run_dir(tmp_path)
    assert pending(journal.read()) == []
    # The journal holds every intent before its object was created.
    events = [json.loads(x) for x in journal.path.read_text().splitlines()]
    for obj in (vm.name, snap.name, name):
        seen = [e["event"] for e in events if e.get("name") == obj]
        assert seen.index("intent") < seen.index("created") < seen.index("destroyed")


def test_a_failed_create_is_journaled_and_cleanup_finds_nothing(
    lab: Lab, tmp_path: Path
) -> None:
    run = VSphereRun(_scenario(), lab, {}, {}, workload_profiles=[()])
    try:
        run.preflight()
        run.provision(RUN_ID, tmp_path)
        res = run.resources()
        assert res is not None
        with pytest.raises(Exception, match="no template named 'tmpl-nope'"):
            res.create_vm("x", "tmpl-nope")
        with pytest.raises(RuntimeError), res.creating(TAG_KIND, res.object_name("never")):
            raise RuntimeError("the create call failed")
    finally:
        report = run.cleanup()
        run.close()
    states = [e["event"] for e in Journal.in_run_dir(tmp_path).read() if e.get("kind")]
    assert states[:2] == ["intent", "failed"]
    assert not report.errors
