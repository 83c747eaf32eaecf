"""What the drivers that start a tool as background processes in guests share (fio,
vdbench, DVD Store, iperf3/netperf): the per-trial directory on each guest, waiting for
a process with every other one stopped when it fails, and the teardown that removes
the directories.

One place, so a fix (a hung guest, a kill that raises, a directory name) reaches every
driver at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from threading import Event
from typing import TYPE_CHECKING

from vbench.errors import GuestError, Interrupted, VbenchError
from vbench.guest.fanout import on_each

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.workloads.base import TrialContext

TAIL_LINES = 12
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def trial_dir(workdir: str, run_id: str, tool: str, guest: str, point: int, trial: int) -> str:
    """``<workdir>/<run_id>/<tool>-<guest>-p<point>-t<trial>``: the guest's name is in it
    because loopback guests may share one filesystem."""
    return f"{workdir.rstrip('/')}/{run_id}/{tool}-{_SAFE.sub('_', guest)}-p{point}-t{trial}"


def guest_trial_dir(ctx: TrialContext, guest: Guest, tool: str) -> str:
    return trial_dir(str(guest.spec.workdir), ctx.run_id, tool, guest.name, ctx.point, ctx.trial)


def log_tail(proc: RemoteProcess, lines: int = TAIL_LINES) -> str:
    """``":\\n<last non-blank lines>"`` of the process's log, or ``""`` when unreadable."""
    try:
        kept = [ln for ln in proc.tail(lines).splitlines() if ln.strip()]
    except (VbenchError, OSError):
        return ""
    return (":\n" + "\n".join(kept)) if kept else ""


def stop_all(procs: Iterable[RemoteProcess]) -> None:
    """Kill every process at once (each may take its TERM grace: in turn, a Ctrl-C
    would wait for the sum); one that cannot be killed does not keep the others running
    (the engine's ``guest.kill_all`` at the end of the trial is the backstop)."""
    for _proc, exc in on_each(procs, lambda p: p.kill()):
        if not isinstance(exc, VbenchError | OSError):
            raise exc


def wait_exit(
    proc: RemoteProcess, guest: str, what: str, deadline: float | None, cancel: Event,
    on_failure: Callable[[], None],
) -> None:
    """Until *proc* exits 0 (``deadline`` is ``time.monotonic()`` time, ``None`` for no
    limit). A timeout, a lost guest, a cancel or a non-zero status calls *on_failure*
    (stop every other process of the trial) and raises: GuestError naming *guest* with
    the log's last lines, or Interrupted."""
    timeout = None if deadline is None else max(1.0, deadline - time.monotonic())
    try:
        status = proc.wait(timeout=timeout, cancel=cancel)
    except GuestError:  # timed out or lost the guest
        on_failure()
        raise
    if status is None:  # cancelled
        on_failure()
        raise Interrupted(f"{what} interrupted")
    if status != 0:
        tail = log_tail(proc)  # before the others are stopped: it is what the user reads
        on_failure()
        raise GuestError(guest, f"{what} exited {status}{tail}")


def remove_trial_dirs(guests: Iterable[Guest], dir_of: Callable[[Guest], str]) -> None:
    """Remove each guest's trial directory (all at once), trying every guest before one
    GuestError naming those that failed."""
    failed: dict[str, str] = {}
    for g, exc in on_each({g.name: g for g in guests}.values(), lambda g: g.remove(dir_of(g))):
        if not isinstance(exc, VbenchError):
            raise exc
        failed[g.name] = str(exc)
    if failed:
        raise GuestError(", ".join(failed), "teardown: " + "; ".join(failed.values()))
