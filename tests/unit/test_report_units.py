"""Units scaled for reading (one unit per table, column or chart) and the axis numbers of
the hand-drawn charts."""

from __future__ import annotations

import pytest

from vbench.analysis.stats import summarize
from vbench.report.svg import domain, tick_texts, ticks
from vbench.report.units import choose


@pytest.mark.parametrize(("unit", "values", "shown", "first"), [
    ("ms", [0.004022, 0.0035], "µs", 4.022),
    ("ms", [0.2079, 0.6028], "µs", 207.9),
    ("ms", [12.0, 80.0], "ms", 12.0),
    ("ms", [1500.0, 2500.0], "s", 1.5),
    ("us", [0.5], "ns", 500.0),
    ("B", [2_694_340_608.0], "GiB", 2.5093),
    ("kB", [1_000_000.0], "MiB", 976.5625),
    ("MiB/s", [856.2], "MiB/s", 856.2),
    ("MiB/s", [8562.0], "GiB/s", 8.3613),
    ("Mbit/s", [25_000.0], "Gbit/s", 25.0),
    ("IO/s", [219_193.0], "k IO/s", 219.193),
    ("IO/s", [9_000.0], "IO/s", 9000.0),  # a count reads as it is below 10,000
    ("", [2.5e7], "M", 25.0),
    ("%", [1e5], "%", 1e5),  # never scaled
    ("IO/s", [0.0, 0.0], "IO/s", 0.0),  # nothing to go by
    # Issue 22: "0.05289 fraction" and "0 count" read as a percentage and a bare number.
    ("fraction", [0.05289], "%", 5.289),
    ("fraction", [2e5], "%", 2e7),  # a percentage is never prefixed
    ("count", [0.0], "", 0.0),
    ("count", [25_000.0], "k", 25.0),
    ("ratio", [0.1859], "", 0.1859),
])
def test_unit_chosen_from_the_typical_value(unit: str, values: list[float], shown: str,
                                            first: float) -> None:
    sc = choose(unit, values)
    assert sc.unit == shown
    assert sc.value(values[0]) == pytest.approx(first, rel=1e-4)


def test_a_summary_scales_every_figure_but_its_cv() -> None:
    s = summarize([0.004, 0.005, 0.006])
    out = choose("ms", [s.mean]).summary(s)
    assert out is not None and out.mean == pytest.approx(5.0)
    assert (out.min, out.max) == (pytest.approx(4.0), pytest.approx(6.0))
    assert out.ci_low == pytest.approx(s.ci_low * 1000)  # type: ignore[operator]
    assert out.cv == s.cv and out.n == 3


def test_axis_ticks_are_round_and_cover_the_values() -> None:
    assert ticks(*domain([0.3, 1.4, 2.0])) == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert tick_texts([0.0, 200.0, 400.0, 600.0, 800.0, 1000.0])[-1] == "1,000"
    assert tick_texts([0.0, 50_000.0, 100_000.0]) == ["0", "50k", "100k"]
    assert tick_texts([0.0, 2.5, 5.0]) == ["0", "2.5", "5.0"]
    lo, hi = domain([216.3, 219.2], zero=False)
    marks = ticks(lo, hi)
    assert marks[0] <= 216.3 and marks[-1] >= 219.2 and marks[0] > 0


def test_formatted_figures_read_fractions_as_percent_and_counts_bare() -> None:
    from vbench.report.data import fmt_mean_ci, fmt_range, fmt_value

    assert fmt_value(0.05289, "fraction") == "5.289 %"
    assert fmt_value(0.0, "count") == "0"
    assert fmt_value(None, "count") == "—"
    s = summarize([0.05, 0.06, 0.055])
    assert fmt_mean_ci(s, "fraction").endswith(" %") and fmt_range(s, "fraction") == "5.000–6.000 %"
    assert fmt_value(3.0, "IO/s") == "3.000 IO/s"
