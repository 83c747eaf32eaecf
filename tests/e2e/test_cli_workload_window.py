"""The steady window is the one the workload measured: real fio on two loopback guests,
`vbench run`, then the stored trial's window equals fio's own runtime, its samples carry
that window, the controller's wall window stays beside it, and no window warning is
given for the controller's overhead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, write_lab, write_scenario
from vbench.report.build import report_data
from vbench.report.data import ReportView
from vbench.results.store import Store

pytestmark = pytest.mark.e2e


def test_recorded_window_is_fios_runtime(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # Two guests: the trial's window lasts the longest guest's fio runtime, exactly.
    s = write_scenario(tmp_path / "s.yaml", groups=2, steady="1s", warmup="0s", repeat=2,
                       factors="  bs: [4k]\n")
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    run_id = run_id_of(res.stdout)
    doc = show(run_id)
    run_dir = Path(doc["run"]["run_dir"])
    with Store.open(None, vbench_home / "results") as store:
        samples = store.samples_frame(run_id)
        view = ReportView(report_data(store, run_id))
    # The controller's overhead (starting fio, seeing it exit: ~0.5 s on 1 s here) is no
    # deviation of the window fio measured.
    assert not [w for w in view.warnings() if "scenario asks" in w], view.warnings()
    assert "workload-timed; controller +" in view.window_text
    for t in doc["trials"]:
        ph = t["phases"]
        outputs = list((run_dir / "raw" / f"{t['point']}-{t['trial']}").rglob("fio.json"))
        assert len(outputs) == 2
        runtime = max(job[d]["runtime"] for f in outputs for job in json.loads(
            f.read_text())["jobs"] for d in ("read", "write")) / 1e3
        assert ph["workload_end"] - ph["workload_start"] == pytest.approx(runtime, abs=1e-6)
        # The controller's wall window is kept, and it holds more than fio's runtime.
        assert ph["steady_end"] - ph["steady_start"] >= runtime - 0.05
        mine = samples[(samples["point"] == t["point"]) & (samples["trial"] == t["trial"])]
        assert len(mine) > 0
        assert (mine["window_start"] == ph["workload_start"]).all()
        assert (mine["window_end"] == ph["workload_end"]).all()
