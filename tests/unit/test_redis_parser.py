"""redis-benchmark and memtier parsers on the corpus and on the shapes each version prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.corpus import SHARED, need
from vbench.cli import cli, main
from vbench.errors import ParseError
from vbench.parsers.memtier import parse_memtier
from vbench.parsers.redis_benchmark import (
    RedisBenchTest,
    combine_iterations,
    parse_redis_benchmark,
)

CORPUS = SHARED / "redis_memtier"

# The 7.x text report as redis-benchmark prints it (progress redrawn with CRs).
TEXT_7 = (
    "\rSET: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r"
    "                                                 \r"
    "====== SET ======\n"
    "  2000 requests completed in 0.04 seconds\n"
    "  10 parallel clients\n"
    "  1 bytes payload\n"
    "  keep alive: 1\n"
    '  host configuration "save": \n'
    '  host configuration "appendonly": no\n'
    "  multi-thread: no\n\n"
    "Latency by percentile distribution:\n"
    "0.000% <= 0.039 milliseconds (cumulative count 1)\n"
    "100.000% <= 1.967 milliseconds (cumulative count 2000)\n\n"
    "Summary:\n"
    "  throughput summary: 55555.56 requests per second\n"
    "  latency summary (msec):\n"
    "          avg       min       p50       p95       p99       max\n"
    "        0.121     0.032     0.111     0.167     0.279     1.967\n"
    "\r"
    "====== LRANGE_100 (first 100 elements) ======\n"
    "  1000 requests completed in 0.05 seconds\n"
    "Summary:\n"
    "  throughput summary: 20000.00 requests per second\n"
    "  latency summary (msec):\n"
    "          avg       min       p50       p95       p99       max\n"
    "        0.500     0.100     0.400     0.900     1.100     2.000\n"
)
# Redis <= 6.0: no latency summary, a bare "requests per second" line.
TEXT_OLD = (
    "====== GET ======\n"
    "  100000 requests completed in 0.88 seconds\n"
    "  50 parallel clients\n"
    "  3 bytes payload\n"
    "  keep alive: 1\n\n"
    "99.97% <= 1 milliseconds\n"
    "100.00% <= 1 milliseconds\n"
    "113507.38 requests per second\n\n"
)
QUIET = (
    "\rSET: rps=50286.9 (overall: 50286.9) avg_msec=0.875 (overall: 0.875)\r"
    "SET: 32000.00 requests per second, p50=0.623 msec                    \n"
    "LRANGE_300 (first 300 elements): 9000.50 requests per second\n"
)
LEGACY_CSV = (
    '"PING_INLINE","82712.98"\n"SET","81433.22"\n"LPUSH (needed to benchmark LRANGE)","79000"\n'
)
HEADER = (
    '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",'
    '"p99_latency_ms","max_latency_ms"\n'
)


def _corpus(name: str) -> str:
    path = need(CORPUS / name)
    return path.read_text(encoding="utf-8")


def test_csv_7x_corpus_with_bom_and_no_final_newline() -> None:
    text = _corpus("microsoft_VirtualClient__RedisBenchmarkResults.txt")
    assert text.startswith("\ufeff") and not text.endswith("\n")
    result = parse_redis_benchmark(text, "corpus")
    assert result.format == "csv"
    assert len(result.tests) == 20
    first, last = result.tests[0], result.tests[-1]
    assert first.test == "PING_INLINE" and first.rps == 3154.38
    assert (last.test, last.command) == ("MSET (10 keys)", "MSET")
    assert (last.rps, last.avg_ms, last.min_ms, last.p50_ms) == (3040.53, 16.313, 0.488, 15.927)
    assert (last.p95_ms, last.p99_ms, last.max_ms) == (27.967, 35.903, 59.903)
    names = result.names()
    assert "LRANGE_500 (first 450 elements)" in names
    assert "LPUSH (needed to benchmark LRANGE)" in names
    assert result.by_test("LRANGE_100")[0].rps == 3115.85


def test_csv_legacy_two_columns() -> None:
    result = parse_redis_benchmark(LEGACY_CSV, "old")
    assert result.format == "csv-legacy"
    assert [(t.test, t.rps) for t in result.tests] == [
        ("PING_INLINE", 82712.98),
        ("SET", 81433.22),
        ("LPUSH (needed to benchmark LRANGE)", 79000.0),
    ]
    assert result.tests[1].p50_ms is None  # not in this format: missing, not 0


def test_text_report_7x_with_progress_lines() -> None:
    result = parse_redis_benchmark(TEXT_7, "text")
    assert result.format == "text"
    s, lr = result.tests
    assert (s.test, s.rps, s.requests, s.seconds, s.clients, s.payload_bytes) == (
        "SET", 55555.56, 2000, 0.04, 10, 1,
    )  # fmt: skip
    assert (s.avg_ms, s.min_ms, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms) == (
        0.121, 0.032, 0.111, 0.167, 0.279, 1.967,
    )  # fmt: skip
    assert lr.test == "LRANGE_100 (first 100 elements)" and lr.rps == 20000.0


def test_text_report_before_6_2() -> None:
    (t,) = parse_redis_benchmark(TEXT_OLD, "old text").tests
    assert (t.test, t.rps, t.requests, t.clients, t.payload_bytes) == (
        "GET", 113507.38, 100000, 50, 3,
    )  # fmt: skip
    assert t.avg_ms is None


def test_quiet_lines_with_and_without_p50() -> None:
    result = parse_redis_benchmark(QUIET, "quiet")
    assert result.format == "quiet"
    assert [(t.test, t.rps, t.p50_ms) for t in result.tests] == [
        ("SET", 32000.0, 0.623), ("LRANGE_300 (first 300 elements)", 9000.5, None),
    ]  # fmt: skip


def test_loop_csv_keeps_every_iteration_and_the_warning() -> None:
    text = (
        "WARNING: Could not fetch server CONFIG\n" + HEADER
        + '"GET","27434.84","1.676","0.160","0.519","9.151","12.927","15.055"\n'
        + '"GET","46838.41","0.955","0.104","0.471","4.279","5.407","7.767"\n'
    )
    result = parse_redis_benchmark(text, "loop")
    assert [t.rps for t in result.by_test("GET")] == [27434.84, 46838.41]
    assert result.warnings == ("WARNING: Could not fetch server CONFIG",)


def test_cut_short_output_drops_only_the_unfinished_row() -> None:
    text = HEADER + '"SET","1000.00","1.0","0.5","1.0","2.0","3.0","4.0"\n"SET","20'
    with pytest.raises(ParseError, match="row 3"):
        parse_redis_benchmark(text, "cut")
    result = parse_redis_benchmark(text, "cut", cut_short=True)
    assert [t.rps for t in result.tests] == [1000.0]
    assert any("unfinished" in w for w in result.warnings)


def test_nan_is_a_missing_figure() -> None:
    text = HEADER + '"GET","-nan","-nan","0.1","0.2","0.3","0.4","0.5"\n'
    (t,) = parse_redis_benchmark(text, "nan").tests
    assert t.rps is None and t.avg_ms is None and t.min_ms == 0.1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no redis-benchmark results"),
        ("Could not connect to Redis at 127.0.0.1:6390: Connection refused\n", "unrecognised"),
        ("ERROR: failed to fetch CONFIG\n", "it printed: ERROR"),
        (HEADER + '"GET","abc","1","1","1","1","1","1"\n', "'abc' is not a number"),
        (HEADER, "no redis-benchmark test results"),
        ("====== SET ======\n  10 parallel clients\n", "no 'requests per second'"),
    ],
)
def test_bad_input_is_a_parse_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_redis_benchmark(text, "bad")


def test_a_loop_stopped_before_its_first_row_says_so() -> None:
    # A looping client (-l) stopped before its first iteration of -n requests ended
    # leaves only the header: "no test results found" did not say why.
    with pytest.raises(ParseError, match="no iteration of redis-benchmark's -n requests "
                       "finished before it was stopped"):
        parse_redis_benchmark(HEADER, "set.csv", cut_short=True)


def test_combine_iterations_is_total_requests_over_total_time() -> None:
    its = [
        RedisBenchTest("GET", 1000.0, avg_ms=1.0, min_ms=0.2, p99_ms=3.0, max_ms=9.0),
        RedisBenchTest("GET", 4000.0, avg_ms=3.0, min_ms=0.1, p99_ms=5.0, max_ms=7.0),
        RedisBenchTest("GET", None),
    ]
    c = combine_iterations(its)
    # N requests at 1000/s and N at 4000/s: 2N in 1.25N/1000 s = 1600/s.
    assert c.rps == pytest.approx(1600.0)
    assert (c.avg_ms, c.min_ms, c.p99_ms, c.max_ms, c.iterations) == (2.0, 0.1, 5.0, 9.0, 2)
    assert combine_iterations([RedisBenchTest("GET", None)]).rps is None


def test_cli_parse_redis_benchmark_json(tmp_path: Path) -> None:
    f = tmp_path / "out.csv"
    f.write_text(LEGACY_CSV)
    res = CliRunner().invoke(cli, ["parse", "redis-benchmark", str(f), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["test"] for r in rows] == ["PING_INLINE", "SET", "LPUSH (needed to benchmark LRANGE)"]
    assert rows[1]["rps"] == 81433.22 and rows[1]["format"] == "csv-legacy"


def test_cli_parse_redis_benchmark_rejects_garbage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "junk.txt"
    f.write_text("hello\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "redis-benchmark", str(f)])
    assert exit_info.value.code == 2
    assert "unrecognised redis-benchmark line 'hello'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- memtier


@pytest.mark.parametrize(
    ("name", "totals", "threads", "conns", "seconds"),
    [
        ("microsoft_VirtualClient__RedisResults_1.txt", 355987.03, 4, 1, 30.0),
        ("microsoft_VirtualClient__RedisResults_2.txt", 62133.15, 4, 4, 60.0),
        ("microsoft_VirtualClient__RedisResults_4.txt", 132291.67, 3, 1, 120.0),
        ("microsoft_VirtualClient__Memtier_Memcached_Results_1.txt", 48271.29, 4, 1, 60.0),
        ("microsoft_VirtualClient__Memtier_Memcached_Results_3.txt", 47909.78, 4, 1, 60.0),
    ],
)
def test_memtier_text_corpus(
    name: str, totals: float, threads: int, conns: int, seconds: float
) -> None:
    result = parse_memtier(_corpus(name), name)
    assert result.format == "text"
    tot = result.row("Totals")
    assert tot is not None and tot.ops_per_sec == totals
    assert (result.threads, result.connections_per_thread, result.seconds) == (
        threads, conns, seconds,
    )  # fmt: skip
    sets = result.row("Sets")
    assert sets is not None and sets.hits_per_sec is None  # "---": does not apply
    assert set(tot.percentiles_ms) == {"p50", "p90", "p95", "p99", "p99.9"}


def test_memtier_misses_are_read() -> None:
    result = parse_memtier(_corpus("microsoft_VirtualClient__RedisResults_2.txt"), "r2")
    gets = result.row("Gets")
    assert gets is not None and gets.misses_per_sec == 30818.37 and gets.avg_ms == 25.70197


def test_memtier_json_corpus() -> None:
    name = "GoogleCloudPlatform_PerfKitBenchmarker__redis_memtier.json"
    result = parse_memtier(_corpus(name), name)
    assert result.format == "json"
    assert [r.type for r in result.rows] == ["Sets", "Gets", "Waits", "Totals"]
    tot = result.row("Totals")
    assert tot is not None and tot.ops_per_sec == 90018.1 and tot.avg_ms == 0.355
    assert tot.percentiles_ms["p99.9"] == 2.575
    assert (result.threads, result.connections_per_thread, result.seconds) == (4, 8, 800.0)


def test_memtier_garbled_table_is_refused() -> None:
    name = "microsoft_VirtualClient__Memtier_Invalid_Results_1.txt"
    with pytest.raises(ParseError, match="Waits"):
        parse_memtier(_corpus(name), name)


def test_cli_parse_memtier_csv() -> None:
    path = need(CORPUS / "microsoft_VirtualClient__RedisResults_1.txt")
    res = CliRunner().invoke(cli, ["parse", "memtier", str(path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("format,type,ops_per_sec")
    assert lines[-1].startswith("text,Totals,355987.03")
