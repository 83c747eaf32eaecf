"""The figures fio's parser (:mod:`vbench.parsers.fio`) makes: directions, clat
percentiles, metric names and their normalised units. Apart from the parser so that the
fio driver's metric catalogue (read by `vbench validate` and `plan`) imports them
without the parser itself; a flat module, so plugin discovery never takes it for one."""

from __future__ import annotations

# "mixed" appears instead of read/write when a job used unified_rw_reporting=1.
DIRECTIONS = ("read", "write", "trim", "mixed")
PERCENTILES: dict[str, float] = {
    "clat_p50": 50.0,
    "clat_p95": 95.0,
    "clat_p99": 99.0,
    "clat_p99.9": 99.9,
}
UNITS: dict[str, str] = {
    "iops": "IO/s",
    "bw": "MiB/s",
    "lat_mean": "ms",
    "clat_mean": "ms",
    **dict.fromkeys(PERCENTILES, "ms"),
    "io_bytes": "B",
    "ios": "I/O",
    "runtime": "s",
}
