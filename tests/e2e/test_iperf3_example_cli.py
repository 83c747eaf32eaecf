"""examples/iperf3-local.yaml as a user runs it, against this test's loopback lab: real
iperf3, the label template in the stored run and its exports, and the collectors'
cpu_efficiency (Gbps per guest core from sysstat) beside iperf3's own gbps_per_core."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def test_iperf3_cpu_efficiency_uses_host_cores_from_replayed_esxtop(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    """With esxtop running (here a *replay of recorded esxtop output* on the loopback
    host, see test_collectors_cli.py), cpu_efficiency is Gbps per host core used."""
    import yaml

    from tests.e2e.test_collectors_cli import install_replay, lab_with_host, stored

    if shutil.which("iperf3") is None:
        missing_peer("iperf3 is not installed (make test installs it)")
    esxtop = install_replay(local_guests, "replay-iperf3")
    lab = lab_with_host(tmp_path / "lab.yaml", local_guests)
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["factors"] = {"msg": {"path": "workload.params.length", "levels": ["64K"]}}
    doc["label"] = "{msg}B"
    doc["derived"] = []
    doc["repeat"] = 1
    doc["phases"] = {"warmup": "1s", "steady": "4s"}
    doc["workload"]["params"]["port"] = free_base(local_guests, 1)
    doc["collectors"] = [{"kind": "esxtop", "interval": "2s",
                          "options": {"command": esxtop, "counters": ["cpu"]}}]
    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = vbench("run", str(s), "--lab", str(lab), "--no-report", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    samples, _trials, _dir = stored(run_id_of(res.stdout))
    run_level = samples[samples.guest.isna() & samples.labels.map(lambda v: v in ("", "{}",
                                                                                 "[]", None))]
    by = {r.metric: r for r in run_level.itertuples()}
    assert by["cpu_efficiency"].unit == "Gbps/core"
    assert by["cpu_efficiency"].value == pytest.approx(
        by["gbps"].value / by["host_cores_used"].value)
