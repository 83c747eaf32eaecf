"""Disturbed trials in the report (vbench/report/disturbed.py): every table of a point's
statistics says how many of its trials were disturbed and whether their figures are in
the mean and CI; the charts mark a disturbed trial's value (and, on a time series, the
disturbance's moment); HTML, Markdown, the terminal, JSON and CSV agree."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.report.build import (
    print_summary,
    render_report,
    report_data,
    show_json_of,
    summary_json_of,
)
from vbench.report.chartplan import ChartIds, Series, draw_series
from vbench.report.disturbed import (
    MARK_LABEL,
    event_times,
    footnotes,
    of_data,
    point_disturbances,
    trial_text,
)
from vbench.report.series import series_charts
from vbench.report.svg import TrialMark
from vbench.results.store import Store

VMOTION = "vMotion of g1 to esx2 at 12:03:04, 21 s into the steady window"
RESET = "g1 reset at 12:05:00"


def _trials(statuses: dict[tuple[int, int], str]) -> list[dict[str, object]]:
    return [{"point": p, "trial": t, "status": s} for (p, t), s in statuses.items()]


def test_each_trial_is_read_from_its_last_attempt_and_its_own_status() -> None:
    testbed = {"disturbances": [
        {"point": 0, "trial": 1, "action": "flag", "text": VMOTION,
         "events": [{"at": T0 + 31.0}, {"at": "not a time"}]},
        # flagged, but the trial failed for another reason: not in the statistics either
        {"point": 0, "trial": 2, "action": "flag", "text": "alarm red on esx1"},
        {"point": 1, "trial": 3, "action": "fail", "text": RESET},
        # run again twice, the last attempt disturbed too: kept and flagged
        {"point": 1, "trial": 1, "action": "retried", "text": "HA restart"},
        {"point": 1, "trial": 1, "action": "retried", "text": "HA restart"},
        {"point": 1, "trial": 1, "action": "flag", "text": "HA restart"},
        # run again once, the kept attempt undisturbed; a trial not watched
        {"point": 2, "trial": 2, "action": "retried", "text": "snapshot"},
        {"point": 2, "trial": 3, "action": "unread", "text": "events not read: vc1"},
        "not a record", {"point": "x", "trial": 1},
    ]}
    trials = _trials({(p, t): "ok" for p in range(3) for t in (1, 2, 3)}
                     | {(0, 2): "failed", (1, 3): "failed"})
    found = point_disturbances(testbed, trials)
    assert sorted(found) == [0, 1, 2]
    p0, p1, p2 = found[0], found[1], found[2]
    assert (p0.included, p0.excluded) == ([1], [2])
    assert p0.disturbed[0].at == (T0 + 31.0,)
    assert p0.text() == ("2 of 3 trials disturbed: trial 1, in the statistics; "
                         "trial 2 failed, not in the statistics")
    assert (p1.included, p1.excluded, p1.retried) == ([1], [3], ((1, 2),))
    assert p2.disturbed == () and p2.retried == ((2, 1),) and p2.unwatched == (3,)
    assert p2.text() == ("0 of 3 trials disturbed; trial 2 run again after 1 disturbed "
                         "attempt (not stored); trial 3 not watched")
    doc = p1.to_json()
    assert doc["disturbed_included"] == [1] and doc["disturbed_excluded"] == [3]
    assert [d["action"] for d in doc["disturbed"]] == ["flag", "fail"]
    assert doc["retried"] == [{"trial": 1, "attempts": 2}]
    notes = footnotes(found, {0: "bs=4k"})
    assert notes[0] == f"point 1 (bs=4k) trial 1: {VMOTION} — in the statistics"
    assert "point 3 trial 2: run again after 1 disturbed attempt (not stored; the kept " \
           "attempt was not disturbed)" in notes
    assert "point 3 trial 3: not watched (events not read: vc1)" in notes
    assert trial_text(testbed["disturbances"][3:6]) == (  # type: ignore[index]
        "run again, disturbed: HA restart; run again, disturbed: HA restart; "
        "disturbed: HA restart")


def test_a_run_without_disturbances_has_none() -> None:
    assert point_disturbances({}, _trials({(0, 1): "ok"})) == {}
    assert point_disturbances(None, []) == {}
    assert point_disturbances({"disturbances": "garbage"}, []) == {}


# ------------------------------------------------------------ a stored run

SC = scenario_doc("still", {"bs": ["4k", "8k"]}, report={"headline": ["ops"]},
                  derived=[{"name": "rel", "kind": "normalize", "metric": "ops",
                            "baseline": {"bs": "4k"}}])
# tests/analysis_runs.py: trial t of point p warms up from T0 + 100 (3p + t), its steady
# window 10-70 s later; the vMotion is 21 s into point 0 trial 1's.
TESTBED = {"disturbances": [
    {"id": "point 1 trial 1 #1", "point": 0, "trial": 1, "action": "flag", "text": VMOTION,
     "events": [{"at": T0 + 131.0, "kind": "migration"}]},
    {"id": "point 2 trial 2 #2", "point": 1, "trial": 2, "action": "fail", "text": RESET,
     "events": [{"at": T0 + 520.0, "kind": "vm"}]},
]}
RUN, CLEAN = "20270101-000000-dist", "20270102-000000-clean"


def add_runs(s: Store) -> Store:
    """RUN (point 1 trial 1 flagged, point 2 trial 2 failed by its disturbance) and CLEAN."""
    points = [({"bs": "4k"}, {"ops": [100.0, 130.0, 101.0]}),
              ({"bs": "8k"}, {"ops": [200.0, 201.0, 199.0]})]
    add_run(s, RUN, points, scenario=SC, failed=[(1, 2)], testbed=TESTBED)
    add_run(s, CLEAN, points, scenario=SC, started=T0 + 86400, testbed={})
    return s


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path}/d.db", tmp_path) as s:
        yield add_runs(s)


def _svgs(html: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", html, flags=re.S)


def test_the_headline_chart_marks_the_disturbed_trials_value(store: Store) -> None:
    html = render_report(store, [RUN], "html")
    (chart,) = [s for s in _svgs(html) if 'class="disturbed"' in s]
    marks = re.findall(r'<polygon class="disturbed"[^>]*data-value="([^"]+)"[^>]*>'
                       r"<title>([^<]*)</title>", chart)
    # point 1's trial 1 (130 ops/s) is in the statistics and drawn; point 2's trial 2
    # failed: it has no figure in the statistics and no mark
    assert marks == [("130", f"point 1 (bs=4k) trial 1: {VMOTION} — in the statistics")]
    assert MARK_LABEL in chart and 'class="key"' in chart  # the legend's entry
    assert float(re.search(r'data-y-max="([^"]+)"', chart)[1]) >= 130  # type: ignore[index]
    assert ("diamond = a disturbed trial's value (1 trial, in the statistics); 1 disturbed "
            "trial failed, not in the statistics and not drawn") in html.replace("&#39;", "'")


def test_a_clean_run_draws_and_says_nothing_of_disturbances(store: Store) -> None:
    html = render_report(store, [CLEAN], "html")
    assert 'class="disturbed"' not in html and MARK_LABEL not in html
    assert "<th>disturbed</th>" not in html and "Lab disturbances" not in html
    assert "†" not in _terminal(store, CLEAN)
    doc = json.loads(render_report(store, [CLEAN], "json"))["runs"][0]
    assert doc["disturbed"] == []
    assert all(a["disturbed_included"] == [] for a in doc["aggregates"])


def _terminal(store: Store, run_id: str) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    print_summary(report_data(store, run_id), console, with_verdict=False)
    return console.export_text()


def test_every_output_says_which_trials_are_disturbed_and_whether_counted(
        store: Store) -> None:
    row0 = "1 of 3 trials disturbed: trial 1, in the statistics"
    row1 = "1 of 3 trials disturbed: trial 2 failed, not in the statistics"
    html = render_report(store, [RUN], "html")
    # HTML: a "disturbed" column in the results tables, the notes above them, a badge,
    # and the trials table
    results = html[html.index('<section id="results">'):html.index('<section id="timeseries"')
                   if 'id="timeseries"' in html else html.index('<section id="guests">')]
    assert "<th>disturbed</th>" in results
    assert f'<td class="disturbed">{row0}</td>' in results
    assert f'<td class="disturbed">{row1}</td>' in results
    assert f"point 2 (bs=8k) trial 2: {RESET} — failed, not in the statistics" in results
    assert "2 trials, 1 in the statistics" in html  # the summary's badge
    trials = html[html.index('<section id="trials">'):]
    assert f'<td class="disturbed">failed, disturbed: {RESET}</td>' in trials
    # the answer's headline figure (at bs=8k, the best point) says it of its point
    answer = html[:html.index('<section id="summary">')]
    assert f'bs=8k <span class="disturbed-note">({row1})</span>' in answer
    # Markdown: the answer's figure, a column and the notes
    md = render_report(store, [RUN], "markdown")
    assert f"| 2 | bs=8k ({row1}) |" in md
    assert f"| bs=4k | 110.3 ± 42.3 ops/s | {row0} |" in md
    assert f"| bs=8k | 200.5 ± 6.4 ops/s | {row1} |" in md
    assert f"- point 1 (bs=4k) trial 1: {VMOTION} — in the statistics" in md
    # terminal: the n of each point marked, the lines under the table
    text = _terminal(store, RUN)
    assert re.search(r"│\s+3 †\s+│", text) and re.search(r"│\s+2/3 †\s+│", text)
    assert f"† point 1 (bs=4k): {row0}" in text and f"  trial 1: {VMOTION}" in text
    # JSON of `report`, `show` and `run`: the same trials
    doc = json.loads(render_report(store, [RUN], "json"))["runs"][0]
    agg = {a["point"]: a for a in doc["aggregates"] if a["metric"] == "ops"}
    assert (agg[0]["disturbed_included"], agg[0]["disturbed_excluded"]) == ([1], [])
    assert (agg[1]["disturbed_included"], agg[1]["disturbed_excluded"]) == ([], [2])
    assert [p["text"] for p in doc["disturbed"]] == [row0, row1]
    data = report_data(store, RUN)
    assert show_json_of(data)["disturbed"] == doc["disturbed"]
    points = summary_json_of(data)["points"]
    assert [(p["disturbed_included"], p["disturbed_excluded"]) for p in points] == [
        ([1], []), ([], [2])]
    assert points[0]["disturbed"][0]["text"] == VMOTION
    assert points[0]["disturbed"][0]["at"] == [T0 + 131.0]
    # JUnit: the trials case says them (a disturbed trial fails no test case)
    junit = render_report(store, [RUN], "junit")
    assert f"disturbed: point 1 (bs=4k) trial 1: {VMOTION} — in the statistics" in junit
    # CSV: the same two columns
    rows = list(csv.DictReader(io.StringIO(render_report(store, [RUN], "csv"))))
    assert [(r["disturbed_included"], r["disturbed_excluded"]) for r in rows
            if r["metric"] == "ops"] == [("1", ""), ("", "2")]
    # the derived figures' table says it of each point too
    derived = html[html.index('<section id="derived">'):html.index('<section id="warnings">')]
    assert f'<td class="disturbed">{row0}</td>' in derived


def test_compare_says_which_run_had_disturbed_trials(store: Store, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vbench.cli import cli

    url = f"sqlite:///{tmp_path}/d.db"
    out = CliRunner().invoke(cli, ["compare", RUN, CLEAN, "--store", url])
    assert out.exit_code == 0, out.output
    assert (f"disturbed: run A {RUN}: point 1 (bs=4k): 1 of 3 trials disturbed: trial 1, "
            "in the statistics") in out.output
    assert f"run B {CLEAN}" not in out.output
    doc = json.loads(CliRunner().invoke(
        cli, ["compare", RUN, CLEAN, "--store", url, "--json"]).output)
    assert [p["disturbed_included"] for p in doc["disturbed"]["a"]] == [[1], []]
    assert doc["disturbed"]["b"] == []


def test_a_find_max_level_says_its_disturbed_trials(tmp_path: Path) -> None:
    from tests.unit.test_findmax_report import stored_search
    from vbench.report.build import render_run_report

    store, run_id, _ = stored_search(tmp_path)
    with store:  # the level run second is point 1
        store.set_testbed(run_id, {"disturbances": [
            {"point": 1, "trial": 1, "action": "flag", "text": VMOTION, "events": []}]})
        html = render_run_report(store, run_id, tmp_path / "r.html").read_text()
    path = html[html.index('<section id="findmax">'):]
    path = path[:path.index("</table>")]
    assert "<th>disturbed</th>" in path
    cells = re.findall(r'<td class="disturbed">([^<]*)</td>', path)
    assert cells == ["1 of 2 trials disturbed: trial 1, in the statistics"]


def _series(marks: bool) -> Series:
    from vbench.analysis.stats import summarize

    rows = [({"vms": str(n), "rw": rw}, summarize([10.0 * n, 10.0 * n + 1, 10.0 * n + 2]))
            for rw in ("read", "write") for n in (1, 2, 4)]
    mark = (TrialMark(99.0, "point 3 trial 2: vMotion — in the statistics"),)
    return Series("ops", "ops/s", "higher", rows, points=tuple(range(6)),
                  marks=tuple(mark if i == 2 else () for i in range(6)) if marks else ())


@pytest.mark.parametrize("prefer", [None, "bar"])
def test_curves_and_grouped_bars_mark_the_trial_at_its_point(prefer: str | None) -> None:
    svg, _ = draw_series(_series(True), ["vms", "rw"], ChartIds(), mode="range",
                         prefer=prefer)
    assert ("<polyline" in svg) == (prefer is None)  # a curve over vms, else grouped bars
    marks = re.findall(r'<polygon class="disturbed"[^>]*data-value="99"', svg)
    assert len(marks) == 1 and MARK_LABEL in svg
    assert float(re.search(r'data-y-max="([^"]+)"', svg)[1]) >= 99  # type: ignore[index]
    plain, _ = draw_series(_series(False), ["vms", "rw"], ChartIds(), mode="range",
                           prefer=prefer)
    assert 'class="disturbed"' not in plain and MARK_LABEL not in plain


def test_time_series_mark_the_moment_of_the_disturbance(store: Store) -> None:
    data = report_data(store, RUN)
    ok = [t for t in data.trials if t["status"] == "ok"]
    events = event_times(of_data(data), ok, {0: "bs=4k"})
    # 31 s after the trial's warm-up began (the charts' 0); the failed trial's reset is
    # not drawn: neither is its trace
    assert events == [(0, 1, 31.0, f"point 1 (bs=4k) trial 1: {VMOTION} — in the statistics")]
    frame = pd.DataFrame([
        {"metric": "cpu", "value": float(k), "ts": t["phases"]["warmup_start"] + k,
         "point": t["point"], "trial": t["trial"], "unit": "%", "source": "esxtop",
         "entity": ""} for t in ok for k in range(0, 80, 5)])
    ids = iter(range(10))
    titles = {0: "bs=4k", 1: "bs=8k"}
    (chart,) = series_charts(frame, ok, titles, lambda: f"c{next(ids)}", events=events)
    svg = str(chart["svg"])
    ((x, what),) = re.findall(r'<line class="disturbed" x1="([^"]+)"[^>]*>'
                              r"<title>([^<]*)</title>", svg)
    assert what == events[0][3]
    assert "Dotted orange: a disturbance — point 1 trial 1 at 31 s." in chart["caption"]
    # on the time axis between its ticks 20 and 40 (small multiple: 0, 20 … 80)
    tick = {t: float(v) for v, t in re.findall(r'<text x="([^"]+)"[^>]*>(20|40)</text>', svg)}
    assert tick["20"] < float(x) < tick["40"]
    # a chart without that trial's samples draws no line
    (other,) = series_charts(frame[frame["point"] == 1], ok, titles, lambda: f"c{next(ids)}",
                             events=events)
    assert 'class="disturbed"' not in str(other["svg"])
    assert "disturbance" not in other["caption"]
    # many events: every one drawn, the caption names the first 8
    many = [(0, 1, float(k), f"alarm {k}") for k in range(10)]
    (busy,) = series_charts(frame, ok, titles, lambda: f"c{next(ids)}", events=many)
    assert str(busy["svg"]).count('<line class="disturbed"') == 10
    assert "point 1 trial 1 at 7 s; 2 more (each line's tooltip names it)." in busy["caption"]


def test_the_steady_state_rounds_mark_a_disturbed_round() -> None:
    from vbench.analysis.steady_state import SteadyRule, judge
    from vbench.report.steady_chart import steady_svg

    rule = SteadyRule(metric="iops", window=3)
    state = judge([100.0, 150.0, 101.0, 100.0, 99.0], rule)
    svg = steady_svg(state, "rounds", "IO/s", "c0", {2: "point 1 trial 2: vMotion"})
    assert re.findall(r'<polygon class="disturbed"[^>]*data-value="150"[^>]*>'
                      r"<title>point 1 trial 2: vMotion</title>", svg)
    assert 'class="disturbed"' not in steady_svg(state, "rounds", "IO/s", "c1")


def test_a_points_operations_table_says_its_disturbed_trials(tmp_path: Path) -> None:
    from tests.unit.test_report_operations import _store_run
    from vbench.report.build import render_run_report

    store, run_id = _store_run(tmp_path)
    with store:
        store.set_testbed(run_id, {"disturbances": [
            {"point": 1, "trial": 2, "action": "flag", "text": VMOTION, "events": []}]})
        html = render_run_report(store, run_id, tmp_path / "r.html").read_text()
    ops = html[html.index('<section id="operations">'):html.index('<section id="warnings">')]
    captions = re.findall(r"<caption>Operations — ([^<]*(?:<span[^>]*>[^<]*</span>)?)", ops)
    assert captions == ["3 trials", '3 trials; <span class="disturbed-note">1 of 3 trials '
                        'disturbed: trial 2, in the statistics</span>']


# ------------------------------------------------- retried, not watched, not stored

WATCHED = {"disturbances": [
    # point 1 trial 1: run again once, the kept attempt clean
    {"point": 0, "trial": 1, "action": "retried", "text": VMOTION, "events": []},
    # point 2 trial 2: esxtop could not be read (a source of the watch; not vCenter)
    {"point": 1, "trial": 2, "action": "unread",
     "text": "esxtop not read: esxtop on esx1 failed: ssh refused", "events": []},
]}


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path}/w.db", tmp_path) as s:
        points = [({"bs": "4k"}, {"ops": [100.0, 130.0, 101.0]}),
                  ({"bs": "8k"}, {"ops": [200.0, 201.0, 199.0]})]
        add_run(s, RUN, points, scenario=SC, testbed=WATCHED)
        yield s


def test_a_retried_or_unwatched_trial_is_never_called_disturbed(watched: Store) -> None:
    # JUnit: a nightly CI that greps "disturbed:" must find no disturbed trial here (the
    # kept attempt of the retried trial was clean; the other was not watched)
    junit = render_report(watched, [RUN], "junit")
    assert "disturbed: point" not in junit
    assert ("retried: point 1 (bs=4k) trial 1: run again after 1 disturbed attempt "
            "(not stored; the kept attempt was not disturbed)") in junit
    # a not-watched trial says why, from its own record (here esxtop, not vCenter)
    assert ("unwatched: point 2 (bs=8k) trial 2: not watched (esxtop not read: esxtop "
            "on esx1 failed: ssh refused)") in junit
    # terminal: no n is marked (no kept trial was disturbed), so no line carries the mark
    text = _terminal(watched, RUN)
    assert "†" not in text
    assert ("point 1 (bs=4k): 0 of 3 trials disturbed; trial 1 run again after 1 disturbed "
            "attempt (not stored)") in text
    # the summary's line: nothing found disturbed is not "no trial was disturbed" when
    # a trial was not watched
    html = render_report(watched, [RUN], "html")
    assert ("Lab disturbances: no kept trial found disturbed; 1 trial run again after a "
            "disturbed attempt; 1 trial not watched (may have been disturbed)") in html
    # HTML and Markdown: the notes are not said to be vCenter's events
    for fmt in ("html", "markdown"):
        out = render_report(watched, [RUN], fmt)
        assert "vCenter events" not in out, fmt
        assert "not watched (esxtop not read: esxtop on esx1 failed: ssh refused)" in out


def test_compare_prefixes_a_point_with_no_disturbed_trial_lab_watch(
        watched: Store, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vbench.cli import cli

    out = CliRunner().invoke(cli, ["compare", RUN, RUN, "--store", f"sqlite:///{tmp_path}/w.db"])
    assert out.exit_code == 0, out.output
    lines = [x for x in out.output.splitlines() if "trials disturbed" in x]
    assert lines and not [x for x in lines if x.startswith("disturbed:")], lines
    assert (f"lab watch: run A {RUN}: point 1 (bs=4k): 0 of 3 trials disturbed; trial 1 run "
            "again after 1 disturbed attempt (not stored)") in lines


def test_a_flagged_trial_with_no_stored_record_is_not_in_the_statistics() -> None:
    # a run killed between the watch's record and the trial's: the trial has no figure
    testbed = {"disturbances": [{"point": 0, "trial": 3, "action": "flag", "text": RESET}]}
    found = point_disturbances(testbed, _trials({(0, 1): "ok", (0, 2): "ok"}))
    (d,) = found[0].disturbed
    assert not d.included and found[0].excluded == [3]
    assert d.note() == f"point 1 trial 3: {RESET} — not stored, not in the statistics"
    assert found[0].text() == ("1 of 2 trials disturbed: trial 3 not stored, not in the "
                               "statistics")
    # an interrupted trial is not "failed" either
    found = point_disturbances(testbed, _trials({(0, 3): "interrupted"}))
    assert found[0].disturbed[0].note().endswith("— interrupted, not in the statistics")


def test_a_disturbed_trial_partly_not_watched_says_both() -> None:
    # esxtop on one host could not be read (engine/disturbances: PartlyRead, recorded
    # first), vCenter saw a vMotion in the same attempt (recorded after): the kept trial
    # is disturbed, and what was not watched is not lost
    esx = "esxtop not read: esxtop on esx2 failed: ssh refused"
    testbed = {"disturbances": [
        {"point": 0, "trial": 1, "action": "unread", "text": esx},
        {"point": 0, "trial": 1, "action": "flag", "text": VMOTION},
        # an attempt set aside: its own unread record says nothing of the kept one
        {"point": 0, "trial": 2, "action": "unread", "text": esx},
        {"point": 0, "trial": 2, "action": "retried", "text": VMOTION},
    ]}
    (pd_,) = point_disturbances(testbed, _trials({(0, 1): "ok", (0, 2): "ok"})).values()
    assert pd_.included == [1] and pd_.unwatched == (1,)
    assert pd_.text() == ("1 of 2 trials disturbed: trial 1, in the statistics; trial 2 "
                          "run again after 1 disturbed attempt (not stored); trial 1 "
                          "partly not watched")
    assert f"point 1 trial 1: partly not watched ({esx})" in footnotes({0: pd_}, {})


def test_the_results_tables_number_points_as_the_notes_above_them(store: Store) -> None:
    html = render_report(store, [RUN], "html")
    results = html[html.index('<section id="results">'):html.index('<section id="guests">')]
    assert "point 1 (bs=4k) trial 1:" in results  # the note names point 1 ...
    # ... and so does the row of bs=4k (the terminal's # too), not 0
    rows = re.findall(r'<td class="num">(\d+)</td>\s*<td>(4k|8k)</td>', results)
    assert rows and set(rows) == {("1", "4k"), ("2", "8k")}


def test_a_task_that_began_before_the_trial_does_not_stretch_its_time_series(
        store: Store) -> None:
    # A snapshot removal that started half an hour before the steady window and ended in
    # it (vbench/vsphere/hygiene_events.py looks an hour back): its time is its start.
    data = report_data(store, RUN)
    ok = [t for t in data.trials if t["status"] == "ok"]
    frame = pd.DataFrame([
        {"metric": "cpu", "value": float(k), "ts": t["phases"]["warmup_start"] + k,
         "point": t["point"], "trial": t["trial"], "unit": "%", "source": "esxtop",
         "entity": ""} for t in ok for k in range(0, 80, 5)])
    ids = iter(range(10))
    early = [(0, 1, -1800.0, "point 1 trial 1: snapshot removal … — in the statistics")]
    (chart,) = series_charts(frame, ok, {0: "bs=4k", 1: "bs=8k"}, lambda: f"c{next(ids)}",
                             events=early)
    svg = str(chart["svg"])
    # the time axis is the traces' (0 … 80 s), not stretched to -1800 s
    ticks = [float(v.replace(",", "")) for v in re.findall(r'<text [^>]*>(-?[\d,]+)</text>',
                                                           svg)]
    assert min(ticks) >= 0, ticks
    # the line is drawn at the trace's start, and the caption says when it really was
    (x,) = re.findall(r'<line class="disturbed" x1="([^"]+)"', svg)
    # the time axis's 0 (its tick texts are centred; the value axis's end at its left)
    (zero,) = re.findall(r'<text x="([^"]+)"(?:(?!text-anchor="end")[^>])*>0</text>', svg)
    assert abs(float(x) - float(zero)) < 0.5
    assert "point 1 trial 1 before its warm-up (1800 s before; drawn at its start)" \
        in chart["caption"]


def test_a_charts_caption_counts_the_diamonds_it_draws(tmp_path: Path) -> None:
    # The disturbed trial has an ops value but no lat value (its collector failed): the
    # lat chart draws no diamond, and its caption must not say it drew one.
    sc = scenario_doc("still", {"bs": ["4k", "8k"]}, report={"headline": ["ops", "lat"]})
    with Store.open(f"sqlite:///{tmp_path}/m.db", tmp_path) as s:
        add_run(s, RUN, [({"bs": "4k"}, {"ops": [100.0, 130.0, 101.0],
                                         "lat": [1.0, None, 1.1]}),
                         ({"bs": "8k"}, {"ops": [200.0, 201.0, 199.0],
                                         "lat": [2.0, 2.1, 2.2]})],
                scenario=sc, testbed={"disturbances": TESTBED["disturbances"][:1]})
        html = render_report(s, [RUN], "html").replace("&#39;", "'")
    captions = dict(re.findall(r"<figcaption>((?:ops|lat)) in [^<]*?(diamond[^<.]*|)\.?</fig",
                               html))
    svgs = {m: [x for x in _svgs(html) if f">{m} (" in x] for m in ("ops", "lat")}
    assert any('class="disturbed"' in x for x in svgs["ops"])
    assert not any('class="disturbed"' in x for x in svgs["lat"])
    assert "diamond = a disturbed trial's value (1 trial, in the statistics)" in captions["ops"]
    assert captions["lat"] == "", captions
    # the results table of each metric says it of that metric (as the JSON aggregates do)
    cells = re.findall(r'<caption>(ops|lat) .*?<td class="disturbed">([^<]*)</td>', html,
                       flags=re.S)
    assert dict(cells) == {
        "ops": "1 of 3 trials disturbed: trial 1, in the statistics",
        "lat": "1 of 3 trials disturbed: trial 1 without a value, not in the statistics"}


def _captions(html: str) -> list[str]:
    return [c.replace("&#39;", "'") for c in re.findall(r"<figcaption>([^<]*)</figcaption>",
                                                        html)]


def test_a_qos_chart_says_which_of_its_points_had_disturbed_trials(tmp_path: Path) -> None:
    from tests.unit.test_findmax_report import stored_search
    from vbench.report.build import render_run_report

    store, run_id, _ = stored_search(tmp_path)
    with store:  # the answer's level (users=896) is the tenth point run
        store.set_testbed(run_id, {"disturbances": [
            {"point": 9, "trial": 1, "action": "flag", "text": VMOTION, "events": []}]})
        html = render_run_report(store, run_id, tmp_path / "r.html").read_text()
    (qos,) = [c for c in _captions(html) if c.startswith("lat: bar = mean over the trials")]
    # a statistic over trials per bar draws no trial: the caption says the point's
    assert qos.endswith("Disturbed trials: users=896 (1 of 4 trials disturbed: trial 1, in "
                        "the statistics)."), qos


def test_a_tiles_qos_chart_says_its_points_disturbed_trial(tmp_path: Path) -> None:
    from tests.unit.test_tiles import _tiles_run

    store = _tiles_run(tmp_path, [{"metric": "ops", "op": ">=", "threshold": 50}])
    with store:
        store.set_testbed("r1", {"disturbances": [
            {"point": 1, "trial": 1, "action": "flag", "text": VMOTION, "events": []}]})
        html = render_report(store, ["r1"], "html")
    # the web tiles' chart at tiles=2: one bar per tile, every tile in the disturbed trial
    (tiles2,) = [c for c in _captions(html) if c.startswith("web.ops at tiles=2")]
    assert "Disturbed trials: tiles=2 (1 of 2 trials disturbed: trial 1, in the " \
           "statistics)" in tiles2
    assert not [c for c in _captions(html) if c.startswith("web.ops at tiles=1")
                and "Disturbed" in c]


def test_the_testbed_sections_disturbances_number_points_and_show_times(
        store: Store) -> None:
    from vbench.report.data import fmt_time

    html = render_report(store, [RUN], "html")
    env = html[html.index('<section id="environment"'):]
    table = env[env.index("Disturbed trials</"):env.index("Disturbed trials: events")]
    rows = re.findall(r"<tr><td>(point [^<]*)</td><td[^>]*>(\d+)</td>", table)
    # the stored point 0 is point 1, as its id and every table say
    assert rows == [("point 1 trial 1 #1", "1"), ("point 2 trial 2 #2", "2")], rows
    events = env[env.index("Disturbed trials: events"):]
    events = events[:events.index("</table>")]
    assert "1,800,000,131" not in events  # the event's time, not epoch seconds
    assert fmt_time(T0 + 131.0, zone=True) in events
    assert "<td>point 1 trial 1 #1</td>" in events  # each event under its record's id


def test_the_html_comparison_says_which_run_had_disturbed_trials(store: Store) -> None:
    # the disturbed run compared against a clean one: as `vbench compare` says it
    html = render_report(store, [CLEAN, RUN], "html")
    section = html[html.index('<section id="comparison"'):]
    section = section[:section.index("</section>")]
    assert (f"run {RUN}: point 1 (bs=4k): 1 of 3 trials disturbed: trial 1, in the "
            "statistics") in section
    assert (f"run {RUN}: point 2 (bs=8k): 1 of 3 trials disturbed: trial 2 failed, not in "
            "the statistics") in section
    assert f"run {CLEAN}:" not in section
    plain = render_report(store, [CLEAN, CLEAN], "html")
    plain = plain[plain.index('<section id="comparison"'):]
    assert "disturbed" not in plain[:plain.index("</section>")]


def test_a_point_without_factors_is_not_named_twice(tmp_path: Path) -> None:
    """A scenario without factors: its one point's title is "point 1". The lines said
    "point 1 (point 1): …" (seen on vcsim in run, show, report and compare)."""
    from click.testing import CliRunner

    from vbench.cli import cli

    url = f"sqlite:///{tmp_path}/one.db"
    testbed = {"disturbances": [
        {"id": "point 1 trial 1 #1", "point": 0, "trial": 1, "action": "flag", "text": VMOTION,
         "events": [{"at": T0 + 131.0, "kind": "migration"}]},
        {"id": "point 1 trial 2 #2", "point": 0, "trial": 2, "action": "retried",
         "text": RESET, "events": []}]}
    with Store.open(url, tmp_path) as s:
        add_run(s, RUN, [({}, {"ops": [100.0, 130.0, 101.0]})], scenario=scenario_doc(),
                testbed=testbed)
        add_run(s, CLEAN, [({}, {"ops": [100.0, 101.0, 99.0]})], scenario=scenario_doc(),
                started=T0 + 86400, testbed={})
        outputs = [_terminal(s, RUN), render_report(s, [RUN], "markdown"),
                   render_report(s, [RUN], "junit")]
    outputs.append(CliRunner().invoke(cli, ["compare", RUN, CLEAN, "--store", url]).output)
    assert not [o for o in outputs if "(point 1)" in o], outputs
    assert "† point 1: 1 of 3 trials disturbed: trial 1, in the statistics" in outputs[0]
    assert f"- point 1 trial 1: {VMOTION} — in the statistics" in outputs[1]
    assert "point 1 trial 2: run again after 1 disturbed attempt" in outputs[1]
    assert f"run A {RUN}: point 1: 1 of 3 trials disturbed" in outputs[3]
