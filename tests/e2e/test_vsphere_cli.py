"""`vbench run` provisioning in a real vCenter simulator, end to end: lab check, testbed,
cleanup after a normal end, after Ctrl-C during power-on, after `kill -9` with a power-on
on the wire (then `vbench cleanup`), orphans, session expiry — and an unmarked look-alike
VM that survives. Ctrl-C and kill -9 at every other moment of a run: the interrupt
matrix, test_interrupt_matrix.py."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pyVmomi import vim

from tests.conftest import LocalGuests
from tests.e2e.helpers import remote_processes, run_id_of, show, vbench, vbench_popen, wait_for
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, key_digest, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.simulator import ensure_templates
from vbench.vsphere.tasks import Watcher

TEMPLATE = "tmpl-e2e"
POWER_ON_SLOW_S = 5
LOOK_ALIKE = "vb-20200101-000000-deadbeef-storage-1"  # someone else's, not marked


@dataclass
class SimLab:
    server: VcsimServer
    lab: Path
    scenario: Path
    tmp: Path
    power_on_ms: int = 800

    def vm_names(self) -> set[str]:
        with SessionPool.for_lab(load_lab(self.lab).model) as pool:
            return {o.name for o in Inventory.load(pool.get("vc1")).candidates("vm")}

    def session_digests(self) -> set[str]:
        """The SHA-256 of every session key vCenter lists."""
        with SessionPool.for_lab(load_lab(self.lab).model) as pool:
            manager = pool.get("vc1").content.sessionManager
            return {key_digest(str(u.key)) for u in manager.sessionList}

    def ours(self) -> set[str]:
        return {n for n in self.vm_names() if n.startswith("vb-") and n != LOOK_ALIKE}

    def journal(self, run_dir: Path) -> list[dict]:
        path = run_dir / "vsphere-journal.jsonl"
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _scenario(path: Path, steady: str = "1s", template: str = TEMPLATE) -> Path:
    doc = {
        "version": 1,
        "name": "e2e-vsphere",
        "topology": {
            "storage": {
                "count": 2,
                "vm": {
                    "template": template,
                    "cluster": "DC0_C0",
                    "spread": True,
                    "cpus": 2,
                    "ip_timeout": "30s",
                },
            }
        },
        "workload": {
            "driver": "fio",
            "params": {"rw": "randread", "size": "8m", "ioengine": "psync", "direct": False},
        },
        "repeat": 1,
        "phases": {"warmup": "0s", "steady": steady},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def simlab(
    request: pytest.FixtureRequest,
    local_guests: LocalGuests,
    vcsim_factory: Callable[..., VcsimServer],
    tmp_path: Path,
) -> Iterator[SimLab]:
    """A simulated lab; a test may ask (indirect parametrization) for slower power-ons."""
    power_on_ms = getattr(request, "param", 800)
    server = vcsim_factory(method_delay_ms=(("CloneVM_Task", 800), ("PowerOnVM_Task", power_on_ms)))
    sshd = local_guests.sshd
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    vc["ip_pool"] = {"addresses": ["10.77.0.11-10.77.0.12"]}
    lab_doc = {
        "version": 1,
        "name": "e2e-sim",
        "vcenters": {"vc1": vc},
        "address_map": {
            "10.77.0.11": f"{sshd.addresses[0]}:{sshd.port}",
            "10.77.0.12": f"{sshd.addresses[1]}:{sshd.port}",
        },
        "defaults": {
            "port": sshd.port,
            "key_file": str(sshd.key_file),
            "known_hosts": str(sshd.known_hosts),
            "workdir": str(sshd.workdir),
        },
    }
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump(lab_doc, sort_keys=False))
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        session = pool.get("vc1")
        ensure_templates(session, [TEMPLATE])
        src = Inventory.load(session).find("vm", "DC0_C0_RP0_VM0")
        spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(pool=src.get("resourcePool")))
        with Watcher(session) as w:
            task = src.ref.CloneVM_Task(folder=src.get("parent"), name=LOOK_ALIKE, spec=spec)
            w.wait_task(task, "setup", "clone")
    sim = SimLab(server, lab, _scenario(tmp_path / "s.yaml"), tmp_path, power_on_ms)
    yield sim
    assert server.process.alive(), f"vcsim died; see {server.process.log}"
    assert LOOK_ALIKE in sim.vm_names(), "an unmarked VM was touched"


def test_run_provisions_reports_testbed_and_cleans_up(simlab: SimLab) -> None:
    check = vbench("lab", "check", str(simlab.lab), "--scenario", str(simlab.scenario))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "pass  group storage  names: template tmpl-e2e, cluster DC0_C0 found" in check.stdout
    res = vbench("run", str(simlab.scenario), "--lab", str(simlab.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    data = show(run_id)
    tb = data["run"]["testbed"]
    assert sorted(v["name"] for v in tb["vms"]) == [f"vb-{run_id}-storage-{i}" for i in (1, 2)]
    assert all(v["vcpus"] == 2 for v in tb["vms"]) and tb["hosts"] and tb["vcenter"]["build"]
    assert (Path(data["run"]["run_dir"]) / "testbed.json").is_file()
    assert [t["status"] for t in data["trials"]] == ["ok"]
    assert "testbed: vCenter vc1" in vbench("show", run_id).stdout
    assert simlab.ours() == set()


def test_lab_check_names_a_missing_template_with_a_suggestion(simlab: SimLab) -> None:
    bad = _scenario(simlab.tmp / "bad.yaml", template="tmpl-e2")
    res = vbench("lab", "check", str(simlab.lab), "--scenario", str(bad))
    assert res.returncode == 3
    assert "FAIL  group storage  names: no template named 'tmpl-e2'; did you mean 'tmpl-e2e'?" in (
        res.stdout
    )
    run = vbench("run", str(bad), "--lab", str(simlab.lab))
    assert run.returncode == 3 and "did you mean 'tmpl-e2e'" in run.stderr
    assert simlab.ours() == set()  # nothing was created


@contextlib.contextmanager
def started_run(scenario: Path, lab: Path) -> Iterator[subprocess.Popen[str]]:
    """`vbench run` in the background; killed at the end if the test left it running."""
    proc = vbench_popen("run", str(scenario), "--lab", str(lab))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


def _fio_running(run_dir: Path) -> bool:
    return len(remote_processes(f"{run_dir.name}/fio-storage-1-p0-t1")) > 0


def _results(simlab: SimLab) -> Path:
    import os

    return Path(os.environ["VBENCH_HOME"]) / "results"


def _run_dir_when(simlab: SimLab, event: str) -> Path:
    """The run directory once its journal holds ``event``."""
    found: list[Path] = []

    def ready() -> bool:
        for d in _results(simlab).glob("*"):
            if any(e["event"] == event for e in simlab.journal(d)):
                found.append(d)
                return True
        return False

    wait_for(ready, 60, f"journal event {event}")
    return found[0]


def test_ctrl_c_during_power_on_leaves_nothing(simlab: SimLab) -> None:
    scenario = _scenario(simlab.tmp / "long.yaml", steady="60s")
    with started_run(scenario, simlab.lab) as proc:
        _run_dir_when(simlab, "created")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert simlab.ours() == set(), out + err


def _cleanup_twice(simlab: SimLab, run_dir: Path) -> None:
    """`vbench cleanup` after a kill -9: everything goes, a second pass finds nothing,
    and once the dead run's last request has landed vcsim is still alive with nothing
    left (a request meeting a VM cleanup had destroyed under it crashes vcsim v0.46)."""
    # The killed run's vCenter sessions, journaled by a digest of their key, are still
    # logged in; cleanup ends them (issue 28, item 9).
    left = {e["key_sha256"] for e in simlab.journal(run_dir) if e["event"] == "session"}
    assert left and left <= simlab.session_digests()
    res = vbench("cleanup", run_dir.name, "--lab", str(simlab.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "destroyed vb-" in res.stdout
    assert "ended vCenter session of vbench-test on vc1" in res.stdout
    assert not left & simlab.session_digests()
    assert simlab.ours() == set()
    again = vbench("cleanup", run_dir.name, "--lab", str(simlab.lab))
    assert again.returncode == 0 and "0 destroyed" in again.stdout
    calls = [e["ts"] for e in simlab.journal(run_dir) if e["event"] == "call"]
    if calls:
        time.sleep(max(0.0, max(calls) + simlab.power_on_ms / 1000 + 1.0 - time.time()))
    assert simlab.server.process.alive(), f"vcsim died: {simlab.server.process.log}"
    assert simlab.ours() == set()


def _call_on_the_wire(entries: list[dict], op: str) -> bool:
    """A step call journaled whose task has not come back yet."""
    open_calls = set()
    for e in entries:
        if e.get("op") == op and e["event"] == "call":
            open_calls.add(e["name"])
        elif e.get("op") == op and e["event"] == "task":
            open_calls.discard(e["name"])
    return bool(open_calls)


@pytest.mark.parametrize("simlab", [POWER_ON_SLOW_S * 1000], indirect=True)
def test_kill_9_with_a_power_on_on_the_wire_then_cleanup(simlab: SimLab) -> None:
    # The process dies with a power-on request sent and no task returned. vCenter still
    # powers the VM on later; cleanup must wait for that task instead of destroying the
    # VM under it (vcsim v0.46 panics when a power-on meets a destroyed VM). Power-ons
    # answer after 5 s here: longer than `vbench cleanup` needs to start.
    scenario = _scenario(simlab.tmp / "long.yaml", steady="60s")
    with started_run(scenario, simlab.lab) as proc:
        run_dir = _run_dir_when(simlab, "created")
        wait_for(
            lambda: _call_on_the_wire(simlab.journal(run_dir), "power on"), 60, "a power-on call"
        )
        proc.kill()
        proc.communicate(timeout=30)
    _cleanup_twice(simlab, run_dir)


def test_orphans_are_listed_and_removed_with_yes(simlab: SimLab) -> None:
    scenario = _scenario(simlab.tmp / "long.yaml", steady="60s")
    with started_run(scenario, simlab.lab) as proc:
        run_dir = _run_dir_when(simlab, "created")
        wait_for(lambda: len(simlab.ours()) == 2, 60, "both clones")
        # Killed once its guests run fio, not during their power-on: vcsim 0.46 panics
        # (index out of range in VirtualMachine.customize) in ~2 of 5 runs when the client
        # of a customizing power-on dies — a simulator crash, not what this test is about
        # (a kill during power-on is test_kill_9_with_a_power_on_on_the_wire_then_cleanup's).
        wait_for(lambda: _fio_running(run_dir), 90, "fio to start")
        # While the run is alive its VMs are not orphans.
        live = vbench("cleanup", "--orphans", "--older-than", "0s", "--lab", str(simlab.lab))
        assert "no orphans" in live.stdout, live.stdout
        proc.kill()
        proc.communicate(timeout=30)
    listed = vbench("cleanup", "--orphans", "--older-than", "0s", "--lab", str(simlab.lab))
    assert listed.returncode == 0 and "add --yes" in listed.stdout
    assert f"run {run_dir.name}" in listed.stdout and LOOK_ALIKE not in listed.stdout
    assert len(simlab.ours()) == 2  # listing touches nothing
    young = vbench("cleanup", "--orphans", "--lab", str(simlab.lab))  # default: older than 24h
    assert "no orphans" in young.stdout
    removed = vbench(
        "cleanup", "--orphans", "--older-than", "0s", "--yes", "--lab", str(simlab.lab)
    )
    assert removed.returncode == 0 and "removed 2 of 2" in removed.stdout, removed.stdout
    assert simlab.ours() == set()


def test_session_terminated_mid_run_is_survived(simlab: SimLab) -> None:
    scenario = _scenario(simlab.tmp / "mid.yaml", steady="4s")
    with started_run(scenario, simlab.lab) as proc:
        run_dir = _run_dir_when(simlab, "created")
        wait_for(lambda: _fio_running(run_dir), 90, "fio to start")
        with SessionPool.for_lab(load_lab(simlab.lab).model) as admin:
            s = admin.get("vc1")
            own = s.session_key
            keys = [x.key for x in s.content.sessionManager.sessionList if x.key != own]
            assert keys
            s.content.sessionManager.TerminateSession(keys)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    # What the run made and removed, then what its final clean-up did (cleanup_text).
    assert "vSphere: created 2 VMs; removed all of it (final clean-up 2 destroyed)" in err, err
    assert simlab.ours() == set()
