"""Text output fits the terminal: `compare`, the regression check, QoS and `ls` at 100
and 80 columns fold columns under their rows and wrap prose between words; no word is
ever cut, and nothing is left out. Without a width nothing moves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis_runs import add_run, scenario_doc
from tests.unit.test_compare import _two_runs
from vbench.cli import cli
from vbench.report.build import check_regression
from vbench.report.fit import fit, wrap
from vbench.report.textfmt import format_regression
from vbench.results.store import Store

WIDTHS = (100, 80)


def _tokens(text: str, skip_first_table_line: str = "") -> set[str]:
    return {w for line in text.splitlines() if line != skip_first_table_line
            for w in line.split()}


def _fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert not long, f"lines over {width} columns: {long}"


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/w.db"
    with Store.open(url, tmp_path) as store:
        _two_runs(store)
        for i, name in enumerate(["fio-oio-sweep-local", "iometer-profile-with-guest-scaling"]):
            add_run(store, f"20270103-02000{i}-cccccccc", [({"bs": "4k"}, {"ops": [1.0, 2.0]})],
                    scenario=scenario_doc(name), tags=["nightly", "lab-a"],
                    started=1_800_000_000 + 86400 * (3 + i))
    return url


def _invoke(args: list[str], width: int | None) -> str:
    env = {"COLUMNS": str(width)} if width else {"COLUMNS": ""}
    res = CliRunner().invoke(cli, args, env=env)
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_fits_the_width_and_keeps_every_word(url: str, width: int) -> None:
    args = ["compare", "20270101-020000-aaaaaaaa", "20270102-020000-bbbbbbbb", "--store", url]
    wide = _invoke(args, None)
    assert max(len(line) for line in wide.splitlines()) > 120  # the case being fixed
    narrow = _invoke(args, width)
    _fits(narrow, width)
    head = next(line for line in wide.splitlines() if line.startswith("point"))
    missing = _tokens(wide, head) - _tokens(narrow)
    assert not missing, f"words cut or lost at {width} columns: {missing}"
    # The verdict stays on the row; the figures follow it.
    row = next(i for i, line in enumerate(narrow.splitlines()) if line.startswith("bs=4k   ops"))
    lines = narrow.splitlines()
    assert "worse" in lines[row] and "1,000 ± 10 ops/s (n=5)" in "\n".join(lines[row:row + 3])
    assert "Mann–Whitney U p = 0.00794" in "\n".join(lines[row + 1:row + 3])


@pytest.mark.parametrize("width", WIDTHS)
def test_ls_fits_the_width_without_cutting_names(url: str, width: int) -> None:
    narrow = _invoke(["ls", "--store", url], width)
    _fits(narrow, width)
    assert "iometer-profile-with-guest-scaling" in narrow  # never cut to "iometer-p…"
    assert "…" not in narrow
    assert re.search(r"^20270103-020001-cccccccc  iometer-profile-with-guest-scaling\s+ok",
                     narrow, re.M)
    assert "tags: nightly, lab-a" in narrow


@pytest.mark.parametrize("width", WIDTHS)
def test_regression_table_fits_the_width(tmp_path: Path, url: str, width: int) -> None:
    with Store.open(url, tmp_path) as store:
        reg = check_regression(store, "20270102-020000-bbbbbbbb", "20270101-020000-aaaaaaaa")
    wide, narrow = format_regression(reg), format_regression(reg, width)
    assert max(len(line) for line in wide.splitlines()) > width
    _fits(narrow, width)
    head = next(line for line in wide.splitlines() if line.startswith("point"))
    assert not _tokens(wide, head) - _tokens(narrow)


def test_fit_moves_columns_only_as_far_as_needed() -> None:
    head, rows = ["k", "a", "b"], [["x", "1" * 10, "2" * 10]]
    assert fit(head, rows, width=30, fold=(2, 1)).lines == ("k  a           b",
                                                             "x  1111111111  2222222222")
    laid = fit(head, rows, width=20, fold=(2, 1))
    assert laid.lines == ("k  a", "x  1111111111", "    b: 2222222222")
    assert wrap("a bb ccc", 4) == ["a bb", "ccc"]
    assert wrap("abcdefgh ij", 4) == ["abcdefgh", "ij"]  # a long word stays whole
