"""Benchmark: render the HTML report of a large run.

The run: 20 points (vms 1..16 × 4 modes) × 5 trials × 30 metrics, with a 10,000-sample
time series per metric in Parquet beside the run (``series/``), QoS criteria and
derived figures. Target: the whole report (store reads, statistics, derived figures,
QoS, ~40 charts, HTML) in under 5 s.

Measured in the same run, each the median of ``--repeat``:

- ``report``: ``report_data`` + ``render_html`` as ``vbench report`` does it;
- ``report, serial``: the same with charts rendered in this process only
  (``VBENCH_REPORT_SERIAL=1``), to show what the chart worker pool buys, with its CPU
  time (which other jobs on the machine do not inflate);
- ``data only``: the store reads and the analysis, without any chart;
- ``one chart``: a single 20-bar chart — the unit the report costs are counted in.

    .venv/bin/python -m bench.report_render [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the data here and keep it")
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
    from vbench.report.charts import Bar, bar_chart_svg
    from vbench.report.html import render_html

    def full() -> str:
        return render_html(report_data(store, RUN_ID))

    full()  # warm-up: imports, font cache, matplotlib's first figure
    one, _ = timed(
        lambda: bar_chart_svg(
            [Bar(f"p{i}", 10.0 + i, 9.0, 11.0 + i) for i in range(20)], "y", chart_id="x"
        ),
        args.repeat,
    )
    data_s, data = timed(lambda: report_data(store, RUN_ID), args.repeat)
    no_series = dataclasses.replace(data, series=pd.DataFrame())  # type: ignore[arg-type]
    tables_s, _ = timed(lambda: render_html(no_series), args.repeat)
    report_s, html = timed(full, args.repeat)
    os.environ["VBENCH_REPORT_SERIAL"] = "1"
    serial_s, _ = timed(full, args.repeat)
    cpu = time.process_time()
    full()
    serial_cpu = time.process_time() - cpu  # unaffected by other jobs on the machine
    del os.environ["VBENCH_REPORT_SERIAL"]
    charts = str(html).count('<svg id="vbench-chart-')
    print(
        f"report: {report_s:.2f} s  ({charts} charts, {len(str(html)) / 1e6:.1f} MB HTML)"
        f"  = {report_s / one:.0f} × one chart"
    )
    print(
        f"report, serial charts: {serial_s:.2f} s, {serial_cpu:.2f} s CPU  "
        f"(pool speed-up × {serial_s / report_s:.2f})"
    )
    print(f"report without time series: {tables_s:.2f} s")
    print(f"data only (store + statistics + derived + QoS): {data_s:.2f} s")
    print(f"one 20-bar chart: {one * 1000:.0f} ms")
    print(f"target < 5 s: {'met' if report_s < 5 else 'NOT met'}")
    store.close()


if __name__ == "__main__":
    main()
