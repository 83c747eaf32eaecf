"""A background process on a guest, in its own process group, polled over SSH."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from vbench.errors import GuestError
from vbench.guest import shell

if TYPE_CHECKING:
    from vbench.guest.host import Guest

# Seconds a probe or kill command may take before the guest counts as unresponsive.
_CONTROL_TIMEOUT = 30.0
_SIGNALS = {"term": 15, "kill": 9}


class RemoteProcess:
    """Started by :meth:`Guest.start`; the pid is also its process group id."""

    def __init__(self, guest: Guest, pid: int, argv: tuple[str, ...], log: str) -> None:
        self.guest = guest
        self.pid = pid
        self.argv = argv
        self.log = log
        self._status: int | None = None
        self._group_done = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RemoteProcess({self.guest.name}, pid={self.pid}, {shell.argv_text(self.argv)!r})"

    @property
    def command(self) -> str:
        return shell.argv_text(self.argv)

    @property
    def finished(self) -> bool:
        """True once an exit status is known (recorded, or set by kill())."""
        return self._status is not None

    @property
    def group_done(self) -> bool:
        """True once no process of the group is known to be alive."""
        return self._group_done

    def _probe(self) -> tuple[str, int | None]:
        out = self.guest.run_script(
            shell.probe(self.pid, self.log), timeout=_CONTROL_TIMEOUT
        ).stdout.split()
        if out and out[0] == "rc" and len(out) >= 3:
            try:
                status = int(out[1])
            except ValueError as exc:
                raise GuestError(
                    self.guest.target, f"unreadable exit status {out[1]!r} in {self.log}.rc"
                ) from exc
            self._status = status
            if out[2] == "done":
                self._mark_group_done()
            return "rc", status
        if out == ["run"]:
            return "run", None
        self._mark_group_done()
        return "gone", None

    def _mark_group_done(self) -> None:
        self._group_done = True
        self.guest._forget(self)

    def is_running(self) -> bool:
        if self._status is not None:
            return False
        return self._probe()[0] == "run"

    def wait(
        self,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        poll: float = 0.2,
    ) -> int | None:
        """The exit status; None once ``cancel`` is set (the caller then kills).

        Raises GuestError on timeout, when the connection is lost, or when the group
        vanished without recording a status (killed from outside vbench).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if cancel is not None and cancel.is_set():
                return None
            if self._status is not None:
                return self._status
            state, status = self._probe()
            if state == "rc":
                return status
            if state == "gone":
                if self._status is not None:  # kill() raced us
                    return self._status
                raise GuestError(
                    self.guest.target,
                    f"`{self.command}` (pid {self.pid}) ended without an exit status "
                    f"(killed outside vbench?){_tail_suffix(self.tail(5))}",
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise GuestError(
                    self.guest.target,
                    f"`{self.command}` (pid {self.pid}) still running after {timeout:g} s",
                )
            pause = poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
            if cancel is not None:
                cancel.wait(pause)
            else:
                time.sleep(pause)

    def kill(self, grace: float = 5.0) -> None:
        """TERM the process group, KILL it after ``grace`` seconds if still alive."""
        with self._lock:
            if self._group_done:
                return
            out = self.guest.run_control(shell.kill_groups([self.pid], grace), grace)
            self._killed(_SIGNALS.get(out.strip()))

    def _killed(self, signal: int | None) -> None:
        """Record a kill: a process without a recorded status reports ``-signal``."""
        if self._status is None and signal is not None:
            self._status = -signal
        self._mark_group_done()

    def tail(self, lines: int = 20) -> str:
        """The last lines of the log; "" when it cannot be read (used in error messages)."""
        try:
            res = self.guest.run(
                ["tail", "-n", str(int(lines)), self.log], check=False, timeout=_CONTROL_TIMEOUT
            )
        except GuestError:
            return ""
        return res.stdout if res.status == 0 else ""


def _tail_suffix(tail: str) -> str:
    last = [ln for ln in tail.splitlines() if ln.strip()]
    return f"; log ends: {last[-1].strip()}" if last else ""
