"""Start spread of a consolidation tile's workloads, and the controller's CPU over the run.

A tile's workloads are meant to share one steady window; how well they do is the start
spread: first to last steady-phase start of the workloads of a tile, from the tools' own
windows (fio's JSON time stamps, on the guests' clocks, offset-corrected), as every
trial stores it (``start_spread``, label ``tile``). This runs ``vbench run`` on loopback
guests (one private sshd on 8 loopback addresses) with 4 fio workloads per tile
(random read, random write, sequential read, sequential write; each on its own guest),
N tiles, and reads back:

- per tile and trial: the start spread (median and max over tiles × trials);
- per trial: the spread over every workload of every tile (``workload_window`` events),
  and the launch spread: first to last moment the controller saw a workload's tool
  started (its ``warmup_start`` mark) — what the controller adds, before the tools' own
  start-up;
- the controller: CPU seconds of the ``vbench run`` process (``os.wait4``) against its
  wall time — the share of one core it took (it must stay a small share, or the
  controller becomes a neighbour itself).

The baseline is the same run with 1 tile, measured in the same invocation.

    .venv/bin/python -m bench.tile_spread [--tiles 8] [--trials 3] [--steady 2s]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from vbench.results.store import Store
from vbench.testing import guests_of, start_local_sshd, write_lab

WORKLOADS = {"rr": "randread", "rw": "randwrite", "sr": "read", "sw": "write"}
ADDRESSES = tuple(f"127.0.0.{i}" for i in range(20, 28))


def _scenario(path: Path, tiles: int, trials: int, steady: str) -> Path:
    doc: dict[str, Any] = {
        "version": 1, "name": f"tile-spread-{tiles}",
        "topology": {w: {"role": w} for w in WORKLOADS},
        "workloads": {w: {"driver": "fio", "roles": {"target": w},
                          "params": {"rw": rw, "bs": "4k", "size": "4m", "ioengine": "psync",
                                     "direct": False}}
                      for w, rw in WORKLOADS.items()},
        "tiles": {"count": tiles},
        "repeat": trials,
        "phases": {"warmup": "1s", "steady": steady},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run(scenario: Path, lab: Path, home: Path) -> dict[str, Any]:
    env = dict(os.environ, VBENCH_HOME=str(home))
    cmd = [str(Path(sys.executable).parent / "vbench"), "run", str(scenario), "--lab",
           str(lab), "--no-report"]
    # The run is this process's only child reaped meanwhile (the sshd is reaped at the
    # end): the children's CPU time grows by exactly the controller's.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"vbench run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    run_id = next(w for line in proc.stdout.splitlines() if line.startswith("run ")
                  for w in line.split()[1:2]).rstrip(":")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"run_id": run_id, "wall": wall, "cpu": cpu, **_spreads(home, run_id)}


def _spreads(home: Path, run_id: str) -> dict[str, Any]:
    with Store.open(None, home / "results") as store:
        df = store.samples_frame(run_id)
    rows = df[df["metric"] == "start_spread"]
    # Each tile's own (label tile), not the whole trial's stored unlabelled beside them.
    tile_spreads = [float(v) for v, labels in zip(rows["value"], rows["labels"], strict=True)
                    if "tile" in str(labels)]
    log = home / "results" / run_id / "log.jsonl"
    starts: dict[tuple[int, int], list[float]] = {}
    launched: dict[tuple[int, int], list[float]] = {}  # the controller saw the tool start
    trial: tuple[int, int] = (0, 0)
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e.get("event") == "trial_start":
            trial = (int(e["point"]), int(e["trial"]))
        if e.get("event") == "workload_window" and "workload" in e:
            starts.setdefault(trial, []).append(float(e["start"]))
        if e.get("event") == "workload_mark" and e.get("mark") == "warmup_start":
            launched.setdefault(trial, []).append(float(e["at"]))
    return {"tile": tile_spreads, "trial": [max(s) - min(s) for s in starts.values() if s],
            "launch": [max(s) - min(s) for s in launched.values() if s],
            "instances": max((len(s) for s in starts.values()), default=0)}


def _line(name: str, r: dict[str, Any]) -> str:
    t, w = r["tile"], r["trial"]
    cpu, share = f"{r['cpu']:.2f} s", f"{r['cpu'] / r['wall']:.2f}"
    launch = statistics.median(r["launch"]) * 1e3
    return (f"| {name} | {r['instances']} | {len(t)} | {statistics.median(t) * 1e3:.0f} ms | "
            f"{max(t) * 1e3:.0f} ms | {statistics.median(w) * 1e3:.0f} ms | "
            f"{max(w) * 1e3:.0f} ms | {launch:.0f} ms | {cpu} | {r['wall']:.1f} s | {share} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=8)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--steady", default="2s")
    args = ap.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="vbench-tiles-") as tmp:
        root = Path(tmp)
        with start_local_sshd(root / "sshd", root / "work", ADDRESSES) as sshd:
            guests = guests_of(sshd)
            nodes = {f"{w}{t}": {"address": ADDRESSES[(i * args.tiles + t) % len(ADDRESSES)],
                                 "roles": [w]}
                     for i, w in enumerate(WORKLOADS) for t in range(args.tiles)}
            lab = write_lab(root / "lab.yaml", guests, extra_nodes=nodes, roles=("none",))
            results = {}
            for tiles in (1, args.tiles):
                sc = _scenario(root / f"s{tiles}.yaml", tiles, args.trials, args.steady)
                results[tiles] = _run(sc, lab, root / f"home{tiles}")
    print(f"load average (1 min) before and after: {load[0]:.1f}, {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs; {args.trials} trials per run, steady {args.steady}")
    print("| tiles × workloads | instances | tile spreads | median | max | trial spread "
          "median | max | launch spread median | controller CPU | wall | cores |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tiles, r in results.items():
        print(_line(f"{tiles} × {len(WORKLOADS)}", r))


if __name__ == "__main__":
    main()
