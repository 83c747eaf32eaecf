"""Points are numbered from 1 wherever a person reads them (tables, titles, JUnit,
progress); the stored index (from 0) stays the machine key, beside ``point_number`` in
JSON and CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from tests.analysis_runs import add_run
from vbench.report.build import render_report, run_summary_json
from vbench.report.data import ReportData, ReportView
from vbench.report.terminal import summary_table
from vbench.results.store import Store


def _data() -> ReportData:
    trials = [{"point": p, "trial": 1, "status": "ok" if p == 0 else "failed",
               "error": None if p == 0 else "boom", "phases": {}} for p in (0, 1)]
    samples = pd.DataFrame([{"point": 0, "trial": 1, "guest": None, "metric": "ops",
                             "value": 5.0, "unit": "ops/s", "source": "x", "labels": "{}",
                             "window_start": None, "window_end": None}])
    run = {"run_id": "r", "scenario_name": "s", "status": "ok", "scenario": {"repeat": 1}}
    return ReportData(run, [{"point": 0, "labels": {}}, {"point": 1, "labels": {}}], trials,
                      samples, headline_metrics=("ops",))


def test_unlabelled_points_and_the_summary_table_count_from_one() -> None:
    view = ReportView(_data())
    assert [p.title for p in view.points] == ["point 1", "point 2"]
    assert any(w.startswith("Trial 1 of point 2 failed") for w in view.warnings())
    console = Console(width=200, record=True, color_system=None)
    console.print(summary_table(_data()))
    rows = [ln.split("│")[1].strip() for ln in console.export_text().splitlines()
            if ln.startswith("│") and ln.split("│")[1].strip().isdigit()]
    assert rows == ["1", "2"]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(f"sqlite:///{tmp_path}/n.db", tmp_path) as s:
        add_run(s, "20270101-000000-aaaa", [({}, {"ops": [1.0, 2.0]}), ({}, {"ops": [3.0]})],
                failed=[(1, 0)])
        yield s


def test_json_keeps_the_index_and_adds_the_number(store: Store) -> None:
    doc = run_summary_json(store, "20270101-000000-aaaa")
    assert [(p["point"], p["point_number"], p["title"]) for p in doc["points"]] == [
        (0, 1, "point 1"), (1, 2, "point 2")]


def test_junit_names_failed_trials_by_point_number(store: Store) -> None:
    xml = render_report(store, ["20270101-000000-aaaa"], "junit")
    assert "point 2 trial 0: boom" in xml and "point 1 trial" not in xml
