"""Chart text a reader must be able to read: x labels of crowded levels (a find-max
search's 387, 400, 412, 425, 450 on an axis to 1,600) never overlap, and legend
entries of points that differ stay different (vcbench's 8 and 32 sessions)."""

from __future__ import annotations

import itertools
import re

from vbench.report.charts_xy import Line, line_chart_svg
from vbench.report.svg import SMALL, fitting_labels, text_width

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
