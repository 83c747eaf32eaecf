"""History keyed by what makes runs comparable: the lab of every run, runs with --set
marked, scenario variants named and described, --lab and --same-scenario filters — and
derived figures that need a factor (normalize, speedup, geomean across) have data."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.history import load_history
from vbench.cli import cli
from vbench.results.identity import lab_fingerprint, scenario_hash
from vbench.results.store import Store

DAY = 86400.0
LOCAL = {"name": "local", "local": {"addresses": ["127.0.0.2"], "port": 2222}}
SIM = {"name": "sim", "local": {"addresses": ["127.0.0.2"], "port": 2222},
       "vcenters": {"sim": {"url": "https://127.0.0.1:18443/sdk",
                            "simulator": {"method_delay": {"CloneVM_Task": 0.5}}}}}
DERIVED = [
    {"name": "ops_vs_4k", "kind": "normalize", "metric": "ops", "baseline": {"bs": "4k"}},
    {"name": "speedup", "kind": "speedup", "metric": "ops", "baseline": {"bs": "4k"}},
    {"name": "ops_geo", "kind": "geomean", "metric": "ops", "across": "bs"},
]


def _scenario(rate: int) -> dict[str, Any]:
    sc = scenario_doc("trend", {"bs": ["4k", "64k"]}, report={"headline": ["ops"]},
                      derived=copy.deepcopy(DERIVED))
    sc["workload"]["params"]["rate_iops"] = rate
    return sc


def _points(day: int, scale: float = 1.0) -> list[tuple[dict[str, str], dict[str, list[float]]]]:
    return [({"bs": "4k"}, {"ops": [v * scale for v in (1000.0 + day, 1010.0 + day, 990.0)]}),
            ({"bs": "64k"}, {"ops": [v * scale for v in (400.0, 410.0, 390.0)]})]


RUNS = {  # day: (lab, rate, --set)
    1: (LOCAL, 1000, ()),
    2: (LOCAL, 500, ("workload.params.rate_iops=500",)),
    3: (SIM, 1000, ()),
    4: (LOCAL, 1000, ()),
}


def _id(day: int) -> str:
    return f"2027010{day}-020000-0000000{day}"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(f"sqlite:///{tmp_path}/h.db", tmp_path) as s:
        for day, (lab, rate, sets) in RUNS.items():
            add_run(s, _id(day), _points(day, 0.5 if rate == 500 else 1.0),
                    scenario=_scenario(rate), started=T0 + day * DAY, lab=lab, overrides=sets)
        yield s


def test_derived_figures_that_name_a_factor_have_history(store: Store) -> None:
    h = load_history(store, "trend", ["ops_vs_4k", "speedup", "ops_geo"])
    rel = {s.title: s.means for s in h.for_metric("ops_vs_4k")}
    assert rel["bs=4k"] == [pytest.approx(1.0)] * 4
    assert rel["bs=64k"][-1] == pytest.approx(400.0 / ((1004.0 + 1014.0 + 990.0) / 3))
    assert [s.title for s in h.for_metric("speedup")] == ["bs=4k", "bs=64k"]
    [geo] = h.for_metric("ops_geo")  # one figure across the levels of bs
    assert geo.title == "all" and geo.means[0] == pytest.approx(
        (((1001.0 + 1011.0 + 990.0) / 3) * 400.0) ** 0.5)


def test_runs_carry_their_lab_overrides_and_variant(store: Store) -> None:
    h = load_history(store, "trend", ["ops"])
    assert [r.lab for r in h.runs] == ["local", "local", "sim", "local"]
    assert h.runs[2].lab_kind == "simulated vCenter (vcsim), throttled"
    assert h.runs[2].lab_fingerprint == lab_fingerprint(SIM)
    assert [r.overrides for r in h.runs] == [(), ("workload.params.rate_iops=500",), (), ()]
    # A is the newest run's variant, then the others from the newest down.
    assert [r.variant for r in h.runs] == ["A", "C", "B", "A"]
    a, b, c = h.variants
    assert (a.name, a.lab, a.scenario_hash, a.runs, a.against_a) == (
        "A", "local", scenario_hash(_scenario(1000)), 2, None)
    assert b.against_a is not None and b.against_a.same_scenario and not b.against_a.same_lab
    assert c.against_a is not None and [(x.path, x.a, x.b) for x in c.against_a.scenario] == [
        ("workload.params.rate_iops", "1000", "500")]


def test_lab_and_same_scenario_filters(store: Store) -> None:
    by_name = load_history(store, "trend", ["ops"], lab="sim")
    assert [r.run_id for r in by_name.runs] == [_id(3)]
    by_print = load_history(store, "trend", ["ops"], lab=lab_fingerprint(LOCAL)[:6])
    assert [r.run_id for r in by_print.runs] == [_id(1), _id(2), _id(4)]
    same = load_history(store, "trend", ["ops"], same_scenario=True)
    assert [r.run_id for r in same.runs] == [_id(1), _id(3), _id(4)]
    both = load_history(store, "trend", ["ops"], lab="local", same_scenario=True)
    assert [r.run_id for r in both.runs] == [_id(1), _id(4)] and len(both.variants) == 1
    assert load_history(store, "trend", ["ops"], lab="nowhere").runs == ()


def _cli(tmp_path: Path, *args: str) -> str:
    out = CliRunner().invoke(cli, ["history", "trend", "--store",
                                   f"sqlite:///{tmp_path}/h.db", *args])
    assert out.exit_code == 0, out.output
    return out.output


def test_history_cli_shows_lab_marks_set_runs_and_describes_variants(
    store: Store, tmp_path: Path
) -> None:
    text = _cli(tmp_path, "--metric", "ops", "--metric", "ops_vs_4k")
    lines = text.splitlines()
    head = next(ln for ln in lines if ln.startswith("run "))
    assert head.split()[:4] == ["run", "lab", "v", "started"]
    row2 = next(ln for ln in lines if ln.startswith(_id(2)))
    assert row2.startswith(f"{_id(2)} +") and row2.split()[2:4] == ["local", "C"]
    assert next(ln for ln in lines if ln.startswith(_id(3))).split()[1:3] == ["sim", "B"]
    assert f"  {_id(2)}  workload.params.rate_iops=500" in lines
    at = lines.index(f"  C  lab local, local loopback; scenario {scenario_hash(_scenario(500))}; "
                     "1 run; against A:")
    assert lines[at + 2:at + 4] == ["        - workload.params.rate_iops: 1000",
                                    "        + workload.params.rate_iops: 500"]
    assert "      lab differs" in text and "        + kind: simulated vCenter (vcsim), " \
        "throttled" in text
    assert "ops_vs_4k: no data" not in text and "ops_vs_4k — higher is better" in text
    assert all(len(ln) <= 100 for ln in lines if not ln.startswith(("run", "20", "trend",
                                                                     "first")))


def test_history_cli_filters_and_json(store: Store, tmp_path: Path) -> None:
    text = _cli(tmp_path, "--lab", "local", "--same-scenario")
    assert "variants" not in text and "runs with --set" not in text
    assert [ln.split()[0] for ln in text.splitlines() if ln.startswith("2027")] == [
        _id(1), _id(4)]
    assert _cli(tmp_path, "--lab", "nowhere").startswith(
        "no stored run of scenario trend matches (the newest 20 runs at most; lab nowhere;")
    doc = json.loads(_cli(tmp_path, "--json"))
    assert [v["name"] for v in doc["variants"]] == ["A", "B", "C"]
    assert doc["variants"][2]["against_a"]["scenario_changes"] == [
        {"path": "workload.params.rate_iops", "a": "1000", "b": "500"}]
    assert doc["runs"][1]["overrides"] == ["workload.params.rate_iops=500"]
    assert doc["runs"][2]["lab_kind"] == "simulated vCenter (vcsim), throttled"


def test_first_to_last_change_stays_within_the_newest_runs_variant(store: Store) -> None:
    h = load_history(store, "trend", ["ops"], limit=3)  # days 2 (--set), 3 (sim), 4
    s4k = next(s for s in h.for_metric("ops") if s.title == "bs=4k")
    assert s4k.change is not None and s4k.change > 0.9  # 500 → 1000: two experiments
    assert h.change(s4k) is None  # variant A has one run here
    full = load_history(store, "trend", ["ops"])
    s4k = next(s for s in full.for_metric("ops") if s.title == "bs=4k")
    first, last = (1001.0 + 1011.0 + 990.0) / 3, (1004.0 + 1014.0 + 990.0) / 3  # days 1, 4
    assert full.change(s4k) == pytest.approx((last - first) / first)
