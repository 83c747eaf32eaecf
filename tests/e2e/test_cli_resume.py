"""`vbench run --resume RUN` on an interrupted matrix run: the trials that finished are
kept as they were, the rest run under the same run id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    interrupt_at_trial,
    show,
    vbench,
    vbench_popen,
    write_lab,
    write_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def test_an_interrupted_matrix_run_resumes_without_repeating_finished_trials(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", groups=1, warmup="0s", steady="3s", repeat=2,
                       extra="settings: {order: random, seed: 11}\n")
    proc = vbench_popen("run", str(s), "--lab", str(lab))
    # The third trial of the (recorded) random order is measuring: interrupt it there.
    run_id = interrupt_at_trial(proc, vbench_home, 3, 300, "third trial")
    first = show(run_id)
    kept = {(t["point"], t["trial"]): t["started"] for t in first["trials"]
            if t["status"] != "interrupted"}
    assert 1 <= len(kept) < 4

    res = vbench("run", "--resume", run_id, "--lab", str(lab), timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"resuming run {run_id}: kept {len(kept)} trial" in res.stderr
    assert f"; {4 - len(kept)} of 4 trials remain" in res.stderr
    left = 4 - len(kept)
    assert f"running the {left} trial{'s' if left != 1 else ''} left of 2 points × 2 trials" \
        in res.stderr
    done = show(run_id)
    assert done["run"]["status"] == "ok"
    after = {(t["point"], t["trial"]): (t["status"], t["started"]) for t in done["trials"]}
    assert sorted(after) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert all(status == "ok" for status, _ in after.values())
    assert all(after[k][1] == started for k, started in kept.items())
    plan = (Path(done["run"]["run_dir"]) / "plan.json").read_text()
    assert '"already_done"' in plan and '"seed": 11' in plan


def _under(folder: str) -> list[int]:
    """The pids of this machine's processes working in ``folder`` or naming it (the
    loopback guest's processes are this machine's), as `vbench cleanup` finds them."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cwd = os.readlink(proc / "cwd")
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if folder in cwd + "/" or folder in cmd:
                pids.append(int(proc.name))
    return pids


def test_a_resumed_run_first_stops_what_the_killed_session_left_running(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    """kill -9 in a 12 s steady window leaves that trial's fio running on the guest; the
    resumed session stops it before it runs the trial again (they shared the trial's
    folder and the guest: the run again measured beside its own ghost, or read an empty
    fio.json — seen in the vCenter find-max resume test)."""
    from tests.e2e.helpers import wait_for, wait_for_log

    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", groups=1, warmup="0s", steady="12s", repeat=1,
                       factors="  bs: [4k]\n")
    proc = vbench_popen("run", str(s), "--lab", str(lab))
    try:
        wait_for_log(vbench_home, "phase_mark", timeout=120, proc=proc, mark="steady_start",
                     point=0, trial=1)
        run_dir = next((vbench_home / "results").glob("*/log.jsonl")).parent
        run_id = run_dir.name
        wait_for(lambda: _under(f"/{run_id}/"), 60, "the trial's fio on the guest")
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert _under(f"/{run_id}/"), "the killed session's fio should still be running"

    res = vbench("run", "--resume", run_id, "--lab", str(lab), timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "resume: guest " in res.stderr and ": killed " in res.stderr, res.stderr[-2000:]
    cleaned = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()
               if '"guest_cleaned_on_resume"' in line]
    assert cleaned and all(e["level"] == "info" for e in cleaned), cleaned
    assert show(run_id)["run"]["status"] == "ok"
    assert _under(f"/{run_id}/") == []
