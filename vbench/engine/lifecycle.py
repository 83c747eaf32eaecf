"""Ctrl-C and SIGTERM over a run's whole life, from the moment it is stored to its end.

A run is stored first with status ``provisioning``, then ``running``, and always ends
``ok``, ``failed`` or ``interrupted`` (exit 0, 3 or 130). While it provisions or runs
trials, a signal sets the run's cancel event: the engine stops at once and cleans up.
Once the final clean-up has begun (guests' processes, then vSphere), it is never cut
short: the first signal is noted (the run then ends ``interrupted``, exit 130) and every
further one says what is still left and the command that finishes it, should vbench be
killed outright.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunSignals:
    """Installs itself for SIGINT and SIGTERM (main thread only) until :meth:`restore`."""

    def __init__(
        self,
        cancel: threading.Event,
        say: Callable[[str], None] | None = None,
        finish_command: str = "vbench cleanup RUN",
    ) -> None:
        self.cancel = cancel
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True))
        self.finish_command = finish_command
        self.received = 0  # signals since install
        self.during_cleanup = 0  # of which after cleaning() began
        self.left: Callable[[], list[str]] = list
        self._cleaning = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread() or self._old:
            return
        self._old = {s: signal.signal(s, self._handle) for s in SIGNALS}

    def restore(self) -> None:
        old, self._old = self._old, {}
        for s, h in old.items():
            signal.signal(s, h)

    def cleaning(self, left: Callable[[], list[str]]) -> None:
        """The final clean-up begins; ``left`` names what it still has to remove."""
        self._cleaning, self.left = True, left

    @property
    def interrupted(self) -> bool:
        return self.received > 0 or self.cancel.is_set()

    def _handle(self, signum: int, frame: Any) -> None:
        self.received += 1
        self.cancel.set()
        if not self._cleaning:
            return
        self.during_cleanup += 1
        if self.during_cleanup == 1:
            self.say("interrupted: finishing the clean-up first (press Ctrl-C again to see "
                     "what is left)")
            return
        try:
            left = self.left()
        except Exception as exc:  # the journal being written: say so, never fail here
            left = [f"(cannot tell: {exc})"]
        what = ", ".join(left) if left else "nothing in vSphere"
        self.say(f"still to clean up: {what}; the clean-up goes on. If vbench is stopped "
                 f"now, finish it with `{self.finish_command}`")
