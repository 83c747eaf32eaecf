"""Ctrl-C tears a trial down on every guest at once (issue 28, item 8): processes that
ignore TERM each cost the kill's full grace before KILL, so stopping four of them in
turn would hold the user for four graces; at once it is one. The bound is the code's own
timer (the grace), not the machine's speed: only the kill commands' own overhead (well
under a grace) separates one grace from the measured time."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import wait_for
from tests.integration.test_guest_background import _group_members
from vbench.guest.fanout import on_each
from vbench.guest.ssh import GuestPool
from vbench.workloads.guest_trial import stop_all

pytestmark = pytest.mark.integration

GRACE = 5.0  # RemoteProcess.kill's default: TERM, then KILL after this


def test_stop_all_stops_every_process_at_once(
    guest_pool: GuestPool, local_guests: LocalGuests
) -> None:
    base = f"{local_guests.sshd.workdir}/stop-{uuid.uuid4().hex[:8]}"
    started = []
    for name in ("guest1", "guest2"):
        g = guest_pool.get(name)
        for k in range(2):
            # An ignored TERM stays ignored across exec: the sleep ignores it too.
            proc = g.start(["sh", "-c", f"trap '' TERM; sleep {410 + k}; true"],
                           log=f"{base}/{name}-{k}.log")
            started.append((g, proc, f"sleep {410 + k}"))
    for g, proc, sleep in started:
        wait_for(lambda g=g, p=proc, s=sleep: s in _group_members(g, p.pid), 60,
                 "the TERM trap to be set")
    t0 = time.monotonic()
    stop_all(p for _g, p, _s in started)
    took = time.monotonic() - t0
    assert took >= GRACE, "TERM was ignored: each kill waited its grace"
    assert took < 2 * GRACE, f"{took:.1f} s: the kills ran in turn, not at once"
    for g, proc, _s in started:
        assert _group_members(g, proc.pid) == []
        assert proc.wait(timeout=5) == -9


def test_on_each_runs_every_step_and_returns_each_failure_in_order() -> None:
    seen: list[int] = []

    def step(i: int) -> None:
        seen.append(i)
        if i % 2:
            raise ValueError(f"odd {i}")

    failed = on_each(range(5), step)
    assert sorted(seen) == [0, 1, 2, 3, 4]
    assert [(i, str(e)) for i, e in failed] == [(1, "odd 1"), (3, "odd 3")]
    assert on_each([], step) == []
