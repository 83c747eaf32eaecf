"""Benchmark: `vbench history` over 200 stored runs of one scenario.

The store: 200 runs × 20 points × 3 trials × 10 metrics (120,000 samples, SQLite).
Target: the history of the headline metrics in under 2 s.

Measured in the same run, each the median of ``--repeat``:

- ``history``: :func:`vbench.analysis.history.load_history` for 3 metrics (what the
  command computes: bulk reads, per-run statistics, point matching);
- ``cli``: the whole ``vbench history`` command in a fresh process (Python start-up
  and imports included), as a cron job would run it, next to ``vbench --version``
  (the start-up every command pays);
- ``per-run reads``: the same figures read run by run with ``Store.samples_frame``
  (the obvious way, and the baseline the ratio is given against).

- with ``--before TREE`` (an older checkout, e.g. ``git archive COMMIT | tar -x -C
  TREE``): the whole command by this tree and by TREE in alternating fresh processes,
  wall and CPU (user + system) each, and the ratio per round (a load that changes
  during the run changes both sides of a round).

- with ``--disturbed K`` (a store built by this run): every K-th run has a disturbed
  trial recorded in its testbed, which `history` marks (what an older tree ignores).

    .venv/bin/python -m bench.history [--runs 200] [--repeat 3] [--keep DIR] [--before TREE]
                                      [--disturbed K]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

POINTS = [
    {"vms": str(v), "mode": m}
    for v in (1, 2, 4, 8, 16)
    for m in ("native", "vm", "docker", "vm-docker")
]
TRIALS = 3
METRICS = [f"metric_{i}" for i in range(10)]
WANTED = METRICS[:3]
T0 = 1_800_000_000.0
SCENARIO = {
    "version": 1,
    "name": "nightly-bench",
    "report": {"headline": WANTED},
    "factors": {"vms": {}, "mode": {}},
    "derived": [],
}


def build(root: Path, runs: int, disturbed: int = 0) -> Store:
    """The store; with ``disturbed`` K, every K-th run has a disturbed trial recorded in
    its testbed (point 1 trial 1 flagged, as the lab's watch stores it)."""
    rng = np.random.default_rng(7)
    store = Store.open(f"sqlite:///{root}/history.db", root)
    for r in range(runs):
        run_id = f"run-{r:04d}"
        start = T0 + r * 86400
        store.create_run(
            RunInfo(
                run_id,
                "nightly-bench",
                start,
                tags=("nightly",),
                scenario=SCENARIO,
                lab={"name": "bench"},
            )
        )
        store.add_points(run_id, list(enumerate(POINTS)))
        for p in range(len(POINTS)):
            for t in range(TRIALS):
                ph = PhaseTimes(start, start, start + 1, start + 61, start + 62, start + 63)
                samples = tuple(
                    Sample(m, float(rng.normal(1000 + p, 20)), "ops/s", "fio") for m in METRICS
                )
                store.record_trial(run_id, TrialResult(p, t, "ok", ph, samples))
        store.finish_run(run_id, "ok", start + 3600)
        if disturbed and r % disturbed == 0:
            store.set_testbed(run_id, {"disturbances": [
                {"id": "point 1 trial 1 #1", "point": 0, "trial": 1, "action": "flag",
                 "text": "VM other-01 used 48 % of esx01's CPU", "events": []}]})
    return store


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def per_run(store: Store, runs: int) -> None:
    from vbench.analysis.aggregate import summarize_points

    for r in store.list_runs(scenario="nightly-bench", limit=runs):
        summarize_points(store.samples_frame(r.run_id), WANTED)


def _cpu_run(cmd: list[str], tree: Path | None) -> tuple[float, float]:
    """(wall, CPU) seconds of ``cmd`` in a fresh process importing vbench from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # cwd too: `python -m` puts the working directory first on sys.path.
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=tree)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def against(cmd: list[str], tree: Path, repeat: int) -> None:
    """Alternating rounds: this tree's command, then the older tree's."""
    rounds = [(_cpu_run(cmd, None), _cpu_run(cmd, tree)) for _ in range(repeat)]
    med = statistics.median
    for i, name in enumerate(("this tree", f"before ({tree})")):
        print(f"cli by {name}: {med(r[i][0] for r in rounds):.2f} s wall, "
              f"{med(r[i][1] for r in rounds):.2f} s CPU (medians of {repeat})")
    print(f"this tree / before, per round (median): wall × "
          f"{med(r[0][0] / r[1][0] for r in rounds):.2f}, CPU × "
          f"{med(r[0][1] / r[1][1] for r in rounds):.2f} "
          f"(load average {os.getloadavg()[0]:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the store here and keep it")
    ap.add_argument("--before", type=Path, help="an older checkout to compare the command with")
    ap.add_argument("--disturbed", type=int, default=0, metavar="K",
                    help="every K-th run has a disturbed trial in its testbed (when built)")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="vbench-bench-history-"))
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    fresh = not (root / "history.db").exists()
    url = f"sqlite:///{root}/history.db"
    store = build(root, args.runs, args.disturbed) if fresh else Store.open(url, root)
    print(
        f"store: {args.runs} runs × {len(POINTS)} points × {TRIALS} trials × "
        f"{len(METRICS)} metrics ({'built' if fresh else 'reused'} in "
        f"{time.perf_counter() - t:.1f} s)"
    )

    from vbench.analysis.history import load_history

    def history() -> None:
        h = load_history(store, "nightly-bench", WANTED, limit=args.runs)
        assert len(h.runs) == args.runs and len(h.series) == len(WANTED) * len(POINTS)

    cmd = [
        sys.executable,
        "-m",
        "vbench",
        "history",
        "nightly-bench",
        "--limit",
        str(args.runs),
        "--store",
        f"sqlite:///{root}/history.db",
    ]
    if args.before:
        against(cmd, args.before, args.repeat)
        store.close()
        return
    history()  # warm-up: imports
    lib = timed(history, args.repeat)
    naive = timed(lambda: per_run(store, args.runs), args.repeat)
    cli = timed(lambda: subprocess.run(cmd, check=True, capture_output=True), args.repeat)
    floor = timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "vbench", "--version"], check=True, capture_output=True
        ),
        args.repeat,
    )
    print(f"history ({len(WANTED)} metrics, {args.runs} runs): {lib:.2f} s")
    print(f"per-run reads (baseline): {naive:.2f} s  → history is × {naive / lib:.1f} faster")
    print(
        f"cli, fresh process: {cli:.2f} s, of which {floor:.2f} s is the start-up of any "
        f"vbench command (`vbench --version`)"
    )
    print(
        f"target < 2 s: {'met' if lib < 2 else 'NOT met'} (history), "
        f"{'met' if cli < 2 else 'NOT met'} (whole command)"
    )
    store.close()


if __name__ == "__main__":
    main()
