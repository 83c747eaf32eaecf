"""Ctrl-C and kill -9 of a run of two workloads at once (fio and Redis, in their steady
phase): Ctrl-C stops both and leaves nothing in the guests; after kill -9, what both
left is found and removed by `vbench cleanup`."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    guest_workdir,
    remote_processes,
    vbench,
    vbench_popen,
    wait_for_log,
    write_lab,
)
from tests.e2e.test_consolidation import FIO, redis

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_an_interrupted_bundle_leaves_nothing_in_its_guests(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path, how: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    doc = {"version": 1, "name": "tiles-interrupt",
           "topology": {"disk": {"nodes": ["guest1"]}, "cache": {"nodes": ["guest2"]}},
           "workloads": {
               "disk": {"driver": "fio", "roles": {"target": "disk"}, "params": FIO},
               "kv": {"driver": "redis_scaleout",
                      "roles": {"servers": "cache", "clients": "cache"},
                      "params": redis(local_guests[1].address)}},
           # Steady phases that outlive the test by far: only the interrupt ends them.
           "repeat": 1, "phases": {"warmup": "0s", "steady": "10m"}}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = vbench_popen("run", str(scenario), "--lab", str(lab))
    try:
        # The trial's steady phase starts once both workloads are in theirs.
        wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0,
                     trial=1)
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    (log,) = (vbench_home / "results").glob("*/log.jsonl")
    run_id = log.parent.name
    scratch = guest_workdir(lab) / run_id
    if how == "sigint":
        assert proc.returncode == 130, out + err
    else:
        assert proc.returncode == -signal.SIGKILL
        left = remote_processes(f"{scratch}/")
        assert any("fio" in x for x in left) and any("redis-server" in x for x in left), left
        res = vbench("cleanup", run_id, "--lab", str(lab))
        assert res.returncode == 0, res.stdout + res.stderr
    assert remote_processes(run_id) == []
    assert not scratch.exists()
