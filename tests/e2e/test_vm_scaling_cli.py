"""`vbench run` over a `vm:` group's count in the vCenter simulator: each point clones
only the VMs it adds to the point before it (linked clones from a snapshot) and destroys
only the ones it drops — counted by vCenter's own events — records which VMs it ran on,
and nothing is left at the end, after Ctrl-C, or after `kill -9` and `vbench cleanup`."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyVmomi import vim

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, wait_for
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.tasks import Watcher

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

GOLDEN = "golden-fio"  # a VM with a snapshot: the source of the linked clones


@dataclass
class ScaleLab:
    lab: Path
    tmp: Path

    def session_pool(self) -> SessionPool:
        return SessionPool.for_lab(load_lab(self.lab).model)

    def ours(self) -> set[str]:
        with self.session_pool() as pool:
            vms = Inventory.load(pool.get("vc1")).candidates("vm")
        return {o.name for o in vms if o.name.startswith("vb-")}

    def events(self, kind: type, run_id: str) -> list[str]:
        """The run's VMs named in vCenter's events of ``kind``, oldest first."""
        with self.session_pool() as pool:
            em = pool.get("vc1").content.eventManager
            found = em.QueryEvents(vim.event.EventFilterSpec(eventTypeId=[kind._wsdlName]))
        found = sorted(found, key=lambda e: e.key)
        return [e.vm.name for e in found if e.vm is not None
                and e.vm.name.startswith(f"vb-{run_id}-")]  # fmt: skip

    def scenario(self, levels: list[int], *, steady: str = "1s") -> Path:
        doc = {
            "version": 1,
            "name": "e2e-vm-scaling",
            "topology": {"workers": {"count": 1, "vm": {
                "template": GOLDEN, "linked": True, "cluster": "DC0_C0", "ip_timeout": "30s"}}},
            "workload": {"driver": "fio", "params": {
                "rw": "randread", "size": "4m", "ioengine": "psync", "direct": False}},
            "factors": {"workers": {"path": "topology.workers.count", "levels": levels}},
            "repeat": 1,
            "phases": {"warmup": "0s", "steady": steady},
        }
        path = self.tmp / f"scale-{'-'.join(map(str, levels))}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@pytest.fixture
def scalelab(
    request: pytest.FixtureRequest,
    local_guests: LocalGuests,
    vcsim_factory: Callable[..., VcsimServer],
    tmp_path: Path,
) -> Iterator[ScaleLab]:
    """Four pool addresses (two per loopback sshd address); clone calls take 100 ms
    unless a test asks for longer (indirect parametrization)."""
    clone_ms = getattr(request, "param", 100)
    server = vcsim_factory(method_delay_ms=(("CloneVM_Task", clone_ms),
                                            ("PowerOnVM_Task", 100)))
    sshd = local_guests.sshd
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    vc["ip_pool"] = {"addresses": ["10.78.0.1-10.78.0.4"]}
    ends = [f"{sshd.addresses[i % 2]}:{sshd.port}" for i in range(4)]
    lab_doc = {
        "version": 1,
        "name": "e2e-scale",
        "vcenters": {"vc1": vc},
        "address_map": {f"10.78.0.{i + 1}": ends[i] for i in range(4)},
        "defaults": {"port": sshd.port, "key_file": str(sshd.key_file),
                     "known_hosts": str(sshd.known_hosts), "workdir": str(sshd.workdir)},
    }
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump(lab_doc, sort_keys=False))
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        session = pool.get("vc1")
        src = Inventory.load(session).find("vm", "DC0_C0_RP0_VM0")
        spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(pool=src.get("resourcePool")))
        with Watcher(session) as w:
            vm = w.wait_task(src.ref.CloneVM_Task(folder=src.get("parent"), name=GOLDEN,
                                                  spec=spec), "setup", "clone")
            w.wait_task(vm.CreateSnapshot_Task(name="base", memory=False, quiesce=False),
                        "setup", "snapshot")
    yield ScaleLab(lab, tmp_path)
    assert server.process.alive(), f"vcsim died; see {server.process.log}"


def _point_vms(run_dir: Path) -> list[dict]:
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("event") == "point_vms"]


def _names(run_id: str, *guests: str) -> list[str]:
    return [f"vb-{run_id}-{g}" for g in guests]


def test_a_count_matrix_clones_each_vm_once_and_records_the_vms_of_each_point(
    scalelab: ScaleLab,
) -> None:
    scenario = scalelab.scenario([1, 2, 4])
    plan = vbench("plan", str(scenario), "--lab", str(scalelab.lab))
    assert plan.returncode == 0, plan.stderr
    assert ("VMs: 4 cloned and 0 destroyed over the run, point by point (7 clones if every "
            "point made its own)") in plan.stdout
    assert "  VMs: 4 in use; before it 2 cloned, 0 destroyed" in plan.stdout
    res = vbench("run", str(scenario), "--lab", str(scalelab.lab), "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_id = run_id_of(res.stdout)
    # vCenter saw four clones for counts 1, 2 and 4 (not 1 + 2 + 4 = 7).
    cloned = scalelab.events(vim.event.VmClonedEvent, run_id)
    assert sorted(cloned) == _names(run_id, *(f"workers-{i}" for i in (1, 2, 3, 4)))
    data = show(run_id)
    testbed = data["run"]["testbed"]
    used = {int(p): sorted(v["guest"] for v in vms) for p, vms in testbed["point_vms"].items()}
    assert used == {0: ["workers-1"], 1: ["workers-1", "workers-2"],
                    2: [f"workers-{i}" for i in (1, 2, 3, 4)]}
    assert len(testbed["vms"]) == 4
    # Each point's figures come from the guests it ran on.
    samples = Path(data["run"]["run_dir"]) / "samples.csv"
    import csv

    guests: dict[int, set[str]] = {}
    for row in csv.DictReader(samples.open()):
        if row.get("guest"):
            guests.setdefault(int(row["point"]), set()).add(row["guest"])
    assert {p: sorted(g) for p, g in guests.items()} == used
    assert scalelab.ours() == set()


def test_a_smaller_point_destroys_only_the_surplus_and_a_larger_one_clones_the_rest(
    scalelab: ScaleLab,
) -> None:
    res = vbench("run", str(scalelab.scenario([4, 2, 3])), "--lab", str(scalelab.lab),
                 "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_id = run_id_of(res.stdout)
    steps = [(e["point"], e["created"], e["destroyed"])
             for e in _point_vms(Path(show(run_id)["run"]["run_dir"]))]  # fmt: skip
    # workers-1 and -2, which every point uses, were cloned before the first trial.
    assert steps == [(0, ["workers-3", "workers-4"], []),
                     (1, [], ["workers-3", "workers-4"]),
                     (2, ["workers-3"], [])]
    cloned = scalelab.events(vim.event.VmClonedEvent, run_id)
    removed = scalelab.events(vim.event.VmRemovedEvent, run_id)
    assert len(cloned) == 5  # 4 + 1, not 4 + 2 + 3
    assert sorted(removed[:2]) == _names(run_id, "workers-3", "workers-4")
    assert len(removed) == 5 and scalelab.ours() == set()  # 2 between points, 3 at the end


def _journal(run_dir: Path) -> str:
    path = run_dir / "vsphere-journal.jsonl"
    return path.read_text() if path.exists() else ""


def _run_dir_when(home_results: Path, event: str, count: int) -> Path:
    """The run directory once its journal holds ``count`` entries of ``event``."""
    found: list[Path] = []

    def ready() -> bool:
        for d in home_results.glob("*"):
            if _journal(d).count(f'"event": "{event}"') >= count:
                found.append(d)
                return True
        return False

    wait_for(ready, 90, f"{count} {event} entries in a journal")
    return found[0]


def _results() -> Path:
    import os

    return Path(os.environ["VBENCH_HOME"]) / "results"


# Clone calls take 1 s: the signal lands while the second point's clones are on the wire.
@pytest.mark.parametrize("scalelab", [1000], indirect=True)
@pytest.mark.parametrize("how", ["ctrl-c", "kill-9"])
def test_a_run_stopped_while_a_point_clones_leaves_nothing(
    scalelab: ScaleLab, how: str
) -> None:
    proc = vbench_popen("run", str(scalelab.scenario([1, 3])), "--lab", str(scalelab.lab),
                        "--no-report")
    try:
        # The first intent is the up-front VM; the next, a clone the second point adds.
        # kill -9 waits for the tasks of both its clones (a call still in flight leaves
        # cleanup nothing to wait for: it then asks to be run again later).
        run_dir = (_run_dir_when(_results(), "intent", 2) if how == "ctrl-c"
                   else _run_dir_when(_results(), "started", 3))
        if how == "ctrl-c":
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, out + err
            assert show(run_dir.name)["run"]["status"] == "interrupted"
        else:
            proc.kill()
            proc.communicate(timeout=30)
            res = vbench("cleanup", run_dir.name, "--lab", str(scalelab.lab))
            assert res.returncode == 0, res.stdout + res.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert scalelab.ours() == set()


def test_a_search_level_whose_new_vm_lacks_the_tool_stops_the_run_naming_it(
    scalelab: ScaleLab, extra_sshd_factory: Callable[..., Any], local_guests: LocalGuests
) -> None:
    # The second worker's address leads to a guest without fio in its PATH; the plan
    # knows only the search's first level (1 VM), so the check is the level's own.
    bare = extra_sshd_factory("127.0.0.6", path_env="/nonexistent")
    known = scalelab.tmp / "known_hosts"
    keys = [ln.split(None, 1)[1] for ln in local_guests.sshd.known_hosts.read_text().splitlines()
            if ln.strip()]
    known.write_text(local_guests.sshd.known_hosts.read_text()
                     + "".join(f"[{bare.address}]:{bare.port} {k}\n" for k in keys))
    lab = yaml.safe_load(scalelab.lab.read_text())
    lab["address_map"]["10.78.0.2"] = f"{bare.address}:{bare.port}"
    lab["defaults"]["known_hosts"] = str(known)
    scalelab.lab.write_text(yaml.safe_dump(lab, sort_keys=False))
    doc = yaml.safe_load(scalelab.scenario([1, 2]).read_text())
    del doc["factors"]
    doc["qos"] = [{"name": "any", "metric": "total_iops", "op": ">=", "threshold": 0}]
    doc["search"] = {"factor": "workers", "path": "topology.workers.count", "min": 1,
                     "max": 2, "trials": 1, "verify_trials": 1}
    path = scalelab.tmp / "search.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = vbench("run", str(path), "--lab", str(scalelab.lab), "--no-report")
    assert res.returncode == 3, res.stdout[-2000:] + res.stderr[-2000:]
    # A lab failure, not a failed level: the search does not answer "lowest fail 2".
    assert res.stderr.strip().splitlines()[-1] == (
        "error: workers-2: fio not found in PATH (install the fio package)"), res.stderr
    assert "find-max workers" not in res.stdout
    assert scalelab.ours() == set()
