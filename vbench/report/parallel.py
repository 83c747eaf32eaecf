"""Render many charts on several cores.

matplotlib spends 50–100 ms per chart in Python; a report with dozens of time-series
charts is rendered by a few forked worker processes instead of one, as many as there
are idle cores (none when the machine is already busy). Forking is cheap
here (matplotlib and the data are already loaded) and every job is a pure function of
its arguments. Anything that prevents a pool falls back to rendering in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
MIN_PARALLEL_JOBS = 8  # below this a pool costs more than it saves
MAX_WORKERS = 4
ENV_DISABLE = "VBENCH_REPORT_SERIAL"


def workers() -> int:
    if os.environ.get(ENV_DISABLE) or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    # On a machine already saturated by other jobs, more CPU-bound processes only add
    # forking and copying (measured: slower than rendering here).
    idle = int(cpus - busy)
    return max(1, min(MAX_WORKERS, cpus, idle))


def render_many(func: Callable[[T], str], jobs: Sequence[T]) -> list[str]:
    """``[func(j) for j in jobs]``, in order; in parallel when it pays off.

    ``func`` must be a module-level function (it is pickled by reference)."""
    n = workers()
    if n < 2 or len(jobs) < MIN_PARALLEL_JOBS:
        return [func(j) for j in jobs]
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            return list(pool.map(func, jobs, chunksize=max(1, len(jobs) // (n * 2))))
    except (OSError, RuntimeError):  # no fork allowed, no /dev/shm …: do it here
        return [func(j) for j in jobs]
