"""Storage policies (SPBM) on data disks against vcsim's policy endpoint: names resolved
to the ids vcsim's PBM service holds, each added disk's device spec carrying its policy,
a lab profile level switching the policy, the rules recorded in the testbed, and an
unknown name refused at preflight in one line with the close names.

vcsim accepts a disk's ``profile`` in the reconfigure but keeps no association (its PBM
``QueryAssociatedProfiles`` answers nothing), so what is asserted is the spec sent, read
through the real ``reconfig_spec`` (docs/storage.md says so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyVmomi import vim

import vbench.vsphere.provision as provision
from tests.integration.test_vsphere_provision import (
    RUN_ID,
    TEMPLATE,
    make_lab,
    make_scenario,
    vm_names,
    vsphere_run,
)
from tests.vcsim import VcsimServer
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import LabError
from vbench.vsphere.checks import check_profiles
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.simulator import ensure_templates
from vbench.vsphere.spbm import storage_policies

pytestmark = pytest.mark.integration

VSAN = "vSAN Default Storage Policy"
PMEM = "Host-local PMem Default Storage Policy"


def _ready(server: VcsimServer, **lab_extra: Any) -> tuple[Any, dict[str, str]]:
    lab = make_lab(server, **lab_extra)
    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
        ids = {n: p.profile_id for n, p in storage_policies(pool.get("vc1")).items()}
    return lab, ids


def _spy_specs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str | None, list[Any]]]:
    """(policy the clone's disks ask for, profiles of the disk specs sent) per reconfigure."""
    sent: list[tuple[str | None, list[Any]]] = []
    real = provision.reconfig_spec

    def recording(spec, *args, **kw):  # type: ignore[no-untyped-def]
        config = real(spec, *args, **kw)
        disks = [c for c in (config.deviceChange if config else None) or ()
                 if isinstance(c.device, vim.vm.device.VirtualDisk)]  # fmt: skip
        sent.append((spec.disks[0].storage_policy if spec.disks else None,
                     [list(c.profile or ()) for c in disks]))  # fmt: skip
        return config

    monkeypatch.setattr(provision, "reconfig_spec", recording)
    return sent


def test_clones_send_their_disks_with_the_policy_and_the_testbed_records_its_rules(
    vcsim_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    lab, ids = _ready(vcsim_factory())
    sent = _spy_specs(monkeypatch)
    disks = [{"size": "1g", "count": 2, "storage_policy": VSAN}]
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "ip_timeout": "20s",
                                          "disks": disks}, count=2))  # fmt: skip
    try:
        run.preflight()
        assert any(c.check == f"storage policy {VSAN}" and c.ok for c in run.checks)
        run.provision(RUN_ID, tmp_path)
        testbed = run.testbed()
    finally:
        report = run.cleanup()
        run.close()
    assert len(sent) == 2  # one reconfigure per clone
    for policy, profiles in sent:
        assert policy == VSAN and len(profiles) == 2
        for p in profiles:
            assert [type(x).__name__ for x in p] == ["vim.vm.DefinedProfileSpec"]
            assert p[0].profileId == ids[VSAN]
    assert testbed is not None
    (recorded,) = testbed["storage_policies"]
    assert recorded["name"] == VSAN and recorded["id"] == ids[VSAN]
    assert "VSAN.hostFailuresToTolerate=1" in recorded["rules"]
    for vm in testbed["vms"]:
        # vcsim keeps no disk <-> policy association (docs/storage.md): None, not a guess.
        assert len(vm["disks"]) >= 2
        assert [d["storage_policy"] for d in vm["disks"]] == [None] * len(vm["disks"])
    assert len(report.destroyed) == 2 and not report.errors


def test_a_lab_profile_level_switches_the_policy_of_the_data_disks(
    vcsim_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    lab, ids = _ready(vcsim_factory(), profiles={"pmem": {"storage_policy": PMEM}})
    sent = _spy_specs(monkeypatch)
    disks = [{"size": "1g", "storage_policy": VSAN}]
    scenario = make_scenario({"template": TEMPLATE, "ip_timeout": "20s", "disks": disks}, count=1)
    # Points at the base level use web-1; points at level "pmem" use web-pmem-1.
    run = VSphereRun(scenario, lab, {"web": "vc1"}, {"web": ["web-1", "web-pmem-1"]},
                     point_profiles=[[], ["pmem"]])  # fmt: skip
    try:
        run.preflight()
        vms = run.provision(RUN_ID, tmp_path)
        testbed = run.testbed()
    finally:
        report = run.cleanup()
        run.close()
    assert sorted(vms) == ["web-1", "web-pmem-1"]
    assert sorted((p, [x[0].profileId for x in prof]) for p, prof in sent) == sorted(
        [(VSAN, [ids[VSAN]]), (PMEM, [ids[PMEM]])])  # fmt: skip
    assert testbed is not None
    assert sorted(p["name"] for p in testbed["storage_policies"]) == sorted([VSAN, PMEM])
    pmem = next(p for p in testbed["storage_policies"] if p["name"] == PMEM)
    assert pmem["rules"] == ["PMem.PMemType=LocalPMem"]
    assert len(report.destroyed) == 2 and not report.errors


def test_an_unknown_policy_is_refused_at_preflight_in_one_line(
    vcsim_factory, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    lab, _ids = _ready(vcsim_factory())
    disks = [{"size": "1g", "storage_policy": "vSAN Default Policy"}]
    run = vsphere_run(lab, make_scenario({"template": TEMPLATE, "disks": disks}, count=1))
    try:
        with pytest.raises(LabError) as info:
            run.preflight()
    finally:
        run.close()
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("vcenter vc1: storage policy vSAN Default Policy: ")
    assert "no storage policy 'vSAN Default Policy'" in text
    assert f"did you mean {VSAN}" in text
    assert not any(n.startswith("vb-") for n in vm_names(lab))


def test_lab_check_finds_the_policy_each_profile_names(vcsim_factory) -> None:  # type: ignore[no-untyped-def]
    lab, ids = _ready(vcsim_factory(), profiles={
        "pmem": {"storage_policy": PMEM}, "gold": {"storage_policy": "Gold"}})  # fmt: skip
    with SessionPool.for_lab(lab) as sessions:
        checks = {c.target: c for c in check_profiles(lab, sessions)
                  if c.check.startswith("storage policy")}  # fmt: skip
    assert checks["profile pmem"].ok and ids[PMEM] in checks["profile pmem"].detail
    gold = checks["profile gold"]
    assert not gold.ok and gold.detail.startswith("vcenter vc1: no storage policy 'Gold' (it has: ")
