"""The nightly check's alert fires once, through `vbench run` itself (real fio on the
loopback guests): a throttled night fails (exit 1, a failing JUnit case), the next
throttled night against the same baseline lists it as known and exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import vbench, write_lab, write_scenario

pytestmark = pytest.mark.e2e


def _failures(xml: Path) -> int:
    text = xml.read_text()
    return int(text.split('failures="', 1)[1].split('"', 1)[0])


def test_a_regression_fails_its_first_night_only(local_guests: LocalGuests,
                                                  tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", groups=1, steady="1s", warmup="0s", repeat=3,
                       factors="  bs: [4k]\n",
                       extra="regression: {metrics: [total_iops]}\n")
    first = vbench("run", str(s), "--lab", str(lab), "--json")
    assert first.returncode == 0, first.stderr[-3000:]
    base = json.loads(first.stdout)["run_id"]
    throttled = ("--set", "workload.params.rate_iops=200", f"--check-regression={base}",
                 "--json")
    night1 = vbench("run", str(s), "--lab", str(lab), *throttled)
    assert night1.returncode == 1, night1.stdout[-3000:] + night1.stderr[-3000:]
    run1 = json.loads(night1.stdout)["run_id"]
    night2 = vbench("run", str(s), "--lab", str(lab), *throttled)
    assert night2.returncode == 0, night2.stdout[-3000:] + night2.stderr[-3000:]
    doc2 = json.loads(night2.stdout)
    (check,) = doc2["regression"]["checks"]
    assert check["status"] == "regression" and doc2["regression"]["regressed"] is False
    assert check["known"] == f"alerted by the check of run {run1}"
    assert "1 known regression not failing" in night2.stderr
    for run_id, failing in ((run1, 1), (doc2["run_id"], 0)):
        xml = tmp_path / f"{run_id}.xml"
        done = vbench("report", run_id, "--baseline", base, "-o", str(xml))
        assert done.returncode == 0 and _failures(xml) == failing, done.stderr
