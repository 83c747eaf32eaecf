"""A busy VM that is not the run's, seen in esxtop, disturbs the trial — on a lab of static
nodes and one ESXi host without vCenter.

The host is the esxtop replay stand-in (tests/tools/esxtop_replay.py) on a loopback SSH
guest: the recording's values, except the VM groups its ``busy-groups`` file maps to a
real process here, whose measured CPU it reports as that group's ``% Used``. One real
`stress-ng --cpu 1` is mapped to two groups at once: ``styx`` (the lab node guest1's
VM: the benchmark's own) and ``poseidon`` (another VM): the same load, only one of them
a disturbance. The thresholds are 5 % of a core: beside two CPU hogs the stress-ng
worker still gets far more than that.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import interrupt_at_trial, run_id_of, show, vbench, vbench_popen
from tests.e2e.test_collectors_cli import install_replay, lab_with_host, scenario, stored
from vbench.errors import EXIT_LAB
from vbench.guest.ssh import Guest


@pytest.fixture
def busy_process() -> Iterator[int]:
    """A real busy process (stress-ng and its worker, in their own process group), killed
    at the end."""
    proc = subprocess.Popen(["stress-ng", "--cpu", "1", "--timeout", "300s"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _setup(guests: LocalGuests, tmp: Path, folder: str, busy: dict[str, int],
           disturbance: dict, also: tuple[dict, ...] = ()) -> tuple[Path, Path]:
    esxtop = install_replay(guests, folder)
    with Guest(guests[0]) as host:
        host.put_text("".join(f"{g}={pid}\n" for g, pid in busy.items()),
                      str(Path(esxtop).parent / "busy-groups"))
    lab = lab_with_host(tmp / "lab.yaml", guests)
    doc = yaml.safe_load(lab.read_text())
    doc["nodes"]["guest1"]["vm"] = "styx"  # the benchmark's own VM on esx1
    lab.write_text(yaml.safe_dump(doc, sort_keys=False))
    s = scenario(tmp / "s.yaml", [{"kind": "esxtop", "interval": "2s",
                                   "options": {"command": esxtop, "counters": ["cpu"]}},
                                  *also], groups=1)
    doc = yaml.safe_load(s.read_text())
    doc["phases"]["steady"] = "5s"
    doc["disturbance"] = disturbance
    s.write_text(yaml.safe_dump(doc, sort_keys=False))
    return s, lab


def _records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "disturbances.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines]


def test_a_busy_vm_that_is_not_the_runs_disturbs_the_trial_which_runs_again(
    local_guests: LocalGuests, tmp_path: Path, busy_process: int
) -> None:
    s, lab = _setup(local_guests, tmp_path, "replay-neighbour-retry",
                    {"styx": busy_process, "poseidon": busy_process},
                    {"action": "retry", "retries": 1, "other_vm_cpu": 5},
                    also=({"kind": "guest_sysstat", "interval": "1s",
                           "options": {"activities": ["cpu"]}},))
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    samples, trials, run_dir = stored(run_id)
    records = _records(run_dir)
    # Disturbed twice: run again once, then kept and flagged (retries spent).
    assert [r["action"] for r in records] == ["retried", "flag"], records
    for r in records:
        assert r["text"].startswith("VM poseidon used "), r["text"]
        assert "of a core on esx1 in the steady window (mean; peak " in r["text"]
        assert "styx" not in r["text"]  # as busy, but the benchmark's own
        assert [(e["kind"], e["source"], e["about"]) for e in r["events"]] == [
            ("cpu", "esxtop", "poseidon")]
    assert (run_dir / "attempts" / "0-1.1").is_dir()
    # The kept attempt's series hold its own samples only: the retry collects into the
    # same remote folder, where sadc appended to the set-aside attempt's .sa file.
    start = trials[0]["phases"]["warmup_start"]
    for rec in json.loads((run_dir / "series" / "0-1" / "collectors.json").read_text()):
        times = pq.read_table(run_dir / rec["file"], columns=["time"]).column("time")
        first = times.cast("int64").to_numpy().min() / 1e6
        assert first >= start - 2.5, (rec["collector"], first - start)
    assert [t["status"] for t in trials] == ["ok"]
    cpu = {r.guest: r.value for r in samples.itertuples() if r.metric == "vm_cpu_used"}
    assert cpu["styx"] > 5 and cpu["poseidon"] > 5, cpu
    assert cpu["hermes"] < 5, cpu  # replayed as recorded
    shown = vbench("show", run_id)
    assert "point 1 trial 1 disturbed: VM poseidon used" in shown.stdout, shown.stdout


def test_with_fail_a_busy_neighbour_fails_the_trial_and_ignored_vms_are_not_said(
    local_guests: LocalGuests, tmp_path: Path, busy_process: int
) -> None:
    s, lab = _setup(local_guests, tmp_path, "replay-neighbour-fail",
                    {"poseidon": busy_process, "hermes": busy_process},
                    {"action": "fail", "other_vm_cpu": 5, "ignore": ["HERM*"]})
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == EXIT_LAB, res.stdout + res.stderr
    _samples, trials, run_dir = stored(run_id_of(res.stdout))
    assert [t["status"] for t in trials] == ["failed"]
    assert trials[0]["error"].startswith("disturbed: VM poseidon used "), trials[0]["error"]
    assert "hermes" not in trials[0]["error"]
    assert [r["action"] for r in _records(run_dir)] == ["fail"]


def test_a_resumed_run_keeps_the_busy_vms_found_in_the_trials_it_keeps(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path, busy_process: int
) -> None:
    """Trial 1 is disturbed, the run is interrupted in trial 2's steady window and resumed:
    trial 1's record is kept (once), trial 2 is watched again in the resumed session, and
    the local lab's testbed holds both."""
    s, lab = _setup(local_guests, tmp_path, "replay-neighbour-resume",
                    {"poseidon": busy_process}, {"action": "flag", "other_vm_cpu": 5})
    doc = yaml.safe_load(s.read_text())
    doc["repeat"] = 2
    s.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = vbench_popen("run", str(s), "--lab", str(lab), "--no-report")
    run_id = interrupt_at_trial(proc, vbench_home, 2, 120, "second trial")
    _samples, _trials, run_dir = stored(run_id)
    assert [(r["trial"], r["action"]) for r in _records(run_dir)] == [(1, "flag")]
    res = vbench("run", "--resume", run_id, "--lab", str(lab), "--no-report", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    records = _records(run_dir)
    assert [(r["trial"], r["action"]) for r in records] == [(1, "flag"), (2, "flag")]
    assert all(r["text"].startswith("VM poseidon used ") for r in records), records
    shown = show(run_id)
    assert [d["trial"] for d in shown["run"]["testbed"]["disturbances"]] == [1, 2]
    assert shown["disturbed"][0]["disturbed_included"] == [1, 2], shown["disturbed"]
