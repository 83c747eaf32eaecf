"""vcbench through the CLI on vcsim: Ctrl-C in steady state and kill -9 + `vbench
cleanup RUN` leave no VM, snapshot or template; two vcsim instances as two profile
levels give one run whose report normalises latency to the first."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from pyVmomi import vim

from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, wait_for_log
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import retrieve

Factory = Callable[..., VcsimServer]
TEMPLATE = "DC0_C0_RP0_VM0"
# The baseline answers in 50 ms per task, the candidate in 150 ms.
DELAYS = {"vc1": 50, "vc2": 150}
TASKS = ("PowerOn", "PowerOff", "CloneVm", "RelocateVm", "ReconfigVm", "CreateSnapshot",
         "RemoveSnapshot", "RevertToSnapshot", "Destroy", "RegisterVm")  # fmt: skip


def _server(factory: Factory, ms: int) -> VcsimServer:
    delays = (*((t, ms) for t in TASKS), ("LockHandoff", 0))
    return factory(datastores=2, method_delay_ms=delays)


def _lab(tmp: Path, servers: dict[str, VcsimServer]) -> Path:
    vcs = {
        name: s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port))
        for name, s in servers.items()
    }
    profiles = {f"p-{name}": {"vcenter": name} for name in servers}
    doc = {"version": 1, "name": "vcb-sim", "vcenters": vcs, "profiles": profiles}
    path = tmp / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _scenario(tmp: Path, steady: str, vcenters: tuple[str, ...]) -> Path:
    doc: dict = {
        "version": 1,
        "name": "vcbench-e2e",
        "workload": {"driver": "vcbench", "params": {"template": TEMPLATE, "sessions": 3}},
        "repeat": 1,
        "phases": {"warmup": "1s", "steady": steady, "cooldown": "0s"},
        "factors": {
            "vcenter": {
                "levels": [{"label": vc, "profile": f"p-{vc}"} for vc in vcenters]
            }
        },
        "derived": [{
            "name": "latency_vs_baseline", "kind": "normalize",
            "metric": "vcbench.latency_avg", "baseline": {"vcenter": vcenters[0]},
        }],
    }  # fmt: skip
    path = tmp / "vcbench.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _leftovers(lab: Path) -> dict[str, list[str]]:
    """Per vCenter: VMs named vb-… (clones, new VMs) and any VM of the run with a snapshot
    or marked as a template."""
    out: dict[str, list[str]] = {}
    model = load_lab(lab).model
    with SessionPool.for_lab(model) as pool:
        for vc in model.vcenters:
            props = {vim.VirtualMachine: ["name", "snapshot", "config.template"]}
            objs = retrieve(pool.get(vc), props)
            out[vc] = sorted(o.name for o in objs if o.name.startswith("vb-"))
    return out


def _nothing_left(lab: Path) -> bool:
    return all(not v for v in _leftovers(lab).values())


def _run_dir(home: Path) -> Path:
    [d] = [p for p in (home / "results").glob("*-*") if p.is_dir()]
    return d


def test_two_vcenters_as_profile_levels_give_latency_normalised_to_the_first(
    vcsim_factory: Factory, vbench_home: Path, tmp_path: Path
) -> None:
    servers = {vc: _server(vcsim_factory, ms) for vc, ms in DELAYS.items()}
    lab = _lab(tmp_path, servers)
    res = vbench("run", str(_scenario(tmp_path, "4s", ("vc1", "vc2"))), "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    data = show(run_id)
    out = tmp_path / "report.json"
    rep = vbench("report", run_id, "-o", str(out))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    run = json.loads(out.read_text())["runs"][0]
    norm = {
        a["labels"]["vcenter"]: a["mean"]
        for a in run["aggregates"]
        if a["metric"] == "latency_vs_baseline"
    }
    # The baseline is 1 by definition; the slower candidate is above it.
    assert norm["vc1"] == pytest.approx(1.0) and norm["vc2"] > 1.0, norm
    assert not [w for w in run["warnings"] if "latency_vs_baseline" in w], run["warnings"]
    # The ops/s time series of each trial sits with the collectors' series, charted.
    run_dir = Path(data["run"]["run_dir"])
    assert sorted(p.parent.parent.name for p in run_dir.glob("series/*/vcbench/*.parquet")) == [
        "0-1", "1-1"
    ]
    html = (run_dir / "report.html").read_text()
    assert "Time series" in html
    # Latency per operation type with error bars, per point, from the labelled samples.
    assert 'id="operations"' in html and "Mean latency per operation" in html
    assert "power_on" in html.split('id="operations"', 1)[1]
    # The driver's answer leads: ops/s against Little's law, and its one chart first.
    assert "vCenter operations against Little's law: " in res.stderr
    assert "% of Little's law" in res.stderr
    summary = html.split('<section id="summary">', 1)[1]
    assert summary.index("ops/s against Little&#39;s law") < summary.index("</figure>")
    testbed = {v["name"] for v in data["run"]["testbed"]["vcenters"]}
    assert testbed == {"vc1", "vc2"}
    assert _nothing_left(lab), _leftovers(lab)


def test_ctrl_c_in_steady_state_leaves_no_vm_or_snapshot(
    vcsim_factory: Factory, vbench_home: Path, tmp_path: Path
) -> None:
    lab = _lab(tmp_path, {"vc1": _server(vcsim_factory, 200)})
    proc = vbench_popen("run", str(_scenario(tmp_path, "10m", ("vc1",))), "--lab", str(lab))
    try:
        wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0)
        assert not _nothing_left(lab)  # the pool exists while the trial runs
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert _nothing_left(lab), _leftovers(lab)
    assert (_run_dir(vbench_home) / "raw" / "0-1" / "ops.csv").exists()


@pytest.mark.timeout(600)
def test_kill_9_then_cleanup_leaves_no_vm_or_snapshot(
    vcsim_factory: Factory, vbench_home: Path, tmp_path: Path
) -> None:
    lab = _lab(tmp_path, {"vc1": _server(vcsim_factory, 200)})
    proc = vbench_popen("run", str(_scenario(tmp_path, "10m", ("vc1",))), "--lab", str(lab))
    try:
        wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert not _nothing_left(lab)
    run_dir = _run_dir(vbench_home)
    res = vbench("cleanup", run_dir.name, "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    if not _nothing_left(lab):  # a clone still running at the kill appears later
        again = vbench("cleanup", run_dir.name, "--lab", str(lab))
        assert again.returncode == 0, again.stdout + again.stderr
    assert _nothing_left(lab), _leftovers(lab)
