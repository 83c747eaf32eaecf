"""The terminal summary (`vbench show`, the end of `vbench run`) off a terminal and on a
narrow one: in a pipe or a cron log nothing is cut or wrapped (docs/cli.md); on a
terminal a narrow table wraps its cells between words and never cuts a metric name or a
level."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis_runs import add_run, scenario_doc
from vbench.cli import cli
from vbench.results.store import Store

METRICS = ("export_seconds_per_item", "import_seconds_per_item", "vcbench_ops_per_second")
LEVELS = ("baseline-vcenter-8", "baseline-vcenter-32")
TITLE = "content-library-and-vcbench · run 20270101-000000-wide"  # the table's


def _stored(tmp_path: Path) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path}/w.db"
    sc = scenario_doc("content-library-and-vcbench", {"vcenter_profile": list(LEVELS)},
                      report={"headline": list(METRICS), "charts": []})
    values = {m: [1234.5, 1250.25, 1262.75] for m in METRICS}
    with Store.open(url, tmp_path) as store:
        rid = add_run(store, "20270101-000000-wide", [
            ({"vcenter_profile": lv}, values) for lv in LEVELS], scenario=sc)
    return url, rid


def _show(url: str, rid: str, env: dict[str, str | None]) -> str:
    # CliRunner's standard output is not a terminal: a pipe, a cron log.
    out = CliRunner().invoke(cli, ["show", rid, "--store", url], env=env)
    assert out.exit_code == 0, out.output
    return out.output


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("┃", "│", "┏", "┡", "└"))]


def test_show_in_a_pipe_cuts_and_wraps_nothing(tmp_path: Path) -> None:
    url, rid = _stored(tmp_path)
    out = _show(url, rid, {"COLUMNS": None})
    assert "…" not in out
    rows = _table_lines(out)
    assert max(len(line) for line in rows) > 80  # wider than rich's default 80 columns
    for name in (*METRICS, *LEVELS):  # each metric once per level, each level once
        assert sum(name in line for line in rows) == (1 if name in LEVELS else 2), name
    # One line per row and a header of one line: nothing wrapped.
    assert len([line for line in rows if line.startswith("│")]) == len(METRICS) * len(LEVELS)
    # The title is one line too, above the table.
    assert sum(TITLE in line for line in out.splitlines()) == 1


@pytest.mark.parametrize("columns", [80, 64])
def test_show_on_a_narrow_terminal_wraps_without_cutting_names(
    tmp_path: Path, columns: int
) -> None:
    url, rid = _stored(tmp_path)
    out = _show(url, rid, {"COLUMNS": str(columns)})
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= columns  # the verdict's prose too
    out = out[out.index(TITLE):]  # the table
    lines = out.splitlines()
    for name in (*METRICS, *LEVELS):  # each metric once per level, each level once
        assert sum(name in line for line in lines) == (1 if name in LEVELS else 2), name
    # Every mean is there whole, though its CI and unit go to the next lines.
    assert out.count("1,249") == len(METRICS) * len(LEVELS)
    if columns == 80:  # cells wrapped between words: every column still fits
        assert out.count("1,234–1,263") == len(METRICS) * len(LEVELS)
        assert "left out" not in out
    else:  # too narrow even so: the spread leaves, and the table says so
        assert "1,234–1,263" not in out
        assert "min–max left out to fit 64 columns" in out


def test_run_summary_in_a_cron_log_cuts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The end of `vbench run` prints its summary on the progress console (standard
    error): captured here, it is no terminal, as in cron."""
    from vbench.cli.progress import RichProgress
    from vbench.report.build import summary_for_terminal

    monkeypatch.delenv("COLUMNS", raising=False)
    url, rid = _stored(tmp_path)
    with Store.open(url, tmp_path) as store:
        summary_for_terminal(store, rid, RichProgress().console)
    err = capsys.readouterr().err
    assert "…" not in err
    assert err[err.index(TITLE):].count("vcbench_ops_per_second") == len(LEVELS)
    assert max(len(line) for line in err.splitlines()) > 80


@pytest.mark.parametrize("width", [None, 40, 200])
def test_a_table_without_rows_is_fitted_too(width: int | None) -> None:
    """Every trial failed: the summary has a header and no row."""
    from rich.console import Console
    from rich.table import Table

    from vbench.report.fit import fit_table

    table = Table(title="a run whose every trial failed")
    for head in ("#", "metric", "mean ± 95 % CI", "min–max", "n", "cv"):
        table.add_column(head)
    console = Console(width=width or 300, record=True, color_system=None)
    console.print(fit_table(table, width, drop=("min–max", "cv")))
    assert "metric" in console.export_text()
