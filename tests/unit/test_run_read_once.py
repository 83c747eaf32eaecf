"""The end of a `vbench run` reads its run from the store once and analyses it once:
the summary, verdicts, regression, find-max answer, figures files, report and --json
document are all drawn from the one :class:`StoredRun` (issue 22: one run was read back
~6 times and analysed ~5 times)."""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import vbench.analysis.run_analysis as run_analysis
from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.engine.finish import FinishOptions, finish_run
from vbench.engine.runner import RunOutcome
from vbench.errors import EXIT_QOS
from vbench.results.rundir import RunDir
from vbench.results.store import Store

SC = scenario_doc("nightly", {"bs": ["4k", "64k"]}, report={"headline": ["ops", "lat"]},
                  qos=[{"metric": "lat", "op": "<=", "threshold": 2.1}])
GOOD = {"ops": [1000.0, 1004.0, 996.0], "lat": [2.0, 2.02, 1.98]}
SLOW = {"ops": [800.0, 804.0, 796.0], "lat": [2.6, 2.62, 2.58]}
BASE, CURRENT = "20270101-020000-00000001", "20270102-020000-00000002"
READS = ("get_run", "points", "trials", "samples_frame")


class Counted:
    """Store reads and analyses, per run id."""

    def __init__(self) -> None:
        self.reads: Counter[tuple[str, str]] = Counter()
        self.analyses: Counter[str] = Counter()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counted]:
    c = Counted()
    for name in READS:
        original = getattr(Store, name)

        def read(self: Store, run_id: str, *a: Any, _f: Any = original, _n: str = name,
                 **kw: Any) -> Any:
            c.reads[(_n, run_id)] += 1
            return _f(self, run_id, *a, **kw)

        monkeypatch.setattr(Store, name, read)
    analyze = run_analysis.analyze

    def counting(run: Any, *a: Any, **kw: Any) -> Any:
        c.analyses[run["run_id"]] += 1
        return analyze(run, *a, **kw)

    # Every module that imported the function by name (reports, data, analysis), imported
    # now if a command would import it later.
    for name in ("vbench.report.build", "vbench.report.data"):
        importlib.import_module(name)
    for mod in [m for n, m in sys.modules.items() if n.startswith("vbench.")]:
        if getattr(mod, "analyze", None) is analyze:
            monkeypatch.setattr(mod, "analyze", counting)
    yield c


def test_finishing_a_run_reads_and_analyses_it_once(tmp_path: Path, counted: Counted) -> None:
    with Store.open(f"sqlite:///{tmp_path}/r.db", tmp_path) as store:
        add_run(store, BASE, [({"bs": "4k"}, GOOD), ({"bs": "64k"}, GOOD)], scenario=SC)
        rundir = RunDir(tmp_path / "results", CURRENT)
        add_run(store, CURRENT, [({"bs": "4k"}, SLOW), ({"bs": "64k"}, SLOW)], scenario=SC,
                started=T0 + 86400, run_dir=str(rundir.path))
        counted.reads.clear()
        counted.analyses.clear()
        options = FinishOptions(tmp_path / "lab.yaml", regression_spec="last",
                                fail_on_qos=True, as_json=True)
        result = finish_run(store, RunOutcome(CURRENT, "ok"), rundir, options)
    # Every output was made: figures files, verdicts, regression, report, JSON document.
    assert (rundir.path / "samples.csv").is_file()
    assert json.loads((rundir.path / "summary.json").read_text())["run_id"] == CURRENT
    assert result.report is not None and result.report.is_file()
    assert result.verdicts is not None and "REGRESSION" in result.verdicts.text
    assert result.exit_code == EXIT_QOS and result.doc["exit_code"] == EXIT_QOS
    assert result.doc["regression"] is not None
    # ... from one read of the run and one analysis; the baseline is read for itself.
    mine = {name: counted.reads[(name, CURRENT)] for name in READS}
    assert mine == dict.fromkeys(READS, 1)
    assert counted.analyses[CURRENT] == 1
    assert counted.reads[("get_run", BASE)] >= 1


def test_an_interrupted_run_before_any_trial_prints_no_table(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/r.db", tmp_path) as store:
        rundir = RunDir(tmp_path / "results", CURRENT)
        add_run(store, CURRENT, [], scenario=SC, status="interrupted", run_dir=str(rundir.path))
        result = finish_run(store, RunOutcome(CURRENT, "interrupted", exit_code=130), rundir,
                            FinishOptions(Path("lab.yaml"), write_report=False))
    assert not result.show_table and result.report is None
    assert result.kept.startswith("interrupted: kept 0 finished trials (0 ok)")
    assert f"vbench run --resume {CURRENT} --lab lab.yaml" in result.kept
    assert result.exit_code == 130 and result.last_line.startswith(f"run {CURRENT}: interrupted")


def _two_runs(tmp_path: Path, store: Store) -> None:
    for run_id, values, day in ((BASE, GOOD, 0), (CURRENT, SLOW, 1)):
        run_dir = tmp_path / "results" / run_id
        run_dir.mkdir(parents=True)
        add_run(store, run_id, [({"bs": "4k"}, values), ({"bs": "64k"}, values)], scenario=SC,
                started=T0 + day * 86400, run_dir=str(run_dir))


@pytest.mark.parametrize("args", [
    ["show", CURRENT],
    ["show", CURRENT, "--json"],
    ["report", CURRENT, "-o", "{tmp}/r.html", "--baseline", BASE],
    ["report", CURRENT, "-o", "{tmp}/r.md"],
    ["compare", BASE, CURRENT],
], ids=["show", "show-json", "report-html-baseline", "report-markdown", "compare"])
def test_each_command_reads_and_analyses_a_run_once(
    tmp_path: Path, counted: Counted, args: list[str]
) -> None:
    from click.testing import CliRunner

    from vbench.cli import cli

    url = f"sqlite:///{tmp_path}/r.db"
    with Store.open(url, tmp_path) as store:
        _two_runs(tmp_path, store)
    counted.reads.clear()
    counted.analyses.clear()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = CliRunner().invoke(cli, [*argv, "--store", url, "--results", str(tmp_path / "results")])
    assert res.exit_code == 0, res.output
    assert CURRENT[:8] in res.output or (tmp_path / "r.html").is_file() or \
        (tmp_path / "r.md").is_file()
    shown = [CURRENT, BASE] if args[0] == "compare" else [CURRENT]
    for run_id in shown:
        assert {n: counted.reads[(n, run_id)] for n in READS} == dict.fromkeys(READS, 1), run_id
        assert counted.analyses[run_id] == 1, run_id
