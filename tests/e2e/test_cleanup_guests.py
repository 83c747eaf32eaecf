"""`vbench cleanup RUN` after `kill -9` of the controller: the run's processes left in
its (real sshd, loopback) guests are killed and its scratch directories removed."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    guest_workdir,
    remote_processes,
    vbench,
    vbench_popen,
    wait_for_log,
    write_lab,
    write_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _killed_run(lab: Path, scenario: Path, home: Path) -> str:
    """Start a run, kill -9 its controller in steady state; the run's id."""
    proc = vbench_popen("run", str(scenario), "--lab", str(lab))
    try:
        wait_for_log(home, "phase_mark", 120, proc, mark="steady_start", point=0, trial=1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (log,) = (home / "results").glob("*/log.jsonl")
    return log.parent.name


def test_cleanup_kills_what_a_killed_run_left_in_its_guests(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # fio's steady state outlives the test by far: only cleanup can end it.
    s = write_scenario(tmp_path / "s.yaml", steady="10m", repeat=1, factors="  bs: [4k]\n")
    run_id = _killed_run(lab, s, vbench_home)
    scratch = guest_workdir(lab) / run_id
    left = remote_processes(f"{scratch}/")
    assert any("fio" in line for line in left), left  # nobody stopped the run's fio
    assert scratch.is_dir()

    res = vbench("cleanup", run_id, "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    # Both loopback guests are this machine with one workdir: the first guest cleaned
    # finds every process of the run and removes the directory, the second finds nothing.
    line = rf"^guest guest1: killed (\d+), removed {re.escape(str(scratch))}$"
    m = re.search(line, res.stdout, re.M)
    assert m and int(m.group(1)) >= len(left), res.stdout
    assert "guest guest2: nothing left" in res.stdout
    assert remote_processes(run_id) == []
    assert not scratch.exists()

    again = vbench("cleanup", run_id, "--lab", str(lab))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "guest guest1: nothing left" in again.stdout
    assert "guest guest2: nothing left" in again.stdout


def test_cleanup_names_an_unreachable_guest_and_exits_3(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", steady="10m", repeat=1, factors="  bs: [4k]\n")
    run_id = _killed_run(lab, s, vbench_home)
    # The lab given to cleanup now sends guest2 to a port nobody listens on.
    broken = tmp_path / "broken.yaml"
    text = lab.read_text().replace("address: 127.0.0.3", "address: 127.0.0.3\n    port: 1")
    broken.write_text(text)
    res = vbench("cleanup", run_id, "--lab", str(broken))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "guest guest1: killed " in res.stdout, res.stdout
    assert "guest guest2 (127.0.0.3:1): connection refused" in res.stderr, res.stderr
    assert remote_processes(run_id) == []
    # Once the guest is reachable again, cleanup finishes with success.
    res = vbench("cleanup", run_id, "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "guest guest2: nothing left" in res.stdout
