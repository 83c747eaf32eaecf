"""Adaptive repetitions on the local lab (issue 25 item 1): ``repeat: {min, max,
target}`` adds trials to the noisy point only, every output says how many each point
took and whether it met the target, and ``--resume`` during the added trials counts the
trials already stored.

The noise is made, not hoped for: both points run fio throttled (``rate_iops``) with a
70/30 random read/write mix, and the target metric is the read share of the I/Os (a
derived figure). With ``randrepeat: true`` fio draws the same read/write sequence every
trial, so the share repeats to a fraction of a per mille (quiet); with
``randrepeat: false`` each trial draws a new one, so over ~1,000 I/Os the share moves by
a few per cent (noisy) — far from a ±1 % target whatever the machine's speed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    interrupt_at_trial,
    run_id_of,
    show,
    vbench,
    vbench_popen,
    write_lab,
    write_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

REPEAT = "repeat: {min: 3, max: 6, target: {ci_half_width: 1%}, metrics: [read_iops]}\n"


def _scenario(tmp: Path, repeat: str = REPEAT) -> Path:
    s = write_scenario(
        tmp / "adaptive.yaml", groups=1, warmup="0s", steady="2s",
        factors="  randrepeat: [true, false]\n",
    )
    text = s.read_text().replace("repeat: 2\n", repeat)
    s.write_text(text.replace("rw: randrw", "rw: randread").replace(
        "    direct: false\n", "    direct: false\n    rate_iops: 400\n"
        "    extra: {rate_process: poisson}\n"))
    return s


def _trials(doc: dict[str, Any]) -> dict[int, int]:
    out: dict[int, int] = {}
    for t in doc["trials"]:
        if t["status"] == "ok":
            out[t["point"]] = out.get(t["point"], 0) + 1
    return out


def test_the_noisy_point_takes_more_trials_and_every_output_says_so(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = _scenario(tmp_path)
    plan = vbench("plan", str(s), "--lab", str(lab))
    assert "2 points × 3–6 trials (until the confidence target) = 6–12 trials" in plan.stderr \
        + plan.stdout
    res = vbench("run", str(s), "--lab", str(lab), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    doc = show(run_id_of(res.stdout + res.stderr))
    counts = _trials(doc)
    # Noisy: up to max. Quiet: met before it — at the minimum on a quiet machine; a machine
    # loaded past its cores (the suite's own workers beside other jobs) can starve one of
    # its 2-second trials enough to need one or two more, so the count is not fixed here.
    assert counts[1] == 6 and 3 <= counts[0] < 6, counts
    quiet = counts[0]
    repeat = doc["verdict"]["repeat"]
    assert repeat["points"][0]["text"] == f"met after {quiet}"
    assert repeat["points"][1]["text"].startswith("not met at max 6: ±")
    assert "1 of 2 points did not meet" in repeat["text"]
    assert "1 of 2 points did not meet" in res.stdout + res.stderr
    run_id = doc["run"]["run_id"]
    shown = vbench("show", run_id, env={"COLUMNS": "200"}).stdout
    assert f"met after {quiet}" in shown and "not met at max 6" in shown
    for suffix in ("md", "html"):
        path = tmp_path / f"report.{suffix}"
        assert vbench("report", run_id, "-o", str(path)).returncode == 0
        text = path.read_text(encoding="utf-8")
        assert f"met after {quiet}" in text and "not met at max 6: ±" in text, suffix
    assert "3–6 trials per point (until the confidence target)" in text  # the HTML's facts


# A target the noisy point can meet, which 3 trials cannot show: with max 24 the stop
# is decided at 1 - 5 %/22 (t ≈ 22 at 2 df), so 3 trials meet ±3 % only when their sd
# comes out under 0.24 % — for the quiet point (a fraction of a per mille) always, as
# ±1 % at max 6 above (0.20 %). The noisy one (trial cv 2.6-4 % seen here; it took 17
# and 20 trials at ±2.5 %/max 20, 23 at ±3 %/max 24) meets at 3 in ~1 % of runs:
# analysis.adaptive's rule simulated at cv 3 / 4 / 4.5 %: met at 3 in 0.8 / 0.4 / 0.1 %
# of runs, not met at max never (3,000 runs each); 13-22 trials on average.
MEETS = "repeat: {min: 3, max: 24, target: {ci_half_width: 3%}, metrics: [read_iops]}\n"


def test_a_noisy_point_meets_a_target_it_can_reach(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    # Review of issue 25: the case above never shows the noisy point meeting its target
    # (it always ends "not met at max 6").
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    res = vbench("run", str(_scenario(tmp_path, MEETS)), "--lab", str(lab), timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    doc = show(run_id_of(res.stdout + res.stderr))
    counts = _trials(doc)
    # Its count is not asserted above 3: the noisy point meets at 3 in about 1 % of runs
    # (simulated above), and a test may not fail by chance; that it takes more trials
    # than the quiet point is what the test above shows.
    # The quiet point meets at the minimum on a quiet machine; beside two CPU hogs it
    # once needed a fourth trial (one of its 2-second trials starved), so it is not fixed.
    assert 3 <= counts[0] < 24 and 3 <= counts[1] <= 24, counts
    points = doc["verdict"]["repeat"]["points"]
    assert [points[0]["text"], points[1]["text"]] == [f"met after {counts[0]}",
                                                       f"met after {counts[1]}"]
    assert "did not meet" not in res.stdout + res.stderr


def test_require_turns_a_missed_target_into_exit_1(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = _scenario(tmp_path, REPEAT.replace("min: 3, max: 6", "min: 3, max: 3")
                  .replace("read_iops]", "read_iops], require: true"))
    res = vbench("run", str(s), "--lab", str(lab), timeout=600)
    assert res.returncode == 1, res.stderr[-3000:]
    assert "confidence target not met" in res.stdout + res.stderr


def test_resume_during_added_trials_counts_the_trials_already_stored(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = _scenario(tmp_path)
    proc = vbench_popen("run", str(s), "--lab", str(lab))
    # Trial 8 of the run is an added trial of the noisy point (6 minimum trials first).
    run_id = interrupt_at_trial(proc, vbench_home, 8, 600, "an added trial")
    before = _trials(show(run_id))
    assert 3 <= before[0] < 6 and 3 <= before[1] < 6, before  # quiet: 3 unless starved

    res = vbench("run", "--resume", run_id, "--lab", str(lab), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    kept = before[0] + before[1]
    assert f"kept {kept} trials" in res.stderr and f"{0}–{12 - kept} of 6–12 trials remain" \
        in res.stderr, res.stderr[-2000:]
    after = show(run_id)
    counts = _trials(after)  # never more than max, the stored ones counted
    # The quiet point may need all 6 too when its trials are starved (beside a CPU hog:
    # {0: 6, 1: 6}); never fewer than it had, never more than max.
    assert counts[1] == 6 and before[0] <= counts[0] <= 6, counts
    numbers = sorted(t["trial"] for t in after["trials"]
                     if t["point"] == 1 and t["status"] == "ok")
    assert numbers == [1, 2, 3, 4, 5, 6]


def test_a_find_max_search_with_an_adaptive_repeat_runs_and_reports(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    example = Path(__file__).parents[2] / "examples" / "fio-findmax-local.yaml"
    s = tmp_path / "findmax.yaml"
    # A 1 s window and a 25 % gap: ~6 levels instead of ~9 (the suite's time), enough
    # for levels that pass, fail and are verified.
    s.write_text(example.read_text().replace(
        "repeat: 1\n", "repeat: {min: 3, max: 3, target: {ci_half_width: 5%}}\n").replace(
        "  steady: 2s\n", "  steady: 1s\n").replace("gap: 5,", "gap: 25,"))
    assert "  steady: 1s\n" in s.read_text() and "gap: 25," in s.read_text()
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    res = vbench("run", str(s), "--lab", str(lab), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    run_id = run_id_of(res.stdout + res.stderr)
    doc = show(run_id)
    schedule = json.loads((Path(doc["run"]["run_dir"]) / "plan.json").read_text())["schedule"]
    # search.trials 1 per level, then one more while the level's verdict is uncertain
    # under the interval, up to max 3: one trial has no interval, so every level takes 2-3.
    assert schedule["kind"] == "findmax" and schedule["params"]["decide_by_ci"]
    assert schedule["params"]["max_trials"] == 3
    per_level: dict[int, int] = {}
    for t in doc["trials"]:
        per_level[t["point"]] = per_level.get(t["point"], 0) + 1
    assert all(2 <= n <= 3 + 1 for n in per_level.values()), per_level  # +1: verification
    assert doc["verdict"]["answer"]["kind"] == "find-max"
    assert doc["verdict"]["repeat"] is None  # the search decides its levels' trials
    listed = vbench("ls")
    assert listed.returncode == 0 and run_id[:8] in listed.stdout + listed.stderr
