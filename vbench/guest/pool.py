"""Many guests: one lazily opened connection each, bounded fan-out across them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

from vbench.errors import ConfigError, GuestError
from vbench.guest.host import Guest, GuestRecorder, KillsOnExit
from vbench.guest.spec import GuestSpec

T = TypeVar("T")


class GuestPool(KillsOnExit):
    """Guests by name. A jump host that is also a pool guest shares that guest's connection."""

    def __init__(
        self,
        specs: Iterable[GuestSpec],
        max_parallel: int = 16,
        recorder: GuestRecorder | None = None,
    ) -> None:
        # Every guest of the pool reports what it reaches and starts here (a run's ledger).
        self.recorder = recorder
        self._specs: dict[str, GuestSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ConfigError(f"guest {spec.name!r} is defined twice")
            self._specs[spec.name] = spec
        self.max_parallel = max(1, max_parallel)
        self._guests: dict[str, Guest] = {}
        self._lock = threading.RLock()

    def set_recorder(self, recorder: GuestRecorder | None) -> None:
        """Report to ``recorder`` from now on (guests already made included)."""
        with self._lock:
            self.recorder = recorder
            for guest in self._guests.values():
                guest.recorder = recorder

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def get(self, name: str) -> Guest:
        with self._lock:
            guest = self._guests.get(name)
            if guest is not None:
                return guest
            spec = self._specs.get(name)
            if spec is None:
                known = ", ".join(self._specs) or "none"
                raise ConfigError(f"unknown guest {name!r} (known: {known})")
            jump = None
            if spec.jump is not None and self._specs.get(spec.jump.name) == spec.jump:
                jump = self.get(spec.jump.name)
            guest = self._guests[name] = Guest(spec, jump=jump, recorder=self.recorder)
            return guest

    def add(self, spec: GuestSpec) -> None:
        """A guest that joins while the run goes on (a VM cloned for a later point); one
        of the same name is replaced, its connection closed."""
        self.discard(spec.name)
        with self._lock:
            self._specs[spec.name] = spec

    def discard(self, name: str) -> None:
        """Forget a guest (its VM is about to be destroyed): what it still runs is killed
        (best effort) and its connection closed."""
        with self._lock:
            self._specs.pop(name, None)
            guest = self._guests.pop(name, None)
        if guest is not None:
            with contextlib.suppress(GuestError):
                guest.kill_all()
            guest.close()

    def guests(self) -> list[Guest]:
        """Every guest of the pool (connections still open lazily)."""
        return [self.get(n) for n in self._specs]

    def connect_all(self, names: Iterable[str] | None = None) -> None:
        """Connect in parallel; raise the first failure (GuestError names guest and cause)."""
        self.fan_out(self._specs if names is None else names, lambda g: g.connect())

    def fan_out(self, names: Iterable[str], fn: Callable[[Guest], T]) -> dict[str, T]:
        """fn(guest) for each name, at most max_parallel at once.

        Waits for all; returns every result, or raises the first failure in ``names``
        order (with a note naming the guest when the error does not already).
        """
        order = list(dict.fromkeys(names))
        guests = [self.get(n) for n in order]
        if not guests:
            return {}
        workers = min(self.max_parallel, len(guests))
        with ThreadPoolExecutor(workers, thread_name_prefix="vbench-guest") as pool:
            futures: list[Future[T]] = [pool.submit(fn, g) for g in guests]
            wait(futures)
        results: dict[str, T] = {}
        for name, fut in zip(order, futures, strict=True):
            exc = fut.exception()
            if exc is not None:
                if not isinstance(exc, GuestError):
                    exc.add_note(f"on guest {name}")
                raise exc
            results[name] = fut.result()
        return results

    def kill_all(self) -> None:
        """Kill tracked background processes on every guest; first failure raised last."""
        with self._lock:
            busy = [n for n, g in self._guests.items() if g.processes()]
        self.fan_out(busy, lambda g: g.kill_all())

    def close(self) -> None:
        with self._lock:
            guests, self._guests = list(self._guests.values()), {}
        for guest in guests:
            guest.close()
