"""`vbench report --history SCENARIO`: the multi-run trend page (one offline HTML file),
its structure, and the CLI shape beside `vbench report RUN_ID …`. The page is opened in
headless Chromium by tests/integration/test_trend_chromium.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run
from tests.unit.test_history_variants import DAY, LOCAL, RUNS, _id, _points, _scenario
from vbench.analysis.history import load_history
from vbench.cli import cli
from vbench.report.trend import nice_ticks, number, render_trend
from vbench.results.store import Store


@pytest.fixture
def url(tmp_path: Path) -> str:
    with Store.open(f"sqlite:///{tmp_path}/t.db", tmp_path) as s:
        for day, (lab, rate, sets) in RUNS.items():
            add_run(s, _id(day), _points(day, 0.5 if rate == 500 else 1.0),
                    scenario=_scenario(rate), started=T0 + day * DAY, lab=lab, overrides=sets)
    return f"sqlite:///{tmp_path}/t.db"


def _report(url: str, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["report", "--store", url, *args])
    return out.exit_code, out.output


def test_trend_page_one_chart_per_metric_and_point_series_per_variant(
    url: str, tmp_path: Path
) -> None:
    page = tmp_path / "trend.html"
    code, text = _report(url, "--history", "trend", "-o", str(page), "--metric", "ops",
                         "--metric", "ops_vs_4k")
    assert code == 0, text
    html = page.read_text(encoding="utf-8")
    charts = re.findall(r'<svg id="(trend-chart-\d+)" class="chart"', html)
    assert charts == [f"trend-chart-{i}" for i in range(1, 5)]  # 2 metrics x 2 points
    first = html[html.index('id="trend-chart-1"'):html.index("</svg>")]
    # Variant A (days 1 and 4) is a line; B and C one run each: markers only.
    assert re.findall(r'data-variant="(\w)"', first) == ["A"]
    assert len(re.findall(r'<circle class="run"', first)) == 4
    assert len(re.findall(r'class="errorbar"', first)) == 4  # 3 trials: a CI each
    hollow = re.search(rf'data-run="{_id(2)}"[^>]*fill="#fff"', first)
    assert hollow, "the --set run has a hollow marker"
    assert "--set workload.params.rate_iops=500" in first  # in its tooltip
    assert '<section id="variants">' in html and "workload.params.rate_iops: 500" in html
    assert "simulated vCenter (vcsim), throttled" in html
    assert "<script" not in html and "http://" not in html and "src=" not in html


def test_trend_page_of_one_variant_has_no_variant_table(url: str, tmp_path: Path) -> None:
    page = tmp_path / "t.html"
    code, text = _report(url, "--history", "trend", "--lab", "local", "--same-scenario",
                         "-o", str(page))
    assert code == 0, text
    html = page.read_text(encoding="utf-8")
    assert 'id="variants"' not in html and html.count('class="chart"') == 2  # ops x 2 points
    assert "lab local; only the newest run&#x27;s scenario variant" in html


@pytest.mark.parametrize(("args", "message"), [
    (("-o", "x.html"), "give RUN_ID(s), or --history SCENARIO"),
    (("--tag", "n", "-o", "x.html", _id(1)), "--tag: only with --history SCENARIO"),
    (("--history", "trend", _id(1), "-o", "x.html"), "takes no RUN_ID"),
    (("--history", "trend", "--format", "json", "-o", "x.json"), "writes HTML only"),
])
def test_report_cli_shape_mistakes_are_usage_errors(
    url: str, args: tuple[str, ...], message: str
) -> None:
    code, text = _report(url, *args)
    assert code == 2 and message in text


def test_unknown_scenario_names_the_selection(url: str) -> None:
    out = CliRunner().invoke(cli, ["report", "--store", url, "--history", "nope", "-o",
                                   "x.html"], standalone_mode=False)
    assert out.exception is not None and "no stored run of scenario 'nope' matches" in str(
        out.exception)


def test_names_are_escaped(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/e.db", tmp_path) as s:
        sc = _scenario(1000)
        sc["factors"]["bs"]["levels"][0]["label"] = "<b>4k</b>"
        add_run(s, _id(1), [({"bs": "<b>4k</b>"}, {"ops": [1.0, 2.0]})], scenario=sc,
                started=T0, lab={**LOCAL, "name": "<i>lab</i>"}, overrides=["x=<script>"])
        html = render_trend(load_history(s, "trend", ["ops"]))
    assert "<b>" not in html and "<i>" not in html and "<script" not in html
    assert "&lt;b&gt;4k&lt;/b&gt;" in html and "x=&lt;script&gt;" in html


def test_ticks_and_numbers() -> None:
    assert nice_ticks(0.0, 1000.0) == [0.0, 250.0, 500.0, 750.0, 1000.0]
    assert nice_ticks(0.97, 1.03) == pytest.approx([0.98, 1.0, 1.02])
    assert [number(x) for x in (12345.6, 1.0, 0.4, 0.123456, 2.5e-5, None)] == [
        "12,346", "1", "0.4", "0.1235", "2.5e-05", "—"]
