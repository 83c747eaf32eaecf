"""fio's per-second log lines: read (latency ns -> ms, directions), a torn last line
dropped, a bad line elsewhere located; the steady-window trim and figures keep missing
data missing. Log text in fio's own format (time ms, value, direction, bs, offset)."""

from __future__ import annotations

import pytest

from vbench.errors import ParseError
from vbench.workloads.fio.logs import (
    LogRow,
    log_files,
    parse_log,
    series_frame,
    trim,
    window_samples,
)

T0 = 1_800_000_000_000  # ms


def _iops_log(per_second: list[tuple[int, int]]) -> str:
    return "".join(f"{T0 + 1000 * (i + 1)}, {r}, 0, 0, 0\n{T0 + 1000 * (i + 1)}, {w}, 1, 0, 0\n"
                   for i, (r, w) in enumerate(per_second))  # fmt: skip


def test_log_files_are_found_by_kind_and_job() -> None:
    names = ["fiolog_iops.2.log", "fiolog_lat.1.log", "fiolog_slat.1.log", "fio.json",
             "fiolog_iops.1.log", "fiolog_clat.1.log"]  # fmt: skip
    assert log_files(names) == [("fiolog_clat.1.log", "clat", 1), ("fiolog_iops.1.log", "iops", 1),
                                ("fiolog_iops.2.log", "iops", 2), ("fiolog_lat.1.log", "lat", 1)]


def test_latency_in_ms_directions_and_a_torn_last_line() -> None:
    rows = parse_log(f"{T0}, 2500000, 0, 4096, 0\n{T0 + 1000}, 500000, 1, 4096, 0\n{T0 + 2000}, 12",
                     "lat")  # fmt: skip
    assert rows == [LogRow(T0 / 1000, 2.5, "read"), LogRow(T0 / 1000 + 1, 0.5, "write")]
    with pytest.raises(ParseError, match=r"x.log:1: not a fio log line"):
        parse_log(f"garbage\n{T0}, 1, 0, 0, 0\n", "iops", "x.log")


def test_window_figures_use_only_the_seconds_inside_the_window() -> None:
    # Seconds 1..6: a slow start (warm-up) then steady 100+50 IO/s, a ramp-down at 6.
    text = _iops_log([(10, 5), (20, 5), (100, 50), (100, 50), (100, 50), (1, 1)])
    frame = series_frame("g1", {("iops", 1): parse_log(text, "iops")})
    start, end = T0 / 1000 + 2, T0 / 1000 + 5  # intervals ending at 3, 4, 5 are inside
    inside = trim(frame, start, end)
    assert sorted(set(inside["time"] - T0 / 1000)) == [3.0, 4.0, 5.0]
    figures = {s.metric: s.value for s in window_samples(inside, "g1")}
    assert figures["iops_ts_mean"] == figures["iops_ts_min"] == figures["iops_ts_max"] == 150
    assert figures["iops_ts_cv"] == 0.0 and figures["ts_seconds"] == 3.0
    assert figures["read_lat_ts_mean"] is None  # no latency log: missing, not 0


def test_no_window_means_no_rows_and_missing_figures() -> None:
    frame = series_frame("g1", {("iops", 1): parse_log(_iops_log([(1, 1)]), "iops")})
    inside = trim(frame, None, None)
    assert inside.empty
    figures = {s.metric: s.value for s in window_samples(inside, "g1")}
    assert figures["iops_ts_mean"] is None and figures["iops_ts_cv"] is None
