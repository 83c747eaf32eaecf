"""`vbench parse fio` on a real 64-job fio run without group reporting: the total over
the jobs by default, one row per job only with --per-job."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import missing_peer
from tests.e2e.helpers import vbench

pytestmark = pytest.mark.e2e
JOBS = 64


@pytest.fixture
def many_jobs(tmp_path: Path) -> Path:
    fio = shutil.which("fio")
    if fio is None:
        missing_peer("fio is not installed (make test installs it)")
    job = tmp_path / "many.fio"
    # The null engine: no disk, so 64 jobs finish at once on any machine.
    job.write_text(f"[global]\nioengine=null\nsize=1m\nbs=4k\nrw=randread\n[j]\nnumjobs={JOBS}\n")
    out = tmp_path / "many.json"
    subprocess.run([fio, "--output-format=json", "--output", str(out), str(job)],
                   check=True, capture_output=True, timeout=60)
    return out


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_parse_fio_prints_the_total_of_many_jobs(many_jobs: Path) -> None:
    res = vbench("parse", "fio", str(many_jobs))
    assert res.returncode == 0, res.stderr
    rows = _rows(res.stdout)
    assert {r["job"] for r in rows} == {f"all ({JOBS} jobs)"}
    figures = {(r["direction"], r["metric"]): r["value"] for r in rows}
    assert float(figures["read", "ios"]) == JOBS * 256  # 1 MiB of 4 KiB reads per job
    assert float(figures["read", "io_bytes"]) == JOBS * (1 << 20)
    assert float(figures["total", "iops"]) == pytest.approx(float(figures["read", "iops"]))
    assert figures["read", "clat_p99"] == ""  # not computable from the jobs' percentiles
    assert len(rows) < 60


def test_parse_fio_per_job_rows_on_request(many_jobs: Path) -> None:
    res = vbench("parse", "fio", str(many_jobs), "--per-job")
    assert res.returncode == 0, res.stderr
    rows = _rows(res.stdout)
    jobs = {r["job"] for r in rows}
    assert len(jobs) == JOBS + 1 and f"all ({JOBS} jobs)" in jobs
    ios = [r for r in rows if (r["direction"], r["metric"]) == ("read", "ios")]
    per_job = [float(r["value"]) for r in ios if not r["job"].startswith("all")]
    total = next(float(r["value"]) for r in ios if r["job"].startswith("all"))
    assert len(per_job) == JOBS and sum(per_job) == total
