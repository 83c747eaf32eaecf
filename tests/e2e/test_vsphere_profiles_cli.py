"""Lab profiles end to end: one `vbench run` whose factor levels switch the vCenter a
`vm:` group is provisioned in — two vcsim instances, one point per vCenter, fio in the
provisioned guests (real sshd on loopback, reached through the lab's address map) — and
nothing left in either simulator afterwards."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench
from tests.vcsim import VcsimServer
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.simulator import ensure_templates

TEMPLATE = "tmpl-prof-e2e"


def _ours(lab: Path) -> dict[str, set[str]]:
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        return {
            vc: {o.name for o in Inventory.load(pool.get(vc)).candidates("vm")
                 if o.name.startswith("vb-")}
            for vc in ("vc1", "vc2")
        }


def test_one_run_provisions_each_point_in_its_profiles_vcenter(
    local_guests: LocalGuests, vcsim_factory: Callable[..., VcsimServer], tmp_path: Path
) -> None:
    sshd = local_guests.sshd
    vcs = {}
    for i, name in enumerate(("vc1", "vc2")):
        s = vcsim_factory()
        vc = s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port))
        vc["ip_pool"] = {"addresses": [f"10.8{i}.0.11"]}
        vcs[name] = vc
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({
        "version": 1, "name": "two-vc-e2e", "vcenters": vcs,
        "address_map": {"10.80.0.11": f"{sshd.addresses[0]}:{sshd.port}",
                        "10.81.0.11": f"{sshd.addresses[1]}:{sshd.port}"},
        "defaults": {"port": sshd.port, "key_file": str(sshd.key_file),
                     "known_hosts": str(sshd.known_hosts), "workdir": str(sshd.workdir)},
        "profiles": {"site1": {"vcenter": "vc1", "labels": {"site": "one"}},
                     "site2": {"vcenter": "vc2", "cluster": "DC0_C0",
                               "labels": {"site": "two"}}},
    }, sort_keys=False))
    with SessionPool.for_lab(load_lab(lab).model) as pool:
        for name in vcs:
            ensure_templates(pool.get(name), [TEMPLATE])
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({
        "version": 1, "name": "two-vc",
        "topology": {"storage": {"count": 1, "vm": {
            "template": TEMPLATE, "vcenter": "vc1", "cluster": "DC0_C0", "ip_timeout": "30s"}}},
        "workload": {"driver": "fio", "params": {
            "rw": "randread", "size": "8m", "ioengine": "psync", "direct": False}},
        "factors": {"where": {"levels": [{"label": "a", "profile": "site1"},
                                         {"label": "b", "profile": "site2"}]}},
        "repeat": 1,
        "phases": {"warmup": "0s", "steady": "1s"},
    }, sort_keys=False))
    plan = vbench("plan", str(scenario), "--lab", str(lab))
    assert plan.returncode == 0, plan.stderr
    assert "groups: storage = storage-1, storage-site2-1" in plan.stdout
    res = vbench("run", str(scenario), "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    data = show(run_id)
    assert [t["status"] for t in data["trials"]] == ["ok", "ok"]
    labels = {p["point"]: p["labels"] for p in data["points"]}
    assert labels == {0: {"where": "a", "profile": "site1", "site": "one"},
                      1: {"where": "b", "profile": "site2", "site": "two"}}
    tb = data["run"]["testbed"]
    assert [v["name"] for v in tb["vcenters"]] == ["vc1", "vc2"]
    assert sorted(v["name"] for v in tb["vms"]) == [
        f"vb-{run_id}-storage-1", f"vb-{run_id}-storage-site2-1"]
    # Each point's figures came from the guest its profile placed.
    with open(Path(data["run"]["run_dir"]) / "samples.csv", newline="") as f:
        measured = {(r["point"], r["guest"]) for r in csv.DictReader(f) if r["guest"]}
    assert measured == {("0", "storage-1"), ("1", "storage-site2-1")}
    assert _ours(lab) == {"vc1": set(), "vc2": set()}
