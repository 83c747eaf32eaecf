"""Background processes on a real sshd guest: exit status, process-group kill, lost links."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import wait_for
from vbench.errors import GuestError
from vbench.guest.ssh import Guest, GuestPool

pytestmark = pytest.mark.integration


def _group_members(guest: Guest, pgid: int) -> list[str]:
    """Live (non-zombie) processes of a process group, as seen with ps on the guest."""
    out = guest.run(["ps", "-e", "-o", "pgid=,stat=,args="]).stdout
    rows = [ln.split(None, 2) for ln in out.splitlines()]
    return [r[2] for r in rows if len(r) == 3 and r[0] == str(pgid) and not r[1].startswith("Z")]


@pytest.fixture
def log(local_guests: LocalGuests) -> str:
    return f"{local_guests.sshd.workdir}/bg-{uuid.uuid4().hex[:8]}/out.log"


def test_start_records_exit_status_and_output(guest_pool: GuestPool, log: str) -> None:
    g = guest_pool.get("guest1")
    proc = g.start(["sh", "-c", 'echo "$GREETING from $(pwd)"; exit 7'], log=log,
                   cwd="/tmp", env={"GREETING": "hi there"})
    assert proc.wait(timeout=10) == 7
    assert g.read_text(log) == "hi there from /tmp\n"
    assert g.read_text(log + ".rc") == "7\n"
    assert not proc.is_running()
    assert "hi there" in proc.tail(5)


def test_kill_removes_the_whole_process_group(guest_pool: GuestPool, log: str) -> None:
    g = guest_pool.get("guest1")
    proc = g.start(["sh", "-c", "sleep 301 & sleep 302 & wait"], log=log)
    # setsid sh, sh, two sleeps
    wait_for(lambda: len(_group_members(g, proc.pid)) >= 3, 60, "the whole group to start")
    assert proc.is_running()
    proc.kill(grace=2)
    assert _group_members(g, proc.pid) == []
    assert proc.wait(timeout=5) == -15
    assert proc not in g.processes()


def test_kill_escalates_when_term_is_ignored(guest_pool: GuestPool, log: str) -> None:
    g = guest_pool.get("guest1")
    # An ignored signal stays ignored across exec, so sleep ignores TERM too.
    proc = g.start(["sh", "-c", "trap '' TERM; sleep 303; sleep 304"], log=log)
    # The trap is set once the first sleep runs: wait for it, not for a guessed delay.
    wait_for(lambda: "sleep 303" in _group_members(g, proc.pid), 60, "the trap to be set")
    started = time.monotonic()
    proc.kill(grace=0.5)
    assert time.monotonic() - started >= 0.5
    assert _group_members(g, proc.pid) == []
    assert proc.wait() == -9


def test_wait_timeout_and_cancel(guest_pool: GuestPool, log: str) -> None:
    g = guest_pool.get("guest1")
    proc = g.start(["sleep", "305"], log=log)
    with pytest.raises(GuestError, match=r"still running after 0.3 s"):
        proc.wait(timeout=0.3)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    assert proc.wait(cancel=cancel) is None
    assert proc.is_running()  # the cancel ended the wait, not the process
    proc.kill()


def test_process_killed_outside_vbench_is_an_error(guest_pool: GuestPool, log: str) -> None:
    g = guest_pool.get("guest1")
    proc = g.start(["sleep", "306"], log=log)
    g.run(["kill", "-KILL", f"-{proc.pid}"])
    with pytest.raises(GuestError, match="ended without an exit status"):
        proc.wait(timeout=10)


def test_kill_all_stops_every_tracked_process(guest_pool: GuestPool, log: str) -> None:
    g1, g2 = guest_pool.get("guest1"), guest_pool.get("guest2")
    procs = [
        g1.start(["sleep", "307"], log=log + ".a"),
        g1.start(["sh", "-c", "sleep 308 & wait"], log=log + ".b"),
        g2.start(["sleep", "309"], log=log + ".c"),
    ]
    g1.kill_all()
    assert g1.processes() == []
    assert [_group_members(g1, p.pid) for p in procs[:2]] == [[], []]
    assert procs[2].is_running()
    guest_pool.kill_all()
    assert _group_members(g2, procs[2].pid) == []
    assert [p.wait() for p in procs] == [-15, -15, -15]


def test_lost_connection_during_wait_is_a_guest_error(
    local_guests: LocalGuests, log: str
) -> None:
    with GuestPool(local_guests) as pool, GuestPool(local_guests) as other:
        g = pool.get("guest1")
        session_pid = int(g.run_script("echo $PPID").stdout)  # sshd's process for g
        proc = g.start(["sleep", "310"], log=log)
        errors: list[BaseException] = []
        probing = threading.Event()
        probe = proc._probe

        def first_probe():  # type: ignore[no-untyped-def]
            probing.set()
            return probe()

        proc._probe = first_probe  # type: ignore[method-assign]

        def waiter() -> None:
            try:
                proc.wait(timeout=20)
            except GuestError as exc:
                errors.append(exc)

        t = threading.Thread(target=waiter)
        t.start()
        wait_for(probing.is_set, 60, "the wait to be polling")  # then lose its connection
        other.get("guest1").run(["kill", "-KILL", str(session_pid)])
        t.join(10)
        assert not t.is_alive()
        assert len(errors) == 1 and "connection lost" in str(errors[0])
        assert str(errors[0]).startswith("guest1 (127.0.0.2:")
        # The next call reconnects, and the process can still be cleaned up.
        assert proc.is_running()
        proc.kill()
        assert _group_members(g, proc.pid) == []


def test_a_child_slow_to_make_its_group_is_not_reported_gone(
    guest_pool: GuestPool, log: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """setsid(2) runs a moment after the fork. A start that returned before it, probed at
    once, found no group and no exit status and called the process gone (seen under a CPU
    hog: "ended without an exit status (killed outside vbench?)"). Here a stand-in
    `setsid` first in PATH holds the child outside its own group for half a second —
    a starved scheduler made deterministic — before running the real one."""
    import shutil

    from vbench.guest import shell
    from vbench.guest.process import RemoteProcess

    slow = tmp_path_factory.mktemp("slow-setsid")
    real = shutil.which("setsid")
    assert real is not None
    (slow / "setsid").write_text(f'#!/bin/sh\nsleep 0.5\nexec {real} "$@"\n')
    (slow / "setsid").chmod(0o755)
    g = guest_pool.get("guest1")
    argv = ["sh", "-c", "exit 5"]
    script = f"PATH={slow}:$PATH\n" + shell.background(argv, log, None, None)
    pid = int(g.run_script(script, timeout=30).stdout.split()[0])
    proc = RemoteProcess(g, pid, tuple(argv), log)
    assert proc.wait(timeout=30) == 5  # its own status, not "ended without an exit status"
