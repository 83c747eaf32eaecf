"""Find-max over the tile count in the vCenter simulator: each tile runs on its own
clones (a level adds the VMs of the tiles it adds), every level's figures are kept per
tile, the consolidation answer leads, and nothing is left at the end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from tests.e2e.helpers import run_id_of, show, vbench
from tests.e2e.test_vsphere_cli import SimLab, simlab  # noqa: F401 - the fixture

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def test_findmax_over_tiles_clones_each_tiles_vms_and_cleans_up(simlab: SimLab) -> None:  # noqa: F811
    doc = yaml.safe_load(simlab.scenario.read_text())
    doc["name"] = "e2e-tiles-findmax"
    doc["topology"]["storage"]["count"] = 1  # per tile
    fio = doc.pop("workload")
    doc["workloads"] = {"disk": {**fio, "roles": {"target": "storage"},
                                 "qos": [{"metric": "read_iops", "op": ">=", "threshold": 1}]}}
    doc["tiles"] = {"count": 1}
    doc["search"] = {"factor": "tiles", "path": "tiles.count", "min": 1, "max": 2,
                     "trials": 1, "verify_trials": 0}
    path = simlab.tmp / "tiles-findmax.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = vbench("run", str(path), "--lab", str(simlab.lab), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_id = run_id_of(res.stdout + res.stderr)
    data = show(run_id)
    levels = {p["point"]: p["labels"]["tiles"] for p in data["points"]}
    assert sorted(levels.values()) == ["1", "2"]
    # Each level ran every tile on that tile's own clone, with its figures per tile.
    ran: dict[str, set[tuple[str, str]]] = {}
    run_dir = Path(data["run"]["run_dir"])
    for row in csv.DictReader((run_dir / "samples.csv").open()):
        if row["metric"] == "disk.read_iops" and row.get("guest"):
            tile = dict(json.loads(row["labels"] or "{}")).get("tile", "")
            ran.setdefault(levels[int(row["point"])], set()).add((tile, row["guest"]))
    assert ran == {"1": {("1", "storage-1")}, "2": {("1", "storage-1"), ("2", "storage-2")}}
    moves = [e for e in map(json.loads, (run_dir / "log.jsonl").read_text().splitlines())
             if e.get("event") == "point_vms"]
    assert [len(e["created"]) for e in moves] == [0, 1]  # tile 1's clone came up front
    answer = data["verdict"]["answers"][0]
    assert answer["kind"] == "tiles" and answer["text"].startswith("2 of 2 tiles pass")
    assert simlab.ours() == set()  # every clone destroyed
