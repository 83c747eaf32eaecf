"""The vdbench parser on real recorded outputs (tests/data/vdbench/PROVENANCE.md): both
shapes (raw I/O and file system), the flatfile read by column name, and the two files of
one run agreeing with each other."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from vbench.errors import ParseError
from vbench.parsers.base import get_parser
from vbench.parsers.vdbench import average_rows, parse_flatfile, parse_totals, samples

DATA = Path(__file__).resolve().parents[1] / "data" / "vdbench"
RUNS = ["sd-three-rates", "fs-nvme-raid5"]


def _read(run: str, name: str) -> str:
    return (DATA / run / name).read_text()


@pytest.mark.parametrize("run", RUNS)
def test_flatfile_average_rows_agree_with_totals(run: str) -> None:
    rows = parse_flatfile(_read(run, "flatfile.html"))
    totals = parse_totals(_read(run, "totals.html"))
    avgs = average_rows(rows)
    assert [a.run for a in avgs] == [t.run for t in totals]
    for a, t in zip(avgs, totals, strict=True):
        assert a.interval == t.interval
        # totals.html prints the same averages with fewer digits
        for col in ("rate", "resp"):
            assert a.values[col] == pytest.approx(t.values[col], rel=0.01, abs=0.001)
        assert a.values["mb/sec"] == pytest.approx(t.values["mb_per_sec"], rel=0.01, abs=0.005)


@pytest.mark.parametrize("run", RUNS)
def test_average_row_is_the_mean_of_the_intervals_it_names(run: str) -> None:
    rows = parse_flatfile(_read(run, "flatfile.html"))
    for avg in average_rows(rows):
        first, last = (int(x) for x in avg.interval.removeprefix("avg_").split("-"))
        rates = [r.values["rate"] for r in rows if r.run == avg.run and not r.is_average
                 and first <= int(r.interval) <= last]  # fmt: skip
        assert len(rates) == last - first + 1
        assert statistics.fmean(rates) == pytest.approx(avg.values["rate"], rel=1e-3)


def test_missing_values_stay_missing() -> None:
    rows = parse_flatfile(_read("sd-three-rates", "flatfile.html"))
    # This recording has 'n/a' for CPU in the intervals of its first run definition.
    first = [r for r in rows if r.run == "rd1" and not r.is_average]
    assert first and all(r.values["cpu_used"] is None for r in first)
    assert all(r.values["lunsize"] == 16.0 for r in rows)
    assert {r.values["compratio"] for r in rows} == {None}  # 'n/a' everywhere: not 0
    figures = {s.metric: s for s in samples(rows, "w1") if ("rd", "rd1") in s.labels}
    assert figures["iops"].unit == "1/s" and figures["iops"].guest == "w1"
    assert "read_rate" not in figures  # a file-system column: not in a raw-I/O run


def test_file_system_shape_has_its_own_columns() -> None:
    (total,) = parse_totals(_read("fs-nvme-raid5", "totals.html"))
    assert total.shape == "fs" and total.loops == ""
    assert total.values["read_pct"] == 100.0 and total.values["write_rate"] == 0.0
    (avg,) = average_rows(parse_flatfile(_read("fs-nvme-raid5", "flatfile.html")))
    assert avg.values["read_rate"] == avg.values["rate"]
    assert avg.text["timestamp"].startswith("04/05/2019-")


def test_totals_keep_the_for_loop_text() -> None:
    totals = parse_totals(_read("sd-three-rates", "totals.html"))
    assert {t.loops for t in totals} == {"threads=2"} and {t.shape for t in totals} == {"sd"}
    assert [t.values["rate"] for t in totals] == sorted(t.values["rate"] for t in totals)


def test_registered_for_vbench_parse_and_rejects_other_files() -> None:
    parser = get_parser("vdbench")
    rows = parser.parse_rows(_read("sd-three-rates", "totals.html"), "totals.html")
    assert [r["run"] for r in rows] == ["rd1", "rd2", "rd3"]
    flat = parser.parse_rows(_read("sd-three-rates", "flatfile.html"), "flatfile.html")
    assert len(flat) == len(parse_flatfile(_read("sd-three-rates", "flatfile.html")))
    with pytest.raises(ParseError, match=r"no run totals|no vdbench flatfile header"):
        parser.parse_rows("<pre>\nhello world\n", "x.html")
    text = _read("sd-three-rates", "flatfile.html").splitlines()
    broken = "\n".join([*text[:45], text[45].rsplit(None, 2)[0], *text[46:]])
    with pytest.raises(ParseError, match=r"x.html:46: \d+ values for \d+ columns"):
        parse_flatfile(broken, "x.html")
