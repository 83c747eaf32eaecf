"""VMs that follow the points: the vSphere time of a VM-count sweep 1..N, point by point.

A run whose `vm:` group's count goes 1, 2, …, N (one point per count, in that order)
keeps the VMs that exist and clones only the one each point adds
(``vbench.engine.vm_scaling``). Against vcsim with a slow CloneVM_Task (``-method-delay``)
the same round measures three ways of giving every point its VMs, each on a fresh
simulator, through vbench's own provisioning and cleanup code (``VSphereRun``):

- incremental: what `vbench run` does now — the first point's VM up front, then each
  point clones what it adds; the run's cleanup removes the N VMs at the end;
- from scratch: every point provisions its own n VMs and removes them after it
  (1 + 2 + … + N clones and removals);
- largest up front: the N VMs of the largest point before the first one, all idle
  until a point uses them (what a run did before; it saves wall time when the clones
  of one batch overlap, but keeps N VMs powered on whatever the point).

Report per mode: clones, wall time of the provisioning (clones and removals between
points) and of the whole sweep's vSphere work (with the final cleanup), median and
min–max over the rounds, and the ratio incremental / from scratch per round.
``--parallel`` is ``settings.provision_parallel``: with 1, clones do not overlap, as when
a datastore's copy throughput bounds full clones; with 8 (the default) a point's clones
overlap on the simulator, which then runs them one after the other only for its ~10 ms
of bookkeeping.

    .venv/bin/python -m bench.vm_scaling [--vms 8] [--delay 300] [--parallel 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.clone_lab import TEMPLATE, clone_lab, make_template, start_slow_clones

RUN_ID = "20250101-000000-bench"
PARALLEL = 8


def _run(lab: Any, count: int, points: list[int] | None) -> Any:
    """A VSphereRun of ``count`` web VMs; ``points``: the counts of the planned points
    (None: no points known, every VM up front)."""
    from vbench.config.scenario import Scenario
    from vbench.engine.vsphere_run import VSphereRun

    scenario = Scenario.model_validate({
        "version": 1, "name": "bench",
        "topology": {"web": {"count": count, "vm": {"template": TEMPLATE, "ip_timeout": 120}}},
        "workload": {"driver": "fio", "params": {}}, "phases": {"steady": 1},
        "settings": {"provision_parallel": PARALLEL},
    })
    guests = [f"web-{i + 1}" for i in range(count)]
    planned = [guests[:n] for n in points] if points else []
    return VSphereRun(scenario, lab, {"web": "vc"}, {"web": guests}, point_guests=planned)


def _timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def incremental(lab: Any, n: int, tmp: Path) -> dict[str, float]:
    counts = list(range(1, n + 1))
    run = _run(lab, n, counts)
    clones = 0

    def sweep() -> None:
        nonlocal clones
        clones += len(run.provision(RUN_ID, tmp))
        for k in counts:
            change = run.change_for({"web": [f"web-{i + 1}" for i in range(k)]})
            run.apply(change)
            clones += len(change.create)

    try:
        provision = _timed(sweep)
        cleanup = _timed(run.cleanup)
    finally:
        run.close()
    return {"clones": clones, "provision_s": provision, "total_s": provision + cleanup}


def from_scratch(lab: Any, n: int, tmp: Path) -> dict[str, float]:
    provision = total = 0.0
    clones = 0
    for k in range(1, n + 1):
        run = _run(lab, k, None)
        try:
            made = _timed(lambda run=run, k=k: run.provision(f"{RUN_ID[:-5]}{k:05d}",
                                                            tmp / f"p{k}"))
            clones += len(run.vms)
            removed = _timed(run.cleanup)
        finally:
            run.close()
        # Removing a point's VMs before the next point is part of its provisioning.
        provision += made + (removed if k < n else 0.0)
        total += made + removed
    return {"clones": clones, "provision_s": provision, "total_s": total}


def largest_up_front(lab: Any, n: int, tmp: Path) -> dict[str, float]:
    run = _run(lab, n, None)
    try:
        provision = _timed(lambda: run.provision(RUN_ID, tmp))
        clones = len(run.vms)
        cleanup = _timed(run.cleanup)
    finally:
        run.close()
    return {"clones": clones, "provision_s": provision, "total_s": provision + cleanup}


MODES: dict[str, Callable[[Any, int, Path], dict[str, float]]] = {
    "incremental": incremental,
    "from scratch": from_scratch,
    "largest up front": largest_up_front,
}


def measure(mode: str, n: int, delay: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_slow_clones(Path(tmp), delay)
        try:
            lab = clone_lab(proc, n, "10.60")
            make_template(lab)
            (Path(tmp) / "run").mkdir()
            return MODES[mode](lab, n, Path(tmp) / "run")
        finally:
            proc.stop()


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vms", type=int, default=8, help="the sweep's largest count")
    ap.add_argument("--delay", type=int, default=300, help="CloneVM_Task delay, ms")
    ap.add_argument("--parallel", type=int, default=8, help="settings.provision_parallel")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    global PARALLEL
    PARALLEL = args.parallel
    rows: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for r in range(args.repeat):
        for mode in MODES:  # alternate within each round
            rows[mode].append(measure(mode, args.vms, args.delay))
            print(f"round {r + 1} {mode}: {rows[mode][-1]}", flush=True)
    print(f"\nsweep 1..{args.vms}, CloneVM_Task delay {args.delay} ms, provision_parallel "
          f"{args.parallel}, {args.repeat} rounds")
    print("| mode | clones | provisioning between points | with the final cleanup |")
    print("|---|---|---|---|")
    for mode, got in rows.items():
        print(f"| {mode} | {int(got[0]['clones'])} | {_fmt([g['provision_s'] for g in got])} "
              f"| {_fmt([g['total_s'] for g in got])} |")
    for key in ("provision_s", "total_s"):
        ratios = [i[key] / s[key] for i, s in zip(rows["incremental"], rows["from scratch"],
                                                    strict=True)]
        up = [i[key] / u[key] for i, u in zip(rows["incremental"], rows["largest up front"],
                                                strict=True)]
        print(f"incremental / from scratch ({key}): median {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}–{max(ratios):.2f}); incremental / largest up front: "
              f"median {statistics.median(up):.2f} ({min(up):.2f}–{max(up):.2f})")


if __name__ == "__main__":
    main()
