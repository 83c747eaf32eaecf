"""Lab profiles switching where a `vm:` group is provisioned, against two real vCenter
simulators: the plan names each point's guests by profile, preflight checks every
placement, provisioning clones into each profile's vCenter and datastore, the testbed
names both vCenters, and cleanup removes the VMs of both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.vcsim import VcsimServer
from vbench.cli.vsphere_cmds import collect_checks
from vbench.config.load import load_lab, load_scenario
from vbench.config.resolve import vm_groups
from vbench.engine.plan import build_plan
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import LabError
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.simulator import ensure_templates

RUN_ID = "20250102-030405-prof1234"
TEMPLATE = "tmpl-prof"
Factory = Callable[..., VcsimServer]


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _setup(tmp: Path, factory: Factory, nfs_datastore: str = "LocalDS_1") -> tuple[Path, Path]:
    servers = {"vc1": factory(), "vc2": factory(datastores=2)}
    vcs = {}
    for i, (name, s) in enumerate(servers.items()):
        vc = s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port))
        vc["ip_pool"] = {"addresses": [f"10.6{i}.0.10-10.6{i}.0.20"]}
        vcs[name] = vc
    lab = _write(tmp / "lab.yaml", {
        "version": 1, "name": "two-vc", "vcenters": vcs,
        "profiles": {
            "local": {"vcenter": "vc1", "labels": {"backing": "vmfs"}},
            "nfs": {"vcenter": "vc2", "datastore": nfs_datastore, "cluster": "DC0_C0",
                    "labels": {"backing": "nfs"}},
        },
    })
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        for name in servers:
            ensure_templates(pool.get(name), [TEMPLATE])
    scenario = _write(tmp / "s.yaml", {
        "version": 1, "name": "prof",
        "topology": {"web": {"count": 2, "vm": {"template": TEMPLATE, "vcenter": "vc1",
                                                 "ip_timeout": "20s"}}},
        "workload": {"driver": "fio", "params": {}},
        "factors": {"store": {"levels": [{"label": "ds", "profile": "local"},
                                         {"label": "nfs", "profile": "nfs"}]}},
        "phases": {"steady": 1},
    })
    return lab, scenario


def _run(lab_file: Path, scenario_file: Path) -> tuple[VSphereRun, Any]:
    lab = load_lab(lab_file)
    plan = build_plan(load_scenario(scenario_file), lab)
    run = VSphereRun(
        plan.scenario, lab.model, vm_groups(plan.scenario, lab.model), plan.groups,
        point_profiles=[p.profiles for p in plan.points],
    )
    return run, plan


def _vms(lab_file: Path) -> dict[str, dict[str, str]]:
    """vCenter -> our VM name -> its datastore."""
    out: dict[str, dict[str, str]] = {}
    with SessionPool.for_lab(load_lab(lab_file).model) as pool:
        for vc in ("vc1", "vc2"):
            inv = Inventory.load(pool.get(vc))
            ours = [o for o in inv.candidates("vm") if o.name.startswith("vb-")]
            out[vc] = {o.name: inv.get(o.get("datastore")[0]).name for o in ours}
    return out


def test_each_profile_provisions_its_guests_in_its_vcenter_and_datastore(
    vcsim_factory: Factory, tmp_path: Path
) -> None:
    lab, scenario = _setup(tmp_path, vcsim_factory)
    run, plan = _run(lab, scenario)
    # The plan: one point per profile, each recording it; guests named by profile.
    assert [p.labels for p in plan.points] == [
        {"store": "ds", "profile": "local", "backing": "vmfs"},
        {"store": "nfs", "profile": "nfs", "backing": "nfs"},
    ]
    assert plan.points[0].guests == {"target": ("web-1", "web-2")}
    assert plan.points[1].guests == {"target": ("web-nfs-1", "web-nfs-2")}
    try:
        run.preflight()
        assert any(c.target == "group web@nfs" and c.ok for c in run.checks)
        guests = run.provision(RUN_ID, tmp_path)
        assert sorted(guests) == ["web-1", "web-2", "web-nfs-1", "web-nfs-2"]
        vms = _vms(lab)
        assert sorted(vms["vc1"]) == [f"vb-{RUN_ID}-web-{i}" for i in (1, 2)]
        assert vms["vc2"] == {f"vb-{RUN_ID}-web-nfs-{i}": "LocalDS_1" for i in (1, 2)}
        tb = run.testbed()
        assert tb is not None and [v["name"] for v in tb["vcenters"]] == ["vc1", "vc2"]
        res = run.resources(plan.points[1].profiles)
        assert res is not None and res.vcenter == "vc2"
        assert res.placement.datastore == "LocalDS_1" and res.placement.profile == "nfs"
    finally:
        report = run.cleanup()
        run.close()
    assert len(report.destroyed) == 4 and not report.errors
    assert _vms(lab) == {"vc1": {}, "vc2": {}}


def test_preflight_names_the_profile_placement_that_does_not_exist(
    vcsim_factory: Factory, tmp_path: Path
) -> None:
    lab, scenario = _setup(tmp_path, vcsim_factory, nfs_datastore="NFS_9")
    run, _ = _run(lab, scenario)
    try:
        with pytest.raises(LabError) as err:
            run.preflight()
    finally:
        run.close()
    assert str(err.value).startswith("group web@nfs: names: ")
    assert "no datastore named 'NFS_9'" in str(err.value)
    # `vbench lab check --scenario` checks the same placements, and every profile.
    checks = {(c.target, c.check): c for c in collect_checks(lab, scenario, ())}
    assert checks[("group web", "names")].ok
    assert not checks[("group web@nfs", "names")].ok
    assert not checks[("profile nfs", "names")].ok and checks[("profile local", "names")].ok
    assert _vms(lab) == {"vc1": {}, "vc2": {}}
