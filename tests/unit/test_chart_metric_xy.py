"""The data and drawing of a chart with a metric on the x axis (IOPS vs latency, the
storage "hockey stick"): per point the two means, one line per level of the factors other
than the sweep, points missing a figure left out (never drawn at 0)."""

from __future__ import annotations

import pytest

from vbench.analysis.stats import summarize
from vbench.config.scenario import Chart
from vbench.report.chartplan import ChartIds, Series, explicit_charts, metric_xy


def _series(name: str, unit: str, rows: list[tuple[dict[str, str], list[float]]]) -> Series:
    return Series(name, unit, "higher", [(lab, summarize(v) if v else None) for lab, v in rows])


def _oio_sweep() -> tuple[Series, Series]:
    levels = ["1", "4", "16", "64"]
    workers = ["1", "2"]
    labels = [{"iodepth": o, "workers": w} for w in workers for o in levels]
    iops = [[100.0 * int(lab["iodepth"]) ** 0.5 * int(lab["workers"])] * 2 for lab in labels]
    lat = [[int(lab["iodepth"]) * 0.1 + 0.05 * i] for i, lab in enumerate(labels)]
    lat[2] = []  # a point whose latency is missing
    return (_series("total_iops", "1/s", list(zip(labels, iops, strict=True))),
            _series("read_lat_mean", "ms", list(zip(labels, lat, strict=True))))


def test_one_line_per_other_factor_ordered_by_x_missing_left_out() -> None:
    x, y = _oio_sweep()
    lines = metric_xy(x, y, ["iodepth", "workers"])
    assert [ln.name for ln in lines] == ["workers=1", "workers=2"]
    one, two = lines
    assert [lab["iodepth"] for lab in one.labels] == ["1", "4", "64"]  # 16 has no latency
    assert one.xs == sorted(one.xs) and two.xs == sorted(two.xs)
    for ln in lines:
        for xv, yv, lab in zip(ln.xs, ln.ys, ln.labels, strict=True):
            i = [r[0] for r in x.rows].index(lab)
            assert xv == x.rows[i][1].mean and yv == y.rows[i][1].mean  # type: ignore[union-attr]


def test_explicit_chart_with_x_metric_is_drawn_and_missing_x_reported() -> None:
    x, y = _oio_sweep()
    by_name = {"total_iops": x, "read_lat_mean": y}
    specs = [{"metric": "read_lat_mean", "x_metric": "total_iops"},
             {"metric": "read_lat_mean", "x_metric": "nope"}]
    charts, problems = explicit_charts(specs, by_name.get, ["iodepth", "workers"], ChartIds(),
                                       "range", "steady window")
    assert len(charts) == 1 and charts[0]["kind"] == "xy"
    assert "<svg" in str(charts[0]["svg"])
    assert "1 points without both figures left out" in charts[0]["caption"]
    assert problems == ["report.charts: no data for 'nope'; chart left out"]


def test_x_and_x_metric_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        Chart(metric="read_lat_mean", x="iodepth", x_metric="total_iops")


def test_a_figure_of_some_points_only_is_paired_by_point_not_by_position() -> None:
    # y is a derived figure (CPU cost per 1K IOPS) known at three of four points, listed in
    # another order than x: each dot pairs the two figures of one point.
    labels = [{"iodepth": o} for o in ("1", "4", "16", "64")]
    x = Series("total_iops", "1/s", "higher", [(lab, summarize([10.0 * (i + 1)]))
                                              for i, lab in enumerate(labels)],
               points=(0, 1, 2, 3))
    y = Series("cpu_per_kiops", "%", "lower",
               [(labels[3], summarize([4.0])), (labels[1], summarize([2.0])),
                (labels[0], summarize([1.0]))], points=(3, 1, 0))
    (line,) = metric_xy(x, y, ["iodepth"])
    assert list(zip(line.xs, line.ys, strict=True)) == [(10.0, 1.0), (20.0, 2.0), (40.0, 4.0)]
    charts, problems = explicit_charts([{"metric": "cpu_per_kiops", "x_metric": "total_iops"}],
                                       {"total_iops": x, "cpu_per_kiops": y}.get, ["iodepth"],
                                       ChartIds(), "range", "steady window")
    assert len(charts) == 1 and not problems
