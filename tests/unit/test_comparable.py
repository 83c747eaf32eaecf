"""What makes runs comparable — lab kind and fingerprint, scenario hash, --set overrides —
and the differences compare and the regression check print as a diff."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.comparable import changes, compare_runs
from vbench.analysis.regression import resolve_baseline
from vbench.cli import cli
from vbench.config.load import load_lab
from vbench.report.build import check_regression
from vbench.report.textfmt import format_regression
from vbench.results.identity import (
    LOCAL,
    SIMULATED,
    SSH,
    VCENTER,
    identity_of,
    lab_fingerprint,
    lab_kind,
    scenario_hash,
)
from vbench.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
DAY = 86400.0
OPS = {"ops": [1000.0, 1004.0, 996.0, 1002.0, 998.0]}
HALF = {"ops": [v / 2 for v in OPS["ops"]]}
LOCAL_LAB = {"name": "local", "local": {"addresses": ["127.0.0.2"], "port": 2222}}
SIM_LAB = {"name": "sim", "local": {"addresses": ["127.0.0.2"], "port": 2222},
           "vcenters": {"sim": {"url": "https://127.0.0.1:18443/sdk",
                                "simulator": {"hosts": 3, "method_delay": {}}}}}


def _rate(rate: int) -> dict[str, Any]:
    sc = scenario_doc("fio-rate", {"bs": ["4k"]}, report={"headline": ["ops"]})
    sc["workload"]["params"]["rate_iops"] = rate
    return sc


def _throttled(lab: dict[str, Any]) -> dict[str, Any]:
    lab = copy.deepcopy(lab)
    lab["vcenters"]["sim"]["simulator"]["method_delay"] = {"CloneVM_Task": 0.5}
    return lab


# ------------------------------------------------------------------ identity


def test_lab_kind_of_the_example_labs_and_of_a_real_vcenter() -> None:
    local = load_lab(ROOT / "examples" / "labs" / "local.yaml").model.redacted()
    sim = load_lab(ROOT / "examples" / "labs" / "sim.yaml").model.redacted()
    assert lab_kind(local).kind == LOCAL and lab_kind(local).text == "local loopback"
    assert lab_kind(sim).kind == SIMULATED and not lab_kind(sim).throttled
    assert lab_kind(_throttled(SIM_LAB)).text == "simulated vCenter (vcsim), throttled"
    real = {"name": "prod", "vcenters": {"vc": {"url": "https://vc.example.com/sdk"}}}
    assert lab_kind(real).kind == VCENTER
    assert lab_kind({"name": "ssh", "nodes": {"a": {"address": "10.0.0.1"}}}).kind == SSH


def test_fingerprint_and_scenario_hash_follow_content_not_key_order() -> None:
    reordered = dict(reversed(list(SIM_LAB.items())))
    assert lab_fingerprint(reordered) == lab_fingerprint(SIM_LAB)
    assert lab_fingerprint(_throttled(SIM_LAB)) != lab_fingerprint(SIM_LAB)
    assert len(lab_fingerprint(SIM_LAB)) == 16
    assert scenario_hash(_rate(1000)) == scenario_hash(copy.deepcopy(_rate(1000)))
    assert scenario_hash(_rate(1000)) != scenario_hash(_rate(2000))


def test_identity_recomputes_an_older_runs_fingerprint_from_its_lab() -> None:
    older = identity_of({"lab": LOCAL_LAB, "lab_fingerprint": "0123456789abcdef"})
    assert older.lab_fingerprint == lab_fingerprint(LOCAL_LAB)
    assert identity_of({"lab": {}, "lab_fingerprint": "0123"}).lab_fingerprint == "0123"
    assert older.scenario_hash == scenario_hash({})  # none stored: computed


def test_changes_are_leaves_and_named_list_items() -> None:
    a, b = _rate(1000), _rate(2000)
    b["factors"]["bs"]["levels"].append({"label": "1m", "value": "1m", "set": {}})
    del b["phases"]["cooldown"]
    found = {c.path: (c.a, c.b) for c in changes(a, b)}
    assert found == {
        "workload.params.rate_iops": ("1000", "2000"),
        "factors.bs.levels[1m]": (None, "{label: 1m, value: 1m, set: {}}"),
        "phases.cooldown": ("0", None),
    }


# ------------------------------------------------------------------ compare


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(f"sqlite:///{tmp_path}/c.db", tmp_path) as s:
        yield s


def _compare(tmp_path: Path, a: str, b: str, *extra: str) -> str:
    out = CliRunner().invoke(cli, ["compare", a, b, "--store", f"sqlite:///{tmp_path}/c.db",
                                   *extra])
    assert out.exit_code == 0, out.output
    return out.output


def test_compare_prints_the_scenario_and_set_differences_as_a_diff(
    store: Store, tmp_path: Path
) -> None:
    a = add_run(store, "20270101-020000-aaaaaaaa", [({"bs": "4k"}, OPS)], scenario=_rate(1000),
                started=T0, lab=LOCAL_LAB)
    b = add_run(store, "20270102-020000-bbbbbbbb", [({"bs": "4k"}, HALF)], scenario=_rate(2000),
                started=T0 + DAY, lab=LOCAL_LAB, overrides=["workload.params.rate_iops=2000"])
    text = _compare(tmp_path, a, b)
    lines = text.splitlines()
    assert f"scenario differs ({scenario_hash(_rate(1000))} → {scenario_hash(_rate(2000))}):" \
        in lines
    at = lines.index("  - workload.params.rate_iops: 1000")
    assert lines[at + 1] == "  + workload.params.rate_iops: 2000"
    assert "--set in A: none" in lines
    assert "--set in B: workload.params.rate_iops=2000" in lines
    assert "lab: same (local, local loopback)" in lines
    assert "same facts" not in text or "testbeds: same facts" in text
    doc = json.loads(_compare(tmp_path, a, b, "--json"))["comparable"]
    assert doc["same_scenario"] is False and doc["b"]["overrides"] == [
        "workload.params.rate_iops=2000"]
    assert doc["scenario_changes"] == [
        {"path": "workload.params.rate_iops", "a": "1000", "b": "2000"}]


def test_compare_names_the_lab_difference(store: Store, tmp_path: Path) -> None:
    a = add_run(store, "20270101-020000-aaaaaaaa", [({"bs": "4k"}, OPS)], scenario=_rate(1000),
                started=T0, lab=SIM_LAB)
    b = add_run(store, "20270102-020000-bbbbbbbb", [({"bs": "4k"}, OPS)], scenario=_rate(1000),
                started=T0 + DAY, lab=_throttled(SIM_LAB))
    lines = _compare(tmp_path, a, b).splitlines()
    assert "scenario: same (hash " + scenario_hash(_rate(1000)) + ")" in lines
    fa, fb = lab_fingerprint(SIM_LAB), lab_fingerprint(_throttled(SIM_LAB))
    assert f"lab differs ({fa} → {fb}):" in lines
    assert "  - kind: simulated vCenter (vcsim)" in lines
    assert "  + kind: simulated vCenter (vcsim), throttled" in lines
    assert "  + vcenters.sim.simulator.method_delay.CloneVM_Task: 0.5" in lines


def test_diff_lines_fit_100_columns() -> None:
    long = "x" * 300
    a, b = _rate(1000), _rate(1000)
    b["description"] = long
    comp = compare_runs({"scenario": a, "lab": LOCAL_LAB},
                        {"scenario": b, "lab": SIM_LAB, "overrides": [f"description={long}",
                                                                      "repeat=5"] * 5})
    lines = comp.lines()
    assert all(len(line) <= 100 for line in lines), [len(x) for x in lines]
    assert any(line.startswith("  + description: xxx") and line.endswith("…") for line in lines)
    assert any(line.startswith("--set in B:") for line in lines)


# ------------------------------------------------------------------ regression


def test_regression_note_and_output_say_what_the_baseline_measured_differently(
    store: Store,
) -> None:
    base = add_run(store, "20270101-020000-aaaaaaaa", [({"bs": "4k"}, OPS)],
                   scenario=_rate(1000), started=T0, lab=LOCAL_LAB)
    cur = add_run(store, "20270102-020000-bbbbbbbb", [({"bs": "4k"}, HALF)],
                  scenario=_rate(2000), started=T0 + DAY, lab=LOCAL_LAB,
                  overrides=["workload.params.rate_iops=2000"])
    reg = check_regression(store, cur, base)
    assert reg.baseline is not None
    assert reg.baseline.description.endswith(
        "the scenario measures something else: workload.params.rate_iops: 1000 → 2000")
    text = format_regression(reg)
    assert "the baseline and this run differ:" in text
    assert "    - workload.params.rate_iops: 1000\n    + workload.params.rate_iops: 2000" in text
    assert "  --set in this run: workload.params.rate_iops=2000" in text
    diff = text.splitlines()[1:8]  # under the verdict: the differences
    assert diff[-1] == "  lab: same (local, local loopback)"
    assert all(len(line) <= 100 for line in diff)


def test_last_skips_a_run_from_another_kind_of_lab(store: Store) -> None:
    local = add_run(store, "20270101-020000-aaaaaaaa", [({"bs": "4k"}, OPS)],
                    scenario=_rate(1000), started=T0, lab=LOCAL_LAB)
    add_run(store, "20270102-020000-bbbbbbbb", [({"bs": "4k"}, OPS)], scenario=_rate(1000),
            started=T0 + DAY, lab=_throttled(SIM_LAB))
    cur = add_run(store, "20270103-020000-cccccccc", [({"bs": "4k"}, OPS)],
                  scenario=_rate(1000), started=T0 + 2 * DAY, lab=LOCAL_LAB)
    choice = resolve_baseline(store, store.get_run(cur), "last")
    assert choice is not None and choice.run_ids == (local,)
    named = resolve_baseline(store, store.get_run(cur), "20270102-020000-bbbbbbbb")
    assert named is not None and named.description.endswith(
        "the lab differs: simulated vCenter (vcsim), throttled → local loopback")


def test_multi_run_report_lists_scenario_set_and_lab_differences(store: Store) -> None:
    from vbench.report.build import render_report

    a = add_run(store, "20270101-020000-aaaaaaaa", [({"bs": "4k"}, OPS)], scenario=_rate(1000),
                started=T0, lab=LOCAL_LAB)
    b = add_run(store, "20270102-020000-bbbbbbbb", [({"bs": "4k"}, HALF)], scenario=_rate(2000),
                started=T0 + DAY, lab=SIM_LAB, overrides=["workload.params.rate_iops=2000"])
    html = render_report(store, [b, a], "html")
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>", html)
    assert ("scenario: workload.params.rate_iops", "2000", "1000") in rows
    assert ("--set", "workload.params.rate_iops=2000", "none") in rows
    assert ("lab: kind", "simulated vCenter (vcsim)", "local loopback") in rows


def test_exports_say_what_differs_between_the_experiments(store: Store) -> None:
    """JSON (regression and comparisons), JUnit and Markdown carry the scenario/--set/lab
    differences that compare and the terminal print."""
    from vbench.report.build import render_report

    base = add_run(store, "20270101-020000-aaaaaaaa", [({"bs": "4k"}, OPS)],
                   scenario=_rate(1000), started=T0, lab=LOCAL_LAB)
    cur = add_run(store, "20270102-020000-bbbbbbbb", [({"bs": "4k"}, HALF)],
                  scenario=_rate(2000), started=T0 + DAY, lab=LOCAL_LAB,
                  overrides=["workload.params.rate_iops=2000"])
    change = {"path": "workload.params.rate_iops", "a": "1000", "b": "2000"}
    doc = json.loads(render_report(store, [cur], "json", baseline=base))
    comp = doc["runs"][0]["regression"]["comparable"]
    assert comp["scenario_changes"] == [change] and comp["same_lab"] is True
    assert comp["b"]["overrides"] == ["workload.params.rate_iops=2000"]
    two = json.loads(render_report(store, [base, cur], "json"))
    assert two["comparisons"][0]["comparable"]["scenario_changes"] == [change]
    junit = render_report(store, [cur], "junit", baseline=base)
    assert "+ workload.params.rate_iops: 2000" in junit
    md = render_report(store, [cur], "markdown", baseline=base)
    assert "the baseline differs: scenario differs: workload.params.rate_iops: 1000 → 2000" in md
    md_two = render_report(store, [base, cur], "markdown")
    assert "The experiments differ: scenario differs: workload.params.rate_iops" in md_two
