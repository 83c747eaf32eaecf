"""fio's ``filename: disk:N`` on the local lab, through the CLI: a lab node that lists no
data disks is refused before anything runs, in one line naming it; a node that lists
them gets its N-th one, resolved before the trial and recorded in the run log."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import guest_workdir, log_events, run_id_of, vbench, write_lab

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

SCENARIO = """version: 1
name: disk-index
topology:
  storage: {count: 1}
workload:
  driver: fio
  params:
    rw: randwrite
    size: 4m
    ioengine: psync
    direct: false
    filename: disk:2
phases: {steady: 1s}
repeat: 1
"""


def test_disk_index_on_a_lab_node_without_disks_fails_before_anything_runs(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    res = vbench("run", str(tmp_path / "s.yaml"), "--lab", str(lab))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert lines[0].startswith(f"{tmp_path / 's.yaml'}:12:15:")
    assert "disk:2 needs a cloned VM with vm.disks; guest1 is a lab node" in lines[0]
    assert not (vbench_home / "results").exists() or not list(
        (vbench_home / "results").glob("*/log.jsonl"))  # no run was started


def test_a_lab_nodes_listed_disk_is_the_one_fio_writes(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    data = guest_workdir(tmp_path / "lab.yaml").parent / "disks"
    data.mkdir()
    first, second = data / "first.img", data / "second.img"
    lab = write_lab(tmp_path / "lab.yaml", local_guests, extra_nodes={
        local_guests[0].name: {"address": local_guests[0].address, "roles": ["storage"],
                               "disks": [str(first), str(second)]}})  # fmt: skip
    (tmp_path / "s.yaml").write_text(SCENARIO)
    res = vbench("run", str(tmp_path / "s.yaml"), "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    # disk:2 is the node's second disk: fio wrote it (4 MiB) and never the first.
    assert second.stat().st_size == 4 << 20 and not first.exists()
    (event,) = [e for e in log_events(vbench_home) if e.get("event") == "fio_disks"]  # 1 trial
    assert event["guest"] == local_guests[0].name
    assert event["disks"] == [{"disk": 2, "device": str(second), "uuid": None}]
    job = (vbench_home / "results" / run_id / "raw").rglob("measure.fio")
    assert f"filename={second}" in next(job).read_text()
