"""sysstat / dstat parsers: every corpus file, exact values, time stamps, units."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.corpus import SHARED, need
from vbench.errors import ParseError
from vbench.parsers.sysstat import SysstatData, parse_sysstat, unit_of

CORPUS = SHARED / "sysstat"
FILES = {
    "sadf": "sysstat_sysstat__expected.sadf-j",
    "iostat_json": "sysstat_sysstat__expected.iostat-x-p-ALL-JSON",
    "iostat_groups": "sysstat_sysstat__expected.iostat-g-JSON",
    "iostat_text": "sysstat_sysstat__expected.iostat-x",
    "mpstat_all": "sysstat_sysstat__expected.mpstat-A-JSON",
    "pkb_iostat": "GoogleCloudPlatform_PerfKitBenchmarker__iostat_output.json",
    "pkb_mpstat": "GoogleCloudPlatform_PerfKitBenchmarker__mpstat_output.json",
    "pkb_sar": "GoogleCloudPlatform_PerfKitBenchmarker__sar_output.txt",
    "pkb_dstat": "GoogleCloudPlatform_PerfKitBenchmarker__dstat-result.csv",
}


def one(key: str) -> SysstatData:
    need(CORPUS)
    path = CORPUS / FILES[key]
    [data] = parse_sysstat(path.read_text(), str(path))
    return data


def value(df: pd.DataFrame, sample: int, obj: str, inst: str, counter: str) -> float:
    rows = df[(df["sample"] == sample) & (df["object"] == obj) & (df["instance"] == inst)
              & (df["counter"] == counter)]  # fmt: skip
    assert len(rows) == 1, (obj, inst, counter, len(rows))
    return float(rows["value"].iloc[0])


def test_every_corpus_file_parses() -> None:
    need(CORPUS)
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(FILES.values())
    for key in FILES:
        data = one(key)
        assert len(data.frame) > 0 and data.samples >= 1, key
        assert list(data.frame.columns) == [
            "sample", "time", "object", "instance", "counter", "value", "unit",
        ]  # fmt: skip


def test_sadf_all_activities() -> None:
    d = one("sadf")
    df = d.frame
    assert (d.host, d.tool, d.samples, d.cpus) == ("SYSSTAT.TEST", "sadf", 5, 9)
    assert value(df, 0, "cpu-load", "all", "usr") == 2.15
    assert value(df, 0, "cpu-load", "all", "idle") == 82.88
    assert value(df, 0, "queue", "", "ldavg-1") == 3.16
    assert value(df, 0, "queue", "", "runq-sz") == 3
    # 2019-04-18 13:20:19 UTC
    assert df[df["sample"] == 0]["time"].iloc[0] == 1555593619.0
    objects = set(df["object"])
    assert {"memory", "disk", "net-dev", "io-reads", "psi-cpu", "filesystems"} <= objects
    assert unit_of("memory", "memused") == "kB"
    assert set(df[df["object"] == "cpu-load"]["unit"]) == {"%"}


def test_iostat_json_without_stamps_keeps_sample_order() -> None:
    df = one("iostat_json").frame
    assert df["time"].isna().all()
    assert value(df, 0, "disk", "sda", "r_await") == 12.58
    assert value(df, 0, "avg-cpu", "", "nice") == 39.91
    assert set(df[df["counter"] == "r_await"]["unit"]) == {"ms"}
    assert set(df[df["counter"] == "rkB/s"]["unit"]) == {"kB/s"}


def test_iostat_text_matches_its_json_twin() -> None:
    text, js = one("iostat_text").frame, one("iostat_json").frame
    assert value(text, 0, "disk", "sda", "r_await") == value(js, 0, "disk", "sda", "r_await")
    assert value(text, 1, "disk", "sdr", "w_await") == 40.0
    assert value(text, 1, "avg-cpu", "", "%nice") == 12.50


def test_iostat_groups_name_the_group_without_its_space() -> None:
    df = one("iostat_groups").frame
    assert "disks" in set(df["instance"])
    assert set(df[df["counter"] == "MB_read/s"]["unit"]) == {"MB/s"}


def test_pkb_iostat_iso_stamp_with_offset() -> None:
    df = one("pkb_iostat").frame
    # 2024-03-14T17:53:14-0700 = 2024-03-15 00:53:14 UTC
    assert df["time"].iloc[0] == 1710463994.0


def test_mpstat_minus_one_is_all_and_interrupts_are_counters() -> None:
    d = one("pkb_mpstat")
    df = d.frame
    assert value(df, 0, "cpu-load", "all", "usr") == 50.01
    assert "time stamps carry no time zone: read as UTC" in d.notes
    assert df["time"].iloc[0] == 1621447265  # 2021-05-19 18:01:05
    mp = one("mpstat_all").frame
    assert len(mp[mp["object"] == "individual-interrupts"]) > 0


def test_sar_text_12_hour_clock() -> None:
    d = one("pkb_sar")
    df = d.frame
    assert d.host == "ip-10-0-0-97" and d.samples == 10  # the Average: line is no sample
    assert value(df, 0, "cpu", "all", "%user") == 99.85
    # 06:42:39 PM on 05/21/2019
    assert df[df["sample"] == 0]["time"].iloc[0] == 1558464159
    assert df[df["sample"] == 9]["time"].iloc[0] == 1558464159 + 270


def test_dstat_groups_become_objects() -> None:
    d = one("pkb_dstat")
    df = d.frame
    assert d.host == "pkb-d43f64f0-0"
    assert value(df, 0, "total cpu usage", "", "usr") == 6.4
    assert df["time"].iloc[0] == 1475708693.291


def test_unknown_text_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not a sysstat"):
        parse_sysstat("hello\nworld\n", "x.txt")
    with pytest.raises(ParseError, match="not sysstat JSON"):
        parse_sysstat('{"other": 1}', "x.json")
