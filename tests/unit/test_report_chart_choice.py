"""The charts a report leads with: a reference line only where it means something (linear
scaling against a count of workers/VMs/clients, or when a chart entry asks), switchable
per chart, y axes that hold every reference, every `report.charts` entry for a headline
figure drawn, and `x` naming a metric (latency against IOPS)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.analysis_runs import add_run, scenario_doc
from vbench.config.scenario import Chart
from vbench.report.build import report_data
from vbench.report.charts import Bar, bar_chart_svg
from vbench.report.html import render_html
from vbench.results.store import Store

OIO = ["1", "4", "16", "64"]


def render(tmp: Path, factors: dict[str, list[str]], *, paths: dict[str, str] | None = None,
           charts: list[dict[str, Any]] | None = None, headline: list[str] | None = None,
           derived: list[dict[str, Any]] | None = None) -> str:
    sc = scenario_doc("c", factors,
                      report={"headline": headline or ["ops"], "charts": charts or []},
                      derived=derived or [])
    for name, path in (paths or {}).items():
        sc["factors"][name]["path"] = path
    names = list(factors)
    pts = []
    for i, combo in enumerate(_product([factors[n] for n in names])):
        labels = dict(zip(names, combo, strict=True))
        level = float(combo[0])
        pts.append((labels, {"ops": [1000.0 * level ** 0.3 * f for f in (0.99, 1.0, 1.01)],
                             "lat": [0.5 * level + 0.01 * i for _ in range(3)]}))
    with Store.open(f"sqlite:///{tmp}/s.db", tmp) as store:
        add_run(store, "r1", pts, scenario=sc)
        return render_html(report_data(store, "r1"))


def _product(levels: list[list[str]]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for lv in levels:
        out = [(*o, x) for o in out for x in lv]
    return out


def summary_charts(html: str) -> list[tuple[str, str]]:
    summary = re.search(r'<section id="summary">(.*?)</section>', html, re.DOTALL)
    assert summary
    return re.findall(r"<figure>\s*(<svg.*?</svg>)\s*<figcaption>(.*?)</figcaption>",
                      summary.group(1), re.DOTALL)


def legend(svg: str) -> list[str]:
    return re.findall(r'text-anchor="start" font-size="9.5" fill="#222222"[^>]*>([^<]*)<', svg)


def test_no_linear_ideal_against_a_queue_depth(tmp_path: Path) -> None:
    ((svg, cap),) = summary_charts(render(tmp_path, {"iodepth": OIO}))
    assert "line = mean per point" in cap and "ideal" not in cap
    assert "ideal" not in legend(svg)
    # The measured curve fills the axis: nothing stretches it to 64 × the first point.
    ymax = float(re.search(r'data-y-max="([^"]+)"', svg).group(1))  # type: ignore[union-attr]
    assert ymax < 1000 * 64 ** 0.3 * 1.5


def test_linear_ideal_against_a_topology_count(tmp_path: Path) -> None:
    html = render(tmp_path, {"vms": ["1", "2", "4", "8"]},
                  paths={"vms": "topology.clients.count"})
    ((svg, cap),) = summary_charts(html)
    assert "dashed = ideal linear scaling from the smallest level" in cap
    assert "ideal" in legend(svg)
    assert float(re.search(r'data-y-max="([^"]+)"', svg).group(1)) >= 8000  # type: ignore[union-attr]


@pytest.mark.parametrize(("factor", "path", "ideal", "drawn"), [
    ("iodepth", None, "linear", True),
    ("vms", "topology.clients.count", "none", False),
])
def test_a_chart_entry_switches_the_ideal(tmp_path: Path, factor: str, path: str | None,
                                          ideal: str, drawn: bool) -> None:
    html = render(tmp_path, {factor: OIO}, paths={factor: path} if path else None,
                  charts=[{"metric": "ops", "x": factor, "ideal": ideal}])
    ((svg, cap),) = summary_charts(html)
    assert ("ideal linear scaling" in cap) is drawn
    assert ("ideal" in legend(svg)) is drawn


def test_ideal_is_a_checked_chart_field() -> None:
    assert Chart(metric="ops", x="vms", ideal="none").ideal == "none"
    with pytest.raises(ValueError, match="ideal"):
        Chart(metric="ops", x="vms", ideal="quadratic")  # type: ignore[arg-type]


def test_the_value_axis_holds_every_reference() -> None:
    # A speedup of 1.4 against an ideal of 2.0: the axis must reach the ideal.
    svg = bar_chart_svg([Bar("vms=2", 1.4, 1.35, 1.45)], "speedup", chart_id="s",
                        thresholds=[2.0], limit_label="ideal")
    assert float(re.search(r'data-y-max="([^"]+)"', svg).group(1)) >= 2.0  # type: ignore[union-attr]
    ref = bar_chart_svg([Bar("a", 0.2, None, None)], "rel", chart_id="r", reference=1.0,
                        reference_label="baseline = 1.0")
    assert float(re.search(r'data-y-max="([^"]+)"', ref).group(1)) >= 1.0  # type: ignore[union-attr]


def test_the_derived_speedup_chart_shows_its_ideal(tmp_path: Path) -> None:
    html = render(tmp_path, {"vms": ["1", "2"]}, derived=[
        {"name": "speedup", "kind": "speedup", "metric": "ops", "baseline": {"vms": "1"},
         "ideal": "vms"}])
    derived = re.search(r'<section id="derived">(.*?)</section>', html, re.DOTALL)
    assert derived
    svg = re.search(r"<svg.*?</svg>", derived.group(1), re.DOTALL).group(0)  # type: ignore[union-attr]
    assert float(re.search(r'data-y-max="([^"]+)"', svg).group(1)) >= 2.0  # type: ignore[union-attr]


def test_every_chart_entry_for_a_headline_metric_is_drawn(tmp_path: Path) -> None:
    html = render(tmp_path, {"vms": ["1", "2", "4"], "iodepth": ["1", "8", "32"]},
                  charts=[{"metric": "ops", "x": "vms", "title": "ops by VMs"},
                          {"metric": "ops", "x": "iodepth", "title": "ops by OIO"}])
    titles = [re.search(r"<title>(.*?)</title>", svg).group(1)  # type: ignore[union-attr]
              for svg, _ in summary_charts(html)]
    assert titles == ["ops by VMs", "ops by OIO"]
    assert "report.charts" not in html  # nothing left out, so no warning either


def test_x_may_name_a_metric(tmp_path: Path) -> None:
    html = render(tmp_path, {"iodepth": OIO}, headline=["lat", "ops"],
                  charts=[{"metric": "lat", "x": "ops", "title": "latency vs IOPS"}])
    charts = summary_charts(html)
    caps = [cap for _, cap in charts]
    # lat's own chart over iodepth, the one against ops beside it, then ops's chart.
    assert len(charts) == 3
    assert "lat against ops: one dot per point" in caps[1]
    assert "<title>latency vs IOPS</title>" in charts[1][0]
    assert "ops (ops/s)" in charts[1][0]  # the x axis names the metric


def test_a_time_against_a_count_of_items_gets_a_linear_reference_when_asked(
    tmp_path: Path,
) -> None:
    """The Content Library sync chart: sync time against items, with the time growing in
    proportion to the items from the first point drawn for reference."""
    items = ["1", "2", "4", "8"]
    html = render(tmp_path, {"items": items}, headline=["lat"],
                  charts=[{"metric": "lat", "x": "items", "ideal": "linear"}])
    ((svg, cap),) = summary_charts(html)
    assert "ideal linear scaling from the smallest level" in cap
    assert "ideal" in legend(svg)
    # 0.5 s at one item → 4 s at eight on the reference: the axis holds it.
    assert float(re.search(r'data-y-max="([^"]+)"', svg).group(1)) >= 4.0  # type: ignore[union-attr]
    default = render(tmp_path / "d", {"items": items}, headline=["lat"])
    ((_svg, cap2),) = summary_charts(default)
    assert "ideal" not in cap2  # not drawn unless asked: items is not a topology count
