"""One `vbench run` reads its run back from the store once and analyses it once, whatever
it prints (summary, QoS, regression, --json, report, figures files) — issue 22: it used to
read it ~6 times and analyse it ~5 times. Counted around the real CLI, in this process,
on the local lab."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import vbench, write_lab, write_scenario
from tests.unit.test_run_read_once import READS, Counted, counted  # noqa: F401 (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _run_id(output: str) -> str:
    m = re.search(r"^run (\S+): ", output, re.M)
    assert m, output
    return m.group(1)


def test_a_run_reads_and_analyses_itself_once(
    local_guests: LocalGuests, tmp_path: Path, counted: Counted  # noqa: F811
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    scenario = write_scenario(tmp_path / "s.yaml", repeat=1, warmup="0s")
    env = {"VBENCH_HOME": str(tmp_path / "home")}
    first = vbench("run", str(scenario), "--lab", str(lab), env=env)
    assert first.returncode == 0, first.stderr
    base = _run_id(first.stdout + first.stderr)
    counted.reads.clear()
    counted.analyses.clear()
    res = vbench("run", str(scenario), "--lab", str(lab), "--check-regression", "last",
                 "--json", env=env)
    assert res.returncode in (0, 1), res.stderr  # 1: a regression between two short runs
    doc = json.loads(res.stdout)
    run_id = doc["run_id"]
    assert doc["regression"] is not None and Path(doc["report"]).is_file()
    assert (Path(doc["run_dir"]) / "summary.json").is_file()
    assert {n: counted.reads[(n, run_id)] for n in READS} == dict.fromkeys(READS, 1)
    assert counted.analyses[run_id] == 1
    assert counted.reads[("get_run", base)] >= 1  # the baseline, read for itself
