"""A real find-max run: fio on a local sshd guest, searching the rate under a total-IOPS
limit and a latency criterion (examples/fio-findmax-local.yaml); then an interrupted
search resumed with `vbench run --resume`."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    run_id_of,
    show,
    vbench,
    vbench_popen,
    wait_for_log,
    write_lab,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

EXAMPLE = Path(__file__).parents[2] / "examples" / "fio-findmax-local.yaml"
LIMIT = 400  # the example's total-IOPS limit: the answer the search must bracket


def _levels(run: dict) -> dict[int, float]:
    return {int(p["point"]): float(p["labels"]["rate_iops"]) for p in run["points"]}


def test_fio_findmax_brackets_the_rate_limit(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    res = vbench("run", str(EXAMPLE), "--lab", str(lab), timeout=600)
    assert res.returncode == 0, res.stderr
    run_id = run_id_of(res.stdout + res.stderr)
    run = show(run_id)
    plan = json.loads((Path(run["run"]["run_dir"]) / "plan.json").read_text())
    assert plan["schedule"]["kind"] == "findmax"
    levels = _levels(run)
    assert len(levels) <= 14 and len(set(levels.values())) == len(levels)
    out = res.stdout + res.stderr
    assert "find-max rate_iops" in out, out
    hp = float(out.split("highest pass ")[1].split()[0])
    lf = float(out.split("lowest fail ")[1].split()[0])
    # fio holds its rate closely: the bracket holds the limit, within the 5 % gap.
    assert hp <= LIMIT * 1.02 and lf >= LIMIT * 0.98
    assert lf - hp <= 0.05 * lf
