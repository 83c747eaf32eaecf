"""History of a scenario over stored runs: per point and metric, oldest run first."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy import stats as sp

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.history import load_history, sparkline
from vbench.cli import cli
from vbench.results.store import Store

SC = scenario_doc("trend", {"bs": ["4k", "64k"]}, report={"headline": ["ops"]},
                  derived=[{"name": "kops", "kind": "expr", "expr": "ops / 1000"}])


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(f"sqlite:///{tmp_path}/h.db", tmp_path) as s:
        for day in range(1, 6):
            # Point order changes between runs: matching must use the labels.
            pts = [({"bs": "4k"}, {"ops": [1000.0 + day, 1010.0 + day, 990.0 + day]}),
                   ({"bs": "64k"}, {"ops": [300.0 - day, 310.0 - day]})]
            if day % 2:
                pts.reverse()
            add_run(s, f"2027010{day}-020000-0000000{day}", pts, scenario=SC,
                    started=T0 + day * 86400, tags=("nightly",) if day != 3 else (),
                    status="failed" if day == 4 else "ok")
        add_run(s, "20270109-020000-other000", [({"bs": "4k"}, {"ops": [1.0]})],
                scenario=scenario_doc("other"), started=T0 + 9 * 86400)
        yield s


def test_series_per_point_oldest_first_and_failed_runs_left_out(store: Store) -> None:
    h = load_history(store, "trend", ["ops"])
    assert [r.run_id[-1] for r in h.runs] == ["1", "2", "3", "5"]
    s4k = next(s for s in h.series if s.title == "bs=4k")
    assert s4k.means == [pytest.approx(1000.0 + d) for d in (1, 2, 3, 5)]
    first = s4k.summaries[0]
    assert first is not None and first.n == 3
    low, _ = sp.t.interval(0.95, 2, loc=1001.0, scale=sp.sem([1001.0, 1011.0, 991.0]))
    assert first.ci_low == pytest.approx(low)
    s64 = next(s for s in h.series if s.title == "bs=64k")
    assert s64.change == pytest.approx((300.0 - 304.0) / 304.0)
    assert s64.better == "higher"


def test_tag_limit_and_failed_runs(store: Store) -> None:
    tagged = load_history(store, "trend", ["ops"], tag="nightly")
    assert [r.run_id[-1] for r in tagged.runs] == ["1", "2", "5"]
    last_two = load_history(store, "trend", ["ops"], limit=2)
    assert [r.run_id[-1] for r in last_two.runs] == ["3", "5"]
    everything = load_history(store, "trend", ["ops"], include_failed=True)
    assert len(everything.runs) == 5 and everything.runs[3].status == "failed"


def test_derived_figures_have_history_too(store: Store) -> None:
    h = load_history(store, "trend", ["kops"])
    s4k = next(s for s in h.series if s.title == "bs=4k")
    assert s4k.means[-1] == pytest.approx(1.005)


def test_baseline_run_is_marked(store: Store) -> None:
    store.set_baseline("20270102-020000-00000002")
    h = load_history(store, "trend", ["ops"])
    assert [r.baseline for r in h.runs] == [False, True, False, False]


def test_unknown_scenario_or_metric(store: Store) -> None:
    assert load_history(store, "nope", ["ops"]).runs == ()
    assert load_history(store, "trend", ["nope"]).series == ()


def test_sparkline() -> None:
    assert sparkline([1.0, 2.0, 3.0, None, 8.0]) == "▁▂▃ █"
    assert sparkline([5.0, 5.0]) == "▄▄"
    assert sparkline([None]) == " "


def test_history_cli(store: Store, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/h.db"
    out = CliRunner().invoke(cli, ["history", "trend", "--store", url])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("history of trend: 4 runs")
    assert "ops (ops/s) — higher is better" in out.output
    # First one row per run with its answer, then the figures per metric and point.
    answers = [ln for ln in lines if ln.startswith("      best point: ops")]
    assert len(answers) == 4 and lines[lines.index(answers[0]) - 1].startswith("  2027"), \
        out.output
    table = lines[next(i for i, ln in enumerate(lines) if ln.startswith("ops (ops/s)")):]
    row = next(ln for ln in table if ln.startswith("20270105"))
    assert "1,005" in row and "300.0" in row
    assert any(ln.startswith("first → last") and "+0.4 %" in ln for ln in lines)
    js = CliRunner().invoke(cli, ["history", "trend", "--store", url, "--json", "--all"])
    assert js.exit_code == 0 and '"status": "failed"' in js.output
