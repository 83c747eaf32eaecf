"""Terminal tables: the per-point summary of a run and the runs list of `vbench ls`."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
from rich.console import Console
from rich.table import Table

from vbench.report.data import ReportData
from vbench.report.terminal import runs_table, summary_table

T0 = 1_700_000_000.0
MARKUP_LABEL = "[bold red]x[/]"


def _text(table: Table) -> str:
    console = Console(width=260, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def _data() -> ReportData:
    """Point 0: three good trials; point 1: one of three failed, noisy;
    point 2: every trial failed."""
    values = {0: [1000.0, 1010.0, 1020.0], 1: [500.0, 700.0], 2: []}
    trials, rows = [], []
    for p, vals in values.items():
        for t in range(3):
            ok = t < len(vals)
            trials.append(
                {
                    "point": p,
                    "trial": t,
                    "status": "ok" if ok else "failed",
                    "error": None if ok else "ssh: connection refused",
                    "phases": {"steady_start": T0, "steady_end": T0 + 120},
                    "started": T0,
                    "ended": T0 + 130,
                }
            )
            if not ok:
                continue
            for metric, unit, value in (
                ("read_iops", "IO/s", vals[t]),
                ("read_clat_p99", "ms", vals[t] / 1000),
                ("read_bw", "MiB/s", vals[t] / 256),
            ):
                rows.append(
                    {
                        "point": p,
                        "trial": t,
                        "guest": None,
                        "metric": metric,
                        "value": value,
                        "unit": unit,
                        "source": "fio",
                        "labels": "{}",
                        "window_start": T0,
                        "window_end": T0 + 120,
                    }
                )
    return ReportData(
        run={
            "run_id": "run-42",
            "scenario_name": "oio-sweep",
            "status": "completed",
            "started": T0,
            "ended": T0 + 1000,
            "tags": [],
            "scenario": {"phases": {"warmup": 30, "steady": 120, "cooldown": 0}, "repeat": 3},
            "environment": {},
            "testbed": None,
            "lab": {},
        },
        points=[
            {"point": 0, "labels": {"oio": "1"}},
            {"point": 1, "labels": {"oio": MARKUP_LABEL}},
            {"point": 2, "labels": {"oio": "256"}},
        ],
        trials=trials,
        samples=pd.DataFrame(rows),
        headline_metrics=("read_iops", "read_clat_p99"),
    )


def test_summary_title_states_window_and_trial_count() -> None:
    title = str(summary_table(_data()).title)
    assert "oio-sweep" in title and "run-42" in title
    assert "2 min steady-state window" in title
    assert "3 trials per point" in title
    assert "95 % CI" in title


def test_summary_rows_show_mean_ci_and_range_with_units() -> None:
    out = _text(summary_table(_data()))
    # mean 1010, stdev 10, t(0.975, 2) * 10 / sqrt(3) = 24.8
    assert "1,010 ± 25 IO/s" in out
    assert "1,000–1,020 IO/s" in out
    assert "1.010 ± 0.025 ms" in out
    assert "read_bw" not in out  # not a headline metric


def test_summary_flags_failed_trials_no_data_and_noise() -> None:
    table = summary_table(_data())
    out = _text(table)
    assert table.row_count == 3 * 2  # one row per point and headline metric
    assert "2/3" in out and "0/3" in out
    assert out.count("no data") == 2  # both metrics of point 2
    assert "23.6 % noisy" in out  # point 1 read_iops: 500 and 700


def test_summary_metrics_argument_picks_columns() -> None:
    out = _text(summary_table(_data(), metrics=["read_bw", "write_iops"]))
    assert "read_bw" in out and "MiB/s" in out
    assert "read_iops" not in out
    assert (
        "write_iops" in out and out.count("no data") == 3 + 1
    )  # write_iops everywhere, read_bw of point 2


def test_labels_are_not_rich_markup() -> None:
    out = _text(summary_table(_data()))
    assert MARKUP_LABEL in out


def test_runs_table_lists_runs_in_local_time() -> None:
    rows = [
        {
            "run_id": "run-1",
            "scenario_name": "fio-4k",
            "status": "completed",
            "started": T0,
            "ended": T0 + 3725,
            "points": 4,
            "trials": 5,
            "tags": ["nightly", "[b]x"],
        },
        {"run_id": "run-2", "scenario": "redis", "status": "running", "started": T0 + 9000},
    ]
    table = runs_table(rows)
    out = _text(table)
    assert len(out.strip().splitlines()) == 2 + 2  # title, header, one line per run
    assert datetime.fromtimestamp(T0).strftime("%Y-%m-%d %H:%M") in out
    assert "1 h 02 min" in out
    assert "4×5" in out
    assert "nightly, [b]x" in out
    assert "redis" in out and "running" in out
    assert out.splitlines()[1].split() == [
        "run", "id", "scenario", "status", "started", "duration", "points×trials", "tags",
    ]  # fmt: skip
    # Status in colour, only on the status column.
    styled = [(table.plain[s.start:s.end], s.style) for s in table.spans if s.style]
    assert ("completed", "green") in styled and ("running", "yellow") in styled


def test_runs_table_of_nothing_is_its_header() -> None:
    assert runs_table([]).plain.splitlines()[1:] == [
        "run id  scenario  status  started  duration  points×trials  tags"]


def test_samples_without_trial_records_still_summarise() -> None:
    full = _data()
    data = ReportData(run=full.run, points=full.points, trials=[], samples=full.samples)
    out = _text(summary_table(data))
    assert "1,010 ± 25 IO/s" in out
    assert "2 min steady-state window" in str(summary_table(data).title)


def test_runs_table_reads_store_counts_and_shows_unfinished_trials() -> None:
    base = {"run_id": "r", "scenario_name": "s", "status": "ok", "started": T0, "ended": T0 + 5}
    done = {**base, "n_points": 3, "n_trials": 6, "scenario": {"repeat": 2}}
    partial = {**base, "status": "interrupted", "n_points": 3, "n_trials": 4, "scenario": {}}
    unknown = {**base, "n_points": 3, "n_trials": 4, "scenario": {"repeat": 5}}
    ends = [line.split("  ")[-1].strip() for line in
            _text(runs_table([done, partial, unknown])).splitlines()[2:]]
    assert ends == ["3×2", "3×?", "3×5 (4 run)"]  # 3×?: 4 trials over 3 points
    assert " 5 s " in _text(runs_table([done]))


def test_a_run_still_provisioning_is_shown_under_way_in_colour() -> None:
    table = runs_table([{"run_id": "run-3", "scenario_name": "vc", "status": "provisioning",
                         "started": T0}])  # fmt: skip
    cells = table.plain.splitlines()[-1].split()
    assert cells.count("provisioning") == 2  # the status, and the duration column
    styled = [(table.plain[s.start:s.end], s.style) for s in table.spans if s.style]
    assert ("provisioning", "yellow") in styled
