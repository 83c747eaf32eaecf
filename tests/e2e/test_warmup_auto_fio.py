"""``phases.warmup: auto`` on real fio: a warm-up fio read live through its status
output, stopped when the detector says the rate settled (well before the cap for a
rate-capped fio), then the measured fio with no ramp; the warm-up each trial took is in
its phase marks, the run log and the verdict; Ctrl-C inside an automatic warm-up stops
the warm-up fio, and --resume runs that trial again with a warm-up of its own."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    fio_started,
    log_events,
    run_id_of,
    show,
    vbench,
    vbench_popen,
    wait_for,
    write_lab,
    write_scenario,
)
from vbench.analysis.warmup import BATCH, SETTLED_BATCHES, observation_interval

pytestmark = pytest.mark.e2e

# Room for 80 observations (0.25 s each): a loaded machine's noisier rates still settle
# within it; a quiet one ends at about 40 (10 s).
CAP = 20.0


def _scenario(tmp_path: Path, guests: int = 1, repeat: int = 2) -> Path:
    s = write_scenario(tmp_path / "s.yaml", groups=guests, steady="1s",
                       warmup=f"auto\n  warmup_cap: {CAP:g}s", repeat=repeat,
                       factors="  bs: [4k]\n")
    s.write_text(s.read_text().replace("    direct: false\n",
                                       "    direct: false\n    rate_iops: 400\n"))
    return s


def test_an_automatic_warm_up_ends_when_fio_settles_and_the_window_follows_it(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # Two guests: the detector sums their rates. One trial: the Ctrl-C test below runs
    # two, and lists both.
    s = _scenario(tmp_path, guests=2, repeat=1)
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]

    step = observation_interval(CAP)  # 0.25 s: the cap leaves room for 80 observations
    ended = [e for e in log_events(vbench_home) if e.get("event") == "fio_warmup_auto"]
    assert len(ended) == 1, ended  # one per trial
    for e in ended:
        assert e["reason"] == "settled", e  # the detector ended it, not the cap
        assert e["interval"] == step and e["observations"] >= SETTLED_BATCHES * BATCH
        assert e["fio_seconds"] < CAP  # on fio's clock: the controller's load is no factor
    doc = show(run_id_of(res.stdout))
    for trial in doc["trials"]:
        ph = trial["phases"]
        warm = ph["steady_start"] - ph["warmup_start"]
        # At least the 40 observations the rule ends on (fio's 0.25 s intervals).
        assert warm >= SETTLED_BATCHES * BATCH * step, ph
    run_dir = Path(doc["run"]["run_dir"])
    # The measured fio ran the steady window only, no ramp: its figures are the trial's.
    results = sorted(run_dir.glob("raw/*/*/fio.json"))
    assert len(results) == 2, results  # 1 trial x 2 guests
    for path in results:
        job = json.loads(path.read_text())["jobs"][0]
        assert "ramp_time" not in job["job options"]
        assert 900 <= job["job_runtime"] <= 1100, job["job_runtime"]
    kept = [json.loads(p.read_text()) for p in sorted(run_dir.glob("raw/*/warmup-auto.json"))]
    assert len(kept) == 1 and all(k["reason"] == "settled" for k in kept), kept
    assert all(len(k["iops"]) >= SETTLED_BATCHES * BATCH for k in kept)
    # rate_iops 400 caps each direction of the randrw job: what the detector saw (reads
    # and writes of both guests) sits at 1,600 IO/s (the median: an interval may dip).
    assert all(1400 < statistics.median(k["iops"]) < 1800 for k in kept), kept
    warnings = json.loads((run_dir / "verdict.json").read_text())["warnings"]
    lines = [w for w in warnings if w.startswith("warm-up (auto, cap 20 s) at ")]
    assert len(lines) == 1 and "trial 1 " in lines[0], warnings
    assert "the cap" not in lines[0]
    # The report draws what the detector saw, the settling point and the end.
    html = (run_dir / "report.html").read_text()
    assert "automatic warm-up at bs=4k, trial 1" in html
    assert "MSER-5 found it settled at the dashed line (cap 20 s)" in html
    plan = vbench("plan", str(s), "--lab", str(lab))
    assert "warm-up auto (≤ 20s, ended by the detector)" in plan.stdout, plan.stdout


def test_ctrl_c_in_an_automatic_warm_up_stops_it_and_resume_runs_the_trial_again(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    import signal

    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = _scenario(tmp_path)
    proc = vbench_popen("run", str(s), "--lab", str(lab))

    def in_second_warm_up() -> bool:  # trial 2's warm-up fio is running
        marks = [e for e in log_events(vbench_home)
                 if e.get("event") == "phase_mark" and e.get("mark") == "warmup_start"]
        return len(marks) >= 2 or proc.poll() is not None

    wait_for(in_second_warm_up, 300, "trial 2's warm-up")
    assert proc.poll() is None, "the run ended before trial 2's warm-up"
    wait_for(fio_started(lab, "p0-t2"), 60, "trial 2's warm-up fio")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert not fio_started(lab, "")(), "a fio of this test outlived Ctrl-C"
    run_id = run_id_of(out + err)
    # Trial 2's warm-up did not end (it needs 40 observations, 10 s of fio's time): the
    # interrupt came inside it.
    assert len([e for e in log_events(vbench_home) if e.get("event") == "fio_warmup_auto"]) == 1
    before = show(run_id)["trials"]
    assert [(t["trial"], t["status"]) for t in before] == [(1, "ok"), (2, "interrupted")]

    res = vbench("run", "--resume", run_id, "--lab", str(lab), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    after = show(run_id)
    ok = [t for t in after["trials"] if t["status"] == "ok"]
    assert sorted(t["trial"] for t in ok) == [1, 2]
    # Trial 2 ran again with a warm-up of its own, ended by the detector.
    assert len([e for e in log_events(vbench_home) if e.get("event") == "fio_warmup_auto"
                and e.get("reason") == "settled"]) == 2
    warnings = json.loads((Path(after["run"]["run_dir"]) / "verdict.json").read_text())[
        "warnings"]
    assert any(w.startswith("warm-up (auto, cap 20 s) at ") and "trial 1 " in w
               and "trial 2 " in w
               for w in warnings), warnings
