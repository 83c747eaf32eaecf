"""Real fio, run locally on small files: its JSON parses, and vbench's jobs do what
they claim (time-based phases, prepare data with the asked-for dedup ratio and a
distinct data stream per guest)."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import missing_peer
from vbench.errors import GuestError, Interrupted, ParseError
from vbench.guest.ssh import Guest, GuestPool
from vbench.parsers.fio import FioResult, guest_samples, parse_fio_json
from vbench.workloads.base import TrialContext
from vbench.workloads.fio import FioWorkload, guest_dir
from vbench.workloads.fio.jobs import (
    FioParams,
    adapt_user_job,
    render_layout,
    render_measure,
    render_prepare,
)

FIO = shutil.which("fio")
pytestmark = [pytest.mark.integration]


@pytest.fixture(autouse=True)
def _fio_installed() -> None:
    if FIO is None:
        missing_peer("fio is not installed (make test installs it)")
MIB = 1 << 20


def run_fio(job: Path, out: Path, *args: str, fmt: str = "json") -> subprocess.CompletedProcess:
    assert FIO is not None
    return subprocess.run(
        [FIO, f"--output-format={fmt}", "--output", str(out), *args, str(job)],
        capture_output=True, text=True, timeout=60, check=False,
    )


def run_job(tmp_path: Path, name: str, text: str) -> FioResult:
    job = tmp_path / f"{name}.fio"
    job.write_text(text)
    out = tmp_path / f"{name}.json"
    proc = run_fio(job, out)
    assert proc.returncode == 0, out.read_text() if out.exists() else proc.stderr
    return parse_fio_json(out.read_text(), source=str(out))


def block_hashes(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [hashlib.md5(data[i : i + 4096]).digest() for i in range(0, len(data), 4096)]


def installed_version() -> str:
    assert FIO is not None
    return subprocess.run([FIO, "--version"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_captured_json_of_a_time_based_run_parses(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_job(tmp_path, "capture", (
        f"[cap]\nfilename={data}\nsize=8m\nrw=randrw\nrwmixread=60\nbs=4k\n"
        "ioengine=psync\ntime_based=1\nruntime=1\n"
    ))
    assert result.fio_version == installed_version()
    assert result.jobs == ("cap",) and result.errors == ()
    assert result.timestamp is not None and abs(result.timestamp - time.time()) < 120
    for d in ("read", "write"):
        iops, runtime = result.value("cap", d, "iops"), result.value("cap", d, "runtime")
        assert iops is not None and iops > 0
        assert runtime == pytest.approx(1.0, abs=0.3)
        p99 = result.value("cap", d, "clat_p99")
        assert p99 is not None and 0 < p99 < 1000  # ms
        bw, io_bytes = result.value("cap", d, "bw"), result.value("cap", d, "io_bytes")
        assert bw is not None and io_bytes is not None
        assert bw * runtime * MIB == pytest.approx(io_bytes, rel=0.02)
    assert result.value("cap", "trim", "lat_mean") is None  # no trims done
    g = {s.metric: s.value for s in guest_samples(result, "local") if not s.labels}
    assert g["total_iops"] == pytest.approx(g["read_iops"] + g["write_iops"])


def test_rendered_measure_job_runs_warmup_then_steady_as_one_job(tmp_path: Path) -> None:
    params = FioParams(rw="randrw", bs="4k", numjobs=2, iodepth=4, size="8m",
                       ioengine="psync", direct=False)
    data = tmp_path / "fio.data"
    started = time.monotonic()
    result = run_job(tmp_path, "measure", render_measure(params, 0.5, 1, str(data)))
    elapsed = time.monotonic() - started
    assert result.jobs == ("measure",)  # group_reporting merged the two jobs
    assert result.value("measure", "read", "runtime") == pytest.approx(1.0, abs=0.3)
    assert elapsed >= 1.4  # ramp_time ran before the counted second
    assert data.stat().st_size == 8 * MIB


def test_layout_job_creates_the_data_file(tmp_path: Path) -> None:
    data = tmp_path / "fio.data"
    run_job(tmp_path, "layout", render_layout(FioParams(size="4m"), str(data)))
    assert data.stat().st_size == 4 * MIB


def test_prepare_writes_the_dedup_ratio_and_a_distinct_stream_per_guest(tmp_path: Path) -> None:
    params = FioParams(dedupe_percentage=50, randrepeat=False, size="8m", ioengine="psync")
    streams = []
    for guest in ("vm1", "vm2"):
        data = tmp_path / f"{guest}.data"
        # tmp_path may be on tmpfs, which refuses O_DIRECT.
        job = render_prepare(params, str(data)).replace("direct=1", "direct=0")
        result = run_job(tmp_path, f"prepare-{guest}", job)
        assert result.value("prepare", "write", "io_bytes") == 8 * MIB
        streams.append(block_hashes(data))
    first, second = streams
    assert len(first) == 2048
    assert 0.4 < len(set(first)) / len(first) < 0.6  # half the blocks are duplicates
    assert len(set(first) & set(second)) < 0.01 * len(first)  # no shared data stream


def test_randrepeat_default_gives_every_guest_the_same_data(tmp_path: Path) -> None:
    # Why randrepeat unset is an error: two "VMs" with a 0 % dedup setting write
    # identical data, which a datastore would dedup across VMDKs.
    streams = []
    for guest in ("vm1", "vm2"):
        data = tmp_path / f"{guest}.data"
        run_job(tmp_path, guest, f"[p]\nfilename={data}\nsize=2m\nrw=write\nbs=4k\n"
                "dedupe_percentage=0\nrefill_buffers=1\n")
        streams.append(block_hashes(data))
    assert len(set(streams[0])) == len(streams[0])  # unique within one guest …
    assert streams[0] == streams[1]  # … and identical across guests


def test_user_job_timing_overrides_its_own_runtime(tmp_path: Path) -> None:
    user = f"[global]\nruntime=60\nioengine=psync\n[u]\nfilename={tmp_path / 'u.data'}\n" \
           "size=4m\nrw=randread\nruntime=45\n"
    started = time.monotonic()
    result = run_job(tmp_path, "user", adapt_user_job(user, 0, 1, str(tmp_path)))
    assert time.monotonic() - started < 15
    assert result.value("u", "read", "runtime") == pytest.approx(1.0, abs=0.3)


def test_failed_fio_job_is_captured_with_its_error(tmp_path: Path) -> None:
    job = tmp_path / "bad.fio"
    job.write_text(f"[bad]\nfilename={tmp_path / 'new-file'}\nrw=write\n")  # no size=
    out = tmp_path / "bad.json"
    proc = run_fio(job, out)
    assert proc.returncode != 0
    result = parse_fio_json(out.read_text(), source=str(out))
    assert result.errors == (("bad", 22),)
    assert "size" in result.preamble
    with pytest.raises(ParseError, match="Invalid argument"):
        guest_samples(result, "local")


def test_normal_text_output_is_refused(tmp_path: Path) -> None:
    job = tmp_path / "n.fio"
    job.write_text(f"[n]\nfilename={tmp_path / 'n.data'}\nsize=1m\nrw=read\nioengine=psync\n")
    out = tmp_path / "n.out"
    assert run_fio(job, out, fmt="normal").returncode == 0
    with pytest.raises(ParseError, match="--output-format=json"):
        parse_fio_json(out.read_text(), source=str(out))


# ---------------------------------------------------------------- the driver over SSH


def trial_context(pool: GuestPool, tmp_path: Path, **params_phase: float) -> tuple[
        TrialContext, list[tuple[str, float]]]:
    marks: list[tuple[str, float]] = []
    ctx = TrialContext(
        run_id="r-fio-test", point=1, trial=2, labels={},
        warmup=params_phase.get("warmup", 0.5), steady=params_phase.get("steady", 1.0),
        cooldown=0.0, guests={"target": pool.guests()}, raw_dir=tmp_path / "raw",
        cancel=threading.Event(), mark=lambda name: marks.append((name, time.monotonic())),
        log=lambda event, **fields: None,
    )
    return ctx, marks


def test_driver_runs_a_dedup_trial_on_two_ssh_guests(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    params = FioParams(rw="randrw", rwmixread=70, bs="4k", size="4m", ioengine="psync",
                       direct=False, dedupe_percentage=30, randrepeat=False)
    driver = FioWorkload(params)
    ctx, marks = trial_context(guest_pool, tmp_path)
    dirs = [guest_dir(g.spec.workdir, ctx.run_id, g.name, 1, 2) for g in pool_guests(ctx)]
    driver.prepare(ctx)
    for d in dirs:  # the prepare phase filled each guest's own data file
        assert Path(d, "fio.data").stat().st_size == 4 * MIB
        assert Path(d, "prepare.json").exists()
    driver.run(ctx)
    names = [m for m, _ in marks]
    assert names == ["warmup_start", "steady_start", "steady_end"]
    assert marks[2][1] - marks[0][1] >= 1.4
    samples = driver.collect(ctx)
    per_guest = {s.guest for s in samples}
    assert per_guest == {g.name for g in pool_guests(ctx)} | {None}
    total = {s.metric: s.value for s in samples if s.guest is None}
    by_guest = [s.value for s in samples
                if s.metric == "total_iops" and s.guest is not None and not s.labels]
    assert total["total_iops"] == pytest.approx(sum(v or 0 for v in by_guest))
    assert total["read_lat_mean_median"] is not None
    for g in pool_guests(ctx):
        assert (ctx.raw_dir / g.name / "fio.json").exists()
        assert "dedupe_percentage=30" in (ctx.raw_dir / g.name / "measure.fio").read_text()
    driver.teardown(ctx)
    assert not any(Path(d).exists() for d in dirs)


def test_driver_reports_a_failing_fio_with_its_log(guest_pool: GuestPool, tmp_path: Path) -> None:
    # size=100% of a file that does not exist yet: fio refuses to start the job (its
    # folder exists: vbench's target check refuses a missing folder before fio starts).
    params = FioParams(filename=str(tmp_path / "target"), size="100%",
                       ioengine="psync", direct=False)
    driver = FioWorkload(params)
    ctx, _ = trial_context(guest_pool, tmp_path, warmup=0.0)
    driver.prepare(ctx)
    with pytest.raises(GuestError) as err:
        driver.run(ctx)
    assert err.value.target in {g.name for g in pool_guests(ctx)}
    assert "fio exited" in str(err.value)
    assert "you need to specify size=" in str(err.value)  # the tail of fio's log
    driver.teardown(ctx)


def test_driver_stops_on_cancel_during_warmup(guest_pool: GuestPool, tmp_path: Path) -> None:
    driver = FioWorkload(FioParams(size="4m", ioengine="psync", direct=False))
    ctx, marks = trial_context(guest_pool, tmp_path, warmup=30.0, steady=30.0)
    record = ctx.mark

    def mark(name: str) -> None:  # cancel as soon as the warm-up has begun
        record(name)
        if name == "warmup_start":
            ctx.cancel.set()

    ctx = dataclasses.replace(ctx, mark=mark)
    driver.prepare(ctx)
    started = time.monotonic()
    with pytest.raises(Interrupted):
        driver.run(ctx)
    assert time.monotonic() - started < 15
    assert [m for m, _ in marks] == ["warmup_start"]
    driver.teardown(ctx)


def pool_guests(ctx: TrialContext) -> list[Guest]:
    return list(ctx.guests["target"])
