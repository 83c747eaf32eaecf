"""Disturbed trials beside the answer (vbench/report/disturbed.py, verdict_view.py,
hygiene_text.py): the headline figures of the answer say their point's disturbed trials
the same way in the terminal, JUnit, HTML, Markdown and the JSON verdict; a steady-state
answer says those of its window; the verdict's warnings agree with the tables on whether
a flagged trial is in the statistics."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from tests.analysis_runs import T0, add_run, scenario_doc
from tests.unit.test_report_disturbed import (
    CLEAN,
    RESET,
    RUN,
    SC,
    VMOTION,
    add_runs,
)
from vbench.report.build import (
    print_summary,
    render_report,
    report_data,
    show_json_of,
    summary_json_of,
)
from vbench.results.records import PhaseTimes, TrialResult
from vbench.results.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path}/d.db", tmp_path) as s:
        yield add_runs(s)


def test_the_terminal_and_junit_answer_say_a_points_disturbed_trials(store: Store) -> None:
    row1 = "1 of 3 trials disturbed: trial 2 failed, not in the statistics"
    console = Console(width=400, record=True, file=io.StringIO())
    print_summary(report_data(store, RUN), console)
    text = console.export_text()
    # the answer's headline figure (bs=8k) says it, as HTML and Markdown do
    assert re.search(r"ops: 200\.5 ± 6\.4 ops/s \(n=2, at bs=8k\) \(" + re.escape(row1) + r"\)",
                     text), text
    junit = render_report(store, [RUN], "junit")
    assert f"ops: 200.5 ± 6.4 ops/s (n=2, at bs=8k) ({row1})" in junit
    # a clean run's figure line is as before
    assert "ops: 200.0 ± 2.5 ops/s (n=3, at bs=8k)</system-out>" in render_report(
        store, [CLEAN], "junit")


def test_a_steady_state_answer_says_a_disturbed_round_outside_its_window(
        tmp_path: Path) -> None:
    # A steady-state study: rounds 3-5 are the measurement window, the answer's figure
    # their mean; round 2 was disturbed. The figure must not say round 2 is in it.
    from tests.analysis_runs import UNITS
    from vbench.engine.verdict import with_verdict
    from vbench.results.identity import scenario_hash
    from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult

    sc = scenario_doc("ss", {}, repeat=10, report={"headline": ["iops"]},
                      steady_state={"metric": "iops", "window": 3, "max_excursion": 0.2,
                                    "max_slope": 0.1, "max_rounds": 10})
    with Store.open(f"sqlite:///{tmp_path}/s.db", tmp_path) as s:
        s.create_run(RunInfo(run_id="ss1", scenario_name="ss", started=T0, scenario=sc,
                             scenario_hash=scenario_hash(sc)))
        s.add_points("ss1", [(0, {})])
        for t, v in enumerate([50.0, 300.0, 100.0, 101.0, 99.0], 1):
            at = T0 + 100 * t
            s.record_trial("ss1", TrialResult(
                0, t, "ok", PhaseTimes(at, at, at + 10, at + 70, at + 70, at + 71),
                (Sample("iops", v, UNITS["iops"], "fio"),)))
        s.finish_run("ss1", "ok", T0 + 3600)
        for trial in (2, 4):
            s.set_testbed("ss1", {"disturbances": [
                {"point": 0, "trial": trial, "action": "flag", "text": VMOTION}]})
            data = with_verdict(report_data(s, "ss1"))
            console = Console(width=300, record=True, file=io.StringIO())
            print_summary(data, console)
            text = console.export_text()
            figure = next(x for x in text.splitlines() if x.startswith("  iops: 100.0"))
            if trial == 2:  # outside the window: not in this figure
                assert figure.endswith("(n=3, at point 1) (trial 2 disturbed, outside the "
                                       "steady-state window: not in this figure)"), figure
            else:  # inside: one of the window's 3 rounds
                assert figure.endswith("(n=3, at point 1) (1 of 3 rounds of the steady-state "
                                       "window disturbed: trial 4, in the statistics)"), figure


def test_the_json_verdicts_headline_figures_say_their_points_disturbed_trials(
        store: Store) -> None:
    row1 = "1 of 3 trials disturbed: trial 2 failed, not in the statistics"
    data = report_data(store, RUN)
    report = json.loads(render_report(store, [RUN], "json"))["runs"][0]["verdict"]
    for verdict in (show_json_of(data)["verdict"], summary_json_of(data)["verdict"], report):
        assert [(f["where"], f["disturbed"]) for f in verdict["headline"]] == [("bs=8k", row1)]
        assert verdict["answer"]["figures"][0]["disturbed"] == row1
    clean = show_json_of(report_data(store, CLEAN))["verdict"]
    assert [f["disturbed"] for f in clean["headline"]] == [None]


def test_a_headline_figure_with_no_data_says_no_disturbed_trial_anywhere(
        tmp_path: Path) -> None:
    # the search's answer level had a disturbed trial; its headline metric has no data
    from tests.unit.test_findmax_report import stored_search

    store, run_id, _ = stored_search(tmp_path)  # headline ops: never measured
    with store:
        store.set_testbed(run_id, {"disturbances": [
            {"point": 9, "trial": 1, "action": "flag", "text": VMOTION, "events": []}]})
        html, md = (render_report(store, [run_id], f) for f in ("html", "markdown"))
        data = report_data(store, run_id)
        (fig,) = show_json_of(data)["verdict"]["headline"]
    assert fig["value"] is None and fig["disturbed"] is None
    answer = html[html.index('<section id="answer"'):html.index('<section id="summary">')]
    assert "users=896</td>" in answer and "disturbed-note" not in answer
    assert "| ops | no data: no sample stored | — | users=896 |" in md


def test_a_flagged_trial_that_failed_is_not_said_kept_in_the_statistics(
        tmp_path: Path) -> None:
    # flagged (kept), then failed for its own reason: the warnings and `show`'s testbed
    # lines said "(kept in the statistics)" while every table said it is not
    from vbench.report.build import show_text_of

    with Store.open(f"sqlite:///{tmp_path}/f.db", tmp_path) as s:
        add_run(s, RUN, [({"bs": "4k"}, {"ops": [100.0, 130.0, 101.0]})], scenario=SC,
                failed=[(0, 2)], testbed={"disturbances": [
                    {"point": 0, "trial": 1, "action": "flag", "text": VMOTION},
                    {"point": 0, "trial": 2, "action": "flag", "text": RESET}]})
        data = report_data(s, RUN)
        console = Console(width=400, record=True, file=io.StringIO())
        show_text_of(data, console)
    text = console.export_text()
    kept = f"point 1 trial 1 disturbed: {VMOTION} (kept in the statistics)"
    failed = (f"point 1 trial 2 disturbed: {RESET} (the trial failed: not in the "
              "statistics)")
    assert kept in data.warnings and failed in data.warnings
    # Said once, as a warning: the testbed lines leave out what the warnings say.
    assert text.count(kept) == 1 and text.count(failed) == 1
    assert f"warning: {kept}" in text and f"warning: {failed}" in text
    assert "(kept in the statistics)" not in text.replace(kept, "")


def test_show_prints_a_vm_name_as_it_is_named_never_as_markup_or_escapes(
        tmp_path: Path) -> None:
    # Another team's VM, named by them in vCenter: brackets (rich markup) and an escape
    # sequence. `show` crashed on "[/old]" (MarkupError) and dropped "[old]"; the ESC went
    # raw to the terminal. Written as the exports write it (\xNN).
    from vbench.report.build import show_text_of

    name = "db [/old] [old] x\x1b[31m\x07"
    shown = "db [/old] [old] x\\x1b[31m\\x07"
    with Store.open(f"sqlite:///{tmp_path}/m.db", tmp_path) as s:
        add_run(s, RUN, [({"bs": "4k"}, {"ops": [100.0, 130.0, 101.0]})], scenario=SC,
                failed=[(0, 2)], testbed={"disturbances": [
                    {"point": 0, "trial": 1, "action": "flag", "text": f"VM {name} used 40 %"},
                    {"point": 0, "trial": 2, "action": "fail", "text": f"VM {name} used 50 %"}]})
        at = T0 + 200  # trial 2 as the engine stores a trial its disturbance failed
        s.record_trial(RUN, TrialResult(0, 2, "failed", PhaseTimes(at, at, at + 10, at + 70,
                                                                    at + 70, at + 71), (),
                                        f"disturbed: VM {name} used 50 %"))
        console = Console(width=400, file=io.StringIO(), force_terminal=True,
                          color_system=None)
        show_text_of(report_data(s, RUN), console)
    out = console.file.getvalue()
    assert "\x1b[31m" not in out and "\x07" not in out
    assert f"warning: point 1 trial 1 disturbed: VM {shown} used 40 %" in out
    # The testbed lines do not repeat what the warnings say.
    assert out.count(f"point 1 trial 1 disturbed: VM {shown} used 40 %") == 1
    assert f"  trial 1: VM {shown} used 40 %" in out  # under the table
    assert f"point 1 trial 2: failed — disturbed: VM {shown} used 50 %" in out


def test_the_terminal_says_a_points_disturbed_trials_once_not_per_figure() -> None:
    """Six headline figures of one point, one disturbed trial there: the note follows the
    first figure of the point only (it was repeated on every line); a figure of another,
    clean point has none."""
    from vbench.analysis.verdict import Figure, QosView, Verdict
    from vbench.report.verdict_view import terminal_lines

    at8k = [Figure(m, 1.0, "x", 2, where="bs=8k") for m in ("ops", "bw", "lat")]
    at4k = Figure("ops4", 2.0, "x", 2, where="bs=4k")
    v = Verdict("r", "s", "t", "ok", 0, "", (), (*at8k, at4k), QosView("none", "none"))
    note = "1 of 2 trials disturbed: trial 1, in the statistics"
    text = "\n".join(terminal_lines(v, {"bs=8k": note}))
    assert text.count(note) == 1, text
    assert f"  {at8k[0].text()} ({note})" in text
    assert f"  {at8k[1].text()}\n" in text and f"  {at4k.text()}\n" in text
