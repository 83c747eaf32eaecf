"""`vbench run` end to end: real CLI process, real sshd guests, real fio, real store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    guest_workdir,
    remote_processes,
    run_id_of,
    show,
    vbench,
    write_lab,
    write_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.fixture(scope="module")
def finished_run(
    local_guests: LocalGuests, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    """One real run (2 points × 2 trials on two guests) shared by the read-only tests."""
    tmp = tmp_path_factory.mktemp("e2e-run")
    lab = write_lab(tmp / "lab.yaml", local_guests)
    scenario = write_scenario(tmp / "s.yaml")
    res = vbench(
        "run",
        str(scenario),
        "--lab",
        str(lab),
        "--tag",
        "e2e",
        "--tag",
        "ci",
        env={"VBENCH_HOME": str(tmp / "home")},
    )
    return {"res": res, "home": tmp / "home", "tmp": tmp, "guests": local_guests}


@pytest.fixture
def run_env(finished_run: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("VBENCH_HOME", str(finished_run["home"]))
    return finished_run


def test_run_succeeds_and_prints_summary_and_report(run_env: dict[str, object]) -> None:
    res = run_env["res"]
    assert res.returncode == 0, res.stderr  # type: ignore[union-attr]
    out = res.stdout + res.stderr  # type: ignore[union-attr]
    assert "mean ± 95 % CI" in out and "total_iops" in out and "IO/s" in out
    report = Path(out.split("report: ")[1].split()[0])
    html = report.read_text()
    assert "total_iops" in html and "<svg" in html and "e2e-fio" in html


def test_store_holds_every_trial_and_sample(run_env: dict[str, object]) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    data = show(run_id)
    assert data["run"]["status"] == "ok" and data["run"]["tags"] == ["e2e", "ci"]
    assert [p["labels"] for p in data["points"]] == [{"bs": "4k"}, {"bs": "64k"}]
    assert [(t["point"], t["trial"], t["status"]) for t in data["trials"]] == [
        (0, 1, "ok"),
        (0, 2, "ok"),
        (1, 1, "ok"),
        (1, 2, "ok"),
    ]
    for t in data["trials"]:
        ph = t["phases"]
        assert ph["prepare_start"] <= ph["warmup_start"] < ph["steady_start"] < ph["steady_end"]
        assert ph["steady_end"] <= ph["cooldown_end"] <= ph["teardown_end"]
    summary = {(s["point"], s["metric"]): s for s in data["summary"]}
    assert summary[(0, "total_iops")]["n"] == 2 and summary[(0, "total_iops")]["mean"] > 0


def test_aggregate_iops_is_the_sum_of_the_guests(run_env: dict[str, object]) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    db = Path(run_env["home"]) / "results" / "vbench.db"  # type: ignore[arg-type]
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT point, trial, guest, value FROM samples WHERE run_id = ? "
        "AND metric = 'total_iops' AND labels = '{}'",
        (run_id,),
    ).fetchall()
    by_trial: dict[tuple[int, int], dict[str | None, float]] = {}
    for point, trial, guest, value in rows:
        by_trial.setdefault((point, trial), {})[guest] = value
    assert len(by_trial) == 4
    for values in by_trial.values():
        assert set(values) == {None, "guest1", "guest2"}
        assert values[None] == pytest.approx(values["guest1"] + values["guest2"])


def test_run_directory_keeps_inputs_raw_outputs_and_log(run_env: dict[str, object]) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    d = Path(run_env["home"]) / "results" / run_id  # type: ignore[arg-type]
    for name in (
        "scenario.yaml",
        "lab.yaml",
        "plan.json",
        "environment.json",
        "log.jsonl",
        "report.html",
    ):
        assert (d / name).is_file(), name
    scenario = yaml.safe_load((d / "scenario.yaml").read_text())
    assert scenario["phases"]["steady"] == 1.0  # resolved: durations in seconds
    raws = sorted(p.relative_to(d).as_posix() for p in d.glob("raw/*/*/fio.json"))
    assert len(raws) == 8  # 2 points × 2 trials × 2 guests
    events = [json.loads(line)["event"] for line in (d / "log.jsonl").read_text().splitlines()]
    assert events[0] == "run_start" and events[-1] == "run_end"
    assert events.count("trial_end") == 4
    samples = (d / "samples.csv").read_text().splitlines()
    assert samples[0].startswith("point,trial,guest,metric,value,unit")
    # 4 trials × (the trial's aggregate + per guest + per fio job of each guest)
    assert sum(",total_iops," in line for line in samples) == 4 * (1 + 2 + 2)
    summary = json.loads((d / "summary.json").read_text())
    assert len(summary["points"]) == 2
    # Written once the verdict is kept: the same verdict, with the run's exit code; as
    # every JSON output shows it, each figure also says its point's disturbed trials
    # (none in this run: null).
    verdict = summary["verdict"]
    answers = [*verdict["answers"], *([verdict["answer"]] if verdict.get("answer") else [])]
    figures = [*verdict["headline"], *(f for a in answers for f in a["figures"])]
    assert figures and [f.pop("disturbed") for f in figures] == [None] * len(figures)
    assert verdict == json.loads((d / "verdict.json").read_text())
    assert summary["verdict"]["exit_code"] == 0 and summary["qos"]["passed"] is True
    env = json.loads((d / "environment.json").read_text())
    assert env["guests"]["guest1"]["tools"]["fio"].startswith("fio-")
    assert env["controller"]["vbench_version"]


def test_nothing_is_left_in_the_guests(run_env: dict[str, object]) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    tmp: Path = run_env["tmp"]  # type: ignore[assignment]
    assert not (guest_workdir(tmp / "lab.yaml") / run_id).exists()
    assert remote_processes(run_id) == []


def test_ls_lists_the_run(run_env: dict[str, object]) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    res = vbench("ls", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["run_id"] for r in rows] == [run_id]
    assert rows[0]["scenario_name"] == "e2e-fio" and rows[0]["status"] == "ok"
    text = vbench("ls")
    assert run_id in text.stdout
    assert vbench("ls", "--tag", "nightly", "--json").stdout.strip() == "[]"


def test_report_rerenders_from_the_store(run_env: dict[str, object], tmp_path: Path) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    out = tmp_path / "again.html"
    res = vbench("report", run_id[:15], "-o", str(out))
    assert res.returncode == 0, res.stderr
    html = out.read_text()
    assert run_id in html and "total_iops" in html


def test_show_text_describes_environment(run_env: dict[str, object]) -> None:
    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    res = vbench("show", run_id)
    assert res.returncode == 0, res.stderr
    assert "guest guest1" in res.stdout and "fio-" in res.stdout


def test_unknown_run_id_is_a_clear_error() -> None:
    res = vbench("show", "no-such-run")
    assert res.returncode == 2
    assert res.stderr.startswith("error: ") and "no-such-run" in res.stderr
    assert "Traceback" not in res.stderr


def test_the_run_stores_its_catalogue_with_each_metrics_direction(
    run_env: dict[str, object],
) -> None:
    from vbench.analysis.direction import directions_of

    run_id = run_id_of(run_env["res"].stdout)  # type: ignore[union-attr]
    db = Path(run_env["home"]) / "results" / "vbench.db"  # type: ignore[arg-type]
    con = sqlite3.connect(db)
    try:
        (raw,) = con.execute("SELECT metrics FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        con.close()
    stored = json.loads(raw)  # None before: directions were guessed from names at read time
    d = directions_of({"scenario": {}, "metrics": stored})
    assert (d.of("total_iops"), d.of("read_clat_p99"), d.of("ts_seconds")) == (
        "higher", "lower", "none")
