"""Run resources for workloads acting on vCenter, end to end: a driver shipped as its own
distribution (tests/dists/vcobjects, pip-installed next to the `vbench` process) creates
a VM, a snapshot and a folder (a kind whose destroyer lives in the plugin) through
``ctx.vsphere`` in a scenario without guests. Everything goes after a normal end, after
Ctrl-C or SIGTERM during steady state, and after kill -9 with `vbench cleanup RUN`.

Lab profiles per factor level: one run, two vcsim instances, one point per vCenter."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, wait_for_log
from tests.e2e.plugin_dist import install_dist
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.simulator import ensure_templates

TEMPLATE = "tmpl-res"


@dataclass
class ResLab:
    lab: Path
    tmp: Path
    home: Path
    vcenters: tuple[str, ...]

    def ours(self) -> dict[str, set[str]]:
        """Objects named vb-… per vCenter (VMs, folders), and snapshots of any VM."""
        out: dict[str, set[str]] = {}
        with SessionPool.for_lab(load_lab(self.lab).model) as pool:
            for vc in self.vcenters:
                inv = Inventory.load(pool.get(vc))
                names = {o.name for o in inv.of_kind("VirtualMachine", "Folder")}
                out[vc] = {n for n in names if n.startswith("vb-")}
        return out

    def nothing_left(self) -> bool:
        return all(not names for names in self.ours().values())

    def journal(self, run_dir: Path) -> list[dict]:
        path = run_dir / "vsphere-journal.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def run_dir(self) -> Path:
        [d] = [p for p in (self.home / "results").glob("*-*") if p.is_dir()]
        return d


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test driver's distribution, pip-installed; every `vbench` process sees it."""
    site = install_dist("vcobjects", tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


def _lab(tmp: Path, servers: dict[str, VcsimServer], profiles: dict | None = None) -> Path:
    vcs = {
        name: s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port))
        for name, s in servers.items()
    }
    doc = {"version": 1, "name": "res-sim", "vcenters": vcs, "profiles": profiles or {}}
    path = tmp / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with SessionPool.for_lab(load_lab(path).model) as pool:
        for name in servers:
            ensure_templates(pool.get(name), [TEMPLATE])
    return path


def _scenario(path: Path, steady: str, factors: dict | None = None) -> Path:
    doc = {
        "version": 1,
        "name": "vcobjects",
        "workload": {"driver": "vcobjects", "params": {"source": TEMPLATE}},
        "repeat": 1,
        "phases": {"warmup": "0s", "steady": steady, "cooldown": "0s"},
    }
    if factors:
        doc["factors"] = factors
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def reslab(
    plugin_path: Path,
    vcsim_factory: Callable[..., VcsimServer],
    vbench_home: Path,
    tmp_path: Path,
) -> ResLab:
    server = vcsim_factory()
    return ResLab(_lab(tmp_path, {"vc1": server}), tmp_path, vbench_home, ("vc1",))


def _destroyed_kinds(entries: list[dict]) -> list[str]:
    return [e.get("kind", "vm") for e in entries if e["event"] == "destroyed"]


def test_objects_a_driver_creates_are_removed_in_reverse_order(reslab: ResLab) -> None:
    scenario = _scenario(reslab.tmp / "s.yaml", "1s")
    res = vbench("run", str(scenario), "--lab", str(reslab.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    data = show(run_id_of(res.stdout))
    assert [t["status"] for t in data["trials"]] == ["ok"]
    entries = reslab.journal(reslab.run_dir())
    created = [e.get("kind", "vm") for e in entries if e["event"] == "created"]
    assert created == ["vm", "snapshot", "test-folder"]
    # The last created goes first: the folder, the snapshot, then its VM.
    assert _destroyed_kinds(entries) == ["test-folder", "snapshot", "vm"]
    assert reslab.nothing_left(), reslab.ours()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_in_steady_state_removes_the_objects(reslab: ResLab, sig: int) -> None:
    scenario = _scenario(reslab.tmp / "long.yaml", "10m")
    proc = vbench_popen("run", str(scenario), "--lab", str(reslab.lab))
    try:
        wait_for_log(reslab.home, "phase_mark", 120, proc, mark="steady_start", point=0)
        assert not reslab.nothing_left()  # the objects exist while the trial runs
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert sorted(_destroyed_kinds(reslab.journal(reslab.run_dir()))) == [
        "snapshot", "test-folder", "vm"
    ]
    assert reslab.nothing_left(), reslab.ours()


def test_kill_9_then_cleanup_removes_plugin_kinds_too(reslab: ResLab) -> None:
    scenario = _scenario(reslab.tmp / "long.yaml", "10m")
    proc = vbench_popen("run", str(scenario), "--lab", str(reslab.lab))
    try:
        wait_for_log(reslab.home, "phase_mark", 120, proc, mark="steady_start", point=0)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    run_dir = reslab.run_dir()
    assert not reslab.nothing_left()
    res = vbench("cleanup", run_dir.name, "--lab", str(reslab.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "destroyed test-folder vb-" in res.stdout and "destroyed snapshot vb-" in res.stdout
    assert reslab.nothing_left(), reslab.ours()
    again = vbench("cleanup", run_dir.name, "--lab", str(reslab.lab))
    assert again.returncode == 0 and "0 destroyed" in again.stdout, again.stdout


PROFILES = {
    "one": {"vcenter": "vc1", "labels": {"site": "first"}},
    "two": {"vcenter": "vc2", "datastore": "LocalDS_0", "labels": {"site": "second"}},
}
SITE_FACTOR = {"site_vc": {"levels": [{"label": "a", "profile": "one"},
                                      {"label": "b", "profile": "two"}]}}


def test_profiles_switch_the_vcenter_per_point_in_one_run(
    plugin_path: Path,
    vcsim_factory: Callable[..., VcsimServer],
    vbench_home: Path,
    tmp_path: Path,
) -> None:
    servers = {"vc1": vcsim_factory(), "vc2": vcsim_factory()}
    lab = ResLab(_lab(tmp_path, servers, PROFILES), tmp_path, vbench_home, ("vc1", "vc2"))
    scenario = _scenario(tmp_path / "s.yaml", "1s", SITE_FACTOR)
    plan = vbench("plan", str(scenario), "--lab", str(lab.lab))
    assert plan.returncode == 0, plan.stderr
    assert "point 1: site_vc=a, profile=one, site=first" in plan.stdout
    assert "point 2: site_vc=b, profile=two, site=second" in plan.stdout
    assert "lab profile: two" in plan.stdout
    check = vbench("lab", "check", str(lab.lab))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "pass  profile two  names: vcenter vc2: datastore LocalDS_0 found" in check.stdout
    res = vbench("run", str(scenario), "--lab", str(lab.lab))
    assert res.returncode == 0, res.stdout + res.stderr
    data = show(run_id_of(res.stdout))
    run_dir = Path(data["run"]["run_dir"])
    created = [json.loads(x) for x in (run_dir / "log.jsonl").read_text().splitlines()]
    where = {e["profile"]: e["vcenter"] for e in created if e["event"] == "vcobjects_created"}
    assert where == {"one": "vc1", "two": "vc2"}
    labels = {p["point"]: p["labels"] for p in data["points"]}
    assert labels[0]["profile"] == "one" and labels[1]["site"] == "second"
    tb = data["run"]["testbed"]
    assert [v["name"] for v in tb["vcenters"]] == ["vc1", "vc2"]
    assert lab.nothing_left(), lab.ours()


def test_lab_check_names_a_profile_datastore_that_does_not_exist(
    vcsim_factory: Callable[..., VcsimServer], tmp_path: Path
) -> None:
    bad = {"nfs": {"vcenter": "vc1", "datastore": "LocalDS_9"}}
    lab = _lab(tmp_path, {"vc1": vcsim_factory()}, bad)
    check = vbench("lab", "check", str(lab))
    assert check.returncode == 3
    assert "FAIL  profile nfs  names: vcenter vc1: no datastore named 'LocalDS_9'" in check.stdout
