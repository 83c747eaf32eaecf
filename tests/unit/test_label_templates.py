"""Point label templates (`label: "{mode}-{vms}VMs-{instances}S"`): checked where they are
written, and used by the plan, the report's tables and charts, and the exports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from tests.analysis_runs import add_run, scenario_doc
from vbench.config.labels import render_label, template_problems
from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError
from vbench.report.build import render_report, report_data
from vbench.report.terminal import summary_table
from vbench.results.store import Store

DS_LABEL = "{mode}-{vms}VMs-{instances}S"
SCENARIO = """\
version: 1
name: labels
topology:
  clients:
    count: 1
workload:
  driver: fio
  params: {rw: randread, size: 8m}
factors:
  mode:
    levels: [{label: Native}, {label: VM}]
  vms:
    path: workload.params.numjobs
    levels: [1, 8]
  instances:
    path: workload.params.iodepth
    levels: [16]
label: "LABEL"
repeat: 1
phases: {warmup: 0s, steady: 1s}
"""


def write(tmp_path: Path, label: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO.replace("LABEL", label))
    return p


def test_render_substitutes_level_labels_and_keeps_literal_braces() -> None:
    labels = {"mode": "VM-Docker", "vms": "8", "instances": "16"}
    assert render_label(DS_LABEL, labels) == "VM-Docker-8VMs-16S"
    assert render_label("{{{mode}}}", labels) == "{VM-Docker}"


@pytest.mark.parametrize("template,problem", [
    ("{mode}-{nodes}", "{nodes} names no factor"),
    ("{mode.__class__}", "names no factor"),
    ("{mode[0]}", "names no factor"),
    ("{mode!r}", "only plain {factor} placeholders"),
    ("{mode:>10}", "only plain {factor} placeholders"),
    ("{}", "empty {} placeholder"),
    ("{mode", "not a label template"),
    ("a\x1bb{mode}", "control characters"),
])
def test_bad_templates_are_refused(template: str, problem: str) -> None:
    found = template_problems(template, ["mode", "vms"])
    assert found and problem in " ".join(found)


def test_plan_names_points_by_the_template(tmp_path: Path) -> None:
    plan = build_plan(load_scenario(write(tmp_path, DS_LABEL)))
    assert [p.title for p in plan.points] == ["Native-1VMs-16S", "Native-8VMs-16S",
                                              "VM-1VMs-16S", "VM-8VMs-16S"]
    assert plan.points[3].to_json()["title"] == "VM-8VMs-16S"


def test_a_wrong_template_is_located_in_the_scenario(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(write(tmp_path, "{mode}-{hosts}")))
    text = str(exc.value)
    line = SCENARIO.splitlines().index('label: "LABEL"') + 1
    assert f"s.yaml:{line}:" in text and "{hosts} names no factor" in text


def test_report_tables_charts_and_exports_use_the_template(tmp_path: Path) -> None:
    sc = scenario_doc("ds", {"mode": ["Native", "VM"], "instances": ["16"]},
                      label="{mode}-{instances}S",
                      derived=[{"name": "vs_native", "kind": "normalize", "metric": "ops",
                                "baseline": {"mode": "Native"}}])
    run_id = "20270101-000000-00000001"
    with Store.open(f"sqlite:///{tmp_path}/l.db", tmp_path) as store:
        add_run(store, run_id, [
            ({"mode": "Native", "instances": "16"}, {"ops": [100.0, 102.0, 98.0]}),
            ({"mode": "VM", "instances": "16"}, {"ops": [90.0, 91.0, 89.0]}),
        ], scenario=sc)
        html = render_report(store, [run_id], "html")
        doc = json.loads(render_report(store, [run_id], "json"))
        rows = list(csv.DictReader(io.StringIO(render_report(store, [run_id], "csv"))))
        md = render_report(store, [run_id], "markdown")
        table = summary_table(report_data(store, run_id))
    console = Console(width=120, record=True)
    console.print(table)
    text = console.export_text()
    assert "Native-16S" in text and "VM-16S" in text and "mode" not in text
    assert "Native-16S" in html and "VM-16S" in html
    titles = {a["title"] for a in doc["runs"][0]["aggregates"] if a["point"] is not None}
    assert titles == {"Native-16S", "VM-16S"}
    assert {r["title"] for r in rows} == {"Native-16S", "VM-16S"}
    assert "| VM-16S |" in md


SEARCH = """qos:
  - {name: lat, metric: read_clat_p99_max, op: "<=", threshold: 5, unit: ms}
search: {factor: rate, path: workload.params.rate_iops, min: 100, max: 1000}
"""


def test_a_search_template_must_name_the_searched_factor(tmp_path: Path) -> None:
    # Without {rate} every level of a search would carry the same name in tables and charts.
    path = write(tmp_path, "{mode}-{vms}VMs")
    path.write_text(path.read_text() + SEARCH)
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(path))
    assert "name {rate} in the template" in str(exc.value)
    path = write(tmp_path, "{mode}-{vms}VMs-{rate}")
    path.write_text(path.read_text() + SEARCH)
    plan = build_plan(load_scenario(path))
    assert [p.title for p in plan.points] == ["Native-1VMs-100", "Native-8VMs-100",
                                              "VM-1VMs-100", "VM-8VMs-100"]
