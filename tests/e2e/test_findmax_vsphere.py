"""A VM-count find-max in the vCenter simulator: the group's size is the searched level,
each level runs on that many VMs — cloned or destroyed as the search moves, only the
difference from the level before (counted by vCenter's own events) — and nothing is
left at the end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from pyVmomi import vim

from tests.e2e.helpers import run_id_of, show, vbench
from tests.e2e.test_vsphere_cli import SimLab, simlab  # noqa: F401 - the fixture
from vbench.config.load import load_lab
from vbench.vsphere.connection import SessionPool

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def test_vm_count_search_runs_each_level_on_its_vms_and_cleans_up(simlab: SimLab) -> None:  # noqa: F811
    doc = yaml.safe_load(simlab.scenario.read_text())
    doc["name"] = "e2e-vm-findmax"
    doc["workload"]["params"]["rate_iops"] = 100  # per VM: 1 VM ≈ 100 IO/s, 2 VMs ≈ 200
    doc["qos"] = [{"name": "total", "metric": "total_iops", "op": "<=", "threshold": 150}]
    doc["search"] = {"factor": "vms", "path": "topology.storage.count", "min": 1, "max": 2,
                     "trials": 1, "verify_trials": 1}
    doc["phases"]["steady"] = "2s"
    path = simlab.tmp / "vm-findmax.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = vbench("run", str(path), "--lab", str(simlab.lab), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert "find-max vms: highest pass 1 · lowest fail 2" in out, out[-3000:]
    run_id = run_id_of(out)
    data = show(run_id)
    levels = {p["point"]: p["labels"]["vms"] for p in data["points"]}
    guests: dict[str, set[str]] = {}
    samples = Path(data["run"]["run_dir"]) / "samples.csv"
    for row in csv.DictReader(samples.open()):
        if row.get("guest"):
            guests.setdefault(levels[int(row["point"])], set()).add(row["guest"])
    assert {k: len(v) for k, v in guests.items()} == {"1": 1, "2": 2}
    # The levels in the order the search ran them, each with the VMs it ran on and the
    # clones and removals it took to get there from the level before.
    log = Path(data["run"]["run_dir"]) / "log.jsonl"
    moves = [e for e in map(json.loads, log.read_text().splitlines())
             if e.get("event") == "point_vms"]  # fmt: skip
    path = [int(levels[e["point"]]) for e in moves]
    assert path[:2] == [1, 2] and len(path) >= 3, path  # verification goes back to 1
    assert all(len(e["vms"]) == int(levels[e["point"]]) for e in moves)
    for before, now, e in zip([1, *path], path, moves, strict=False):
        assert (len(e["created"]), len(e["destroyed"])) == (max(0, now - before),
                                                            max(0, before - now))
    # vCenter counted one clone per VM a level added (the first level's VM up front),
    # against one clone per VM of every level if each provisioned its own.
    with SessionPool.for_lab(load_lab(simlab.lab).model) as pool:
        em = pool.get("vc1").content.eventManager
        found = em.QueryEvents(vim.event.EventFilterSpec(eventTypeId=["VmClonedEvent"]))
    clones = [e for e in found if e.vm is not None and e.vm.name.startswith(f"vb-{run_id}-")]
    assert len(clones) == 1 + sum(len(e["created"]) for e in moves) < sum(path)
    assert simlab.ours() == set()  # every VM of the run destroyed
