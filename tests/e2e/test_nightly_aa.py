"""`vbench run --aa`: an A/A test on the loopback guests (real fio) whose run-to-run
noise per metric is stored with the lab fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import vbench, write_lab, write_scenario
from vbench.results import triage
from vbench.results.store import Store

pytestmark = pytest.mark.e2e


def test_aa_runs_back_to_back_and_stores_the_noise(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # The scenario's aa: makes `vbench run` an A/A test (as --aa 3 would).
    s = write_scenario(tmp_path / "s.yaml", groups=1, steady="1s", warmup="0s", repeat=1,
                       factors="  bs: [4k]\n", extra="aa: {runs: 3}\n")
    done = vbench("run", str(s), "--lab", str(lab), "--results", str(tmp_path / "r"),
                  "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert len(doc["runs"]) == 3 and doc["stored"] > 0
    iops = next(n for n in doc["noise"] if n["metric"] == "total_iops")
    assert len(iops["means"]) == 3 and iops["cv"] > 0 and iops["labels"] == {"bs": "4k"}
    assert "run-to-run noise" in done.stderr and "total_iops" in done.stderr
    with Store.open(None, tmp_path / "r") as store:
        kept = {n.metric: n for n in triage.noise(store, doc["lab_fingerprint"], "e2e-fio")}
        assert kept["total_iops"].cv == pytest.approx(iops["cv"])
        assert kept["total_iops"].run_ids == tuple(doc["runs"])
        assert all("aa" in store.get_run(r).tags for r in doc["runs"])
    refused = vbench("run", str(s), "--lab", str(lab), "--aa", "2")
    assert refused.returncode == 2 and "--aa 2: an A/A test needs at least 3" in refused.stderr
