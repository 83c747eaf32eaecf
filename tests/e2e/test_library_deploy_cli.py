"""`vbench plan`, `lab check` and `run` of a scenario whose `vm:` groups deploy their VMs
from content library items (an OVF item and a VM-template item) in the vCenter
simulator, with the guests' SSH on loopback: the plan says where the VMs come from, the
VMs exist during the run under the run's names and marks, nothing is left after the run
or after `kill -9` and `vbench cleanup`, and a missing item is one line with exit 3
before anything is created."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pyVmomi import vim

from tests import content_library_env as env
from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, wait_for_log
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory, retrieve_refs
from vbench.vsphere.specs import MARK_KEY

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@dataclass
class LibLab:
    server: VcsimServer
    lab: Path
    tmp: Path
    library: env.DeployLibrary

    def marks(self) -> dict[str, str | None]:
        """vbench's VMs (and templates) in the simulator: name -> their run mark."""
        with SessionPool.for_lab(load_lab(self.lab).model) as pool:
            session = pool.get("vc1")
            inv = Inventory.load(session)
            objs = [o for o in [*inv.candidates("vm"), *inv.candidates("template")]
                    if o.name.startswith("vb-")]  # fmt: skip
            props = {vim.VirtualMachine: ["name", "config.extraConfig"]}
            found = retrieve_refs(session, [o.ref for o in objs], props)
        return {o.name: {x.key: x.value for x in o.get("config.extraConfig") or ()}.get(MARK_KEY)
                for o in found}  # fmt: skip

    def scenario(self, *, steady: str = "1s", ovf_item: str | None = None) -> Path:
        lib = self.library
        common = {"library": lib.library, "cluster": "DC0_C0", "cpus": 2, "ip_timeout": "30s"}
        doc = {
            "version": 1,
            "name": "e2e-library-deploy",
            "topology": {
                "app": {"count": 2, "vm": {"library_item": ovf_item or lib.ovf_item, **common}},
                "lnx": {"count": 2, "vm": {"library_item": lib.template_item, **common}},
            },
            "workload": {"driver": "fio", "roles": {"target": "app"}, "params": {
                "rw": "randread", "size": "4m", "ioengine": "psync", "direct": False}},
            "repeat": 1,
            "phases": {"warmup": "0s", "steady": steady},
        }  # fmt: skip
        path = self.tmp / f"s-{steady}-{ovf_item or 'ok'}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@pytest.fixture
def liblab(
    local_guests: LocalGuests, vcsim_factory: Callable[..., VcsimServer], tmp_path: Path
) -> Iterator[LibLab]:
    """Four pool addresses (two per loopback sshd address) and a library with an OVF
    item and a VM-template item."""
    server = vcsim_factory()
    sshd = local_guests.sshd
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    vc["ip_pool"] = {"addresses": ["10.79.0.1-10.79.0.4"]}
    ends = [f"{sshd.addresses[i % 2]}:{sshd.port}" for i in range(4)]
    lab_doc = {
        "version": 1,
        "name": "e2e-libdeploy",
        "vcenters": {"vc1": vc},
        "address_map": {f"10.79.0.{i + 1}": ends[i] for i in range(4)},
        "defaults": {"port": sshd.port, "key_file": str(sshd.key_file),
                     "known_hosts": str(sshd.known_hosts), "workdir": str(sshd.workdir)},
    }  # fmt: skip
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump(lab_doc, sort_keys=False))
    yield LibLab(server, lab, tmp_path, env.deploy_library(server, tmp_path))
    assert server.process.alive(), f"vcsim died; see {server.process.log}"


def _names(run_id: str) -> list[str]:
    return [f"vb-{run_id}-{g}-{i}" for g in ("app", "lnx") for i in (1, 2)]


def test_plan_says_where_the_vms_come_from_and_a_run_removes_them(liblab: LibLab) -> None:
    scenario = liblab.scenario()
    plan = vbench("plan", str(scenario), "--lab", str(liblab.lab))
    assert plan.returncode == 0, plan.stderr
    assert ("vm app: deployed from item 'appliance' of content library 'golden' (vCenter vc1)"
            in plan.stdout)  # fmt: skip
    assert ("vm lnx: deployed from item 'linux-tmpl' of content library 'golden' (vCenter vc1)"
            in plan.stdout)  # fmt: skip
    res = vbench("run", str(scenario), "--lab", str(liblab.lab), "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_id = run_id_of(res.stdout)
    data = show(run_id)
    assert sorted(v["name"] for v in data["run"]["testbed"]["vms"]) == _names(run_id)
    assert [t["status"] for t in data["trials"]] == ["ok"]
    assert liblab.marks() == {}


def test_vms_exist_marked_during_the_run_and_cleanup_removes_them_after_kill_9(
    liblab: LibLab, vbench_home: Path
) -> None:
    proc = vbench_popen("run", str(liblab.scenario(steady="10m")), "--lab", str(liblab.lab),
                        "--no-report")  # fmt: skip
    try:
        wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0, trial=1)
        run_dir = next((vbench_home / "results").glob("*/vsphere-journal.jsonl")).parent
        run_id = run_dir.name
        assert liblab.marks() == {name: run_id for name in _names(run_id)}
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    res = vbench("cleanup", run_id, "--lab", str(liblab.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    assert liblab.marks() == {}


def test_a_missing_item_is_one_line_with_exit_3_before_anything_is_created(
    liblab: LibLab,
) -> None:
    bad = liblab.scenario(ovf_item="applianse")
    check = vbench("lab", "check", str(liblab.lab), "--scenario", str(bad))
    assert check.returncode == 3, check.stdout + check.stderr
    where = f"vcenter vc1 ({liblab.server.host}:{liblab.server.port})"
    expected = (f"group app  library item: {where}: content library 'golden' has no item "
                "'applianse' (did you mean 'appliance'?)")  # fmt: skip
    assert expected in check.stdout, check.stdout
    run = vbench("run", str(bad), "--lab", str(liblab.lab), "--no-report")
    assert run.returncode == 3, run.stdout + run.stderr
    lines = [x for x in run.stderr.splitlines() if "applianse" in x]
    assert len(lines) == 1 and where in lines[0] and "Traceback" not in run.stderr, run.stderr
    assert liblab.marks() == {}
    assert not list((Path(os.environ["VBENCH_HOME"]) / "results").glob("*/vsphere-journal.jsonl"))
