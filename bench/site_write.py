"""Benchmark: `vbench site DIR` over a store of nightly runs, written and written again.

The store is bench/history.py's (``--runs`` nightly runs × 20 points × 3 trials × 10
metrics, SQLite). Measured in the same process, each the median of ``--repeat``:

- ``reports``: each run's report rendered alone (read once, analysed, HTML written) —
  what `vbench report RUN` costs per run, the floor of a first site;
- ``site``: :func:`vbench.report.site.write_site` into an empty folder (every report,
  the trend page with its change points, the index);
- ``again``: write_site into the folder it just wrote (only the newest run's report is
  rendered again, then the trend page and the index) — what a nightly job pays.

Ratios: site ÷ reports (what the trend page, change points and index add) and
again ÷ site (what writing it again saves).

    .venv/bin/python -m bench.site_write [--runs 60] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.history import METRICS, POINTS, TRIALS, build, timed
from vbench.report.build import report_data_of, write_run_report
from vbench.report.site import write_site
from vbench.results.store import Store
from vbench.results.stored import StoredRun


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the store here and keep it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="vbench-bench-site-"))
    root.mkdir(parents=True, exist_ok=True)
    fresh = not (root / "history.db").exists()
    t = time.perf_counter()
    store = build(root, args.runs) if fresh else Store.open(f"sqlite:///{root}/history.db", root)
    print(f"store: {args.runs} runs × {len(POINTS)} points × {TRIALS} trials × "
          f"{len(METRICS)} metrics ({'built' if fresh else 'reused'} in "
          f"{time.perf_counter() - t:.1f} s)")
    ids = [r.run_id for r in store.list_runs()]
    out = root / "site"

    def reports() -> None:
        for run_id in ids:
            write_run_report(report_data_of(StoredRun.load(store, run_id)),
                             root / "alone" / f"{run_id}.html")

    def site() -> None:
        shutil.rmtree(out, ignore_errors=True)
        done = write_site(store, out, limit=args.runs)
        assert done.reports_written == args.runs

    def again() -> None:
        done = write_site(store, out, limit=args.runs)
        assert done.reports_written == 1

    reports()  # warm-up: imports, caches
    # Alternating rounds: load on the machine changes all three alike.
    rounds = [(timed(reports, 1), timed(site, 1), timed(again, 1)) for _ in range(args.repeat)]
    r, s, a = (statistics.median(x) for x in zip(*rounds, strict=True))
    print(f"reports alone: {r:.2f} s ({r / len(ids) * 1000:.0f} ms per run)")
    print(f"site (first write): {s:.2f} s = {s / r:.2f}x reports")
    print(f"site written again: {a:.2f} s = {a / s:.3f}x the first write")
    store.close()


if __name__ == "__main__":
    main()
