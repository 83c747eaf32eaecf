"""Exports of stored runs: JSON, CSV, JUnit XML and Markdown (`vbench report --format`)."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.cli import cli
from vbench.report.build import render_report
from vbench.report.exports import format_for
from vbench.results.store import Store

HOSTILE = "<script>alert('x')</script>|"
SC = scenario_doc(
    "exp", {"bs": ["4k", HOSTILE]}, report={"headline": ["ops", "lat"]},
    derived=[{"name": "rel", "kind": "normalize", "metric": "ops", "baseline": {"bs": "4k"}}],
    qos=[{"metric": "lat", "op": "<=", "threshold": 3.0},
         {"name": "throughput floor", "metric": "ops", "op": ">=", "threshold": 500,
          "stat": "min"}],
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(f"sqlite:///{tmp_path}/e.db", tmp_path) as s:
        for day, k in ((1, 1.0), (2, 0.8)):
            add_run(s, f"2027010{day}-000000-0000000{day}", [
                ({"bs": "4k"}, {"ops": [1000.0 * k, 1002.0 * k, 998.0 * k, 1001.0 * k,
                                        999.0 * k], "lat": [2.0, 2.1, 1.9, 2.0, 2.0]}),
                ({"bs": HOSTILE}, {"ops": [400.0, 410.0, 390.0, 405.0, 395.0],
                                   "lat": [5.0, 5.1, 4.9, 5.0, 5.0]}),
            ], scenario=SC, started=T0 + day * 86400, failed=[(1, 4)] if day == 2 else [])
        yield s


NEW, OLD = "20270102-000000-00000002", "20270101-000000-00000001"


def test_json_has_samples_aggregates_and_verdicts(store: Store) -> None:
    doc = json.loads(render_report(store, [NEW], "json", baseline="last"))
    run = doc["runs"][0]
    assert run["run"]["run_id"] == NEW
    assert len(run["samples"]) == 2 * 9  # the failed trial's samples are left out
    agg = {(a["labels"]["bs"], a["metric"]): a for a in run["aggregates"]}
    assert agg[("4k", "ops")]["n"] == 5 and agg[("4k", "ops")]["mean"] == pytest.approx(800.0)
    assert agg[(HOSTILE, "ops")]["n"] == 4
    assert agg[(HOSTILE, "rel")]["kind"] == "derived"
    assert run["qos"]["passed"] is False
    assert [c["status"] for c in run["qos"]["checks"]] == ["pass", "fail", "pass", "fail"]
    reg = run["regression"]
    assert reg["baseline"] == [OLD] and reg["regressed"] is True
    assert {c["metric"]: c["status"] for c in reg["checks"] if c["point"] == "bs=4k"} == {
        "ops": "regression", "lat": "ok"}


def test_json_of_two_runs_compares_them(store: Store) -> None:
    doc = json.loads(render_report(store, [NEW, OLD], "json"))
    assert len(doc["runs"]) == 2
    rows = {(r["point"], r["metric"]): r for r in doc["comparisons"][0]["rows"]}
    assert rows[("bs=4k", "ops")]["ratio"] == pytest.approx(1.25)
    assert rows[("bs=4k", "ops")]["verdict"] == "better"


def test_csv_is_one_row_per_point_and_metric(store: Store) -> None:
    text = render_report(store, [NEW, OLD], "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[:5] == ["run_id", "point", "point_number", "bs", "metric"]
    # point: the stored index (from 0); point_number: what people read (from 1).
    assert {(r["point"], r["point_number"]) for r in rows} == {("0", "1"), ("1", "2")}
    assert len(rows) == 2 * 2 * 3  # runs × points × (ops, lat, rel)
    mine = [r for r in rows if r["run_id"] == NEW and r["bs"] == "4k" and r["metric"] == "ops"]
    assert float(mine[0]["mean"]) == pytest.approx(800.0) and mine[0]["unit"] == "ops/s"


def test_junit_has_one_case_per_criterion_and_regression_check(store: Store) -> None:
    root = ET.fromstring(render_report(store, [NEW], "junit", baseline=OLD))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "vbench.exp"
    cases = suite.findall("testcase")
    names = [(c.get("classname"), c.get("name")) for c in cases]
    assert ("vbench.exp.qos", "lat mean ≤ 3") in names
    assert ("vbench.exp.qos", "throughput floor") in names
    regression = [c for c in cases if c.get("classname", "").startswith("vbench.exp.regression")]
    assert len(regression) == 4  # 2 points × 2 headline metrics
    failed = {(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None}
    assert ("vbench.exp.run", "trials completed") in failed  # one trial failed
    assert ("vbench.exp.qos", "lat mean ≤ 3") in failed  # 5 ms at the second point
    assert ("vbench.exp.regression.ops", "bs=4k") in failed
    assert suite.get("tests") == str(len(cases)) and suite.get("failures") == str(len(failed))
    assert root.get("failures") == suite.get("failures")


def test_junit_marks_a_missing_baseline_as_skipped(store: Store) -> None:
    root = ET.fromstring(render_report(store, [OLD], "junit", baseline="last"))
    skipped = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["baseline"]


def test_markdown_summary_escapes_table_breakers(store: Store) -> None:
    md = render_report(store, [NEW, OLD], "markdown", baseline="last")
    assert "### exp — run `20270102-000000-00000002`" in md
    assert "QoS: FAIL" in md and "REGRESSION in 1 of 4 checks" in md
    assert "<script>" not in md and "&lt;script&gt;" in md and "\\|" in md
    table = [ln for ln in md.splitlines() if ln.startswith("| bs=4k")]
    assert table[0].count(" | ") == 2  # point + two metrics, pipes in labels escaped
    assert "1 better, 0 worse" in md


def test_format_is_taken_from_the_file_name() -> None:
    assert format_for("out.xml", None) == "junit"
    assert format_for("OUT.MD", None) == "markdown"
    assert format_for("x.json", "csv") == "csv"
    assert format_for("report", None) == "html"


def test_report_cli_writes_files_and_stdout(store: Store, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/e.db"
    out = tmp_path / "r" / "summary.md"
    res = CliRunner().invoke(cli, ["report", NEW, "-o", str(out), "--store", url])
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("### exp")
    res = CliRunner().invoke(cli, ["report", NEW, OLD, "-o", "-", "--format", "json",
                                   "--store", url])
    assert res.exit_code == 0 and len(json.loads(res.output)["runs"]) == 2
    res = CliRunner().invoke(cli, ["report", "nope", "-o", "-", "--store", url])
    assert res.exit_code != 0


def test_json_never_holds_nan() -> None:
    from vbench.report.exports import finite

    assert finite({"a": [float("nan"), 1.0, (float("inf"),)], "b": "x"}) == {
        "a": [None, 1.0, [None]], "b": "x"}
