"""Benchmark: read 200 counters out of a ≥ 1 GB, ≥ 20,000-column esxtop capture.

Compares, on the same file in the same run (page cache warm, each reader in its own
process so its peak memory is its own):

- ``cat FILE > /dev/null`` and a plain Python block read: the read-speed ceilings;
- vbench's :class:`~vbench.parsers.esxtop.EsxtopReader` (selected columns as arrays),
  and the same streamed into a tidy Parquet file;
- ``pandas.read_csv(FILE, usecols=<the same 200 columns>)``.

The capture is generated from the real corpus header by ``bench/esxtop_gen.py``
(widened to ``--columns``, samples repeated up to ``--size``) in /tmp, and reused.

    .venv/bin/python -m bench.esxtop_parse [--size 1.05G] [--columns 24000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.esxtop_gen import _size, widen

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "esxtop"
SOURCE = CORPUS / "rach-sharp_esxtopd__esxtop-data.csv"
SELECTED = 200

# Each reader runs in a child process; it prints {"seconds", "rss_mb", "rows"} as JSON.
_CHILD = {
    "python-read": """
with open(FILE, "rb", buffering=0) as fh:
    t = time.perf_counter()
    n = 0
    while chunk := fh.read(16 << 20):
        n += 1
    secs = time.perf_counter() - t
rows = None
""",
    "vbench": """
from vbench.parsers.esxtop import EsxtopReader
t = time.perf_counter()
with EsxtopReader(FILE, NAMES) as r:
    rows = sum(len(b) for b in r.batches())
    assert len(r.columns) == len(NAMES), len(r.columns)
secs = time.perf_counter() - t
""",
    "vbench-parquet": """
from vbench.parsers.esxtop import EsxtopReader, write_parquet
t = time.perf_counter()
with EsxtopReader(FILE, NAMES) as r:
    rows = write_parquet(r, Path(FILE + ".parquet"))
secs = time.perf_counter() - t
os.unlink(FILE + ".parquet")
""",
    "pandas": """
import csv
import pandas as pd
with open(FILE, newline="") as fh:
    header = next(csv.reader(fh))
wanted = set(NAMES)
# Only the header's full names are known to pandas: map "Object(i)\\Counter" to them.
use = [header[0]] + [h for h in header[1:] if h.split("\\\\", 3)[-1] in wanted]
t = time.perf_counter()
df = pd.read_csv(FILE, usecols=use)
secs = time.perf_counter() - t
assert df.shape[1] == len(NAMES) + 1, df.shape
rows = len(df)
""",
}
_PRELUDE = """
import json, os, resource, sys, time
from pathlib import Path
FILE = sys.argv[1]
NAMES = json.loads(sys.argv[2])
"""
_EPILOGUE = """
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": secs, "rss_mb": rss, "rows": rows}))
"""


def _child(kind: str, path: Path, names: list[str]) -> dict[str, float]:
    code = _PRELUDE + _CHILD[kind] + _EPILOGUE
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), json.dumps(names)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cat(path: Path) -> dict[str, float]:
    t = time.perf_counter()
    subprocess.run(f"cat '{path}' > /dev/null", shell=True, check=True)
    return {"seconds": time.perf_counter() - t, "rss_mb": float("nan"), "rows": 0}


def _selection(path: Path) -> list[str]:
    """200 counter columns spread evenly over the header (names without the host)."""
    from vbench.parsers.esxtop import EsxtopReader

    with EsxtopReader(path) as r:
        # pandas cannot name the power-state cells esxtop glued together: leave them out.
        cols = [c for c in r.header.columns if c.object != "PCPU Power State"]
    step = len(cols) // SELECTED
    names = [cols[i * step].name for i in range(SELECTED)]
    assert len(set(names)) == SELECTED
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description="esxtop CSV read benchmark")
    ap.add_argument("--file", type=Path, default=Path("/tmp/vbench-bench/esxtop-wide.csv"))
    ap.add_argument("--size", type=_size, default=_size("1.05G"))
    ap.add_argument("--columns", type=int, default=24000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    path: Path = a.file
    if not path.exists() or path.stat().st_size < a.size * 0.95:
        g = widen(SOURCE, path, columns=a.columns, size=a.size)
        print(f"generated {g.path}: {g.columns} columns, {g.rows} samples", file=sys.stderr)
    size_mb = path.stat().st_size / 1e6
    names = _selection(path)
    _cat(path)  # warm the page cache so every reader sees the same state
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(a.repeat):
        runs.setdefault("cat", []).append(_cat(path))
        for kind in _CHILD:
            runs.setdefault(kind, []).append(_child(kind, path, names))
    from vbench.parsers.esxtop import EsxtopReader

    with EsxtopReader(path) as r:
        ncols = len(r.header.columns)
    pandas_s = statistics.median(x["seconds"] for x in runs["pandas"])
    print(
        f"file {path}: {size_mb:.0f} MB, {ncols} columns; {SELECTED} selected; "
        f"median of {a.repeat}; {os.cpu_count()} CPUs"
    )
    print("| reader | seconds | MB/s | peak RSS (MB) | vs pandas |")
    print("|---|---:|---:|---:|---:|")
    for kind, xs in runs.items():
        secs = statistics.median(x["seconds"] for x in xs)
        rss = max(x["rss_mb"] for x in xs)
        rss_txt = "-" if rss != rss else f"{rss:.0f}"
        ratio = pandas_s / secs
        print(f"| {kind} | {secs:.2f} | {size_mb / secs:.0f} | {rss_txt} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
