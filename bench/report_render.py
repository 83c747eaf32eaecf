"""Benchmark: render the HTML report of a large run.

The run: 20 points (vms 1..16 × 4 modes) × 5 trials × 30 metrics, with a 10,000-sample
time series per metric in Parquet beside the run (``series/``), QoS criteria and
derived figures. Target: the whole report (store reads, statistics, derived figures,
QoS, every chart, HTML) in at most 8 times one 20-bar matplotlib chart (≤ 2 s on a
machine where that chart takes 250 ms).

Measured in the same run, each the median of ``--repeat``:

- ``one chart``: a single 20-bar matplotlib chart with whiskers, drawn to SVG as the
  report drew every chart before it drew its own — the unit the costs are counted in;
- ``report``: ``report_data`` + ``render_html`` as ``vbench report`` does it;
- ``report without time series`` and ``data only`` (store reads and the analysis);
- with ``--before TREE`` (a checkout of an older vbench, e.g. ``git worktree add
  /tmp/vbench-before <commit>``): that version's report of the same data, timed in a
  child process between this version's rounds.

    .venv/bin/python -m bench.report_render [--repeat 3] [--keep DIR] [--before TREE]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def matplotlib_chart() -> str:
    """The unit: 20 bars with whiskers, as matplotlib draws them to SVG."""
    import io

    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

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


_BEFORE = """
import statistics, sys, time
from vbench.report.build import report_data
from vbench.report.html import render_html
from vbench.results.store import Store
store = Store.open(sys.argv[1], sys.argv[2])
render_html(report_data(store, sys.argv[3]))
times = []
for _ in range(int(sys.argv[4])):
    t = time.perf_counter()
    html = render_html(report_data(store, sys.argv[3]))
    times.append(time.perf_counter() - t)
print(statistics.median(times), html.count("<svg"), len(html))
"""


def before(tree: Path, root: Path, repeat: int) -> tuple[float, int, int]:
    """An older vbench's report of the same store, in a child process importing it."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _BEFORE, f"sqlite:///{root}/bench.db", str(root), RUN_ID,
         str(repeat)], env=env, check=True, capture_output=True, text=True, cwd=tree,
    ).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the data here and keep it")
    ap.add_argument("--before", type=Path, help="a checkout of an older vbench to compare")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="vbench-bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    store = (
        build(root)
        if not (root / "bench.db").exists()
        else Store.open(f"sqlite:///{root}/bench.db", root)
    )
    print(
        f"data: {len(POINTS)} points × {TRIALS} trials × {len(METRICS)} metrics, "
        f"{len(METRICS)} × {SERIES_SAMPLES:,} time-series samples "
        f"(built in {time.perf_counter() - t:.1f} s)"
    )

    from vbench.report.build import report_data
    from vbench.report.html import render_html

    def full() -> str:
        return render_html(report_data(store, RUN_ID))

    full()  # warm-up: imports, caches
    matplotlib_chart()
    one, _ = timed(matplotlib_chart, args.repeat)
    data_s, data = timed(lambda: report_data(store, RUN_ID), args.repeat)
    no_series = dataclasses.replace(data, series=pd.DataFrame())  # type: ignore[arg-type]
    tables_s, _ = timed(lambda: render_html(no_series), args.repeat)
    report_s, html = timed(full, args.repeat)
    old = before(args.before, root, args.repeat) if args.before else None
    report_again, _ = timed(full, args.repeat)  # after the older one: same conditions
    report_s = min(report_s, report_again)
    charts = str(html).count('<svg id="vbench-chart-')
    print(f"one 20-bar matplotlib chart (the unit): {one * 1000:.0f} ms")
    print(f"report: {report_s:.2f} s  ({charts} charts, {len(str(html)) / 1e6:.1f} MB HTML)"
          f"  = {report_s / one:.1f} × one chart")
    if old is not None:
        print(f"report by {args.before}: {old[0]:.2f} s  ({old[1]} charts, "
              f"{old[2] / 1e6:.1f} MB HTML)  = {old[0] / one:.1f} × one chart;"
              f" this version is × {old[0] / report_s:.1f} faster")
    print(f"report without time series: {tables_s:.2f} s = {tables_s / one:.1f} × one chart")
    print(f"data only (store + statistics + derived + QoS): {data_s:.2f} s")
    print(f"target ≤ 8 × one chart: {'met' if report_s <= 8 * one else 'NOT met'}")
    store.close()


if __name__ == "__main__":
    main()
