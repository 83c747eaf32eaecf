"""Benchmark: the end of a `vbench run` — one read of the run against one read per output.

The run is bench/report_render.py's (20 points × 5 trials × 30 metrics, a 10,000-sample
time series per metric in Parquet beside it). In the same process, in alternating rounds:

- ``finish``: :func:`vbench.engine.finish.finish_run` with `vbench run`'s defaults (run
  read once: samples.csv, summary.json, the verdict, QoS, report.html) and the summary
  printed from its one ``ReportData``;
- ``per output``: the same outputs the way `vbench run` made them before issue 22, each
  reading the run again (samples.csv and summary.json, the summary table, the QoS, the
  report, the find-max answer) and the verdict computed from one more read.

The figure is the median over rounds of per output ÷ finish (load on the machine changes
both alike).

    .venv/bin/python -m bench.run_finish [--repeat 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from bench.report_render import RUN_ID, build
from vbench.analysis.run_analysis import load_analysis
from vbench.engine.finish import FinishOptions, finish_run
from vbench.engine.runner import RunOutcome
from vbench.engine.verdict import verdict_of
from vbench.report.build import (
    print_summary,
    render_run_report,
    report_data,
    run_summary_json,
    summary_for_terminal,
)
from vbench.report.exports import csv_frame
from vbench.report.findmax import findmax_of
from vbench.results.rundir import RunDir
from vbench.results.store import Store


def per_output(store: Store, rundir: RunDir, console: Console) -> None:
    csv_frame(store.samples_frame(RUN_ID)).to_csv(rundir.path / "samples.csv", index=False)
    rundir.write_json("summary.json", run_summary_json(store, RUN_ID))
    summary_for_terminal(store, RUN_ID, console)
    load_analysis(store, RUN_ID)
    render_run_report(store, RUN_ID, rundir.path / "report.html")
    findmax_of(report_data(store, RUN_ID))
    verdict_of(report_data(store, RUN_ID))


def finish(store: Store, rundir: RunDir, console: Console, root: Path) -> None:
    result = finish_run(store, RunOutcome(RUN_ID, "ok"), rundir, FinishOptions(root / "lab"))
    print_summary(result.data, console)


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="vbench-finish-"))
    root.mkdir(parents=True, exist_ok=True)
    store = build(root)
    rundir = RunDir(root, RUN_ID)
    console = Console(file=io.StringIO(), width=200)
    times: dict[str, list[float]] = {"finish": [], "per output": []}
    for _ in range(args.repeat):
        times["per output"].append(timed(lambda: per_output(store, rundir, console)))
        times["finish"].append(timed(lambda: finish(store, rundir, console, root)))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:10s} median {med[k]:.3f} s  rounds {' '.join(f'{x:.2f}' for x in v)}")
    print(f"per output ÷ finish: {med['per output'] / med['finish']:.2f}")
    store.close()


if __name__ == "__main__":
    main()
