"""The run directory: ids, files, the structured log, redaction, default locations."""

from __future__ import annotations

import json
import multiprocessing
import re
import threading
from pathlib import Path

import pytest
import yaml

from vbench.errors import ParseError
from vbench.results.rundir import RunDir, new_run_id, redact, results_dir_default, vbench_home

RUN_ID_RE = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{8}$")


def _ids(n: int) -> list[str]:
    return [new_run_id() for _ in range(n)]


def test_run_id_format_and_time_order() -> None:
    early = new_run_id(1_700_000_000.0)
    late = new_run_id(1_700_000_061.0)
    assert RUN_ID_RE.match(early) and RUN_ID_RE.match(late)
    assert early.startswith("20231114-221320-")  # UTC, whatever the local zone
    assert early < late


def test_run_ids_unique_across_processes() -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        batches = pool.map(_ids, [200, 200])
    ids = [i for batch in batches for i in batch]
    assert len(set(ids)) == len(ids) == 400


def test_rundir_is_created_and_reused(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "results", "r1")
    assert rd.path == tmp_path / "results" / "r1" and rd.path.is_dir()
    rd.write_json("plan.json", {"points": 2})
    again = RunDir(tmp_path / "results", "r1")
    assert json.loads((again.path / "plan.json").read_text()) == {"points": 2}


@pytest.mark.parametrize("bad", ["", "..", "a/b", "."])
def test_rundir_refuses_bad_run_ids(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="invalid run id"):
        RunDir(tmp_path, bad)


def test_write_json_and_yaml_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path, "r1")
    data = {"name": "fio", "sizes": (4, 64), "path": Path("/x/y"), "nested": {"é": 1.5}}
    jpath = rd.write_json("environment.json", data)
    ypath = rd.write_yaml("scenario.yaml", data)
    expected = {"name": "fio", "sizes": [4, 64], "path": "/x/y", "nested": {"é": 1.5}}
    assert json.loads(jpath.read_text(encoding="utf-8")) == expected
    assert yaml.safe_load(ypath.read_text(encoding="utf-8")) == expected
    # key order is the caller's, not alphabetical
    assert list(yaml.safe_load(ypath.read_text(encoding="utf-8"))) == list(data)
    assert sorted(p.name for p in rd.path.iterdir()) == ["environment.json", "scenario.yaml"]


@pytest.mark.parametrize("name", ["../escape.json", "/etc/passwd", "a/../../b"])
def test_writes_stay_inside_the_run_dir(tmp_path: Path, name: str) -> None:
    rd = RunDir(tmp_path, "r1")
    with pytest.raises(ValueError, match="inside the run directory"):
        rd.write_json(name, {})


def test_raw_dir_layout(tmp_path: Path) -> None:
    rd = RunDir(tmp_path, "r1")
    raw = rd.raw_dir(3, 1)
    assert raw == tmp_path / "r1" / "raw" / "3-1" and raw.is_dir()
    assert rd.raw_dir(3, 1) == raw


def test_log_lines_are_structured_and_redacted(tmp_path: Path) -> None:
    rd = RunDir(tmp_path, "r1")
    rd.log("trial.start", point=1, trial=0)
    rd.log("ssh.connect", level="warning", host="g1", password="hunter2", ts="theirs")
    records = rd.read_log()
    assert [r["event"] for r in records] == ["trial.start", "ssh.connect"]
    assert records[0]["level"] == "info" and records[0]["point"] == 1
    assert isinstance(records[0]["ts"], float) and records[0]["ts"] <= records[1]["ts"]
    assert records[1]["password"] == "***" and records[1]["ts_"] == "theirs"
    assert "hunter2" not in rd.log_path.read_text()
    with pytest.raises(ValueError, match="log level"):
        rd.log("x", level="loud")


def test_log_is_thread_safe(tmp_path: Path) -> None:
    rds = [RunDir(tmp_path, "r1"), RunDir(tmp_path, "r1")]  # two objects, one file
    payload = "x" * 5000  # longer than PIPE_BUF: lines must not interleave

    def writer(n: int) -> None:
        for i in range(200):
            rds[n % 2].log("tick", writer=n, i=i, payload=payload)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = rds[0].read_log()
    assert len(records) == 8 * 200
    assert all(r["payload"] == payload for r in records)
    expected = {(w, i) for w in range(8) for i in range(200)}
    assert {(r["writer"], r["i"]) for r in records} == expected


def test_read_log_tolerates_a_torn_last_line_only(tmp_path: Path) -> None:
    rd = RunDir(tmp_path, "r1")
    assert rd.read_log() == []
    rd.log("one")
    with rd.log_path.open("a") as fh:
        fh.write('{"ts": 1, "level": "in')  # process killed mid-write
    assert [r["event"] for r in rd.read_log()] == ["one"]
    with rd.log_path.open("a") as fh:
        fh.write("\n")
    rd.log("two")
    with pytest.raises(ParseError, match=r"log.jsonl:2:"):
        rd.read_log()


def test_redact_replaces_secret_keys_deeply() -> None:
    data = {
        "vcenter": {"user": "admin", "password": "resolved-from-env", "Password": "x"},
        "hosts": [{"ssh_passphrase": "p", "name": "esx1"}, ("keep", {"apiToken": "t"})],
        "client-secret": "s",
        "tokens_per_sec": 12.5,
        "password_file": None,
        "secrets": ["a"],
    }
    out = redact(data)
    assert out == {
        "vcenter": {"user": "admin", "password": "***", "Password": "***"},
        "hosts": [{"ssh_passphrase": "***", "name": "esx1"}, ("keep", {"apiToken": "***"})],
        "client-secret": "***",
        "tokens_per_sec": 12.5,
        "password_file": None,
        "secrets": ["a"],
    }
    assert data["vcenter"]["password"] == "resolved-from-env"  # a copy, not in place
    assert redact({"community": "c"}, secret_keys=("community",)) == {"community": "***"}
    assert redact([1, "password"]) == [1, "password"]  # values never decide


def test_results_dir_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VBENCH_RESULTS", str(tmp_path / "res"))
    assert results_dir_default() == tmp_path / "res"
    monkeypatch.delenv("VBENCH_RESULTS")
    monkeypatch.setenv("VBENCH_HOME", str(tmp_path / "home"))
    assert results_dir_default() == tmp_path / "home" / "results"
    monkeypatch.delenv("VBENCH_HOME")
    assert vbench_home().name == "vbench"
    assert results_dir_default() == vbench_home() / "results"


def test_an_attempt_set_aside_in_an_earlier_session_is_not_overwritten(tmp_path: Path) -> None:
    """A resumed run numbers its attempts from 1 again: attempts/0-1.1 already holds the
    earlier session's (`disturbance: retry`, then Ctrl-C); the next one set aside takes
    the next free number (it raised 'Directory not empty': an internal error)."""
    rd = RunDir(tmp_path, "20260101-000000-abcdef01")
    for session in ("first", "resumed"):
        (rd.raw_dir(0, 1) / "fio.json").write_text(session)
        (rd.path / "series" / "0-1").mkdir(parents=True, exist_ok=True)
        aside = rd.set_aside(0, 1, 1)
        assert (aside / "raw" / "fio.json").read_text() == session
    assert sorted(p.name for p in (rd.path / "attempts").iterdir()) == ["0-1.1", "0-1.2"]
    assert not (rd.path / "raw" / "0-1").exists()
