"""`vbench run --resume RUN` on an interrupted matrix run: the trials that finished are
kept as they were, the rest run under the same run id."""

from __future__ import annotations

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
