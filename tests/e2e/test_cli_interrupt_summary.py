"""Ctrl-C before any trial finished: `vbench run` prints what it kept, not an empty
summary table of "no data"; its plain progress line names the point, its factor values
and the time."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import vbench_popen, wait_for_log, write_lab, write_scenario

pytestmark = pytest.mark.e2e


def test_interrupt_prints_what_was_kept_instead_of_an_empty_table(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", steady="30s", warmup="0s", repeat=1,
                       factors="  bs: [4k]\n")
    proc = vbench_popen("run", str(s), "--lab", str(lab), "--no-report")
    wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0, trial=1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "no data" not in out + err  # no table of empty cells
    assert re.search(r"interrupted: kept 0 finished trials \(0 ok\) in the store, and every "
                     r"trial's raw outputs and partial figures in \S+; `vbench run --resume "
                     r"\S+ --lab \S+` runs the rest", err), err
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d point 1/1 \[bs=4k\] trial 1/1: "
                     r"interrupted", err, re.M), err
