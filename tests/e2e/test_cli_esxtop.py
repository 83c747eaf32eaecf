"""`vbench parse esxtop` and `vbench esxtop counters` on the real corpus captures."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.corpus import SHARED, need
from tests.e2e.helpers import vbench

CORPUS = SHARED / "esxtop"
RAW = CORPUS / "rach-sharp_esxtopd__esxtop-data.csv"
TIME_ONLY = CORPUS / "gsliu_VisualEsxtopOnline__upload_1011_origincsv.csv"


@pytest.fixture(autouse=True)
def _corpus() -> None:
    need(CORPUS)


def test_parse_esxtop_csv_selects_patterns_and_sets() -> None:
    res = vbench("parse", "esxtop", str(RAW), "--select", "Physical Cpu(_Total)\\% Util Time",
                 "--select", "power")  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    util = [r for r in rows if r["counter"] == "% Util Time"]
    assert [r["value"] for r in util] == ["8.95", "9.38", "8.48"]
    assert util[0]["time"] == "2018-04-24T10:49:12.000Z" and util[0]["unit"] == "%"
    assert {r["object"] for r in rows} == {"Physical Cpu", "Power", "PCPU Power State"}
    assert "note: column 17398: unlabelled cell '-'" in res.stderr


def test_parse_esxtop_json_and_parquet(tmp_path: Path) -> None:
    res = vbench("parse", "esxtop", str(TIME_ONLY), "--format", "json", "--date", "2015-03-26")
    assert res.returncode == 0, res.stderr
    recs = json.loads(res.stdout)
    assert len(recs) == 100 * 6 and recs[0]["host"] == "proma-2n-dhcp60.eng.vmware.com"
    assert "note: 4400 repeated samples dropped" in res.stderr
    out = tmp_path / "x.parquet"
    res = vbench("parse", "esxtop", str(RAW), "--select", "vcpu", "--format", "parquet",
                 "-o", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr
    table = pq.read_table(out)
    assert table.num_rows == 3 * 485 * 12 and "records" in res.stderr
    res = vbench("parse", "esxtop", str(RAW), "--format", "parquet")
    assert res.returncode == 2 and "needs -o" in res.stderr


def test_parse_esxtop_refuses_unknown_names_and_spreadsheet_stamps() -> None:
    res = vbench("parse", "esxtop", str(RAW), "--select", "Group Cpu(*)\\% Redy")
    assert res.returncode == 2
    assert "no counter '% Redy' in Group Cpu (closest: % Ready" in res.stderr
    res = vbench("parse", "esxtop", str(TIME_ONLY))
    assert res.returncode == 2 and "--date YYYY-MM-DD" in res.stderr


def test_esxtop_counters_lists_objects_with_column_counts() -> None:
    res = vbench("esxtop", "counters", str(RAW))
    assert res.returncode == 0, res.stderr
    assert "host localhost.home; 17427 of 17427 columns; PDH-CSV 4.0 (UTC)" in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("Vcpu "))
    assert line.split()[-2:] == ["485", "11640"]
    res = vbench("esxtop", "counters", str(RAW), "--select", "virtual-disk", "--json")
    doc = json.loads(res.stdout)
    [vd] = doc["objects"]
    assert (vd["object"], vd["instances"], vd["columns"]) == ("Virtual Disk", 13, 130)
    assert {"counter": "Average MilliSec/Read", "columns": 13, "unit": "ms"} in vd["counters"]
