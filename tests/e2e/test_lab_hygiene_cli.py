"""Lab hygiene against a real vCenter simulator (vcsim), end to end: findings read from
vcsim's objects (DRS, power policy, other powered-on VMs) in `lab check` and the run's
testbed; a host in maintenance mode failing preflight; a VM relocated by a second client
during a steady window flagging (and, with `disturbance: retry`, re-running) its trial,
and kept when the interrupted run is resumed;
`lab_hygiene: {tune: true}` overriding DRS for the run's VMs and restoring it at the
end, and after kill -9 through `vbench cleanup`."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyVmomi import vim

from tests.conftest import LocalGuests
from tests.e2e.helpers import logged, run_id_of, show, vbench, vbench_popen, wait_for
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.simulator import ensure_templates
from vbench.vsphere.tasks import Watcher

TEMPLATE = "tmpl-hyg"


@dataclass
class Sim:
    server: VcsimServer
    lab: Path
    tmp: Path

    def session(self) -> Iterator[Any]:
        with SessionPool.for_lab(load_lab(self.lab).model) as pool:
            yield pool.get("vc1")

    def scenario(self, name: str, **extra: Any) -> Path:
        doc = {
            "version": 1, "name": "e2e-hygiene",
            "topology": {"storage": {"count": 1, "vm": {
                "template": TEMPLATE, "cluster": "DC0_C0", "ip_timeout": "30s"}}},
            "workload": {"driver": "fio", "params": {
                "rw": "randread", "size": "4m", "ioengine": "psync", "direct": False}},
            "repeat": 1, "phases": {"warmup": "0s", "steady": "3s"}, **extra,
        }
        path = self.tmp / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@pytest.fixture
def sim(local_guests: LocalGuests, vcsim_factory: Callable[..., VcsimServer],
        tmp_path: Path) -> Sim:
    server = vcsim_factory()
    sshd = local_guests.sshd
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    vc["ip_pool"] = {"addresses": ["10.78.0.11"]}
    lab_doc = {
        "version": 1, "name": f"e2e-hyg-{tmp_path.name}", "vcenters": {"vc1": vc},
        "address_map": {"10.78.0.11": f"{sshd.addresses[0]}:{sshd.port}"},
        "defaults": {"port": sshd.port, "key_file": str(sshd.key_file),
                     "known_hosts": str(sshd.known_hosts), "workdir": str(sshd.workdir)},
    }
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump(lab_doc, sort_keys=False))
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        ensure_templates(pool.get("vc1"), [TEMPLATE])
    return Sim(server, lab, tmp_path)


def _with_session(sim: Sim, fn: Callable[[Any, Inventory], Any]) -> Any:
    with SessionPool.for_lab(load_lab(sim.lab).model) as pool:
        session = pool.get("vc1")
        return fn(session, Inventory.load(session))


def _relocate_run_vm(sim: Sim, when: Callable[[], None] | None = None) -> str:
    """A second client moves the run's VM to another host of its cluster; its name.
    ``when``: waited for once logged in and the VM found (only the move is left to do
    inside the steady window it waits for)."""
    def move(session: Any, inv: Inventory) -> str:
        vm = next(o for o in inv.candidates("vm") if o.name.startswith("vb-"))
        if when is not None:
            when()
        now = vm.ref.runtime.host
        target = next(h.ref for h in inv.candidates("host")
                      if h.ref in now.parent.host and h.ref != now)
        with Watcher(session) as w:
            w.wait_task(vm.ref.RelocateVM_Task(vim.vm.RelocateSpec(host=target)),
                        "test", "relocate")
        return vm.name

    return str(_with_session(sim, move))


def _overrides(sim: Sim) -> list[str]:
    """The VMs DRS is held still for (a manual, partially automated or disabled
    override). vcsim cannot remove an override: the undo sets it to fully automated."""
    def read(_s: Any, inv: Inventory) -> list[str]:
        cluster = inv.find("cluster", "DC0_C0").ref
        return [str(o.key.name) for o in cluster.configurationEx.drsVmConfig or ()
                if o.behavior != "fullyAutomated" or o.enabled is False]

    return list(_with_session(sim, read))


def _set_override(sim: Sim, vm: str, behavior: str) -> None:
    """A second client sets the VM's DRS override (vcsim cannot remove one)."""
    def edit(session: Any, inv: Inventory) -> None:
        cluster = inv.find("cluster", "DC0_C0").ref
        info = vim.cluster.DrsVmConfigInfo(key=inv.find("vm", vm).ref, enabled=True,
                                           behavior=behavior)
        spec = vim.cluster.ConfigSpecEx(drsVmConfigSpec=[
            vim.cluster.DrsVmConfigSpec(operation="edit", info=info)])
        with Watcher(session) as w:
            w.wait_task(cluster.ReconfigureComputeResource_Task(spec, True), "test", "drs")

    _with_session(sim, edit)


def test_findings_read_from_vcsim_in_lab_check_and_the_testbed(sim: Sim) -> None:
    scenario = sim.scenario("s.yaml", lab_hygiene={"other_vms": "warn"})
    check = vbench("lab", "check", str(sim.lab), "--scenario", str(scenario))
    assert check.returncode == 0, check.stdout + check.stderr
    out = check.stdout
    # vcsim: DRS on, no default behaviour (= fully automated); hosts in "dynamic" power.
    # Each finding names its vCenter (a lab of several may have a DC0_C0 in each).
    assert "warn  cluster DC0_C0 (vcenter vc1)  hygiene drs: DRS fullyAutomated on DC0_C0: " \
        "it may migrate the run's VMs" in out
    assert "warn  host DC0_C0_H0 (vcenter vc1)  hygiene power_policy: host DC0_C0_H0: power " \
        "policy balanced (wanted high-performance)" in out
    assert "hygiene other_vms: " in out and "DC0_C0_RP0_VM0 on DC0_C0_H" in out
    res = vbench("run", str(scenario), "--lab", str(sim.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    tb = show(run_id)["run"]["testbed"]
    found = {f["id"]: f for f in tb["hygiene"]}
    assert found["drs cluster DC0_C0"]["level"] == "warn"
    assert found["drs cluster DC0_C0"]["detail"].endswith(
        f"it may migrate vb-{run_id}-storage-1 during a trial (`lab_hygiene: {{tune: true}}` "
        "overrides it to manual for them for the run)")
    assert found["power_policy host DC0_C0_H1"]["state"] == "balanced"
    # The loopback guest's clock is the controller's; vcsim's hosts report none.
    assert found["clock guests"]["level"] == "ok"
    assert found["clock guests"]["detail"].startswith("guest clocks from the controller's: "
                                                      "storage-1 ")
    assert "not reported: DC0_C0_H0" in found["clock vcenter vc1"]["detail"]
    other = next(f for f in tb["hygiene"] if f["check"] == "other_vms")
    assert other["level"] == "warn" and "DC0_C0_RP0_VM0" in other["detail"]
    assert f"vb-{run_id}" not in other["detail"]  # the run's own VM is not "other"
    shown = vbench("show", run_id).stdout
    assert "lab hygiene: " in shown and "warn: drs cluster DC0_C0" in shown


def test_host_in_maintenance_fails_preflight(sim: Sim) -> None:
    def enter(session: Any, inv: Inventory) -> None:
        host = inv.find("host", "DC0_C0_H2").ref
        with Watcher(session) as w:
            w.wait_task(host.EnterMaintenanceMode_Task(0), "test", "maintenance")

    _with_session(sim, enter)
    scenario = sim.scenario("s.yaml")  # host_state: fail is the default
    res = vbench("run", str(scenario), "--lab", str(sim.lab))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "host_state host DC0_C0_H2 (vcenter vc1): host DC0_C0_H2 in maintenance mode" \
        in res.stderr
    assert not [n for n in _with_session(sim, lambda _s, inv: [
        o.name for o in inv.candidates("vm")]) if n.startswith("vb-")]  # nothing created
    waived = sim.scenario("w.yaml", lab_hygiene={"host_state": "warn"})
    check = vbench("lab", "check", str(sim.lab), "--scenario", str(waived))
    assert "warn  host DC0_C0_H2 (vcenter vc1)  hygiene host_state" in check.stdout


def test_relocation_in_the_steady_window_reruns_the_trial(sim: Sim) -> None:
    home = Path(os.environ["VBENCH_HOME"])
    scenario = sim.scenario("s.yaml", disturbance={"action": "retry", "retries": 1},
                            lab_hygiene={"power_policy": "ignore"})
    proc = vbench_popen("run", str(scenario), "--lab", str(sim.lab))
    try:
        wait_for(logged(home, "phase_mark", mark="steady_start", point=0, trial=1), 120,
                 "the first steady window")
        vm = _relocate_run_vm(sim)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, out + err
    run_id = run_id_of(out + err)
    assert vm == f"vb-{run_id}-storage-1"
    data = show(run_id)
    (entry,) = data["run"]["testbed"]["disturbances"]
    assert entry["action"] == "retried" and (entry["point"], entry["trial"]) == (0, 1)
    assert entry["text"].startswith("vMotion of storage-1 ")
    assert "s into the steady window" in entry["text"]
    assert [t["status"] for t in data["trials"]] == ["ok"]  # the kept, second attempt
    assert "running it again (1 of 1)" in err
    warnings = " ".join(data["verdict"]["warnings"])
    assert "point 1 trial 1 run again, disturbed: vMotion of storage-1" in warnings
    lines = (Path(data["run"]["run_dir"]) / "disturbances.jsonl").read_text().splitlines()
    assert len(lines) == 1
    # the report says it of the point (report/disturbed.py): the kept attempt is clean
    (point,) = data["disturbed"]
    assert point["retried"] == [{"trial": 1, "attempts": 1}] and point["disturbed"] == []
    report = (Path(data["run"]["run_dir"]) / "report.html").read_text()
    assert "trial 1 run again after 1 disturbed attempt (not stored)" in report


def test_tune_overrides_drs_for_the_run_and_restores_it(sim: Sim) -> None:
    scenario = sim.scenario("s.yaml", lab_hygiene={"tune": True, "drs": "manual",
                                                   "power_policy": "ignore"})
    res = vbench("run", str(scenario), "--lab", str(sim.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    data = show(run_id)
    found = {f["id"]: f for f in data["run"]["testbed"]["hygiene"]}
    assert found["drs cluster DC0_C0"]["level"] == "ok"
    assert found["drs cluster DC0_C0"]["state"] == "fullyAutomated, overridden"
    states = [r["state"] for r in _journal(Path(data["run"]["run_dir"]))]
    assert states == ["applying", "applied", "undone"]
    assert _overrides(sim) == []
    # Said as the tuning was: the run's output shows the lab put back at its end.
    assert (f"lab tune: restored cluster DC0_C0: DRS override manual for VM vb-{run_id}-"
            "storage-1 (now no override)") in res.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_tune_is_restored_after_ctrl_c_and_after_kill_9_by_cleanup(sim: Sim, sig: int) -> None:
    home = Path(os.environ["VBENCH_HOME"])
    scenario = sim.scenario("s.yaml", lab_hygiene={"tune": True, "power_policy": "ignore"},
                            phases={"warmup": "0s", "steady": "60s"})
    proc = vbench_popen("run", str(scenario), "--lab", str(sim.lab))
    try:
        wait_for(logged(home, "phase_mark", mark="steady_start"), 120, "the steady window")
        assert [n for n in _overrides(sim) if n.startswith("vb-")]
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    (run_dir,) = [d for d in (home / "results").glob("*") if (d / "log.jsonl").is_file()]
    if sig == signal.SIGINT:  # the run restores it itself
        assert proc.returncode == 130, out + err
    else:
        assert [r["state"] for r in _journal(run_dir)] == ["applying", "applied"]
        res = vbench("cleanup", run_dir.name, "--lab", str(sim.lab))
        assert res.returncode == 0, res.stdout + res.stderr
        assert ("lab tune: restored cluster DC0_C0: DRS override manual for VM "
                f"vb-{run_dir.name}") in res.stdout
    assert [r["state"] for r in _journal(run_dir)][-1] == "undone"
    assert _overrides(sim) == []


def test_lab_tune_proposes_applies_and_undoes(sim: Sim) -> None:
    existing = {"existing": ["DC0_C0_RP0_VM0"], "cluster": "DC0_C0"}
    s = sim.scenario("s.yaml", topology={"storage": {"count": 1, "vm": existing}})
    res = vbench("lab", "tune", str(sim.lab), "--scenario", str(s))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "propose: cluster DC0_C0: DRS override manual for VM DC0_C0_RP0_VM0 (now no " \
        "override)" in res.stdout
    assert "propose: host DC0_C0_H0: power policy high-performance (now balanced)" in res.stdout
    assert _overrides(sim) == []  # a proposal changes nothing
    # The scenario's existing VM is the run's: lab check counts it among no "other VMs".
    check = vbench("lab", "check", str(sim.lab), "--scenario", str(s)).stdout
    other = next(ln for ln in check.splitlines() if "hygiene other_vms" in ln)
    assert "DC0_C0_RP0_VM0" not in other and "DC0_C0_RP0_VM1" in other
    # vcsim has no host power system: the power-policy change fails, and says so.
    failed = vbench("lab", "tune", str(sim.lab), "--scenario", str(s), "--apply")
    assert failed.returncode == 3 and "power policy high-performance" in failed.stderr
    assert "vCenter has no power system for this host (vcsim, the vCenter simulator, has none)" \
        in failed.stderr
    # Said as it was made (the override before the failure), and what was not made:
    # no 'change:' line for a change never tried.
    assert "applied: cluster DC0_C0: DRS override manual for VM DC0_C0_RP0_VM0" \
        in failed.stdout
    assert "not made: host DC0_C0_H2: power policy high-performance" in failed.stdout
    assert "change:" not in failed.stdout and "--undo` restores what was applied" \
        in failed.stdout
    undone = vbench("lab", "tune", str(sim.lab), "--undo")  # the override made before it
    assert undone.returncode == 0 and "restored cluster DC0_C0" in undone.stdout
    drs_only = sim.scenario("d.yaml", topology={"storage": {"count": 1, "vm": existing}},
                            lab_hygiene={"power_policy": "ignore"})
    applied = vbench("lab", "tune", str(sim.lab), "--scenario", str(drs_only), "--apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "applied: cluster DC0_C0: DRS override manual for VM DC0_C0_RP0_VM0" in applied.stdout
    assert _overrides(sim) == ["DC0_C0_RP0_VM0"]
    again = vbench("lab", "tune", str(sim.lab), "--scenario", str(drs_only))
    assert "nothing to change now" in again.stdout
    # Another engineer sets their own override since: the undo leaves it (it set it
    # back to no override before, wiping theirs), and says so.
    _set_override(sim, "DC0_C0_RP0_VM0", "partiallyAutomated")
    res = vbench("lab", "tune", str(sim.lab), "--undo")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "left cluster DC0_C0: DRS override manual for VM DC0_C0_RP0_VM0 " in res.stdout
    assert ": someone else changed it since, to partiallyAutomated" in res.stdout
    assert _overrides(sim) == ["DC0_C0_RP0_VM0"]
    _set_override(sim, "DC0_C0_RP0_VM0", "fullyAutomated")
    assert "nothing to restore" in vbench("lab", "tune", str(sim.lab), "--undo").stdout


def _journal(run_dir: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(x) for x in (run_dir / "tune.jsonl").read_text().splitlines()]



def test_a_run_resumed_after_a_relocation_keeps_its_disturbance(sim: Sim) -> None:
    """A VM relocated in trial 2's steady window, Ctrl-C in the next point's first trial
    (the VM is destroyed at the interrupt), then --resume: the resumed preflight reads a
    lab whose hosts may still name the destroyed VM; the run ends with the disturbance
    kept and the interrupted trial run again on a new VM, and nothing left in vCenter."""
    home = Path(os.environ["VBENCH_HOME"])
    scenario = sim.scenario("s.yaml", disturbance="flag", repeat=2,
                            factors={"bs": ["4k", "8k"]}, lab_hygiene={"power_policy": "ignore"})
    proc = vbench_popen("run", str(scenario), "--lab", str(sim.lab))
    try:
        wait_for(logged(home, "phase_mark", mark="steady_start", point=0, trial=1), 120,
                 "the first steady window")  # the run's VM is there
        vm = _relocate_run_vm(sim, lambda: wait_for(logged(
            home, "phase_mark", mark="steady_start", point=0, trial=2), 120,
            "trial 2's steady window"))
        wait_for(logged(home, "phase_mark", mark="steady_start", point=1, trial=1), 120,
                 "point 2's first steady window")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    run_id = run_id_of(out + err)
    assert vm == f"vb-{run_id}-storage-1"
    res = vbench("run", str(scenario), "--lab", str(sim.lab), "--resume", run_id)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (f"resuming run {run_id}: kept 2 trials (2 ok) of 1 point; 1 interrupted trial "
            "run again; 2 of 4 trials remain") in res.stderr
    assert "† point 1 (bs=4k): 1 of 2 trials disturbed: trial 2, in the statistics" \
        in res.stderr
    data = show(run_id)
    assert [(t["point"], t["trial"], t["status"]) for t in data["trials"]] == [
        (0, 1, "ok"), (0, 2, "ok"), (1, 1, "ok"), (1, 2, "ok")]
    (entry,) = data["run"]["testbed"]["disturbances"]
    assert (entry["point"], entry["trial"], entry["action"]) == (0, 2, "flag")
    assert entry["text"].startswith("vMotion of storage-1 ")
    said = "point 1 trial 2 disturbed: vMotion of storage-1 "
    assert said in vbench("show", run_id).stdout
    assert said in (Path(data["run"]["run_dir"]) / "report.html").read_text()
    assert not [n for n in _with_session(sim, lambda _s, inv: [
        o.name for o in inv.candidates("vm")]) if n.startswith("vb-")]
    cleanup = vbench("cleanup", run_id, "--lab", str(sim.lab))
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert f"run {run_id}: nothing left to clean up" in cleanup.stdout
    orphans = vbench("cleanup", "--orphans", "--older-than", "0s", "--lab", str(sim.lab))
    assert orphans.returncode == 0 and "no orphans" in orphans.stdout
