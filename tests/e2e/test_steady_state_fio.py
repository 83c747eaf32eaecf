"""SNIA PTS steady state on real fio: rounds of every point until the last `window`
agree. A rate-capped fio on a named target, preconditioned once before round 1, is
steady at the first full window; a rule no device can meet stops at the cap and says
"steady state not reached"; the report draws the rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    interrupt_at_trial,
    log_events,
    run_id_of,
    show,
    vbench,
    vbench_popen,
    write_lab,
    write_scenario,
)

pytestmark = pytest.mark.e2e


def _scenario(tmp_path: Path, steady_state: str, *, capped: bool = True,
              params: str = "") -> Path:
    s = write_scenario(tmp_path / "s.yaml", groups=1, steady="1s", warmup="0s", repeat=1,
                       factors="  bs: [4k, 64k]\n", extra=steady_state)
    more = ("    rate_iops: 200\n" if capped else "") + params
    s.write_text(s.read_text().replace("    direct: false\n", "    direct: false\n" + more))
    return s


def test_steady_state_is_reached_at_the_first_window_of_a_capped_fio(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # A named target (a file the loopback guest sees), preconditioned before round 1.
    target = tmp_path / "target.img"
    s = _scenario(tmp_path, "steady_state:\n  metric: total_iops\n  window: 3\n"
                  "  max_excursion: 20%\n  max_slope: 10%\n  max_rounds: 6\n",
                  params=f"    filename: {target}\n"
                  "    precondition: {rw: write, bs: 128k, passes: 2}\n")
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    events = log_events(vbench_home)
    pre = [e for e in events if e.get("event") == "fio_precondition"]
    assert len(pre) == 1 and pre[0]["passes"] == 2 and pre[0]["bs"] == "128k", pre
    first_measure = next(i for i, e in enumerate(events) if e.get("event") == "trial_start")
    assert events.index(pre[0]) > first_measure  # inside the first trial, before its run
    assert target.stat().st_size == 8 * 2**20
    doc = show(run_id_of(res.stdout))
    # Rounds run one trial of every point each: 3 rounds × 2 points, in round order.
    order = [(t["point"], t["trial"]) for t in sorted(doc["trials"],
                                                        key=lambda t: t["started"])]
    assert order == [(0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]
    run_dir = Path(doc["run"]["run_dir"])
    verdict = json.loads((run_dir / "verdict.json").read_text())
    answer = verdict["answers"][0]
    assert answer["kind"] == "steady state"
    assert answer["text"] == "every deciding point steady by round 3"
    assert all(f["window"] == "steady-state window, rounds 1–3" for f in answer["figures"])
    html = (run_dir / "report.html").read_text()
    assert "steady-state rounds of total_iops" in html
    text = vbench("show", run_id_of(res.stdout))
    assert "3 rounds per point (until steady state, at most 6)" in text.stdout, text.stdout


def test_a_rule_no_device_meets_stops_at_the_cap_and_says_steady_state_not_reached(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    # Only the 4k point decides; no real uncapped fio keeps two rounds within 0.01 %.
    s = _scenario(tmp_path, "steady_state:\n  metric: total_iops\n  window: 2\n"
                  "  max_excursion: 0.0001\n  max_rounds: 3\n  at: {bs: 4k}\n", capped=False)
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    doc = show(run_id_of(res.stdout))
    assert len(doc["trials"]) == 6  # the cap: 3 rounds of both points
    verdict = json.loads((Path(doc["run"]["run_dir"]) / "verdict.json").read_text())
    answer = verdict["answers"][0]
    assert answer["status"] == "not reached"
    assert answer["text"].startswith("not reached in 3 rounds: in the last "
                                     "window (rounds 2–3) the rounds range over")
    assert answer["text"].endswith("stopped at the cap of 3 rounds")


def test_resume_during_the_rounds_goes_on_from_the_rounds_stored(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = _scenario(tmp_path, "steady_state:\n  metric: total_iops\n  window: 2\n"
                  "  max_excursion: 0.0001\n  max_rounds: 4\n", capped=False)
    proc = vbench_popen("run", str(s), "--lab", str(lab))
    # The 4th trial is round 2 of the second point; stop during it or just after.
    run_id = interrupt_at_trial(proc, vbench_home, 4, 300, "round 2")
    before = [(t["point"], t["trial"]) for t in show(run_id)["trials"] if t["status"] == "ok"]
    assert 3 <= len(before) < 8, before

    res = vbench("run", "--resume", run_id, "--lab", str(lab), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    after = show(run_id)
    ok = sorted((t["point"], t["trial"]) for t in after["trials"] if t["status"] == "ok")
    # Four rounds of both points, each once: the stored rounds counted, none run twice.
    assert ok == [(p, r) for p in (0, 1) for r in (1, 2, 3, 4)], ok
    answer = json.loads((Path(after["run"]["run_dir"]) / "verdict.json").read_text())[
        "answers"][0]
    assert answer["text"] == "not reached at 2 of 2 points"
    assert len(answer["details"]) == 2
    assert all(d.endswith("stopped at the cap of 4 rounds") for d in answer["details"])
