"""DVD Store, iperf3 and netperf parsers on every corpus file and on the shapes each prints."""

from __future__ import annotations

import json

import pytest

from tests.corpus import SHARED, need
from tests.e2e.helpers import vbench
from vbench.errors import ParseError
from vbench.parsers.dvdstore import parse_dvdstore, unwrap
from vbench.parsers.iperf3 import parse_iperf3
from vbench.parsers.netperf import parse_netperf

DS = SHARED / "dvdstore"
NET = SHARED / "netperf_iperf3"
DS_DOC = "dvdstore_ds21__ds2driver_doc.txt"
IPERF_JSON = "kfirtoledo_CloudPilot_Project__iperf-3.9_baseline_host_target_direct_12.json"
IPERF_TEXT = "kfirtoledo_CloudPilot_Project__iperf3_text_bw_proxy_target_direct.txt"
PKB_TXT = "GoogleCloudPlatform_PerfKitBenchmarker__netperf_results.txt"
PKB_JSON = "GoogleCloudPlatform_PerfKitBenchmarker__netperf_results.json"
PKB_MULTI = "GoogleCloudPlatform_PerfKitBenchmarker__netperf_results_multistreams.json"
CLOUDHARMONY = "GoogleCloudPlatform_PerfKitBenchmarker__cloudharmony_iperf.csv"


# ---------------------------------------------------------------- DVD Store


def test_dvdstore_console_run_steady_window_and_wrapped_final_line() -> None:
    r = parse_dvdstore(need(DS / DS_DOC).read_text(), DS_DOC)
    assert r.stats_reset and r.run_over
    assert len(r.intervals) == 12 and len(r.steady) == 6
    assert [i.opm for i in r.steady] == [118, 130, 139, 150, 145, 147]
    assert r.steady[0].rollbacks == 2 and r.steady[0].rollback_pct == 10.0
    f = r.final
    assert f is not None  # three physical lines in the capture
    assert (f.et, f.n_overall, f.opm, f.rt_tot_lastn_max_ms, f.rt_tot_avg_ms) == (
        61.0, 150, 147, 1205, 137)
    assert f.counts == {"login": 121, "newcust": 29, "browse": 403, "purchase": 150}
    assert f.avg_ms == {"login": 33, "newcust": 21, "browse": 9, "purchase": 80}
    assert f.n_rollbacks == 5 and f.rollback_rate_pct == 3.3
    assert (r.purchases_from_start, r.rollbacks_from_start) == (299, 6)
    assert r.opm() == 147 and r.rt_avg_ms() == 137 and r.rt_max_ms() == 1205
    assert r.parameters["n_threads"] == "1" and r.parameters["target"] == "rhel32"


def test_dvdstore_wrap_inside_a_token_is_glued_back() -> None:
    text = (
        "et=   10.2 n_overall=4169 opm=246\n"
        "34 rt_tot_lastn_max_msec=130 rt_tot_a\n"
        "vg_msec=57 rt_tot_sampled=57 rollbacks: n=83 %=  2.0\n"
        "Stats reset\n"
        "et=   10.0 n_overall=4000 opm=24000 rt_tot_lastn_max_msec=140 rt_tot_avg_msec=60"
        " rollbacks: n=80 %=  2.0\n"
        "Final (11/02/2021 10:00:00 AM): et=   60.0 n_overall=24000 opm=24000 "
        "rt_tot_lastn_max=150 rt_tot_avg=58 n_login_overall=20000\n"
        "n_purchase_overall=24000 rt_login_avg_msec=3 rt_purchase_avg_msec=20 "
        "n_rollbacks_overall=480 rollback_rate =   2.0%\n"
        "Controller: all threads stopped, exiting; n_purchase_from_start= 30000 "
        "n_rollbacks_from_start= 600\n"
    )
    r = parse_dvdstore(text)
    first = r.intervals[0]
    assert (first.opm, first.rt_tot_avg_ms, first.rollbacks, first.steady) == (24634, 57, 83, False)
    assert r.final is not None and r.final.counts["purchase"] == 24000
    assert r.final.rollback_rate_pct == 2.0 and r.rollbacks_from_start == 600
    assert r.rt_max_ms() == 150


def test_dvdstore_value_then_key_without_space_at_the_wrap() -> None:
    lines = unwrap("Final: et=1.0 n_overall=5 opm=300 rt_tot_lastn_max=9 rt_tot_avg=4\n"
                   "n_rollbacks_overall=0 rollback_rate = 0.0%\n")
    assert lines[0].endswith("rt_tot_avg=4 n_rollbacks_overall=0 rollback_rate = 0.0%")


def test_dvdstore_run_cut_short_keeps_steady_lines_without_final() -> None:
    r = parse_dvdstore("Stats reset\net= 10.0 n_overall=10 opm=60 rt_tot_lastn_max_msec=5 "
                       "rt_tot_avg_msec=3 rollbacks: n=1 %= 10.0\n")
    assert r.final is None and r.opm() == 60 and r.rollback_rate_pct() == 10.0


def test_dvdstore_rejects_other_text() -> None:
    with pytest.raises(ParseError, match="not DVD Store"):
        parse_dvdstore("hello\nworld\n", "x.txt")


# ---------------------------------------------------------------- iperf3


def test_iperf3_json_corpus_omitted_intervals_cpu_and_retransmits() -> None:
    r = parse_iperf3(need(NET / IPERF_JSON).read_text(), IPERF_JSON)
    assert (r.format, r.protocol, r.streams, r.blksize, r.omit, r.duration) == (
        "json", "TCP", 1, 131072, 3, 10)
    assert len(r.intervals) == 13 and sum(i.omitted for i in r.intervals) == 3
    d = r.direction("forward")
    assert d is not None and d.retransmits == 1033
    assert d.gbps == pytest.approx(46234426.36738679 / 1e9)
    assert d.packet_rate is None  # TCP: not guessed
    assert r.cpu["host_total"] == pytest.approx(4.28325822698527)
    assert r.cpu["remote_total"] == pytest.approx(1.5123057718963708)


def test_iperf3_text_corpus_summary_and_omitted_rows() -> None:
    r = parse_iperf3(need(NET / IPERF_TEXT).read_text(), IPERF_TEXT)
    d = r.directions[0]
    assert r.format == "text" and d.retransmits == 46
    assert d.sent_bps == 359e6 and d.received_bps == 358e6
    assert sum(i.omitted for i in r.intervals) == 3 and r.omit == 3


def test_iperf3_rejects_the_cloudharmony_summary_csv() -> None:
    with pytest.raises(ParseError, match="CloudHarmony"):
        parse_iperf3(need(NET / CLOUDHARMONY).read_text(), CLOUDHARMONY)


def test_iperf3_error_document_is_reported() -> None:
    r = parse_iperf3('{"start": {}, "intervals": [], "end": {}, '
                     '"error": "unable to connect to server: Connection refused"}')
    assert r.error is not None and "Connection refused" in r.error


# ---------------------------------------------------------------- netperf


def test_netperf_wrapped_csv_header_and_histogram() -> None:
    [r] = parse_netperf(need(NET / PKB_TXT).read_text(), PKB_TXT)
    assert r.test == "UDP REQUEST/RESPONSE" and r.units == "Trans/s"
    assert r.throughput == 2217.06
    assert (r.number("P50_LATENCY"), r.number("P90_LATENCY"), r.number("P99_LATENCY")) == (
        442, 487, 589)
    assert r.number("MAX_LATENCY") == 9688 and r.number("THROUGHPUT_CONFID") == -1.0


def test_netperf_capture_lists() -> None:
    results = parse_netperf(need(NET / PKB_JSON).read_text(), PKB_JSON)
    assert len(results) == 10
    assert results[4].test == "TCP STREAM" and results[4].gbps() == pytest.approx(1.18794)
    assert results[0].gbps() is None  # Trans/s is not a bit rate
    # The last four captures hold 13 values under 12 titles: kept, and said so.
    assert results[6].notes and results[6].values["COLUMN_13"] == -1.0
    multi = parse_netperf(need(NET / PKB_MULTI).read_text(), PKB_MULTI)
    assert [m.gbps() for m in multi] == [1.0, 2.0, 3.0, 4.0]
    assert multi[0].number("TRANSPORT_MSS") == 1408


def test_netperf_keyval_selectors() -> None:
    [r] = parse_netperf("MIGRATED TCP STREAM TEST from 0.0.0.0 () port 0 AF_INET to 127.0.0.1\n"
                        "THROUGHPUT=9417.22\nTHROUGHPUT_UNITS=10^6bits/s\nLOCAL_CPU_UTIL=12.50\n"
                        "REMOTE_CPU_UTIL=-1.00\nP99_LATENCY=64\nPROTOCOL=TCP\n")
    assert r.format == "keyval" and r.test == "TCP STREAM"
    assert r.gbps() == pytest.approx(9.41722) and r.number("LOCAL_CPU_UTIL") == 12.5
    assert r.values["PROTOCOL"] == "TCP"


def test_netperf_header_longer_than_values_is_an_error() -> None:
    with pytest.raises(ParseError, match="header names 3 columns"):
        parse_netperf("Throughput,Throughput Units,Elapsed Time (sec)\n10.0,10^6bits/s\n")


@pytest.mark.parametrize("tool,name", [("dvdstore", DS_DOC), ("iperf3", IPERF_JSON),
                                       ("netperf", PKB_JSON)])
def test_parse_command_reads_each_corpus_file(tool: str, name: str) -> None:
    path = need((DS if tool == "dvdstore" else NET) / name)
    done = vbench("parse", tool, str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)
