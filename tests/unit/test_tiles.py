"""Consolidation tiles as pure code: the scenario forms, binding groups per tile, each
workload's QoS per tile, and the score (values chosen so it can be computed by hand)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.analysis_runs import add_run, scenario_doc
from vbench.analysis.tiles import tile_criteria
from vbench.config.load import load_scenario
from vbench.config.tiles import (
    most_tiles,
    split_tiles,
    tiled_topology,
    untiled_groups,
    within_tiles,
)
from vbench.engine.verdict import verdict_of
from vbench.errors import ConfigValidationError
from vbench.report.build import render_report, report_data
from vbench.results.store import Store

BUNDLE = """version: 1
name: t
topology:
  web: {count: 2}
  db: {count: 1}
workloads:
  web:
    driver: fio
    params: {rw: randread, size: 8m}
  db:
    driver: fio
    params: {rw: randwrite, size: 8m}
tiles: {count: 3}
phases: {steady: 1s}
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return load_scenario(p).model


def test_a_group_named_like_another_groups_tile_is_refused(tmp_path: Path) -> None:
    # web-2 beside web: tile 2's copy of web and the group web-2 were merged into one
    # group by the plan (its groups line read "web = w0; web-2 = …").
    clash = BUNDLE.replace("  db: {count: 1}\n", "  db: {count: 1}\n  db-2: {count: 1}\n")
    with pytest.raises(ConfigValidationError) as exc:
        _load(tmp_path, clash)
    assert [str(i) for i in exc.value.issues] == [
        f"{tmp_path / 's.yaml'}:6:9: topology.db-2: with `tiles:` 'db-2' names tile 2 of "
        "group 'db' (its copies are db-1 … db-N): rename this group"]
    _load(tmp_path, clash.replace("tiles: {count: 3}\n", ""))  # no tiles: no clash


def test_the_factor_named_tiles_is_the_tile_count_labelled_with_it(tmp_path: Path) -> None:
    # The point label `tiles` is read as the tile count: levels labelled 'one', 'two'
    # ran, then the run's finish died on int('one') ("internal error: ValueError").
    labelled = BUNDLE.replace("tiles: {count: 3}\n", "tiles: {count: 1}\nfactors:\n  tiles:\n"
                              "    path: tiles.count\n    levels:\n"
                              "      - {label: one, value: 1}\n      - {label: '2', value: 2}\n")
    with pytest.raises(ConfigValidationError) as exc:
        _load(tmp_path, labelled)
    assert [str(i).split(": ", 1)[1] for i in exc.value.issues] == [
        "factors.tiles.levels.0.label: a level of `tiles` is labelled with its count: 1, "
        "not 'one'"]
    other = labelled.replace("path: tiles.count", "path: workloads.web.params.size")
    with pytest.raises(ConfigValidationError, match=re.escape(
            "factors.tiles: the factor `tiles` is the tile count: give it path: tiles.count, "
            "or another name")):
        _load(tmp_path, other)
    _load(tmp_path, labelled.replace("{label: one, value: 1}", "{label: '1', value: 1}"))


def test_groups_are_bound_once_for_every_tile_and_split_in_order(tmp_path: Path) -> None:
    sc = _load(tmp_path, BUNDLE)
    wide = tiled_topology(sc, {"web", "db"})
    assert {g: s.count for g, s in wide.items()} == {"web": 6, "db": 3}
    bound = {"web": tuple(f"w{i}" for i in range(6)), "db": ("d0", "d1", "d2")}
    tiles = split_tiles(sc, bound, {"web", "db"})
    assert tiles == {"web-1": ("w0", "w1"), "web-2": ("w2", "w3"), "web-3": ("w4", "w5"),
                     "db-1": ("d0",), "db-2": ("d1",), "db-3": ("d2",)}
    assert untiled_groups(sc, tiles) == bound


def test_a_scenario_gives_one_workload_form(tmp_path: Path) -> None:
    both = BUNDLE.replace("tiles: {count: 3}", "workload: {driver: fio}")
    with pytest.raises(ConfigValidationError, match="not both"):
        _load(tmp_path, both)
    neither = "version: 1\nname: t\nphases: {steady: 1s}\n"
    with pytest.raises(ConfigValidationError, match="needs `workload`"):
        _load(tmp_path, neither)
    dotted = BUNDLE.replace("  db:\n    driver", "  d-b:\n    driver")
    with pytest.raises(ConfigValidationError, match="prefixes metrics"):
        _load(tmp_path, dotted)


def test_each_workloads_criteria_become_one_check_per_tile() -> None:
    doc = {"tiles": {"count": 1},
           "factors": {"n": {"path": "tiles.count",
                             "levels": [{"label": "1", "value": 1}, {"label": "4", "value": 4}]}},
           "workloads": {"web": {"qos": [{"metric": "ops", "op": ">=", "threshold": 5,
                                          "where": {"operation": "Home"}}]}}}
    assert most_tiles(doc) == 4
    criteria, problems = tile_criteria(doc)
    assert problems == []
    ran, ops = criteria
    assert (ran.name, ran.metric, ran.stat) == ("web ran", "web.ok", "min")
    assert ops.metric == "web.ops" and ops.name == "web: ops [operation=Home] mean ≥ 5"
    assert ops.where == {"operation": "Home", "tile": ["1", "2", "3", "4"]}
    # A 2-tile point has no checks for tiles 3 and 4.
    assert within_tiles({"tiles": "2"}, {"tile": "2"})
    assert not within_tiles({"tiles": "2"}, {"tile": "3"})


def _tiles_run(tmp_path: Path, web_qos: list[dict], qos: list[dict] | None = None) -> Store:
    store = Store.open(None, tmp_path)
    levels = [{"label": str(n), "value": n, "set": {}} for n in (1, 2)]
    doc = scenario_doc("tiles", tiles={"count": 1}, qos=qos or [],
                       factors={},
                       workloads={"web": {"driver": "fio", "qos": web_qos},
                                  "db": {"driver": "fio"}},
                       report={"headline": ["web.ops", "db.ops"], "charts": []})
    doc["factors"] = {"tiles": {"path": "tiles.count", "levels": levels}}
    del doc["workload"]
    # tile -> (web ops, db ops), the same in both trials; references: tile 1 alone.
    figures = {0: {1: (100.0, 50.0)}, 1: {1: (90.0, 40.0), 2: (80.0, 45.0)}}
    labelled = []
    for p, tiles in figures.items():
        for tile, (web, db) in tiles.items():
            lab = {"tile": str(tile)}
            for t in (0, 1):
                labelled += [(p, t, "web.ops", lab, web), (p, t, "db.ops", lab, db),
                             (p, t, "web.ok", lab, 1.0), (p, t, "db.ok", lab, 1.0)]
    add_run(store, "r1", [({"tiles": "1"}, {"web.ops": [100.0, 100.0]}),
                          ({"tiles": "2"}, {"web.ops": [85.0, 85.0]})],
            scenario=doc, labelled=labelled)
    return store


def test_score_is_the_sum_of_passing_tiles_geometric_means(tmp_path: Path) -> None:
    store = _tiles_run(tmp_path, [])
    v = verdict_of(report_data(store, "r1"))
    a = v.answers[0]
    assert a.kind == "tiles"
    # Tile 1: sqrt(0.9 × 0.8); tile 2: sqrt(0.8 × 0.9); both pass: the sum.
    tile = math.sqrt(0.9 * 0.8)
    assert a.text == f"2 of 2 tiles pass at tiles=2; score {2 * tile:.2f} ± 0.00 (n=2)"
    assert a.details[0].startswith("tiles=1: 1 of 1 tiles pass, score 1.00 ± 0.00 (n=2)")
    assert v.qos.status == "pass"
    # The score is a number too (JSON, compare), not only the answer's text.
    facts = {f.label: f.value for f in a.facts}
    assert facts["score at tiles=2"] == pytest.approx(2 * tile)
    assert facts["score at tiles=1"] == pytest.approx(1.0)
    assert facts["passing tiles at tiles=2"] == 2.0
    # The headline figures are the answer's point's (they were the one-tile point's: the
    # best web.ops, while the answer read "at tiles=2").
    assert [(f.metric, f.where, f.value) for f in v.headline] == [
        ("web.ops", "tiles=2", pytest.approx(85.0)), ("db.ops", "tiles=2", None)]


def test_a_tile_failing_its_qos_leaves_the_score(tmp_path: Path) -> None:
    store = _tiles_run(tmp_path, [{"metric": "ops", "op": ">=", "threshold": 85}])
    v = verdict_of(report_data(store, "r1"))
    a = v.answers[0]
    # At 2 tiles, tile 2's web does 80 < 85: one tile passes, scoring less than tile 1
    # alone did, so the answer is the one-tile point.
    assert a.text == "1 of 1 tiles pass at tiles=1; score 1.00 ± 0.00 (n=2)"
    two = next(d for d in a.details if d.startswith("tiles=2"))
    assert "1 of 2 tiles pass" in two and "tile 2 fails web: ops mean ≥ 85" in two
    assert f"score {math.sqrt(0.9 * 0.8):.2f}" in two
    assert v.qos.status == "fail"
    # JUnit counts the criterion's checks (one per tile and point): it said "1 of 3 points
    # fail" of a run with two points.
    root = ET.fromstring(render_report(store, ["r1"], "junit"))
    case = next(c for c in root.iter("testcase") if c.get("name") == "web: ops mean ≥ 85")
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == "1 of 3 checks fail"


def test_the_answer_is_the_most_tiles_that_all_pass_as_vmmark_counts(tmp_path: Path
                                                                     ) -> None:
    # At 3 tiles two pass and their scores sum higher than 2 passing tiles of 2: that was
    # the answer ("2 of 3 tiles pass at tiles=3"), a result VMmark does not count.
    store = Store.open(None, tmp_path)
    levels = [{"label": str(n), "value": n, "set": {}} for n in (2, 3)]
    doc = scenario_doc("tiles", tiles={"count": 2}, factors={}, workloads={"web": {
        "driver": "fio", "reference": 100.0,
        "qos": [{"metric": "ops", "op": ">=", "threshold": 50}]}},
        report={"headline": ["web.ops"], "charts": []})
    doc["factors"] = {"tiles": {"path": "tiles.count", "levels": levels}}
    del doc["workload"]
    ops = {0: {1: 100.0, 2: 100.0}, 1: {1: 150.0, 2: 150.0, 3: 10.0}}
    labelled = [(p, t, m, {"tile": str(tile)}, v) for p, tiles in ops.items()
                for tile, web in tiles.items() for t in (0, 1)
                for m, v in (("web.ops", web), ("web.ok", 1.0))]
    add_run(store, "r1", [({"tiles": "2"}, {"web.ops": [100.0, 100.0]}),
                          ({"tiles": "3"}, {"web.ops": [310 / 3, 310 / 3]})],
            scenario=doc, labelled=labelled)
    a = verdict_of(report_data(store, "r1")).answers[0]
    assert a.text == "2 of 2 tiles pass at tiles=2; score 2.00 ± 0.00 (n=2)"
    assert a.ok
    assert "tiles=3: 2 of 3 tiles pass, score 3.00" in a.details[1]


def test_a_run_level_criterion_failing_at_a_point_fails_each_of_its_tiles(tmp_path: Path
                                                                         ) -> None:
    # web.ops without a tile is the mean tile's (85 at two tiles): failing there, it is
    # no tile's own, so neither tile passes; it was put on tile 1 ("1 of 2 tiles pass").
    store = _tiles_run(tmp_path, [], qos=[{"metric": "web.ops", "op": ">=", "threshold": 90}])
    a = verdict_of(report_data(store, "r1")).answers[0]
    assert a.text.startswith("1 of 1 tiles pass at tiles=1")
    two = next(d for d in a.details if d.startswith("tiles=2"))
    assert two.startswith("tiles=2: 0 of 2 tiles pass"), two
    assert "tile 1 fails web.ops mean ≥ 90; tile 2 fails web.ops mean ≥ 90" in two


def test_a_point_no_trial_finished_is_not_measured_rather_than_failing(tmp_path: Path
                                                                       ) -> None:
    # An interrupted run: the tiles=2 point has no finished trial, so every check of it
    # has no data; its line said "0 of 2 tiles pass … tile 1 fails web ran, …".
    store = Store.open(None, tmp_path)
    levels = [{"label": str(n), "value": n, "set": {}} for n in (1, 2)]
    doc = scenario_doc("tiles", tiles={"count": 1}, factors={},
                       workloads={"web": {"driver": "fio"}},
                       report={"headline": ["web.ops"], "charts": []})
    doc["factors"] = {"tiles": {"path": "tiles.count", "levels": levels}}
    del doc["workload"]
    one = {"tile": "1"}
    labelled = [(0, t, m, one, v) for t in (0, 1) for m, v in (("web.ops", 100.0),
                                                               ("web.ok", 1.0))]
    add_run(store, "r1", [({"tiles": "1"}, {"web.ops": [100.0, 100.0]}),
                          ({"tiles": "2"}, {"web.ops": [None, None]})],
            scenario=doc, labelled=labelled)
    a = verdict_of(report_data(store, "r1")).answers[0]
    assert a.text.startswith("1 of 1 tiles pass at tiles=1")
    assert a.details[1] == "tiles=2: not measured (no trial of it finished)"
    assert [f.label for f in a.facts] == ["passing tiles at tiles=1", "score at tiles=1"]


def test_without_tiles_the_answer_says_where_every_workload_passes(tmp_path: Path) -> None:
    store = Store.open(None, tmp_path)
    levels = [{"label": str(n), "value": n, "set": {}} for n in (100, 1000)]
    doc = scenario_doc("nn", workloads={"victim": {"driver": "redis_scaleout", "qos": [
        {"metric": "lat", "op": "<=", "threshold": 5}]}, "aggressor": {"driver": "fio"}},
        report={"headline": ["victim.lat"], "charts": []})
    doc["factors"] = {"rate": {"path": "workloads.aggressor.params.rate_iops",
                               "levels": levels}}
    del doc["workload"]
    ok = {"victim.ok": [1.0, 1.0], "aggressor.ok": [1.0, 1.0]}
    add_run(store, "r1", [({"rate": "100"}, {"victim.lat": [2.0, 3.0], **ok}),
                          ({"rate": "1000"}, {"victim.lat": [8.0, 9.0], **ok})], scenario=doc)
    a = verdict_of(report_data(store, "r1")).answers[0]
    assert (a.kind, a.text) == ("workloads", "every workload passes its QoS at 1 of 2 "
                                             "points (rate=100)")
    assert a.details == ("rate=1000: fails victim: lat mean ≤ 5",)


def _plan_issues(tmp_path: Path, db_extra: str) -> list[str]:
    """The plan's errors for BUNDLE with ``db_extra`` lines under the workload db."""
    from vbench.engine.plan import build_plan

    p = tmp_path / "s.yaml"
    p.write_text(BUNDLE.replace("    params: {rw: randwrite, size: 8m}\n",
                                f"    params: {{rw: randwrite, size: 8m}}\n{db_extra}"))
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(p))
    return [str(i).removeprefix(f"{p}:") for i in exc.value.issues]


def test_a_workloads_criterion_naming_no_metric_of_its_driver_is_located(
        tmp_path: Path) -> None:
    assert _plan_issues(tmp_path, "    qos: [{metric: write_lat_p99, op: '<=', threshold: 1}]\n"
                        ) == ["13:20: workloads.db.qos.0.metric: no metric write_lat_p99 in "
                              "fio's catalogue; did you mean write_clat_p99?"]


def test_a_workloads_score_naming_no_metric_of_its_driver_is_located(tmp_path: Path
                                                                     ) -> None:
    # It validated, and the run gave no score at all (no reference for the typo).
    assert _plan_issues(tmp_path, "    score: write_iopz\n") == [
        "13:12: workloads.db.score: no metric write_iopz in fio's catalogue; did you mean "
        "write_iops?"]


def test_a_factor_of_a_bundle_says_which_workload_it_sets(tmp_path: Path) -> None:
    # Without a path it would write workload.params.bs: a `workload:` the scenario has
    # not (the old message: "workload.driver: required field is missing" at 1:1).
    with pytest.raises(ConfigValidationError) as exc:
        _load(tmp_path, BUNDLE + "factors:\n  bs: [4k, 64k]\n")
    assert [str(i) for i in exc.value.issues] == [
        f"{tmp_path / 's.yaml'}:16:7: factors.bs: with `workloads:` a factor needs a path, "
        "e.g. path: workloads.web.params.bs (or tiles.count)"]
    sc = _load(tmp_path, BUNDLE + "factors:\n  bs: {path: workloads.web.params.bs, "
                                  "levels: [4k]}\n")
    assert sc.factors["bs"].path == "workloads.web.params.bs"


def test_a_lab_short_of_nodes_for_the_tiles_says_where_the_count_comes_from(
        tmp_path: Path) -> None:
    from vbench.config.load import load_lab
    from vbench.engine.plan import build_plan

    lab = tmp_path / "lab.yaml"
    nodes = {f"n{i}": {"address": "127.0.0.2", "roles": ["web"]} for i in range(5)}
    nodes.update({f"d{i}": {"address": "127.0.0.3", "roles": ["db"]} for i in range(3)})
    lab.write_text(yaml.safe_dump({"version": 1, "name": "l", "nodes": nodes}))
    p = tmp_path / "s.yaml"
    p.write_text(BUNDLE)
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(p), load_lab(lab))
    assert [str(i) for i in exc.value.issues] == [
        f"{p}:4:16: topology.web.count: needs 6 guests but lab {lab} offers 5 "
        "(n0, n1, n2, n3, n4) for group 'web' (2 per tile × 3 tiles)"]


def test_a_tiles_clones_are_clones_to_the_drivers_checks(tmp_path: Path) -> None:
    # fio's `disk:1` needs a clone with data disks: a tile's group (storage-2) is its
    # scenario group's clones, not lab nodes (the plan refused it as "a lab node").
    from vbench.config.load import load_lab
    from vbench.engine.plan import build_plan

    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"version": 1, "name": "l", "vcenters": {"vc": {
        "url": "https://127.0.0.1:1/sdk", "user": "u", "password": "${env:VB_NONE}"}}}))
    p = tmp_path / "s.yaml"
    p.write_text(BUNDLE.replace("  web: {count: 2}\n  db: {count: 1}\n",
                                "  web: {count: 1, vm: {template: t, disks: [{size: 1g}]}}\n"
                                "  db: {count: 1, vm: {template: t}}\n")
                 .replace("{rw: randread, size: 8m}", "{rw: randread, size: 8m, "
                                                      "filename: 'disk:1'}"))
    plan = build_plan(load_scenario(p), load_lab(lab))
    assert plan.groups["web"] == ("web-1", "web-2", "web-3")
