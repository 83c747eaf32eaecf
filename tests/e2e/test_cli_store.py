"""Stores from the CLI: concurrent runs into one SQLite file, PostgreSQL by URL, and
`vbench parse fio` on every fio file of the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.corpus import SHARED, need
from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, write_lab, write_scenario

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

CORPUS = SHARED / "fio"


def test_two_runs_at_once_both_land_in_one_store(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    # Two labs (each its own guest folder): one lab's lease would queue the second run.
    for i in (1, 2):
        (tmp_path / f"lab{i}").mkdir()
    labs = [write_lab(tmp_path / f"lab{i}" / "lab.yaml", local_guests) for i in (1, 2)]
    s = write_scenario(tmp_path / "s.yaml", groups=1, repeat=2, factors="  bs: [4k, 8k]\n")
    procs = [vbench_popen("run", str(s), "--lab", str(lab)) for lab in labs]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    ids = {run_id_of(out) for out, _ in outs}
    assert len(ids) == 2
    rows = json.loads(vbench("ls", "--json").stdout)
    assert {r["run_id"] for r in rows} == ids
    for run_id in ids:
        data = show(run_id)
        assert [t["status"] for t in data["trials"]] == ["ok"] * 4
        assert {s["metric"] for s in data["summary"]} >= {"total_iops", "read_lat_mean"}


def test_postgresql_store_by_url(
    local_guests: LocalGuests, tmp_path: Path, fresh_postgresql_url: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", groups=2, repeat=1, factors="  bs: [4k]\n")
    res = vbench("run", str(s), "--lab", str(lab), "--store", fresh_postgresql_url)
    assert res.returncode == 0, res.stderr
    run_id = run_id_of(res.stdout)
    # Nothing went to the default SQLite store ...
    assert json.loads(vbench("ls", "--json").stdout) == []
    # ... and everything to PostgreSQL, also when named by VBENCH_STORE.
    rows = json.loads(
        vbench("ls", "--json", env={"VBENCH_STORE": fresh_postgresql_url}).stdout
    )
    assert [r["run_id"] for r in rows] == [run_id]
    data = show(run_id, "--store", fresh_postgresql_url)
    assert data["trials"][0]["status"] == "ok"
    assert any(s["metric"] == "total_iops" and s["n"] == 1 for s in data["summary"])


def test_bad_store_url_is_one_line_exit_3(local_guests: LocalGuests, tmp_path: Path) -> None:
    res = vbench("ls", "--store", "postgresql://nobody:secretpw@127.0.0.1:1/none")
    assert res.returncode == 3
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ")
    assert "secretpw" not in res.stderr


def _corpus_json() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if p.name.endswith((".json", ".json.txt")))


@pytest.mark.parametrize("path", _corpus_json(), ids=lambda p: p.name)
def test_parse_fio_reads_every_corpus_file(path: Path) -> None:
    res = vbench("parse", "fio", str(path), "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert rows and {"job", "direction", "metric", "value", "unit"} <= set(rows[0])
    csv = vbench("parse", "fio", str(path))
    assert csv.returncode == 0 and csv.stdout.splitlines()[0].startswith("job,")


def test_parse_fio_refuses_normal_text_output() -> None:
    need(CORPUS)
    text_output = CORPUS / "chris-sanders_ceph-fio-results__fio-2.2.10_normal_randread-4k.out"
    res = vbench("parse", "fio", str(text_output))
    assert res.returncode == 2
    assert "--output-format=json" in res.stderr and "Traceback" not in res.stderr
