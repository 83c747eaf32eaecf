"""Chart text a reader must be able to read: x labels of crowded levels (a find-max
search's 387, 400, 412, 425, 450 on an axis to 1,600) never overlap, and legend
entries of points that differ stay different (vcbench's 8 and 32 sessions)."""

from __future__ import annotations

import itertools
import re

from vbench.analysis.stats import summarize
from vbench.report.chartplan import ChartIds, Series, draw_series
from vbench.report.charts import Bar, bar_chart_svg
from vbench.report.charts_xy import Line, line_chart_svg
from vbench.report.ops_section import OpFigures, PointOps, ops_section
from vbench.report.svg import MAX_LABEL, SMALL, fitting_labels, text_width

FINDMAX_LEVELS = [50.0, 150.0, 250.0, 350.0, 387.0, 400.0, 412.0, 425.0, 450.0, 750.0,
                  1600.0]


def x_labels(svg: str) -> list[tuple[float, str]]:
    """(centre x, text) of the tick labels under the plot (font 9.5, centred)."""
    return [(float(x), t) for x, t in re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" font-size="9.5" '
        r'fill="#222222">([^<]*)</text>', svg)]


def test_crowded_level_labels_do_not_overlap() -> None:
    ys = [v * 0.99 if v <= 400 else 400.0 for v in FINDMAX_LEVELS]
    svg = line_chart_svg([Line("total_iops", FINDMAX_LEVELS, ys)], "IO/s", chart_id="c",
                         xlabel="rate_iops")
    labels = x_labels(svg)
    assert labels[0][1] == "50" and labels[-1][1] == "1600"
    for (x1, t1), (x2, t2) in itertools.pairwise(labels):
        room = (text_width(t1, SMALL) + text_width(t2, SMALL)) / 2
        assert x2 - x1 >= room, f"{t1!r} at {x1} overlaps {t2!r} at {x2}"
    # Every level keeps its tick mark, labelled or not.
    ticks = re.findall(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="\1" y2="[\d.]+" '
                       r'stroke="#666666" stroke-width="0.8"/>', svg)
    assert len(ticks) >= len(FINDMAX_LEVELS)


def test_spread_levels_are_all_labelled() -> None:
    xs = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    svg = line_chart_svg([Line("ops", xs, xs)], "ops/s", chart_id="c", xlabel="vms")
    assert [t for _, t in x_labels(svg)] == ["1", "2", "4", "8", "16", "32"]


def test_the_first_and_last_labels_win_over_crowded_middle_ones() -> None:
    keep = fitting_labels([0.0, 5.0, 10.0, 100.0], ["400", "412", "425", "1600"])
    assert keep == [True, False, False, True]
    assert fitting_labels([0.0, 3.0], ["400", "412"]) == [True, False]


# ------------------------------------------------------------------ legends

VCB_POINTS = [{"vcenter": vc, "sessions": n, "profile": vc}
              for vc in ("baseline", "candidate") for n in ("8", "32")]


def legend_texts(svg: str) -> list[str]:
    return re.findall(r'text-anchor="start" font-size="9.5" fill="#222222"[^>]*>([^<]*)<',
                      svg)


def _point_ops(point: int, title: str) -> PointOps:
    s = summarize([0.5 + point, 0.6 + point])
    ops = tuple(OpFigures(op, s, s, s, s, s, 0.0) for op in ("PowerOn", "CloneVm"))
    return PointOps(point, title, 2, {"latency": "s"}, ops, ())


def test_latency_per_operation_legend_tells_every_point_apart() -> None:
    titles = [", ".join(f"{k}={v}" for k, v in lab.items()) for lab in VCB_POINTS]
    points = [_point_ops(i, t) for i, t in enumerate(titles)]
    view = ops_section(points, ChartIds(), "range", dict(enumerate(VCB_POINTS)))
    assert view is not None
    texts = legend_texts(str(view["chart"]))
    # The legend's title names the factors once; the profile follows the vcenter level.
    assert texts == ["vcenter, sessions", "baseline, 8", "baseline, 32", "candidate, 8",
                     "candidate, 32"]


def test_a_legend_never_cuts_two_entries_into_the_same_text() -> None:
    names = ["vcenter=baseline, sessions=8, profile=baseline",
             "vcenter=baseline, sessions=32, profile=baseline"]
    svg = line_chart_svg([Line(n, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) for n in names],
                         "ops/s", chart_id="c")
    texts = legend_texts(svg)
    assert len(set(texts)) == 2 and all(len(t) <= MAX_LABEL for t in texts)


def test_curves_of_two_other_factors_name_them_in_the_legend_title() -> None:
    rows = [(lab, summarize([10.0 * int(lab["sessions"])] * 2)) for lab in VCB_POINTS]
    series = Series("vcbench.ops_per_s", "ops/s", "higher", rows)
    svg, _ = draw_series(series, ["vcenter", "sessions", "profile"], ChartIds(),
                         mode="range", x="sessions")
    assert legend_texts(svg) == ["vcenter", "baseline", "candidate"]


def test_bars_are_named_by_the_factors_telling_points_apart() -> None:
    rows = [(lab, summarize([0.9, 1.0])) for lab in VCB_POINTS]
    series = Series("vcbench.latency_avg", "s", "lower", rows)
    svg, _ = draw_series(series, ["vcenter", "sessions", "profile"], ChartIds(),
                         mode="range", prefer="bar")
    # Two factors left once the profile (which follows vcenter) is dropped: grouped bars.
    assert legend_texts(svg) == ["sessions", "8", "32"]
    assert "baseline / 8 / baseline" not in svg and "profile" not in svg


def test_the_answers_levels_are_labelled_before_their_neighbours() -> None:
    xs = [50.0, 375.0, 387.0, 400.0, 750.0]
    lines = [Line("total_iops", xs, [min(x, 400.0) for x in xs])]
    plain = [t for _, t in x_labels(line_chart_svg(lines, "IO/s", chart_id="a"))]
    assert "375" in plain and "387" not in plain  # left to right, 375 comes first
    marked = line_chart_svg(lines, "IO/s", chart_id="b", label_first=[387.0])
    assert [t for _, t in x_labels(marked)] == ["50", "387", "750"]


def test_a_bar_too_short_for_its_figure_carries_it_above() -> None:
    # CloudStone's response times against their limits: 14 ms bars under 500 ms.
    svg = bar_chart_svg([Bar("HomePage", 14.16, None, None), Bar("Login", 6.2, None, None)],
                        "rt_avg (ms)", chart_id="q", thresholds=[250.0, 500.0],
                        passed=[True, True])
    figures = re.findall(r'fill="#222222">([\d.,]+)</text>', svg)
    assert "14.2" in figures and "6.20" in figures
