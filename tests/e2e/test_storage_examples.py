"""The local variants of the storage-study scenarios run end to end on loopback guests
with real fio: what each one is for is in its figures and its report."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, write_lab

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

PROJECT = Path(__file__).resolve().parents[2]


def _lab(tmp: Path, guests: LocalGuests) -> Path:
    """The test's guests, with the profiles of the local example lab."""
    lab = write_lab(tmp / "lab.yaml", guests)
    data = yaml.safe_load(lab.read_text())
    data["profiles"] = yaml.safe_load((PROJECT / "examples/labs/local.yaml").read_text())[
        "profiles"
    ]
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    return lab


def _run(
    name: str, tmp: Path, guests: LocalGuests, home: Path
) -> tuple[str, str, sqlite3.Connection]:
    res = vbench("run", str(PROJECT / "examples" / name), "--lab", str(_lab(tmp, guests)),
                 timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    report = Path(res.stdout.split("report: ")[1].split()[0]).read_text()
    return run_id_of(res.stdout), report, sqlite3.connect(home / "results" / "vbench.db")


def _values(con: sqlite3.Connection, run_id: str, metric: str) -> dict[tuple, float | None]:
    rows = con.execute(
        "SELECT p.labels, s.guest, s.value FROM samples s JOIN points p "
        "ON p.run_id = s.run_id AND p.point = s.point WHERE s.run_id = ? AND s.metric = ?",
        (run_id, metric),
    ).fetchall()
    return {(labels, guest): value for labels, guest, value in rows}


def test_oio_sweep_keeps_per_second_logs_and_draws_latency_vs_oio_and_hockey_stick(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    run_id, report, con = _run("fio-oio-sweep-local.yaml", tmp_path, local_guests, vbench_home)
    series = list((vbench_home / "results" / run_id / "raw").rglob("fio-series.parquet"))
    assert len(series) == 3  # one per point (one guest, one trial)
    ts = _values(con, run_id, "iops_ts_mean")
    assert len(ts) == 3 and all(v is not None and v > 0 for v in ts.values())
    # Latency vs OIO is the headline latency drawn as a line over iodepth; IOPS vs
    # latency (the hockey stick) is the x_metric chart.
    # (in µs or ms: each chart reads in the unit its values do)
    assert re.search(r"read_lat_mean in (µs|ms) \(lower is better\): line = mean per point",
                     report)
    assert "IOPS vs latency" in report and "read_lat_mean against total_iops" in report
    # Per-second IOPS over time per worker: the time-series chart of the logs.
    assert "fio_iops from fio over guest1" in report


def test_vaio_scaling_local_has_the_median_of_per_worker_latency(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    run_id, report, con = _run("vaio-scaling-local.yaml", tmp_path, local_guests, vbench_home)
    median = _values(con, run_id, "read_lat_mean_median")
    per_guest = _values(con, run_id, "read_lat_mean")
    two_workers = [k for k in median if '"workers": "2"' in k[0] and k[1] is None]
    assert len(two_workers) == 2  # OIO 1 and 8
    for labels, _ in two_workers:
        guests = sorted(v for (lab, g), v in per_guest.items() if lab == labels and g)
        assert len(guests) == 2
        assert median[labels, None] == pytest.approx(sum(guests) / 2)  # median of two
    assert "IOPS vs latency" in report


def test_iometer_profile_and_raid_vs_pool_local_run(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    run_id, report, con = _run("iometer-profile-local.yaml", tmp_path, local_guests, vbench_home)
    (iops,) = [v for (_, g), v in _values(con, run_id, "total_iops").items() if g is None]
    assert iops is not None and iops > 0
    (cv,) = _values(con, run_id, "iops_ts_cv").values()  # per guest: one guest ran
    assert cv is not None
    # Issue 22: the headline iops_ts_cv was stored and in no output (terminal, HTML, or
    # the "Not shown" line); now it is a figure of the run's summary and of its report.
    shown = show(run_id)
    [row] = [s for s in shown["summary"] if s["metric"] == "iops_ts_cv"]
    assert row["mean"] == pytest.approx(cv)
    assert re.search(r"iops_ts_cv\b[^<]*</t[dh]>\s*<td[^>]*>[^<]*\d", report), "no figure"
    run_id, _, con = _run("raid-vs-pool-local.yaml", tmp_path, local_guests, vbench_home)
    guests = {lab: g for (lab, g) in _values(con, run_id, "total_iops") if g}
    # Each level ran on the guest its lab profile names.
    assert sorted(guests.values()) == ["guest1", "guest2"]
