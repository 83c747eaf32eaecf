"""Real fio on two loopback SSH guests with per-second logs: the whole series is kept per
guest (Parquet, controller time), the steady-window figures come only from the seconds
inside the window, and the median across workers of their mean read latency is there."""

from __future__ import annotations

import shutil
import statistics
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import missing_peer
from vbench.guest.ssh import GuestPool
from vbench.workloads.base import TrialContext
from vbench.workloads.fio import FioWorkload
from vbench.workloads.fio import logs as fio_logs
from vbench.workloads.fio.jobs import FioParams

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _fio_installed() -> None:
    if shutil.which("fio") is None:
        missing_peer("fio is not installed")


def _context(pool: GuestPool, tmp_path: Path, marks: dict[str, float]) -> TrialContext:
    return TrialContext(
        run_id="r-fio-logs", point=0, trial=1, labels={}, warmup=1.0, steady=3.0,
        cooldown=0.0, guests={"target": pool.guests()}, raw_dir=tmp_path / "raw" / "0-1",
        cancel=threading.Event(), mark=lambda name: marks.__setitem__(name, time.time()),
        log=lambda event, **fields: None,
    )  # fmt: skip


def test_per_second_logs_are_kept_whole_and_trimmed_to_the_steady_window(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    params = FioParams(rw="randrw", rwmixread=70, bs="4k", size="4m", numjobs=2,
                       ioengine="psync", direct=False, per_second_logs=True)  # fmt: skip
    driver = FioWorkload(params)
    marks: dict[str, float] = {}
    ctx = _context(guest_pool, tmp_path, marks)
    driver.prepare(ctx)
    try:
        driver.run(ctx)
        samples = driver.collect(ctx)
    finally:
        driver.teardown(ctx)
    guests = [g.name for g in guest_pool.guests()]
    assert len(guests) >= 2
    by = {(s.metric, s.guest): s for s in samples}
    for g in guests:
        table = pq.read_table(tmp_path / "raw" / "0-1" / g / fio_logs.SERIES_FILE)
        frame = table.to_pandas()
        # Kept whole: both jobs, both directions, IOPS and latencies, controller time.
        assert set(frame["metric"]) >= {"read_iops", "write_iops", "read_lat", "write_lat"}
        assert set(frame["instance"]) == {"job1", "job2"}
        times = frame["time"].astype("int64") / 1e6
        assert marks["warmup_start"] - 5 < times.min() and times.max() < time.time() + 5
        assert (frame[frame["metric"] == "read_lat"]["value"] > 0).all()
        # Trimmed: the window figures count only the seconds inside the steady window.
        frame_s = frame.assign(time=times)
        inside = fio_logs.trim(frame_s, marks["steady_start"], marks["steady_end"])
        assert 0 < len(inside) <= len(frame_s)
        seconds = by["ts_seconds", g].value
        assert seconds is not None and 1 <= seconds <= 4
        mean, lo, hi = (by[f"iops_ts_{k}", g].value for k in ("mean", "min", "max"))
        assert mean is not None and lo is not None and hi is not None and lo <= mean <= hi
        assert by["read_lat_ts_mean", g].value is not None
    # One row per second and guest where the report charts it over time.
    for g in guests:
        charted = pq.read_table(tmp_path / "series" / "0-1" / "fio" / f"{g}.parquet").to_pandas()
        assert set(charted["metric"]) == {"fio_iops", "fio_read_lat", "fio_write_lat"}
        per_second = charted[charted["metric"] == "fio_iops"]
        whole = pq.read_table(tmp_path / "raw" / "0-1" / g / fio_logs.SERIES_FILE).to_pandas()
        iops = whole[whole["metric"].str.endswith("_iops")]["value"].sum()
        assert per_second["value"].sum() == pytest.approx(iops)  # every logged I/O counted
    # The studies' "median of per-worker mean read latency", over the real guests.
    per_guest = [by["read_lat_mean", g].value for g in guests]
    median = by["read_lat_mean_median", None].value
    assert median == pytest.approx(statistics.median(per_guest))  # type: ignore[type-var]


def test_without_the_option_no_logs_are_asked_for(guest_pool: GuestPool, tmp_path: Path) -> None:
    driver = FioWorkload(FioParams(size="4m", ioengine="psync", direct=False))
    marks: dict[str, float] = {}
    ctx = _context(guest_pool, tmp_path, marks)
    driver.prepare(ctx)
    try:
        driver.run(ctx)
        samples = driver.collect(ctx)
    finally:
        driver.teardown(ctx)
    assert not any(s.metric.startswith("iops_ts") for s in samples)
    assert not list((tmp_path / "raw").rglob(fio_logs.SERIES_FILE))
