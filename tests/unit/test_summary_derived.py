"""The terminal summary (end of `vbench run`, `vbench show`) shows the scenario's derived
figures beside the measured ones, per point, and the figures across points at the end."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from tests.analysis_runs import add_run, scenario_doc
from vbench.cli import cli
from vbench.report.build import report_data
from vbench.report.terminal import summary_table
from vbench.results.store import Store

DERIVED = [
    {"name": "rel", "kind": "normalize", "metric": "ops", "baseline": {"bs": "4k"}},
    {"name": "gm", "kind": "geomean", "metric": "ops", "across": "bs"},
]


def _text(table: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def test_summary_and_show_carry_derived_figures(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/d.db"
    sc = scenario_doc("derived", {"bs": ["4k", "64k"]}, derived=DERIVED,
                      report={"headline": ["ops"], "charts": []})
    with Store.open(url, tmp_path) as store:
        rid = add_run(store, "20270101-000000-dddd", [
            ({"bs": "4k"}, {"ops": [100.0, 100.0, 100.0]}),
            ({"bs": "64k"}, {"ops": [25.0, 25.0, 25.0]}),
        ], scenario=sc)
        out = _text(summary_table(report_data(store, rid)))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()
            if line.startswith("│")]
    assert [r[1:4] for r in rows] == [
        ["4k", "ops", "100.0 ± 0.0 ops/s"], ["", "rel", "1.000 ± 0.000"],
        ["64k", "ops", "25.00 ± 0.00 ops/s"], ["", "rel", "0.2500 ± 0.0000"],
        ["all", "gm", "50.00"],  # sqrt(100 × 25): across the levels of bs
    ]
    shown = CliRunner().invoke(cli, ["show", rid, "--store", url], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert " rel " in shown.output and "0.2500" in shown.output and " gm " in shown.output
