"""The leftovers scan of `vbench cleanup RUN` on a real sshd guest: what lives under the
run's directory (by working directory or by an argument) dies with its process group;
a neighbour whose path only starts like it survives."""

from __future__ import annotations

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import wait_for
from vbench.guest.leftovers import find_leftovers, kill_leftovers
from vbench.guest.ssh import GuestPool

pytestmark = pytest.mark.integration

RUN = "20261123-000000-0123abcd"


def test_leftovers_die_with_their_groups_and_neighbours_survive(
    guest_pool: GuestPool, local_guests: LocalGuests
) -> None:
    g = guest_pool.get("guest1")
    # A space and a quote in the path: the directory never passes through a shell string.
    root = f"{local_guests.sshd.workdir}/it's here"
    run_dir, neighbour = f"{root}/{RUN}", f"{root}/{RUN}x"
    g.mkdir(run_dir)
    g.mkdir(neighbour)
    # Only its working directory ties this one to the run (its argv names nothing).
    by_cwd = g.start(["sleep", "600"], log=f"{run_dir}/a/out.log", cwd=run_dir)
    # An argument names the run; its child `sleep` names nothing but shares the group.
    by_arg = g.start(["sh", "-c", 'sleep 600 & wait', f"{run_dir}/job"],
                     log=f"{neighbour}/b.log", cwd="/")
    # Neither the leader nor the group's other sleep names the run: only the group ties
    # them to the child that works in the run's directory.
    g.put_text(run_dir, f"{neighbour}/where")
    by_group = g.start(["sh", "-c", '(cd "$(cat "$0")" && exec sleep 600) & exec sleep 600',
                        f"{neighbour}/where"], log=f"{neighbour}/g.log", cwd="/")
    other = g.start(["sleep", "600"], log=f"{neighbour}/c.log", cwd=neighbour)
    wait_for(lambda: len(find_leftovers(g, run_dir)) >= 4, 30, "the run's processes")

    killed = kill_leftovers(g, run_dir)

    assert killed >= 4  # sleep by cwd, its wrapper (log in the run dir), sh by argument, ...
    wait_for(lambda: not by_cwd.is_running(), 30, "the cwd-matched group to end")
    wait_for(lambda: not by_arg.is_running(), 30, "the argument-matched group to end")
    wait_for(lambda: not by_group.is_running(), 30, "the group of the cwd-matched child")
    assert find_leftovers(g, run_dir) == {}
    assert other.is_running()  # `<run_id>x` is another directory
    assert kill_leftovers(g, run_dir) == 0  # a second pass finds nothing
