"""Local helper processes vbench starts on the controller (the local lab's sshd, vcsim):
is one alive, stop it, read its pid file. One place for the TERM-then-KILL rule.

A daemon started by an earlier `vbench lab up` is known only by its pid; a process this
one started is a :class:`subprocess.Popen` and is stopped (and reaped) through it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

# How often a stopping process is looked at: short, since stopping is waited on.
_POLL = 0.05


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process. One that exited but was not reaped yet (a
    zombie: possible when it is our own child) counts as gone; one that belongs to
    another user counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # /proc/PID/stat is "pid (comm) state …"; comm may hold spaces or parentheses.
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): kill(0) is all we know
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def stop_pid(pid: int, timeout: float) -> bool:
    """SIGTERM ``pid``, wait up to ``timeout`` seconds for it to end, then SIGKILL it.
    Returns whether it ended on SIGTERM (False: it had to be killed)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(_POLL)
    if not pid_alive(pid):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return False


def stop_child(popen: subprocess.Popen[bytes], timeout: float) -> bool:
    """The same for a child of this process, which is also reaped. Returns whether it
    ended on SIGTERM (True too when it had already ended)."""
    if popen.poll() is not None:
        return True
    popen.terminate()
    try:
        popen.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait(timeout)
        return False


def read_pid(path: Path) -> int | None:
    """The pid in the first word of a pid file; None when missing or unreadable."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
