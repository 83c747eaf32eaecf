"""Factors that cannot change what fio measures with the other parameters (issue 23):
said at validate as warnings at the factor, since the run is valid but the factor's
levels would measure the same thing (or the setting, not the system).

fio's HOWTO (``iodepth``): raising iodepth above 1 does not affect synchronous engines,
and on Linux libaio without ``direct=1`` is not asynchronous either (buffered I/O is
submitted synchronously), so the depth asked for is never reached.
"""

from __future__ import annotations

from collections.abc import Mapping

from vbench.workloads.base import Finding
from vbench.workloads.fio.jobs import FioParams

# Engines whose I/O is one system call at a time per job: iodepth is ignored.
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice",
                          "ime_psync", "ime_psyncv"})  # fmt: skip


def factor_findings(p: FioParams, varied: Mapping[str, str]) -> list[Finding]:
    """What a factor of the scenario cannot change at a point with parameters ``p``."""
    if p.job_file is not None:
        return []  # the job file defines the job: fio/pitfalls.findings says what is ignored
    out: list[Finding] = []
    depth = varied.get("iodepth")
    if depth is not None and p.ioengine in SYNC_ENGINES:
        out.append(_at(depth, f"factor {depth} varies iodepth, but ioengine {p.ioengine} is "
                              "synchronous: fio ignores iodepth (one I/O in flight per job); "
                              "use libaio or io_uring with direct: true, or vary numjobs"))
    elif depth is not None and p.ioengine == "libaio" and not p.direct:
        out.append(_at(depth, f"factor {depth} varies iodepth, but libaio with direct: false "
                              "submits buffered I/O synchronously on Linux: the depth is not "
                              "reached; set direct: true"))
    jobs = varied.get("numjobs")
    if jobs is not None and p.rate_iops is not None and "rate_iops" not in varied:
        out.append(_at(jobs, f"factor {jobs} varies numjobs with rate_iops {p.rate_iops} per "
                             "job: the IOPS asked for grow with the jobs, so the IOPS measured "
                             "follow the setting (numjobs × rate_iops), not the storage"))
    return out


def _at(factor: str, message: str) -> Finding:
    return Finding("warning", f"factors.{factor}", message, root="")
