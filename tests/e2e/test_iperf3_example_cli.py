"""examples/iperf3-local.yaml as a user runs it, against this test's loopback lab: real
iperf3, the label template in the stored run and its exports, and the collectors'
cpu_efficiency (Gbps per guest core from sysstat) beside iperf3's own gbps_per_core."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import LocalGuests, missing_peer
from tests.e2e.helpers import run_id_of, vbench, write_lab
from tests.integration.test_iperf3_workload import free_base

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "iperf3-local.yaml"


def test_iperf3_local_example_runs_and_names_its_points(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    if shutil.which("iperf3") is None:
        missing_peer("iperf3 is not installed (make test installs it)")
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    port = free_base(local_guests, 2)
    res = vbench("run", str(EXAMPLE), "--lab", str(lab), "--no-report",
                 "--set", "repeat=1", "--set", f"workload.params.port={port}", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    out = vbench("report", run_id, "--format", "json", "-o", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    agg = {(a["title"], a["metric"]): a for a in doc["runs"][0]["aggregates"]
           if a["point"] is not None}
    titles = {t for t, _ in agg}
    assert titles == {"256B-1x", "256B-2x", "16KB-1x", "16KB-2x", "64KB-1x", "64KB-2x"}
    assert all(agg[(t, "gbps")]["mean"] > 0 for t in titles)
    assert agg[("256B-1x", "vs_256B")]["mean"] == 1.0
    # sysstat ran on both guests: the derived CPU efficiency exists for every point.
    assert all(agg[(t, "cpu_efficiency")]["unit"] == "Gbps/core" for t in titles)
