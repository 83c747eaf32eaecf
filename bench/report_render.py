"""Benchmark: render the HTML report of a large run.

The run: 20 points (vms 1..16 × 4 modes) × 5 trials × 30 metrics, with a 10,000-sample
time series per metric in Parquet beside the run (``series/``), QoS criteria and
derived figures. Target: the whole report (store reads, statistics, derived figures,
QoS, every chart, HTML) in at most 8 times one 20-bar matplotlib chart (≤ 2 s on a
machine where that chart takes 250 ms).

Each version is measured in a fresh process importing it (this checkout, and with
``--before TREE`` an older one, e.g. ``git worktree add /tmp/vbench-before <commit>``),
in rounds that alternate one 20-bar matplotlib chart (the unit) and one whole report
(``report_data`` + ``render_html``, as ``vbench report`` does it), wall and CPU time
each; the figure is the median over rounds of report ÷ unit, so a load that changes
during the run changes both. The processes alternate: this version, the older one,
this version again.

    .venv/bin/python -m bench.report_render [--repeat 5] [--keep DIR] [--before TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

POINTS = [(v, m) for v in (1, 2, 4, 8, 16) for m in ("native", "vm", "docker", "vm-docker")]
TRIALS = 5
METRICS = [f"metric_{i:02d}" for i in range(30)]
SERIES_SAMPLES = 10_000  # per metric, over all trials
T0 = 1_800_000_000.0
RUN_ID = "20270101-000000-benchmrk"


def scenario() -> dict[str, object]:
    return {
        "version": 1,
        "name": "bench-report",
        "description": "report benchmark",
        "topology": {"clients": {"count": 16}},
        "workload": {"driver": "fio", "roles": {}, "params": {"rw": "randread"}},
        "factors": {
            "vms": {"levels": [{"label": str(v), "value": v, "set": {}} for v in (1, 2, 4, 8, 16)]},
            "mode": {
                "levels": [
                    {"label": m, "value": m, "set": {}}
                    for m in ("native", "vm", "docker", "vm-docker")
                ]
            },
        },
        "zip": [],
        "exclude": [],
        "repeat": TRIALS,
        "phases": {"warmup": 30.0, "steady": 60.0, "cooldown": 10.0},
        "collectors": [],
        "qos": [
            {"metric": "metric_01", "op": "<=", "threshold": 900.0},
            {"metric": "metric_02", "op": ">=", "threshold": 50.0, "stat": "min"},
        ],
        "derived": [
            {
                "name": "speedup",
                "kind": "speedup",
                "metric": "metric_00",
                "baseline": {"vms": "1"},
                "ideal": "vms",
            },
            {
                "name": "rel",
                "kind": "normalize",
                "metric": "metric_00",
                "baseline": {"mode": "native"},
            },
        ],
        "report": {"headline": METRICS[:3], "charts": []},
        "settings": {"max_parallel": 16, "cv_threshold": 0.05},
    }


def build(root: Path) -> Store:
    """The store and the run directory (with its Parquet time series)."""
    rng = np.random.default_rng(42)
    store = Store.open(f"sqlite:///{root}/bench.db", root)
    run_dir = root / RUN_ID
    store.create_run(
        RunInfo(
            RUN_ID,
            "bench-report",
            T0,
            scenario=scenario(),
            lab={"name": "bench"},
            run_dir=str(run_dir),
        )
    )
    store.add_points(RUN_ID, [(i, {"vms": str(v), "mode": m}) for i, (v, m) in enumerate(POINTS)])
    for p, (v, _) in enumerate(POINTS):
        for t in range(TRIALS):
            start = T0 + 100 * (p * TRIALS + t)
            ph = PhaseTimes(start, start, start + 30, start + 90, start + 100, start + 101)
            samples = tuple(
                Sample(m, float(v * 100 * (1 + i / 10) * rng.normal(1, 0.02)), "ops/s", "fio")
                for i, m in enumerate(METRICS)
            )
            store.record_trial(RUN_ID, TrialResult(p, t, "ok", ph, samples))
    store.finish_run(RUN_ID, "ok", T0 + 100 * len(POINTS) * TRIALS)
    per_trial = SERIES_SAMPLES // (len(POINTS) * TRIALS)
    frames = []
    for m in METRICS:
        for p in range(len(POINTS)):
            for t in range(TRIALS):
                start = T0 + 100 * (p * TRIALS + t)
                ts = start + np.linspace(0, 100, per_trial, endpoint=False)
                frames.append(
                    pd.DataFrame(
                        {
                            "ts": ts,
                            "metric": m,
                            "point": p,
                            "trial": t,
                            "value": rng.normal(50 + p, 3, per_trial),
                            "unit": "%",
                            "host": "esx-01",
                        }
                    )
                )
    (run_dir / "series").mkdir(parents=True, exist_ok=True)
    pd.concat(frames, ignore_index=True).to_parquet(run_dir / "series" / "esxtop.parquet")
    return store


_ROUNDS = r"""
import io, json, statistics, sys, time
import pandas as pd
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from vbench.report.build import report_data
from vbench.report.html import render_html
from vbench.results.store import Store

def unit():
    # 20 bars with whiskers, drawn to SVG by matplotlib: the report's old unit of cost.
    with rc_context({"svg.fonttype": "none", "font.size": 9}):
        fig = Figure(figsize=(12.2, 4.4))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        xs = list(range(20))
        means = [10.0 + i for i in xs]
        ax.bar(xs, means, width=0.65)
        ax.errorbar(xs, means, yerr=[[1.0] * 20, [1.0] * 20], fmt="none", capsize=4)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"p{i}" for i in xs], rotation=40, ha="right")
        ax.set_ylabel("y")
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        return buf.getvalue()

def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out

store = Store.open(sys.argv[1], sys.argv[2])
run = sys.argv[3]
report = lambda: render_html(report_data(store, run))
unit(), report()  # warm-up: imports, font cache, first figure
rounds = []
for _ in range(int(sys.argv[4])):
    uw, uc, _ = timed(unit)
    rw, rc, html = timed(report)
    rounds.append([uw, uc, rw, rc])
data = report_data(store, run)
plain = data.__class__(**{**data.__dict__, "series": pd.DataFrame()})
tw, tc, _ = timed(lambda: render_html(plain))
dw, dc, _ = timed(lambda: report_data(store, run))
print(json.dumps({"rounds": rounds, "charts": html.count('<svg id="vbench-chart-'),
                  "bytes": len(html), "no_series": [tw, tc], "data": [dw, dc]}))
"""


def measure(tree: Path, root: Path, repeat: int) -> dict[str, Any]:
    """Rounds of (unit, report) in a fresh process importing vbench from ``tree``."""
    # An older version drew charts in forked workers when cores were idle: serial here,
    # so that its CPU time is all counted (it measured × 0.99 of the pool's wall time).
    env = {**os.environ, "PYTHONPATH": str(tree), "VBENCH_REPORT_SERIAL": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _ROUNDS, f"sqlite:///{root}/bench.db", str(root), RUN_ID,
         str(repeat)], env=env, check=True, capture_output=True, text=True, cwd=tree,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    rounds = [r for run in runs for r in run["rounds"]]
    med = statistics.median
    return {
        "unit": med(r[0] for r in rounds), "unit_cpu": med(r[1] for r in rounds),
        "report": med(r[2] for r in rounds), "report_cpu": med(r[3] for r in rounds),
        "ratio": med(r[2] / r[0] for r in rounds), "ratio_cpu": med(r[3] / r[1] for r in rounds),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build the data here and keep it")
    ap.add_argument("--before", type=Path, help="a checkout of an older vbench to compare")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="vbench-bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    if not (root / "bench.db").exists():
        build(root).close()
    print(
        f"data: {len(POINTS)} points × {TRIALS} trials × {len(METRICS)} metrics, "
        f"{len(METRICS)} × {SERIES_SAMPLES:,} time-series samples "
        f"(built in {time.perf_counter() - t:.1f} s)"
    )
    here = Path(__file__).resolve().parents[1]
    after = [measure(here, root, args.repeat)]
    old = measure(args.before, root, args.repeat) if args.before else None
    if old is not None:
        after.append(measure(here, root, args.repeat))
    now = summary(after)
    print(f"one 20-bar matplotlib chart (the unit): {now['unit'] * 1000:.0f} ms "
          f"({now['unit_cpu'] * 1000:.0f} ms CPU)")
    print(f"report: {now['report']:.2f} s ({now['report_cpu']:.2f} s CPU)  "
          f"{after[0]['charts']} charts, {after[0]['bytes'] / 1e6:.1f} MB HTML  "
          f"= {now['ratio']:.1f} × one chart ({now['ratio_cpu']:.1f} × in CPU time)")
    if old is not None:
        then = summary([old])
        print(f"report by {args.before}: {then['report']:.2f} s ({then['report_cpu']:.2f} s "
              f"CPU)  {old['charts']} charts, {old['bytes'] / 1e6:.1f} MB HTML  "
              f"= {then['ratio']:.1f} × one chart ({then['ratio_cpu']:.1f} × in CPU time)")
    tw, tc = after[0]["no_series"]
    dw, dc = after[0]["data"]
    print(f"report without time series: {tw:.2f} s ({tc:.2f} s CPU)")
    print(f"data only (store + statistics + derived + QoS): {dw:.2f} s ({dc:.2f} s CPU)")
    met = now["ratio"] <= 8 and now["ratio_cpu"] <= 8
    print(f"target ≤ 8 × one chart: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
