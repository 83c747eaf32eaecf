"""Every vCenter object a scenario names is checked before anything is created (issue 23,
item 1): a plugin declares them (``Workload.lab_objects``) and `vbench lab check
--scenario` and the run's preflight look each up in its vCenter, with the did-you-mean the
run would give — a vcbench template, a Content Library datastore or captured VM, and the
`vm:` specs of a topology — against a real vCenter simulator; no VM is cloned and no
library made."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.helpers import vbench
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory

Factory = Callable[..., VcsimServer]


def _lab(tmp: Path, server: VcsimServer) -> Path:
    doc = {"version": 1, "name": "objects",
           "vcenters": {"vc1": server.lab_vcenter(
               thumbprint=server_thumbprint(server.host, server.port))}}  # fmt: skip
    path = tmp / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _scenario(tmp: Path, driver: str, params: dict[str, Any], **extra: Any) -> Path:
    doc = {"version": 1, "name": f"objects-{driver}",
           "workload": {"driver": driver, "params": params},
           "repeat": 1, "phases": {"warmup": "0s", "steady": "1s"}, **extra}  # fmt: skip
    path = tmp / f"{driver}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _vm_names(lab: Path) -> set[str]:
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        return {o.name for o in Inventory.load(pool.get("vc1")).candidates("vm")}


def _refused(lab: Path, scenario: Path, *expected: str) -> None:
    """`lab check --scenario` fails each expected line; the run exits 3 with the first,
    before the first clone (the simulator holds the VMs it had)."""
    before = _vm_names(lab)
    check = vbench("lab", "check", str(lab), "--scenario", str(scenario))
    assert check.returncode == 3, check.stdout + check.stderr
    failed = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL")]
    for text in expected:
        assert any(text in ln for ln in failed), (text, check.stdout, check.stderr)
    run = vbench("run", str(scenario), "--lab", str(lab))
    assert run.returncode == 3, run.stdout + run.stderr
    assert expected[0] in run.stderr, run.stderr
    assert "trial" not in run.stderr.lower().split(expected[0])[0], run.stderr
    assert _vm_names(lab) == before


@pytest.fixture
def lab(vcsim_factory: Factory, vc_password: str, tmp_path: Path) -> Path:
    return _lab(tmp_path, vcsim_factory())


def test_a_vcbench_template_that_does_not_exist_is_refused_before_the_pool(
    lab: Path, tmp_path: Path
) -> None:
    scenario = _scenario(tmp_path, "vcbench", {"template": "DC0_C0_RP0_VM9", "sessions": 2,
                                               "datastores": ["LocalDS_7"]})
    _refused(lab, scenario,
             "vm DC0_C0_RP0_VM9: no vm named 'DC0_C0_RP0_VM9'; did you mean 'DC0_C0_RP0_VM1' or "
             "'DC0_C0_RP0_VM0'",
             "datastore LocalDS_7: no datastore named 'LocalDS_7'; did you mean 'LocalDS_0'")


def test_vcbench_objects_that_exist_pass_the_check(lab: Path, tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, "vcbench", {"template": "DC0_C0_RP0_VM0", "sessions": 2,
                                               "cluster": "DC0_C0"})
    check = vbench("lab", "check", str(lab), "--scenario", str(scenario))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "pass  workload vcbench (vcenter vc1)  vm DC0_C0_RP0_VM0: found" in check.stdout
    assert "pass  workload vcbench (vcenter vc1)  cluster DC0_C0: found" in check.stdout


def test_a_content_library_datastore_and_vm_that_do_not_exist_are_refused(
    lab: Path, tmp_path: Path
) -> None:
    scenario = _scenario(tmp_path, "content_library", {
        "datastore": "LocalDS_9", "items": 1, "item_size": "1m",
        "steps": [
            {"op": "create_library", "library": "pub"},
            {"op": "import", "library": "pub"},
            {"op": "capture", "library": "pub", "label": "golden", "vm": "DC0_C0_RP0_VM7"},
        ],
    })  # fmt: skip
    _refused(lab, scenario,
             "datastore LocalDS_9: no datastore named 'LocalDS_9'; did you mean 'LocalDS_0'",
             "vm DC0_C0_RP0_VM7: no vm named 'DC0_C0_RP0_VM7'")


def test_an_existing_library_that_does_not_exist_is_refused(lab: Path, tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, "content_library", {
        "steps": [
            {"op": "create_library", "library": "golden", "existing": True},
            {"op": "deploy", "library": "golden", "item": "linux",
             "target": {"folder": "DC0/vm/nope"}},
        ],
    })  # fmt: skip
    _refused(lab, scenario, "folder DC0/vm/nope: no folder named 'DC0/vm/nope'",
             "library golden: no content library named 'golden'",
             "library item linux: ")


def test_a_topology_vm_spec_naming_a_wrong_template_and_network_is_refused(
    lab: Path, tmp_path: Path
) -> None:
    scenario = _scenario(
        tmp_path, "fio", {"rw": "randread", "size": "1m"},
        topology={"target": {"count": 1, "vm": {"template": "DC0_C0_RP0_VM9",
                                                "network": "VM Netwrk"}}},
    )  # fmt: skip
    _refused(lab, scenario, "no template named 'DC0_C0_RP0_VM9'; did you mean VM "
             "'DC0_C0_RP0_VM1' or 'DC0_C0_RP0_VM0'",
             "network VM Netwrk: no network named 'VM Netwrk'; did you mean 'VM Network'?")
