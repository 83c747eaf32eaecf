"""Ctrl-C over a run's life (engine/lifecycle.py): during the run a signal cancels it;
during the final clean-up the first is noted and the clean-up goes on, and a second says
what is still left and the command that finishes it."""

from __future__ import annotations

import os
import signal
import threading

from vbench.engine.lifecycle import RunSignals


def test_signals_cancel_the_run_then_never_stop_its_cleanup() -> None:
    said: list[str] = []
    cancel = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    sig = RunSignals(cancel, said.append, "vbench cleanup RUN1 --lab lab.yaml")
    sig.install()
    try:
        os.kill(os.getpid(), signal.SIGINT)  # while trials run: the run is cancelled
        assert cancel.is_set() and said == [] and sig.received == 1
        sig.cleaning(lambda: ["vm vb-RUN1-web-1", "vm vb-RUN1-web-2"])
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    finally:
        sig.restore()
    assert signal.getsignal(signal.SIGINT) is before
    assert sig.received == 3 and sig.during_cleanup == 2 and sig.interrupted
    assert said[0].startswith("interrupted: finishing the clean-up first")
    assert said[1] == (
        "still to clean up: vm vb-RUN1-web-1, vm vb-RUN1-web-2; the clean-up goes on. If "
        "vbench is stopped now, finish it with `vbench cleanup RUN1 --lab lab.yaml`"
    )


def test_what_is_left_cannot_break_the_handler() -> None:
    said: list[str] = []

    def broken() -> list[str]:
        raise OSError("journal busy")

    sig = RunSignals(threading.Event(), said.append)
    sig.install()
    try:
        sig.cleaning(broken)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
    finally:
        sig.restore()
    assert "still to clean up: (cannot tell: journal busy)" in said[1]
