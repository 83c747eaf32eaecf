"""esxtop batch CSV reader: every corpus capture, each quirk, selection, size behaviour."""

from __future__ import annotations

import csv
import gzip
import io
import tracemalloc
import zlib
from datetime import date
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bench.esxtop_gen import widen
from tests.corpus import SHARED, need
from vbench.errors import ConfigError, ParseError
from vbench.parsers.esxtop import EsxtopReader, write_parquet
from vbench.parsers.esxtop.csvfile import split_cells

CORPUS = SHARED / "esxtop"
RAW = "rach-sharp_esxtopd__esxtop-data.csv"
TIME_ONLY = "gsliu_VisualEsxtopOnline__upload_1011_origincsv.csv"
MINUTES = "gsliu_VisualEsxtopOnline__upload_1000_origincsvfile.csv"


def corpus(name: str) -> Path:
    need(CORPUS)
    return CORPUS / name


def reference_values(path: Path, ncols: int, rows: int | None = None) -> np.ndarray:
    """Rows split cell by cell (the slow, obviously right way)."""
    lines = path.read_bytes().decode("latin-1").splitlines()[1:][:rows]
    out = []
    for line in lines:
        if not line.strip():
            continue
        cells, _ = split_cells(line)
        row = [c.text.strip() for c in cells[1 : ncols + 1]]
        out.append([float(v) if v else np.nan for v in row])
    return np.array(out)


# ------------------------------------------------------------------ the raw corpus capture


def test_raw_capture_reads_every_column_with_glued_power_state_fragments() -> None:
    with EsxtopReader(corpus(RAW)) as r:
        batch = r.read_all()
        # A time stamp and 17,426 counter cells by plain CSV rules, plus the unquoted
        # fragment esxtop glued to the next cell without a separator: 17,427 columns.
        assert len(r.header.columns) == 17427
        assert batch.values.shape == (3, 17427)
        names = [c.name for c in r.header.columns]
        glued = names.index("PCPU Power State(PCPU 0)\\-")
        assert names[glued + 1] == "PCPU Power State(PCPU 1)\\%C-State C0"
        assert batch.values[0, glued] == pytest.approx(73.1)
        assert batch.values[0, glued + 1] == pytest.approx(8.93)
        assert batch.values[2, -1] == pytest.approx(73.9)  # the fragment after the trailing comma
        assert any("glued to the next cell" in n for n in r.notes)
    assert np.array_equal(batch.values, reference_values(corpus(RAW), 17427), equal_nan=True)


def test_raw_capture_times_host_and_instances_with_colons() -> None:
    with EsxtopReader(corpus(RAW), ["Vcpu(1:system:65537:idle1)\\% Used"]) as r:
        batch = r.read_all()
        col = r.columns[0]
    assert (col.host, col.object, col.instance, col.counter) == (
        "localhost.home", "Vcpu", "1:system:65537:idle1", "% Used",
    )  # fmt: skip
    # "04/24/2018 10:49:12" in (UTC): 5 s apart.
    assert batch.times[0] == 1524566952.0
    assert list(np.diff(batch.times)) == [5.0, 5.0]


def test_selection_by_sets_and_patterns() -> None:
    with EsxtopReader(corpus(RAW), ["Physical Cpu(_Total)\\% Util Time", "virtual-disk"]) as r:
        names = {c.name for c in r.columns}
        batch = r.read_all()
    assert "Physical Cpu(_Total)\\% Util Time" in names
    assert "Virtual Disk(hermes:scsi0:0)\\Average MilliSec/Read" in names
    assert all(c.object in ("Physical Cpu", "Virtual Disk") for c in r.columns)
    assert batch.values.shape == (3, len(names)) and len(names) == 1 + 130
    util = [c.name for c in r.columns].index("Physical Cpu(_Total)\\% Util Time")
    assert list(batch.values[:, util]) == [8.95, 9.38, 8.48]


def test_group_pattern_matches_instance_by_vm_name() -> None:
    pats = ["Group Cpu(*:hermes)\\% Ready", "group cpu(*:HERMES)\\% run"]
    with EsxtopReader(corpus(RAW), pats) as r:
        got = sorted(c.name for c in r.columns)
    assert got == [c for c in got if c.startswith("Group Cpu(") and ":hermes)" in c]
    assert {c.split("\\")[-1] for c in got} == {"% Ready", "% Run"}


def test_unknown_pattern_is_a_validation_error_with_the_closest_names() -> None:
    with pytest.raises(ConfigError) as err:
        EsxtopReader(corpus(RAW), ["Physcal Cpu(_Total)\\% Util Time"])
    assert "no object 'Physcal Cpu'" in str(err.value) and "Physical Cpu" in str(err.value)
    with pytest.raises(ConfigError) as err:
        EsxtopReader(corpus(RAW), ["Virtual Disk(*)\\Average Guest MilliSec/Read"])
    assert "Average MilliSec/Read" in str(err.value)
    with pytest.raises(ConfigError) as err:
        EsxtopReader(corpus(RAW), ["cpuu"])
    assert "closest: cpu" in str(err.value)


def test_unmatched_pattern_becomes_a_note_when_not_required() -> None:
    with EsxtopReader(corpus(RAW), ["cpu", "Group Cpu(*:novm)\\% Ready"], require_match=False) as r:
        assert r.columns
        assert any("novm" in n and "matches no column" in n for n in r.notes)


# ------------------------------------------------------------------ spreadsheet re-saves


def test_time_only_capture_is_rejected_without_a_date() -> None:
    with pytest.raises(ParseError, match=r"no date.*--date"):
        EsxtopReader(corpus(TIME_ONLY)).read_all()


def test_time_only_capture_with_a_date_reads_and_drops_repeated_blocks() -> None:
    with EsxtopReader(corpus(TIME_ONLY), day=date(2015, 3, 26)) as r:
        batch = r.read_all()
        notes = " ".join(r.notes)
    # CR-only lines, no quotes, and one 100-sample block repeated 45 times.
    assert "CR only" in notes and "not quoted" in notes
    assert "4400 repeated samples dropped" in notes
    assert batch.values.shape == (100, 6)
    assert batch.times[0] == 1427409746.0  # 2015-03-26 22:42:26 UTC
    assert np.all(np.diff(batch.times) > 0)
    assert batch.values[0, 0] == 24.41


def test_minute_stamps_are_rejected_unless_spread() -> None:
    with pytest.raises(ParseError, match=r"no seconds.*--spread-minutes"):
        EsxtopReader(corpus(MINUTES)).read_all()


def test_spread_minute_stamps_land_within_an_interval_of_the_true_times() -> None:
    # The two re-saves hold the same capture: one kept the seconds, one kept the date.
    with EsxtopReader(corpus(MINUTES), spread_minutes=True) as r:
        spread = r.read_all()
        assert "CRLF" in " ".join(r.notes)
    with EsxtopReader(corpus(TIME_ONLY), day=date(2015, 3, 26)) as r:
        exact = r.read_all()
    assert spread.values.shape == (514, 11)
    assert np.array_equal(spread.values[:100, 0], exact.values[:, 0])
    assert np.all(np.diff(spread.times) > 0)
    assert np.max(np.abs(spread.times[:100] - exact.times)) < 5.5


def test_time_only_stamps_cross_midnight(tmp_path: Path) -> None:
    f = tmp_path / "midnight.csv"
    f.write_bytes(
        b"(PDH-CSV 4.0) (UTC)(0),\\\\h\\Memory\\Free MBytes\r23:59:55,1\r23:59:59,2\r00:00:04,3\r"
    )
    with EsxtopReader(f, day=date(2020, 1, 1)) as r:
        times = r.read_all().times
    assert list(np.diff(times)) == [4.0, 5.0]


# ------------------------------------------------------------------ cut and broken input


def test_truncated_last_line_is_dropped_with_a_note(tmp_path: Path) -> None:
    raw = corpus(RAW).read_bytes()
    cut = tmp_path / "cut.csv"
    cut.write_bytes(raw[: len(raw) - 50_000])  # esxtop killed mid-line
    with EsxtopReader(cut, ["cpu"]) as r:
        batch = r.read_all()
        assert len(batch) == 2
        assert any("cut short" in n for n in r.notes)


def test_gzip_capture_cut_mid_stream_reads_up_to_the_cut(tmp_path: Path) -> None:
    # gzip on the host flushes line by line; killing it cuts the stream inside line 4.
    lines = corpus(RAW).read_bytes().splitlines(keepends=True)
    buf = io.BytesIO()
    ends = []
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz:
        for line in lines:
            gz.write(line)
            gz.flush(zlib.Z_SYNC_FLUSH)
            ends.append(buf.tell())
    path = tmp_path / "esxtop.csv.gz"
    path.write_bytes(buf.getvalue()[: (ends[2] + ends[3]) // 2])
    with EsxtopReader(path, ["Physical Cpu(*)\\*"]) as r:
        batch = r.read_all()
        notes = " ".join(r.notes)
    assert len(batch) == 2 and "compressed stream ends early" in notes
    assert "cut short" in notes


def test_empty_values_are_missing_not_zero(tmp_path: Path) -> None:
    f = tmp_path / "empty.csv"
    f.write_text(
        '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Memory\\Free MBytes","\\\\h\\Memory\\Kernel MBytes",\n'
        '"01/02/2020 03:04:05","","7",\n'
        '"01/02/2020 03:04:10","5","",\n'
    )
    with EsxtopReader(f) as r:
        recs = list(r.records())
        assert "trailing comma" in " ".join(r.notes)
    assert [x["value"] for x in recs] == [None, 7.0, 5.0, None]


def test_not_an_esxtop_file_is_a_parse_error(tmp_path: Path) -> None:
    f = tmp_path / "other.csv"
    f.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ParseError, match="not an esxtop batch file"):
        EsxtopReader(f)


def test_two_captures_concatenated_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "two.csv"
    head = '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Memory\\Free MBytes"\n'
    f.write_text(head + '"01/02/2020 03:04:10","5"\n"01/02/2020 03:04:05","6"\n')
    with pytest.raises(ParseError, match="time goes back"):
        EsxtopReader(f).read_all()


# ------------------------------------------------------------------ generated large inputs


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 21,000-column capture grown from the real header (~6 MB, 40 samples)."""
    dest = tmp_path_factory.mktemp("esxtop") / "wide.csv"
    widen(corpus(RAW), dest, columns=21000, rows=40, start=1.6e9)
    return dest


def test_widened_capture_matches_a_cell_by_cell_read(wide: Path) -> None:
    with EsxtopReader(wide, block_bytes=1 << 20) as r:
        batch = r.read_all()
        n = len(r.header.columns)
        nested = [c for c in r.header.columns if c.instance.endswith("(w1)")]
    assert n == 21000 and batch.values.shape == (40, 21000)
    assert nested and nested[0].instance.count("(") == 1  # "<instance> (w1)" kept whole
    # The widened rows cycle through the three real ones: six rows cover every variant.
    assert np.array_equal(batch.values[:6], reference_values(wide, n, rows=6), equal_nan=True)
    assert list(np.diff(batch.times)) == [5.0] * 39


def _peak_reading(path: Path) -> tuple[int, int, int]:
    tracemalloc.start()
    try:
        with EsxtopReader(path, ["Physical Cpu(*)\\*", "Group Cpu(*)\\% Ready"],
                          block_bytes=1 << 20) as r:  # fmt: skip
            rows = sum(len(b) for b in r.batches())
            biggest = r.max_buffer
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return rows, biggest, peak


def test_memory_is_bounded_by_the_block_not_the_file(wide: Path, tmp_path: Path) -> None:
    # The same 21,000 columns, ten times the samples: the peak must not follow the size.
    longer = widen(corpus(RAW), tmp_path / "long.csv", columns=21000, rows=400, start=1.6e9)
    rows, biggest, peak = _peak_reading(wide)
    rows_long, biggest_long, peak_long = _peak_reading(longer.path)
    assert (rows, rows_long) == (40, 400)
    assert longer.bytes > 50 * (1 << 20)
    assert max(biggest, biggest_long) < 3 * (1 << 20)
    assert peak_long < 1.25 * peak, f"peak {peak_long} B for 400 samples, {peak} B for 40"
    assert peak_long < longer.bytes / 3


def test_selected_columns_agree_between_block_sizes(wide: Path) -> None:
    sel = ["Vcpu(*)\\% Ready", "PCPU Power State(*)\\*"]
    with EsxtopReader(wide, sel, block_bytes=4096) as small, EsxtopReader(wide, sel) as big:
        a, b = small.read_all(), big.read_all()
    assert a.values.shape[1] > 100
    assert np.array_equal(a.values, b.values, equal_nan=True)
    assert np.array_equal(a.times, b.times)


def test_parquet_holds_the_tidy_records(wide: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    with EsxtopReader(wide, ["Physical Cpu(_Total)\\% Util Time", "Vcpu(*:hermes*)\\% Ready"]) as r:
        rows = write_parquet(r, out)
        k = len(r.columns)
    table = pq.read_table(out).to_pandas()
    assert rows == len(table) == 40 * k
    assert list(table.columns) == ["time", "host", "object", "instance", "counter", "value", "unit"]
    util = table[table["counter"] == "% Util Time"]
    assert len(util) == 40 and set(util["unit"]) == {"%"}
    assert str(table["time"].dt.tz) == "UTC"
    assert table["time"].iloc[0].timestamp() == 1.6e9


def test_unquoted_cells_with_glued_fragment(tmp_path: Path) -> None:
    f = tmp_path / "glued.csv"
    f.write_text(
        '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\PCPU Power State(PCPU 0)\\%T-State T7",   -'
        '"\\\\h\\PCPU Power State(PCPU 1)\\%C-State C0",\n'
        '"01/02/2020 03:04:05","0.00",    73.1"8.93",\n'
    )
    with EsxtopReader(f) as r:
        rec = {x["counter"]: x["value"] for x in r.records()}
    assert rec == {"%T-State T7": 0.0, "-": 73.1, "%C-State C0": 8.93}


def test_csv_module_agrees_on_plain_cells() -> None:
    # Sanity check of the reference itself on a line without quirks.
    line = '"a","b,c",d'
    cells, notes = split_cells(line)
    assert [c.text for c in cells] == next(csv.reader(io.StringIO(line))) and not notes
