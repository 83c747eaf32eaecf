"""``phases.warmup: auto`` for fio: a warm-up fio of its own, read while it runs, ended
by the warm-up detector (vbench/analysis/warmup.py, ``warmup_end``).

fio's per-second logs are written when a job ends, so they cannot be read live; its
``--status-interval`` output can: every interval fio appends a whole JSON document of
the job so far (``job_runtime`` in ms, ``total_ios`` per direction, cumulative). The
warm-up job is the measured job with ``runtime`` past the cap and no ``ramp_time``,
reporting every observation interval; the driver reads what each guest's fio wrote
since it last looked, turns each interval into the guest's IO/s, and sums the guests'
k-th intervals. When the detector says the series settled (or fio's runtime reaches the
cap: the fallback), the warm-up fio is stopped and the measured one starts at once with
no ramp: its JSON is the trial's figures, whole (percentiles included), over the steady
window only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.analysis.warmup import AUTO_WARMUP_FILE, WarmupEnd, observation_interval, warmup_end
from vbench.errors import GuestError, Interrupted

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.workloads.base import TrialContext

JOB = "warmup.fio"
RESULT = "warmup.json"
LOG = "warmup.log"
KEPT = AUTO_WARMUP_FILE  # raw/<point>-<trial>/: the observations the detector saw
WALL_GRACE = 60.0  # seconds past the cap a fio that stopped reporting is waited for
_DIRECTIONS = ("read", "write", "trim")
_START = '{\n  "fio version"'


@dataclass(frozen=True)
class Snapshot:
    """One status document of fio: the longest job runtime (s) and every I/O so far."""

    runtime: float
    ios: int


def snapshots(text: str) -> tuple[list[Snapshot], int]:
    """The whole status documents in ``text`` (new output of fio, from the end of the
    last whole one read before), and how many bytes of ``text`` they take (the document
    fio is writing may be torn: it is read again, whole, next time)."""
    decoder = json.JSONDecoder()
    out: list[Snapshot] = []
    used = 0
    pos = text.find(_START)
    while pos >= 0:
        try:
            doc, end = decoder.raw_decode(text, pos)
        except ValueError:  # torn: fio is still writing it
            break
        jobs = doc.get("jobs") or [] if isinstance(doc, dict) else []
        if jobs:
            runtime = max(float(j.get("job_runtime") or 0) for j in jobs) / 1000.0
            ios = sum(int((j.get(d) or {}).get("total_ios") or 0)
                      for j in jobs for d in _DIRECTIONS)
            out.append(Snapshot(runtime, ios))
        used = end
        pos = text.find(_START, end)
    return out, len(text[:used].encode())


class Rates:
    """Each guest's IO/s over each of fio's status intervals; observation k is the sum
    over the guests of their k-th interval (they started together): the series depends
    on fio's own clock, not on how quickly the controller reads it."""

    def __init__(self, guests: Sequence[str]) -> None:
        self._last: dict[str, Snapshot | None] = dict.fromkeys(guests)
        self._rates: dict[str, list[float]] = {g: [] for g in guests}

    def add(self, guest: str, snaps: Sequence[Snapshot]) -> None:
        for snap in snaps:
            prev = self._last[guest]
            if prev is not None and snap.runtime <= prev.runtime:
                continue  # the final document repeats the last interval's time
            if prev is not None:
                self._rates[guest].append((snap.ios - prev.ios) / (snap.runtime - prev.runtime))
            self._last[guest] = snap

    def series(self) -> list[float]:
        """The observations every guest has reached."""
        n = min(len(r) for r in self._rates.values())
        return [sum(r[k] for r in self._rates.values()) for k in range(n)]

    def runtime(self) -> float:
        """How long the slowest guest's warm-up fio has run (s, fio's clock)."""
        return min((s.runtime if s else 0.0) for s in self._last.values())


def status_argv(result: str, jobfile: str, interval: float) -> list[str]:
    return ["fio", "--output-format=json", f"--status-interval={round(interval * 1000)}ms",
            "--output", result, jobfile]


def run_warmup(
    ctx: TrialContext,
    guests: Sequence[Guest],
    procs: Mapping[str, RemoteProcess],
    dir_of: Callable[[Guest], str],
    stop: Callable[[], None],
) -> WarmupEnd:
    """Watch the warm-up fio of every guest (started with :func:`status_argv`) until the
    detector ends it or fio's runtime reaches the cap (``ctx.warmup``). ``stop`` kills
    every fio of the trial (a failure, a cancel)."""
    cap = ctx.warmup
    step = observation_interval(cap)
    rates = Rates([g.name for g in guests])
    read = dict.fromkeys((g.name for g in guests), 0)  # bytes of whole documents read
    started = time.monotonic()
    answer = WarmupEnd(False, None, "")
    while not answer.end:
        if ctx.cancel.wait(step):
            stop()
            raise Interrupted("fio run interrupted during warm-up")
        for name, (found, used) in _read_all(guests, procs, dir_of, read, stop).items():
            read[name] += used
            rates.add(name, found)
        # fio's clock decides the cap; the wall clock only guards against a fio that
        # stopped reporting (a hung device).
        capped = rates.runtime() >= cap or time.monotonic() - started >= cap + WALL_GRACE
        answer = warmup_end(rates.series(), capped)
    ctx.log("fio_warmup_auto", seconds=round(time.monotonic() - started, 3),
            fio_seconds=round(rates.runtime(), 3), cap=cap, interval=step,
            observations=len(rates.series()), settled_at=answer.settled_at,
            reason=answer.reason)
    _keep(ctx, rates.series(), step, answer)
    return answer


def _keep(ctx: TrialContext, values: Sequence[float], step: float, answer: WarmupEnd) -> None:
    """The warm-up's observations beside the trial's raw outputs (``raw/<p>-<t>/``), so a
    reviewer can redraw what the detector saw."""
    ctx.raw_dir.mkdir(parents=True, exist_ok=True)
    (ctx.raw_dir / KEPT).write_text(json.dumps({
        "interval_s": step, "cap_s": ctx.warmup, "settled_at": answer.settled_at,
        "reason": answer.reason, "iops": [round(v, 3) for v in values]}, indent=1) + "\n")


def _read_all(
    guests: Sequence[Guest], procs: Mapping[str, RemoteProcess],
    dir_of: Callable[[Guest], str], read: Mapping[str, int], stop: Callable[[], None],
) -> dict[str, tuple[list[Snapshot], int]]:
    """What every guest's warm-up fio wrote since the last look, read on all guests at
    once (a study's 32 guests in turn would lag behind fio's interval)."""
    from vbench.guest.fanout import on_each

    got: dict[str, tuple[list[Snapshot], int]] = {}

    def look(g: Guest) -> None:
        _alive(g, procs[g.name])
        got[g.name] = snapshots(_new_output(g, f"{dir_of(g)}/{RESULT}", read[g.name]))

    failed = on_each(guests, look)
    if failed:
        stop()
        raise failed[0][1]
    return got


def _new_output(guest: Guest, path: str, offset: int) -> str:
    """What fio wrote to ``path`` after its first ``offset`` bytes ("" before it exists)."""
    res = guest.run(["tail", "-c", f"+{offset + 1}", "--", path], timeout=60, check=False)
    return res.stdout if res.status == 0 else ""


def _alive(guest: Guest, proc: RemoteProcess) -> None:
    """The warm-up fio runs until stopped (its runtime is past the cap): an exit is a
    failure (a bad job, a full device)."""
    if not proc.is_running():
        from vbench.workloads.guest_trial import log_tail

        raise GuestError(guest.name, "the warm-up fio exited before its warm-up ended"
                         + log_tail(proc))
