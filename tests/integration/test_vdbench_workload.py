"""The vdbench workload on two loopback SSH guests, against a REPLAY of real recorded
vdbench output (tests/tools/vdbench_replay.py: vdbench itself is not installed here):
the user's parameter file is pushed and run, the output fetched and parsed per guest,
combined over the guests, and nothing is left behind."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from vbench.errors import GuestError
from vbench.guest.ssh import GuestPool
from vbench.parsers.vdbench import average_rows, parse_flatfile
from vbench.workloads.base import TrialContext
from vbench.workloads.vdbench import VdbenchParams, VdbenchWorkload

pytestmark = pytest.mark.integration

REPLAY = Path(__file__).resolve().parents[1] / "tools" / "vdbench_replay.py"
DATA = Path(__file__).resolve().parents[1] / "data" / "vdbench"


def _ctx(pool: GuestPool, tmp_path: Path, marks: list[str]) -> TrialContext:
    return TrialContext(
        run_id="r-vdb", point=0, trial=1, labels={}, warmup=0.0, steady=5.0, cooldown=0.0,
        guests={"target": pool.guests()}, raw_dir=tmp_path / "raw", cancel=threading.Event(),
        mark=marks.append, log=lambda event, **fields: None,
    )  # fmt: skip


def _driver(tmp_path: Path, replay: str) -> VdbenchWorkload:
    parm = tmp_path / "my.parm"
    parm.write_text(f"* replay: {replay}\nsd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1\n"
                    "rd=rd1,wd=wd1,iorate=max,elapsed=60,interval=1\n")  # fmt: skip
    return VdbenchWorkload(VdbenchParams(parmfile=str(parm), command=str(REPLAY)))


def test_runs_the_users_parmfile_and_combines_the_guests(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    driver = _driver(tmp_path, "sd-three-rates")
    marks: list[str] = []
    ctx = _ctx(guest_pool, tmp_path, marks)
    driver.prepare(ctx)
    try:
        driver.run(ctx)
        got = driver.collect(ctx)
    finally:
        driver.teardown(ctx)
    assert marks == ["warmup_start", "steady_start", "steady_end"]
    guests = [g.name for g in guest_pool.guests()]
    expected = {r.run: r.values for r in average_rows(
        parse_flatfile((DATA / "sd-three-rates" / "flatfile.html").read_text()))}
    for g in guests:
        assert (tmp_path / "raw" / g / "totals.html").is_file()
        mine = {dict(s.labels)["rd"]: s.value for s in got if s.guest == g and s.metric == "iops"}
        assert mine == {rd: v["rate"] for rd, v in expected.items()}
    totals = {dict(s.labels)["rd"]: s.value for s in got if s.guest is None
              and s.metric == "total_iops"}  # fmt: skip
    assert totals == pytest.approx({rd: v["rate"] * len(guests) for rd, v in expected.items()})
    resp = {dict(s.labels)["rd"]: s.value for s in got if s.guest is None and s.metric == "resp"}
    assert resp == pytest.approx({rd: v["resp"] for rd, v in expected.items()})
    for g in guest_pool.guests():  # teardown removed the trial directory
        assert not Path(driver._dir(ctx, g)).exists()


def test_a_failing_vdbench_is_a_guest_error_with_its_output(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    driver = _driver(tmp_path, "sd-three-rates")
    parm = Path(driver.params.parmfile)
    parm.write_text(parm.read_text() + "* replay-exit: 3\n")
    ctx = _ctx(guest_pool, tmp_path, [])
    driver.prepare(ctx)
    started = time.monotonic()
    try:
        with pytest.raises(GuestError, match=r"vdbench exited 3:\n.*failing as asked"):
            driver.run(ctx)
    finally:
        driver.teardown(ctx)
    assert time.monotonic() - started < 60


def test_missing_vdbench_is_said_before_anything_runs(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    parm = tmp_path / "p"
    parm.write_text("sd=sd1,lun=/dev/sdb\n")
    driver = VdbenchWorkload(VdbenchParams(parmfile=str(parm), command="/nonexistent/vdbench"))
    with pytest.raises(GuestError, match="/nonexistent/vdbench not found"):
        driver.prepare(_ctx(guest_pool, tmp_path, []))
