"""The run's one verdict (vbench/analysis/verdict.py), computed once and rendered by every
output: a synthetic find-max search with a known limit, a small matrix whose best point
fails QoS, the JSON round trip, and what the journal says the run created and removed."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.analysis_runs import add_run, scenario_doc
from tests.unit.test_findmax_report import stored_search
from vbench.analysis.verdict import (
    Answer,
    Effects,
    Fact,
    Figure,
    QosView,
    Verdict,
    read_stored,
    verdict_from_json,
    verdict_to_json,
)
from vbench.engine.verdict import effects_of, ensure_verdict, store_verdict, verdict_of
from vbench.report import exports
from vbench.report.build import report_data
from vbench.report.html import render_html
from vbench.results.store import Store
from vbench.vsphere.journal import JOURNAL_FILE


def _badge(page: str, label: str) -> tuple[str, str]:
    m = re.search(r'<li class="badge (\w+)"><span class="badge-label">' + label +
                  r'</span> <span class="badge-text">([^<]*)</span>', page)
    assert m, f"no {label} badge"
    return m.group(1), m.group(2)


def test_a_converged_search_answers_with_its_bracket_not_a_qos_failure(tmp_path: Path) -> None:
    store, run_id, search = stored_search(tmp_path, headline=("lat", "cpu"))
    store.finish_run(run_id, "ok", 2e9)
    data = report_data(store, run_id)
    v = verdict_of(data)
    truth = search.outcome()
    assert truth.highest_pass is not None
    hp = int(truth.highest_pass)
    a = v.answer
    assert a is not None and a.kind == "find-max" and a.status == "converged"
    assert a.text.startswith(f"highest pass {hp} · lowest fail {int(truth.lowest_fail or 0)}")
    assert "binding at" in " ".join(a.details) and a.details[0].startswith("path: ")
    # The headline is measured at the answer, never at a failing level.
    assert [f.metric for f in v.headline] == ["lat", "cpu"]
    assert {f.where for f in v.headline} == {f"users={hp}"}
    assert all(f.n >= 2 and f.ci_low is not None for f in v.headline)
    # Failing levels above the answer are the search working.
    assert v.qos.status == "bracket" and v.qos.failed > 0 and not v.qos.bad
    assert v.exit_code == 0
    # Read without the engine (no verdict attached or stored): the same answer.
    assert data.verdicted().answers == v.answers

    import dataclasses

    page = html.unescape(render_html(dataclasses.replace(data, verdict=v)))
    assert page.index(a.text) < page.index('class="badges"')
    kind, text = _badge(page, "QoS")
    assert kind == "good" and "fail" not in text.split("(")[0], text
    assert "best point" not in page.split('id="findmax"')[0]
    md = exports.to_markdown([dataclasses.replace(data, verdict=v)])
    assert a.text in md and "QoS FAIL" not in md
    suite = ET.fromstring(exports.to_junit([dataclasses.replace(data, verdict=v)]))
    assert suite.get("failures") == "0"


def test_the_default_answer_is_the_best_point_that_passes_qos(tmp_path: Path) -> None:
    store = Store.open(None, tmp_path)
    qos = [{"name": "lat cap", "metric": "lat", "op": "<=", "threshold": 5.0, "stat": "mean"}]
    doc = scenario_doc("m", factors={"bs": ["4k", "64k", "1m"]}, qos=qos,
                       report={"headline": ["ops", "lat"], "charts": []})
    add_run(store, "r1", [
        ({"bs": "4k"}, {"ops": [100.0, 102.0], "lat": [1.0, 1.1]}),
        ({"bs": "64k"}, {"ops": [300.0, 310.0], "lat": [2.0, 2.1]}),
        ({"bs": "1m"}, {"ops": [900.0, 905.0], "lat": [9.0, 9.5]}),  # fastest, fails QoS
    ], scenario=doc)
    v = verdict_of(report_data(store, "r1"))
    a = v.answer
    assert a is not None and a.kind == "best point"
    assert [f.where for f in v.headline] == ["bs=64k", "bs=64k"]
    assert "1 point(s) failing QoS left out" in a.text
    # A real QoS failure of a matrix stays a failure.
    assert v.qos.status == "fail" and v.qos.bad
    # The summary's best point agrees with the answer: the fastest point fails QoS.
    page = html.unescape(render_html(report_data(store, "r1")))
    best = re.search(r"<tr><td>ops \(ops/s\)</td><td class=\"num\">([^<]*)</td>", page)
    assert best and best.group(1).endswith("at bs=64k"), best and best.group(1)


def test_a_headline_metric_without_data_says_why(tmp_path: Path) -> None:
    store = Store.open(None, tmp_path)
    doc = scenario_doc("m", report={"headline": ["ops", "nothing"], "charts": []})
    add_run(store, "r1", [({}, {"ops": [1.0, 2.0]})], scenario=doc)
    v = verdict_of(report_data(store, "r1"))
    missing = [f for f in v.headline if f.metric == "nothing"]
    assert missing and missing[0].value is None
    assert missing[0].text() == "nothing: no data: no sample stored"


def test_a_verdict_survives_its_json_and_a_stale_one_is_computed_again(tmp_path: Path) -> None:
    v = Verdict("r", "s", "t", "ok", 0, "", (Answer("k", "t", "x", facts=(Fact("a", "1", 1.0),),
                figures=(Figure("m", 1.0, "ms", 2, 0.5, 1.5, "60 s", "p", "lower"),),
                qos_expected=(3,)),), (Figure("m", None, missing="why"),), QosView("none", "-"),
                simulated="simulated vCenter (vcsim): sim", effects=Effects({"VM": 2}, {"VM": 2}))
    doc = json.loads(json.dumps(verdict_to_json(v)))
    assert verdict_from_json(doc) == v
    assert verdict_from_json({**doc, "version": 0}) is None
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store_verdict(run_dir, v)
    assert read_stored(run_dir, "ok") == v
    # A verdict stored for another status (the run was settled since) is not used.
    assert read_stored(run_dir, "interrupted") is None
    store = Store.open(None, tmp_path)
    add_run(store, "r2", [({}, {"ops": [1.0, 2.0]})], scenario=scenario_doc("m"))
    assert ensure_verdict(store, "r2").run_id == "r2"


def test_effects_count_what_the_run_created_and_removed(tmp_path: Path) -> None:
    lines = [
        {"event": "intent", "vcenter": "vc1", "name": "pub", "kind": "cl_library"},
        {"event": "created", "vcenter": "vc1", "name": "pub", "kind": "cl_library", "moid": "l1"},
        {"event": "intent", "vcenter": "vc1", "name": "i1", "kind": "cl_item"},
        {"event": "created", "vcenter": "vc1", "name": "i1", "kind": "cl_item", "moid": "i1"},
        {"event": "destroyed", "vcenter": "vc1", "name": "i1", "kind": "cl_item"},
        {"event": "intent", "vcenter": "vc2", "name": "vm1"},
        {"event": "created", "vcenter": "vc2", "name": "vm1", "moid": "vm-1"},
        {"event": "destroyed", "vcenter": "vc2", "name": "vm1"},
        {"event": "destroyed", "vcenter": "vc1", "name": "pub", "kind": "cl_library"},
        # vcbench's unregister and register back: the same VM, not one more created.
        {"event": "intent", "vcenter": "vc2", "name": "vm2", "action": "clone"},
        {"event": "created", "vcenter": "vc2", "name": "vm2", "moid": "vm-2"},
        {"event": "unregistered", "vcenter": "vc2", "name": "vm2"},
        {"event": "intent", "vcenter": "vc2", "name": "vm2", "action": "register"},
        {"event": "created", "vcenter": "vc2", "name": "vm2", "moid": "vm-3"},
        {"event": "destroyed", "vcenter": "vc2", "name": "vm2"},
    ]
    (tmp_path / JOURNAL_FILE).write_text("".join(json.dumps(e) + "\n" for e in lines))
    eff = effects_of(tmp_path)
    assert eff is not None
    assert eff.created == {"library": 1, "library item": 1, "VM": 2}
    assert eff.text() == "created 1 library, 1 library item, 2 VMs; removed all of it"
    assert effects_of(tmp_path / "nowhere") is None


def test_compare_puts_two_searches_answers_side_by_side(tmp_path: Path) -> None:
    from vbench.report.verdict_view import compare_answer_lines, compare_answers

    verdicts = []
    for name in ("a", "b"):
        store, run_id, _ = stored_search(tmp_path / name, headline=("lat",))
        store.finish_run(run_id, "ok", 2e9)
        verdicts.append(verdict_of(report_data(store, run_id)))
    doc = compare_answers(*verdicts)
    assert doc["searches"] is True
    labels = [f["label"] for f in doc["facts"]]
    assert labels[:2] == ["highest pass", "lowest fail"], labels
    assert doc["facts"][0]["ratio"] == 1.0  # the same system, the same search
    assert [f["metric"] for f in doc["figures"]] == ["lat"]
    lines = compare_answer_lines(doc)
    assert lines[0].startswith("A run-findmax: find-max users: highest pass")


def test_a_simulated_vcenter_is_known_by_the_lab_or_by_the_testbed() -> None:
    from vbench.analysis.verdict_build import simulated_text

    product = "VMware vCenter Server 6.5.0 build-5973321 (govmomi simulator)"
    lab = {"vcenters": {"sim": {"url": "https://127.0.0.1/sdk", "simulator": {}}}}
    real = {"vcenter": {"name": "vc1", "product": "VMware vCenter Server 8.0.2"}}
    assert simulated_text({"lab": lab, "testbed": real}) == "simulated vCenter (vcsim): sim"
    assert simulated_text({"lab": lab, "testbed": None}) is None  # it reached no vCenter
    two = {"vcenter": {"name": "vc1", "product": product},
           "vcenters": [{"name": "vc1", "product": product}, {"name": "vc2", "product": product}]}
    assert simulated_text({"lab": {}, "testbed": two}) == "simulated vCenter (vcsim): vc1, vc2"
    assert simulated_text({"lab": {}, "testbed": real}) is None


def test_history_answers_older_runs_from_their_stored_verdicts_only(tmp_path: Path) -> None:
    from vbench.engine.verdict import verdicts_of

    store = Store.open(None, tmp_path)
    ids = [f"r{i}" for i in range(4)]
    for i, run_id in enumerate(ids):
        add_run(store, run_id, [({}, {"ops": [1.0 + i, 2.0 + i]})], scenario=scenario_doc("m"),
                started=1.8e9 + i)
    found = verdicts_of(store, ids, compute_at_most=2)
    assert [found[r] is not None for r in ids] == [False, False, True, True]


def test_many_runs_are_read_in_one_query(tmp_path: Path) -> None:
    """history's verdicts read the run records in bulk (it read them one query a run):
    every known id by exact id, an unknown one left out."""
    store = Store.open(None, tmp_path)
    ids = [f"r{i}" for i in range(3)]
    for i, run_id in enumerate(ids):
        add_run(store, run_id, [({}, {"ops": [1.0]})], scenario=scenario_doc("m"),
                started=1.8e9 + i)
    rows = store.runs_of([*ids, "nosuch", "r"])
    assert sorted(rows) == ids
    assert all(rows[r].run_id == r and rows[r].scenario_name for r in ids)


def test_answer_figures_show_plain_units_as_the_tables_do() -> None:
    """A coefficient of variation is stored as a 'ratio', a share as a 'fraction': the
    answer prints them as the summary table does (bare, and as a percentage), never
    '0.1221 ratio'."""
    from vbench.analysis.verdict import Figure

    cv = Figure(metric="iops_ts_cv", value=0.1221, unit="ratio", n=1)
    share = Figure(metric="client_cpu", value=0.05289, unit="fraction", n=3,
                   ci_low=0.05, ci_high=0.05578)
    assert cv.value_text() == "0.1221"
    assert share.value_text() == "5.289 ± 0.289 %"


def test_every_json_output_reads_the_qos_as_the_verdict_does(tmp_path: Path) -> None:
    """A converged search: its failing levels above the answer are its bracket, so no JSON
    output says the QoS failed beside verdict.qos.status "bracket"; the checks stay."""
    import dataclasses

    from vbench.engine.finish import FINISH_STEPS
    from vbench.report.build import show_json_of, summary_json_of

    store, run_id, _ = stored_search(tmp_path, headline=("lat", "cpu"))
    store.finish_run(run_id, "ok", 2e9)
    data = report_data(store, run_id)
    data = dataclasses.replace(data, verdict=verdict_of(data))
    docs = {"show": show_json_of(data), "summary": summary_json_of(data),
            "report": exports.run_json(data)}
    for name, doc in docs.items():
        qos = doc["qos"]
        assert qos["status"] == doc["verdict"]["qos"]["status"] == "bracket", name
        assert qos["passed"] is True and "FAIL" not in qos["verdict"], (name, qos)
        assert qos["all_checks_passed"] is False and qos["failed_checks"] > 0, name
        assert any(c["status"] != "pass" for c in qos["checks"]), name
    # summary.json is written once the verdict is kept; the samples before anything else.
    steps = [s.__name__ for s in FINISH_STEPS]
    assert steps[0] == "write_samples"
    assert steps.index("write_summary") > steps.index("keep_verdict")


def _all_fail(tmp_path: Path) -> Store:
    store = Store.open(None, tmp_path)
    qos = [{"name": "lat cap", "metric": "lat", "op": "<=", "threshold": 0.5, "stat": "mean"}]
    doc = scenario_doc("m", factors={"bs": ["4k", "64k"]}, qos=qos,
                       report={"headline": ["ops", "lat"], "charts": []})
    add_run(store, "r1", [
        ({"bs": "4k"}, {"ops": [100.0, 102.0], "lat": [1.0, 1.1]}),
        ({"bs": "64k"}, {"ops": [300.0, 310.0], "lat": [2.0, 2.1]}),
    ], scenario=doc)
    return store


def test_the_summary_calls_no_point_best_when_every_point_fails_qos(tmp_path: Path) -> None:
    from vbench.analysis.direction import directions_of
    from vbench.report.data import ReportView
    from vbench.report.sections import headline_rows

    data = report_data(_all_fail(tmp_path), "r1")
    rows = {r["metric"]: r for r in headline_rows(ReportView(data), directions_of(data.run))}
    ops = rows["ops"]
    # Before: "306.0 … at bs=64k" called best, beside "failing points are not called best".
    assert ops["best"] == "none" and "bs=64k" not in ops["best"], ops
    assert "every point fails its QoS criteria" in ops["note"]
    assert ops["worst"].endswith("at bs=4k")


def test_the_answer_when_every_point_fails_qos_gives_each_points_figure(tmp_path: Path) -> None:
    v = verdict_of(report_data(_all_fail(tmp_path), "r1"))
    a = v.answer
    assert a is not None
    # Before: "no data: no point of the run has a value", though both points have values.
    assert "no data" not in a.text and "every point fails its QoS criteria" in a.text
    assert [(f.metric, f.where) for f in a.figures] == [("ops", "bs=4k"), ("ops", "bs=64k")]
    assert all(f.value is not None for f in a.figures)


def test_a_run_under_way_has_no_exit_code_and_no_stored_verdict(tmp_path: Path) -> None:
    from vbench.analysis.verdict import VERDICT_FILE
    from vbench.engine.verdict import with_verdict

    store = Store.open(None, tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    add_run(store, "r1", [({}, {"ops": [1.0, 2.0]})], status="running", run_dir=str(run_dir))
    v = with_verdict(report_data(store, "r1")).verdicted()
    # Before: exit_code 0 (an invented success), kept in verdict.json for later outputs.
    assert v.status == "running" and v.exit_code is None
    assert not (run_dir / VERDICT_FILE).exists()
    assert verdict_from_json(verdict_to_json(v)).exit_code is None
    store.finish_run("r1", "ok", 2e9)
    done = with_verdict(report_data(store, "r1")).verdicted()
    assert done.exit_code == 0 and (run_dir / VERDICT_FILE).is_file()


def test_storing_a_verdict_uses_a_temporary_file_of_its_own(tmp_path: Path) -> None:
    v = Verdict("r", "s", "t", "ok", 0, "", (), (), QosView("none", "-"))
    # Before: a fixed verdict.tmp, which another writer (here: a directory) may hold.
    (tmp_path / "verdict.tmp").mkdir()
    path = store_verdict(tmp_path, v)
    assert read_stored(tmp_path, "ok") == v and path.name == "verdict.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verdict.json", "verdict.tmp"]


def test_every_public_function_of_the_engine_verdict_module_is_used_by_vbench() -> None:
    """One way to give a command its run's verdict (with_verdict): no second copy that
    only tests call (the removed ``attach``)."""
    import ast

    root = Path(__file__).resolve().parents[2] / "vbench"
    module = root / "engine" / "verdict.py"
    names = [n.name for n in ast.parse(module.read_text()).body
             if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    others = [p.read_text() for p in root.rglob("*.py") if p != module]
    own = module.read_text()
    unused = [n for n in names
              if not any(re.search(rf"\b{n}\b", t) for t in others)
              and len(re.findall(rf"\b{n}\(", own)) < 1 + own.count(f"def {n}(")]
    assert unused == []


def test_a_simulated_vcenter_is_recognised_in_one_place() -> None:
    """analysis/simulator.is_simulator is the one check (verdict_build.simulated_text,
    AnswerInputs.simulated and the lab tuning ask it): a second copy (answer_kit's
    on_simulator, hygiene_tune's own string) could drift from it."""
    root = Path(__file__).resolve().parents[2] / "vbench"
    holders = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if "govmomi simulator" in p.read_text())
    assert holders == ["analysis/simulator.py"]


def test_the_verdict_ranks_a_derived_figure_as_the_report_does(tmp_path: Path) -> None:
    """report.better names the derived figure "norm" lower-is-better over its own
    ``better: higher``: the report (Directions.of) and the verdict agree."""
    from vbench.analysis.direction import directions_of
    from vbench.engine.verdict import answer_inputs

    store = Store.open(None, tmp_path)
    doc = scenario_doc("m", factors={"bs": ["4k", "64k"]},
                       derived=[{"name": "norm", "kind": "normalize", "metric": "ops",
                                 "baseline": {"bs": "4k"}, "better": "higher"}],
                       report={"headline": ["norm"], "charts": [], "better": {"norm": "lower"}})
    add_run(store, "r1", [({"bs": "4k"}, {"ops": [100.0, 102.0]}),
                          ({"bs": "64k"}, {"ops": [300.0, 310.0]})], scenario=doc)
    data = report_data(store, "r1")
    assert directions_of(data.run).of("norm") == "lower"
    # Before: "higher" (the derived figure's own better read first).
    assert answer_inputs(data).direction("norm") == "lower"


def test_a_qos_failure_text_counts_the_checks_its_failed_field_counts() -> None:
    from vbench.analysis.qos import QosCheck, QosResult
    from vbench.analysis.verdict_build import qos_view

    def check(point: int, status: str) -> QosCheck:
        return QosCheck("cap", 0, "lat", {}, "mean", "<=", 1.0, "ms", point, f"p={point}",
                        2.0 if status == "fail" else 0.5, 2, status, status)

    qos = QosResult((check(0, "pass"), check(1, "fail"), check(2, "fail"), check(3, "fail")),
                    ("cap",))
    answer = Answer("find-max", "limit", "-", "converged", qos_expected=(2, 3))
    view = qos_view(qos, [answer])
    assert view.status == "fail" and view.failed == 3 and len(view.unexpected) == 1
    # Before: "FAIL: 1 of 4 checks did not pass" beside failed == 3.
    assert view.text.startswith(f"FAIL: {view.failed} of 4 checks did not pass"), view.text
    assert "1 where the answer expects none, 2 above it" in view.text
    alone = qos_view(qos, [])
    assert alone.text == "FAIL: 3 of 4 checks did not pass" and alone.failed == 3
