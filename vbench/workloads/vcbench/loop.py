"""The load: one thread per session, each issuing operations on its own lease.

Closed loop: a session picks its next operation as soon as the last one has finished
(plus ``think_time``). Open loop: each session starts operations on a fixed cycle of
``sessions / rate`` seconds (Faban's cycle time), whatever the latency; a start that
finds the session still busy is late and counted (``late_starts``): the rate asked for
is then more than the sessions can carry.

The next operation is the one, among those legal for the lease's state (no power-on of
a running VM, no destroy without a spare), furthest behind its share of the mix. A failed
operation is a record with its fault; an unexpected error is recorded the same way and
the session goes on, after a pause when errors repeat (never a tight failing loop).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vbench.errors import Interrupted
from vbench.vsphere.faults import fault_name, fault_text
from vbench.vsphere.operations import Lease, Operator, OpRecord, legal_ops

BACKOFF_AFTER = 5  # consecutive unexpected errors before a session pauses
BACKOFF_SECONDS = 1.0


@dataclass
class Session:
    operator: Operator
    lease: Lease


class LoadRun:
    """Runs every session's loop until :meth:`stop`; collects every operation's record."""

    def __init__(
        self,
        sessions: Sequence[Session],
        mix: Mapping[str, float],
        *,
        think_time: float = 0.0,
        rate: float | None = None,
        seed: int = 1,
        cancel: threading.Event | None = None,
    ) -> None:
        self.sessions = list(sessions)
        self.mix = {op: w for op, w in mix.items() if w > 0}
        self._total = sum(self.mix.values())
        self.think_time, self.rate, self.seed = think_time, rate, seed
        self.cancel = cancel or threading.Event()
        self.records: list[OpRecord] = []
        self.late_starts = 0
        self.errors: list[str] = []  # unexpected errors (besides failed operations)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    # --- control -----------------------------------------------------------------------
    def start(self) -> None:
        t0 = time.time()
        for i, s in enumerate(self.sessions):
            t = threading.Thread(
                target=self._loop, args=(i, s, t0), name=f"vbench-vcb-{i}", daemon=True
            )
            self._threads.append(t)
            t.start()

    def stop(self, drain: float) -> bool:
        """Issue no more operations; wait up to ``drain`` seconds for those in flight.
        True when every session has finished its last operation."""
        self._stop.set()
        deadline = time.monotonic() + drain
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    def in_flight(self) -> int:
        return sum(t.is_alive() for t in self._threads)

    def snapshot(self) -> list[OpRecord]:
        with self._lock:
            return list(self.records)

    # --- one session ---------------------------------------------------------------------
    def _loop(self, index: int, s: Session, t0: float) -> None:
        rng = random.Random(self.seed * 1_000_003 + index)
        cycle = len(self.sessions) / self.rate if self.rate else None
        next_at = t0 + (rng.random() * cycle if cycle else 0.0)
        errors = 0
        counts: dict[str, int] = {}
        while not self._stop.is_set() and not self.cancel.is_set():
            if cycle is not None:
                delay = next_at - time.time()
                if delay > 0:
                    if self._stop.wait(delay):
                        return
                elif delay < -0.001:
                    with self._lock:
                        self.late_starts += 1
                next_at = max(next_at + cycle, time.time() - cycle)
            op = self._choose(rng, s, counts)
            if op is None:  # nothing legal with these weights: wait for the end
                self._stop.wait(0.5)
                continue
            try:
                rec = s.operator.run(op, s.lease)
                errors = 0
            except Interrupted:
                return
            except Exception as exc:  # a broken session must not stop the others
                errors += 1
                now = time.time()
                rec = OpRecord(
                    op, index, s.operator.vc, s.lease.home.name, now, now, False,
                    fault_name(exc), fault_text(exc),
                )  # fmt: skip
                with self._lock:
                    self.errors.append(f"session {index}: {op}: {fault_text(exc)}")
                if errors >= BACKOFF_AFTER and self._stop.wait(BACKOFF_SECONDS):
                    return
            with self._lock:
                self.records.append(rec)
            if self.think_time and cycle is None and self._stop.wait(self.think_time):
                return

    def _choose(self, rng: random.Random, s: Session, counts: dict[str, int]) -> str | None:
        """The legal operation furthest behind its share of this session's operations.

        Drawing among the legal operations only would under-serve those often illegal
        (power-on is legal only half the time): the realised mix would not be the mix
        asked for. Choosing by deficit keeps each operation's count within about one
        of its share; the random term breaks ties and keeps sessions out of step."""
        legal = [op for op in legal_ops(s.lease, s.operator.site) if op in self.mix]
        if not legal:
            return None
        n = sum(counts.values()) + 1
        total = self._total

        def score(op: str) -> float:
            return self.mix[op] / total * n - counts.get(op, 0) + rng.random()

        op = max(legal, key=score)
        counts[op] = counts.get(op, 0) + 1
        return op
