"""A lab's lease on both stores: one holder at a time, the holder named to whoever is
refused, a queued taker served when it is freed, and a lease that dies with its process
(kill -9) — against a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vbench.results.lease import Holder, LabBusy, kept_leases, lease_holders, take_lease
from vbench.results.store import Store
from vbench.testing import wait_for

pytestmark = pytest.mark.integration

FP = "0123456789abcdef"

# A process that takes the lease and holds it until it is killed; it prints "held" once
# it holds it (the test waits for that line, not for a guessed time).
HOLDER = """
import signal, sys
from pathlib import Path
from vbench.results.lease import Holder, take_lease
from vbench.results.store import Store
store = Store.open(sys.argv[1], Path(sys.argv[2]))
lease = take_lease(store, lambda: Holder.me("lab-a", sys.argv[3], "run-of-child", "s"))
print("held", flush=True)
while True:  # until the test kills it: nothing to wait for but that signal
    signal.pause()
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'vbench.db'}"
    return str(request.getfixturevalue("fresh_postgresql_url"))


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[Store]:
    with Store.open(store_url, tmp_path) as s:
        yield s


def me(run_id: str, fingerprint: str = FP) -> Holder:
    return Holder.me("lab-a", fingerprint, run_id, "nightly")


def test_a_held_lab_is_refused_naming_its_holder(store: Store, store_url: str,
                                                 tmp_path: Path) -> None:
    first = take_lease(store, lambda: me("run-1"))
    with Store.open(store_url, tmp_path) as other:
        with pytest.raises(LabBusy) as refused:
            take_lease(other, lambda: me("run-2"))
        text = str(refused.value)
        assert "\n" not in text
        assert text.startswith("lab lab-a: in use by run run-1 (pid ")
        assert f"pid {os.getpid()} on host {socket.gethostname()}, since " in text
        assert "`vbench run --wait` queues behind it" in text
        # Another lab of the same store is free.
        take_lease(other, lambda: me("run-3", "fedcba9876543210")).release()
        held = lease_holders(other)
        assert [(h.run_id, h.pid, h.lab) for h in held] == [("run-1", os.getpid(), "lab-a")]
        first.release()
        assert lease_holders(other) == []
        take_lease(other, lambda: me("run-2")).release()


def test_a_queued_taker_gets_the_lab_when_it_is_given_back(store: Store, store_url: str,
                                                          tmp_path: Path) -> None:
    first = take_lease(store, lambda: me("run-1"))
    told: list[str] = []
    got: list[str] = []

    def queue() -> None:
        with Store.open(store_url, tmp_path) as other:
            lease = take_lease(other, lambda: me("run-2"), wait=True,
                               on_wait=lambda h, _s: told.append(h.run_id if h else "?"))
            got.append(lease.holder.run_id)
            assert lease.waited > 0
            lease.release()

    t = threading.Thread(target=queue)
    t.start()
    wait_for(lambda: told, 30, "the queued taker to say whom it waits for")
    assert told[0] == "run-1" and not got  # still queued while run-1 holds it
    first.release()
    t.join(30)
    assert got == ["run-2"]


def test_a_killed_holder_frees_the_lab(store: Store, store_url: str, tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, store_url, str(tmp_path), FP],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        held = lease_holders(store, FP)
        assert [(h.run_id, h.pid) for h in held] == [("run-of-child", child.pid)]
        with pytest.raises(LabBusy, match=f"run run-of-child \\(pid {child.pid} "):
            take_lease(store, lambda: me("run-2"))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        # PostgreSQL ends the dead client's session as soon as it sees the socket close.
        wait_for(lambda: not lease_holders(store, FP), 30, "the killed holder's lease to go")
        take_lease(store, lambda: me("run-2")).release()
    finally:
        child.kill()
        child.wait(30)


def test_a_holder_another_database_user_hides_is_named_by_its_server_session(
        fresh_postgresql_url: str, postgresql_server: Any, tmp_path: Path) -> None:
    """PostgreSQL shows a session's statement only to its own user: to another user the
    holder is its server pid and client address, never an empty answer."""
    from tests.pg import PASSWORD, PASSWORD_USER
    from vbench.results.store_engine import create_engine

    database = fresh_postgresql_url.rsplit("/", 1)[1]
    with Store.open(fresh_postgresql_url, tmp_path) as store:
        lease = take_lease(store, lambda: me("run-1"))
        engine, shown, password = create_engine(
            postgresql_server.url(database, PASSWORD_USER, PASSWORD), tmp_path)
        other = Store(engine, shown, password)  # another user: reads no store table
        try:
            [held] = lease_holders(other, FP)
            assert held.run_id == ("(unknown: another database user's session, pid of the "
                                   "server's)")
            assert held.pid > 0 and held.text().endswith(
                "on host ?, since a time the server does not tell)")
            with pytest.raises(LabBusy, match="in use by run \\(unknown: another database"):
                take_lease(other, lambda: me("run-2"))
            lease.release()
            assert lease_holders(other, FP) == []
        finally:
            other.close()


def test_a_queued_taker_gives_up_after_its_longest_wait(store: Store, store_url: str,
                                                       tmp_path: Path) -> None:
    first = take_lease(store, lambda: me("run-1"))
    try:
        with Store.open(store_url, tmp_path) as other:
            t0 = time.monotonic()
            with pytest.raises(LabBusy) as refused:
                take_lease(other, lambda: me("run-2"), wait=True, max_wait=0.5)
            assert time.monotonic() - t0 >= 0.5  # it did queue, for that long
        text = str(refused.value)
        assert text.startswith("lab lab-a: in use by run run-1 (pid ")
        assert text.endswith(f"; gave up after waiting {refused.value.waited:.0f} s "
                             "(--wait-max)")
    finally:
        first.release()


def test_a_series_of_runs_keeps_its_lab_and_names_its_current_run(
        store: Store, store_url: str, tmp_path: Path) -> None:
    # `vbench run --aa`: back to back, nobody in between; `lab who` names the run on.
    def intruder(other: Store) -> str:
        found: list[str] = []  # another run of this process, in a thread of its own

        def attempt() -> None:
            try:
                take_lease(other, lambda: me("intruder")).release()
                found.append("taken")
            except LabBusy as exc:
                found.append(str(exc))

        t = threading.Thread(target=attempt)
        t.start()
        t.join(60)
        return found[0]

    with Store.open(store_url, tmp_path) as other:
        with kept_leases():
            take_lease(store, lambda: me("aa-1")).release()
            assert "in use by run aa-1 " in intruder(other)
            second = take_lease(store, lambda: me("aa-2"))
            assert [h.run_id for h in lease_holders(other, FP)] == ["aa-2"]
            second.release()
            assert "in use by run aa-2 " in intruder(other)
        assert lease_holders(other, FP) == []
        take_lease(other, lambda: me("after")).release()


def test_a_lab_name_with_comment_marks_is_leased_and_named(store: Store, store_url: str,
                                                           tmp_path: Path) -> None:
    # PostgreSQL nests /* */ comments: a '/*' in the lab's name (free text) left the
    # comment that carries the holder open, and the statement failed.
    odd = "lab /* a */ b */ 100% \\*/"
    lease = take_lease(store, lambda: Holder.me(odd, FP, "run-1", "s"))
    try:
        [held] = lease_holders(store, FP)
        assert (held.lab, held.run_id) == (odd, "run-1")
    finally:
        lease.release()


def test_a_long_lab_name_still_names_its_holder(store: Store) -> None:
    # PostgreSQL shows 1 kB of a session's statement: a long (or non-ASCII) lab name cut
    # the holder's description short, and `lab who` called the run an unknown session.
    lease = take_lease(store, lambda: Holder.me("ラボ" * 150, FP, "run-1", "s" * 300))
    try:
        [held] = lease_holders(store, FP)
        assert held.run_id == "run-1" and held.lab.startswith("ラボラボ")
    finally:
        lease.release()


def test_one_sqlite_store_reached_by_two_paths_has_one_queue(tmp_path: Path) -> None:
    # The lock folder sat beside the path as given: the same database through a symlink
    # to its file had a queue of its own, and two runs shared the lab.
    real = tmp_path / "data" / "vbench.db"
    real.parent.mkdir()
    (tmp_path / "alias.db").symlink_to(real)
    with Store.open(f"sqlite:///{real}", tmp_path) as one, \
         Store.open(f"sqlite:///{tmp_path / 'alias.db'}", tmp_path) as two, \
         take_lease(one, lambda: me("run-1")):
        with pytest.raises(LabBusy, match="in use by run run-1 "):
            take_lease(two, lambda: me("run-2"))
        assert [h.run_id for h in lease_holders(two, FP)] == ["run-1"]
