"""Disturbed trials where a nightly series' owner looks across runs: `vbench history`
(plain and --json), the trend page and the site, the change points' triage
(vbench/report/history_watch.py), on stored runs with the testbed's disturbance records."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.history import load_history
from vbench.cli import cli
from vbench.report.historyfmt import format_history
from vbench.report.trend import render_trend
from vbench.results.store import Store

SC = scenario_doc("nightly-dist", {"bs": ["4k", "64k"]}, report={"headline": ["ops"]})
BUSY = "VM poseidon used 48 % of esx01's CPU in the steady window"
NIGHTS = 4
FLAGGED = "20270103-020000-00000003"  # trial 1 at bs=4k flagged, in the statistics
FAILED = "20270102-020000-00000002"  # trial 2 at bs=64k disturbed, failed: left out


def _run_id(day: int) -> str:
    return f"2027010{day}-020000-0000000{day}"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path}/h.db", tmp_path) as s:
        for day in range(1, NIGHTS + 1):
            testbed = {}
            failed: list[tuple[int, int]] = []
            if _run_id(day) == FLAGGED:
                testbed = {"disturbances": [
                    {"point": 0, "trial": 1, "action": "flag", "text": BUSY,
                     "events": [{"at": T0 + day * 86400 + 40}]}]}
            if _run_id(day) == FAILED:
                testbed = {"disturbances": [
                    {"point": 1, "trial": 2, "action": "flag", "text": "vMotion of g1"}]}
                failed = [(1, 2)]
            add_run(s, _run_id(day), [({"bs": "4k"}, {"ops": [1000.0, 1010.0, 990.0]}),
                                      ({"bs": "64k"}, {"ops": [300.0, 310.0, 305.0]})],
                    scenario=SC, started=T0 + day * 86400, testbed=testbed, failed=failed)
        yield s


def _row(text: str, run_id: str, metric: str = "ops") -> str:
    table = text[text.index(f"{metric} ("):]
    return next(line for line in table.splitlines() if line.startswith(run_id))


def test_history_marks_a_figure_that_includes_a_disturbed_trial(store: Store) -> None:
    text = format_history(load_history(store, "nightly-dist", ["ops"]))
    assert "† = the figure includes disturbed trials (in the statistics)\n" in text
    flagged = _row(text, FLAGGED)
    # bs=4k's figure has the flagged trial in it; bs=64k's that night does not
    assert re.search(r"1,?000 †\s+305\b", flagged), flagged
    # the night whose disturbed trial failed: its figure is clean (the trial left out)
    assert "†" not in _row(text, FAILED)
    assert "†" not in _row(text, _run_id(1))
    lines = text[text.index("disturbed trials (oldest first;"):].splitlines()
    assert lines[1] == (f"  {FAILED}  bs=64k: 1 of 3 trials disturbed: trial 2 failed, not "
                        "in the statistics")
    assert lines[3] == (f"  {FLAGGED}  bs=4k: 1 of 3 trials disturbed: trial 1, in the "
                        "statistics")
    assert lines[4] == f"      trial 1: {BUSY} — in the statistics"


def test_a_history_without_disturbed_trials_says_nothing_of_them(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/c.db", tmp_path) as s:
        add_run(s, _run_id(1), [({"bs": "4k"}, {"ops": [1.0, 2.0]})], scenario=SC,
                testbed={"disturbances": [{"point": 0, "trial": 1, "action": "retried",
                                           "text": "HA restart"}]})
        hist = load_history(s, "nightly-dist", ["ops"])
    text = format_history(hist)
    assert "†" not in text and "disturbed" not in text


def test_history_json_has_each_runs_and_each_figures_disturbed_trials(
        store: Store, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["history", "nightly-dist", "--json", "--store",
                                   f"sqlite:///{tmp_path}/h.db"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    runs = {r["run_id"]: r for r in doc["runs"]}
    assert runs[_run_id(1)]["disturbed"] == []
    [point] = runs[FLAGGED]["disturbed"]
    assert (point["point_number"], point["disturbed_included"], point["disturbed"][0]["text"]
            ) == (1, [1], BUSY)
    assert runs[FAILED]["disturbed"][0]["disturbed_excluded"] == [2]
    at = [r["run_id"] for r in doc["runs"]].index(FLAGGED)
    by_point = {s["point"]: s["values"] for s in doc["series"]}
    assert by_point["bs=4k"][at]["disturbed_included"] == [1]
    assert (by_point["bs=64k"][at]["disturbed_included"],
            by_point["bs=64k"][at]["disturbed_excluded"]) == ([], [])
    failed_at = [r["run_id"] for r in doc["runs"]].index(FAILED)
    assert by_point["bs=64k"][failed_at]["disturbed_excluded"] == [2]


def test_trend_chart_draws_a_disturbed_night_as_a_diamond(store: Store) -> None:
    page = render_trend(load_history(store, "nightly-dist", ["ops"]))
    charts = re.findall(r"<svg id=\"trend-chart-\d+\".*?</svg>", page, re.S)
    four_k = next(c for c in charts if "at bs=4k" in c)
    diamonds = re.findall(r'<polygon class="disturbed"[^>]*data-run="([^"]+)"[^>]*>'
                          r"<title>([^<]*)</title>", four_k)
    assert [run for run, _ in diamonds] == [FLAGGED]
    tip = html.unescape(diamonds[0][1])
    assert f"trial 1: {BUSY} — in the statistics" in tip and tip.startswith(FLAGGED)
    assert "disturbed, in the statistics" in four_k  # the chart's legend
    assert f'data-run="{FLAGGED}"' not in re.sub(r"<polygon.*?</polygon>", "", four_k)
    six_four = next(c for c in charts if "at bs=64k" in c)
    assert 'class="disturbed"' not in six_four  # the failed trial is not in any figure


@pytest.fixture
def stepped(tmp_path: Path) -> Iterator[Store]:
    """Ten nights, -30 % from the sixth; the first night after has a busy neighbour in
    its trial 2 (flagged, in the statistics), the night before a trial that was only run
    again (not disturbed in the end)."""
    sc = scenario_doc("stepped", report={"headline": ["ops"]})
    with Store.open(f"sqlite:///{tmp_path}/s.db", tmp_path) as s:
        for n in range(10):
            level = 1000.0 if n < 5 else 700.0
            testbed: dict[str, object] = {}
            if n == 5:
                testbed = {"disturbances": [{"point": 0, "trial": 2, "action": "flag",
                                             "text": BUSY}]}
            if n == 4:
                testbed = {"disturbances": [{"point": 0, "trial": 1, "action": "retried",
                                             "text": "HA restart"}]}
            add_run(s, f"202711{10 + n}-020000-000007", [({}, {"ops": [
                level + n % 3, level - 1 + n % 2, level + 1]})], scenario=sc,
                started=T0 + n * 86400, testbed=testbed)
        yield s


def test_a_change_whose_first_night_after_was_disturbed_says_so(
        stepped: Store, tmp_path: Path) -> None:
    from vbench.analysis.nightly import find_changes
    from vbench.report.changesfmt import changes_json, format_changes

    hist = load_history(stepped, "stepped", ["ops"])
    (change,) = find_changes(stepped, hist)
    assert change.run_id == "20271115-020000-000007"
    text = format_changes(hist, (change,))
    night = time.strftime("%-d %b %Y", time.gmtime(T0 + 5 * 86400))
    said = (f"the night of {night} (the first night after the change, run "
            f"20271115-020000-000007) had 1 disturbed trial: trial 2: {BUSY} — in "
            "the statistics")
    assert f"    {said}\n" in text
    assert "the night before it" not in text  # only run again there: not disturbed
    (doc,) = changes_json(hist, (change,))["changes"]
    assert doc["disturbed"] == [{"night": "after", "run_id": "20271115-020000-000007",
                                 "started": T0 + 5 * 86400, "disturbed_included": [2],
                                 "disturbed_excluded": [], "text": said}]
    res = CliRunner().invoke(cli, ["history", "stepped", "--changes", "--store",
                                   f"sqlite:///{tmp_path}/s.db"])
    assert res.exit_code == 0 and said in res.output, res.output


def test_the_sites_trend_page_marks_the_night_and_the_changes_triage(
        stepped: Store, tmp_path: Path) -> None:
    from vbench.report.site import write_site

    site = write_site(stepped, tmp_path / "site")
    page = html.unescape((tmp_path / "site" / site.scenarios[0].href).read_text())
    assert re.findall(r'<polygon class="disturbed" data-run="([^"]+)"', page) == [
        "20271115-020000-000007"]
    changes = page[page.index('<section id="changes">'):]
    changes = changes[:changes.index("</section>")]
    assert f"had 1 disturbed trial: trial 2: {BUSY} — in the statistics" in changes


def test_the_trend_pages_runs_table_says_each_runs_disturbed_trials(store: Store) -> None:
    page = html.unescape(render_trend(load_history(store, "nightly-dist", ["ops"])))
    runs = page[page.index('<section id="runs">'):]
    assert "<th>disturbed trials</th>" in runs
    row = {m.group(1): m.group(2) for m in re.finditer(
        r"<tr><td><code>([^<]+)</code>.*?<td class=\"disturbed\">([^<]*)</td></tr>", runs)}
    assert row[FLAGGED] == "bs=4k: 1 of 3 trials disturbed: trial 1, in the statistics"
    assert row[FAILED] == ("bs=64k: 1 of 3 trials disturbed: trial 2 failed, not in the "
                           "statistics")
    assert row[_run_id(1)] == "—"


def test_the_nightly_checks_change_alert_says_the_disturbed_night(stepped: Store) -> None:
    """A run's --check-regression lists the change tonight sits after with its triage:
    the first night after it was disturbed, and the terminal, JSON and JUnit say so."""
    import dataclasses

    from vbench.report.build import check_regression_of, report_data_of
    from vbench.report.exports import regression_json, to_junit
    from vbench.report.textfmt import format_regression
    from vbench.results.stored import StoredRun

    data = report_data_of(StoredRun.load(stepped, "20271119-020000-000007"))
    reg = check_regression_of(stepped, data.stored, data.analyzed().figures, "last:3")
    assert [c.run_id for c in reg.changes] == ["20271115-020000-000007"]
    said = f"run 20271115-020000-000007) had 1 disturbed trial: trial 2: {BUSY}"
    assert said in format_regression(reg, 200)
    (change,) = regression_json(reg)["changes"]
    assert change["disturbed"][0]["disturbed_included"] == [2]
    assert said in html.unescape(to_junit([dataclasses.replace(data, regression=reg)]))
    from vbench.report.changesfmt import alert_sections

    (alert,) = alert_sections(reg)  # the HTML report's change-point figure caption
    assert said in alert["state"]


def test_history_counts_a_points_trials_that_left_no_sample(tmp_path: Path) -> None:
    """"1 of N trials": N is every trial the run stored at the point, as `vbench show`
    counts them — a trial that failed before any figure (no sample) is one of them."""
    from vbench.results.records import PhaseTimes, TrialResult

    with Store.open(f"sqlite:///{tmp_path}/n.db", tmp_path) as s:
        rid = add_run(s, _run_id(1), [({"bs": "4k"}, {"ops": [1000.0, 1010.0, 990.0]})],
                      scenario=SC, testbed={"disturbances": [
                          {"point": 0, "trial": 1, "action": "flag", "text": BUSY}]})
        phases = PhaseTimes(T0, T0, T0 + 1, T0 + 2, T0 + 2, T0 + 3)
        s.record_trial(rid, TrialResult(0, 3, "failed", phases, (), "guest lost"))
        text = format_history(load_history(s, "nightly-dist", ["ops"]))
    lines = text[text.index("disturbed trials (oldest first;"):].splitlines()
    assert lines[1] == (f"  {rid}  bs=4k: 1 of 4 trials disturbed: trial 1, in the "
                        "statistics")
