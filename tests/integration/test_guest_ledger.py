"""The guest ledger on a real sshd guest: a run records the guests it reaches and the
process groups it starts (with the leader's start time), and `vbench cleanup`'s kill
stops a recorded group even when nothing of it names the run's directory — but never a
group whose leader is another process than the one recorded (a reused pid)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import wait_for
from vbench.guest.host import Guest
from vbench.guest.ledger import GuestLedger, read_ledger
from vbench.guest.leftovers import find_leftovers, kill_leftovers
from vbench.guest.ssh import GuestPool

pytestmark = pytest.mark.integration

RUN = "20261124-000000-4567cdef"


def _leader_start(pid: int) -> int:
    """Field 22 of /proc/PID/stat, read here: the loopback guest is this machine."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[19])


def test_the_ledger_records_the_guest_and_each_started_group(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    spec = local_guests[0]
    ledger = GuestLedger.in_run_dir(tmp_path)
    with GuestPool([spec], recorder=ledger) as pool:
        g = pool.get(spec.name)
        proc = g.start(["sleep", "600"], log=f"{spec.workdir}/{RUN}-ledger/sleep.log")
        try:
            recorded = read_ledger(tmp_path)[spec.name]
            assert (recorded.address, recorded.port) == (spec.address, spec.port)
            assert recorded.workdir == spec.workdir
            assert recorded.groups == ((proc.pid, _leader_start(proc.pid)),)
        finally:
            proc.kill()
    # Only the program is named: arguments may hold secrets.
    assert '"command": "sleep"' in (tmp_path / "guest-processes.jsonl").read_text()


def test_a_recorded_group_dies_though_nothing_of_it_names_the_run(
    local_guests: LocalGuests, guest_pool: GuestPool
) -> None:
    g = guest_pool.get("guest1")
    run_dir = f"{local_guests.sshd.workdir}/{RUN}"
    g.mkdir(run_dir)
    # Log, working directory and arguments all elsewhere: the scan cannot see it.
    proc = g.start(["sleep", "600"], log=f"{local_guests.sshd.workdir}/elsewhere/out.log",
                   cwd="/")
    assert find_leftovers(g, run_dir) == {}
    start = _leader_start(proc.pid)
    # Recorded with another start time, it is someone else's process: left alone.
    assert kill_leftovers(g, run_dir, [(proc.pid, start + 1)]) == 0
    assert proc.is_running()

    assert kill_leftovers(g, run_dir, [(proc.pid, start)]) == 1

    wait_for(lambda: not proc.is_running(), 30, "the recorded group to end")
    assert kill_leftovers(g, run_dir, [(proc.pid, start)]) == 0  # a second pass: nothing


def test_a_group_that_ends_at_once_is_recorded_too(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    # Its start time may be gone before it is read (then it is recorded without one, and
    # cleanup relies on the scan for it); the group itself is always recorded.
    ledger = GuestLedger.in_run_dir(tmp_path)
    with Guest(local_guests[1], recorder=ledger) as g:
        proc = g.start(["true"], log=f"{local_guests[1].workdir}/{RUN}-t/true.log")
        assert proc.wait(timeout=30) == 0
    (recorded,) = read_ledger(tmp_path).values()
    assert [pgid for pgid, _ in recorded.groups] == [proc.pid]
