"""The phases a bundle's members share in one trial (vbench/engine/bundle.py).

Each member marks its own phases and reports its tool's window; the trial's marks are
the window all of them share: warm-up from the first member's start, steady state from
the last live member's steady start to the first member's steady end. Every member's
own marks and window are written to the run log, so a reader can prove the overlap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from vbench.workloads.base import TrialContext


class SharedPhases:
    def __init__(self, ctx: TrialContext, names: Sequence[str]) -> None:
        self.ctx = ctx
        self.alive = set(names)
        self.marks: dict[str, dict[str, float]] = {n: {} for n in names}
        self.windows: dict[str, tuple[float, float]] = {}
        self.trial: set[str] = set()  # trial marks already given
        self._lock = threading.Lock()

    def mark(self, name: str, mark: str) -> None:
        key = mark if mark.endswith(("_start", "_end")) else f"{mark}_start"
        at = time.time()
        with self._lock:
            self.marks[name][key] = at
        self.ctx.log("workload_mark", workload=name, mark=key, at=round(at, 6))
        self._trial_marks()

    def window(self, name: str, start: float, end: float) -> None:
        """The member's steady window as its tool measured it (controller epoch)."""
        with self._lock:
            self.windows[name] = (start, end)
        self.ctx.log("workload_window", workload=name, start=round(start, 6),
                     end=round(end, 6), seconds=round(end - start, 6))

    def shared_window(self, names: Sequence[str]) -> None:
        """The trial's window: the span every member's own window covers (only when each
        member reported one; else the trial keeps the controller's marks)."""
        own = [self.windows[n] for n in names if n in self.windows]
        if own and len(own) == len(names):
            start, end = max(s for s, _ in own), min(e for _, e in own)
            if end > start:
                self.ctx.workload_window(start, end)

    def drop(self, name: str) -> None:
        """A member failed: the shared phases no longer wait for it."""
        with self._lock:
            self.alive.discard(name)
        self._trial_marks()

    def _trial_marks(self) -> None:
        with self._lock:
            live = [self.marks[n] for n in self.alive]
            due = []
            if "warmup_start" not in self.trial and any("warmup_start" in m for m in live):
                due.append("warmup_start")
            if "steady_start" not in self.trial and live and all(
                    "steady_start" in m for m in live):
                due.append("steady_start")
            # The shared window ends with the first member's end, but never before it
            # began (a member quicker than the others' starts would end it first).
            started = "steady_start" in self.trial or "steady_start" in due
            if started and "steady_end" not in self.trial and any(
                    "steady_end" in m for m in self.marks.values()):
                due.append("steady_end")
            self.trial.update(due)
        for key in due:  # outside the lock: the engine's mark logs and draws progress
            self.ctx.mark(key)

    def spreads(self, tiles: Mapping[str, int | None]) -> dict[int | None, float]:
        """Per tile (member name -> its tile, members that ran), first to last steady
        start: from the tools' windows when each member of the tile reported one, else
        from the members' steady_start marks."""
        by_tile: dict[int | None, list[str]] = {}
        for name, tile in tiles.items():
            by_tile.setdefault(tile, []).append(name)
        out: dict[int | None, float] = {}
        for tile, names in by_tile.items():
            if all(n in self.windows for n in names):
                starts = [self.windows[n][0] for n in names]
            else:
                starts = [self.marks[n]["steady_start"] for n in names
                          if "steady_start" in self.marks[n]]
            if len(starts) == len(names) and starts:
                out[tile] = max(starts) - min(starts)
        return out
