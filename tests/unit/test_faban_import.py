"""Faban import: summary.xml, detail.xan and driver.log from a real run (the corpus),
plus the shapes the corpus lacks (old <p90th>, seconds unit, passed=true with no ops)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.corpus import SHARED, need
from vbench.cli import cli
from vbench.errors import ParseError
from vbench.parsers.faban import import_run, parse_detail, parse_driver_log, parse_summary

CORPUS = SHARED / "faban_olio_cloudsuite"
RUN = "parsa-epfl_cloudsuite__web-serving_run129_"


def _read(name: str) -> str:
    return need(CORPUS / name).read_text()


def test_summary_per_operation_figures_from_real_run() -> None:
    s = parse_summary(_read(RUN + "summary.xml"))
    assert (s.benchmark, s.run_id, s.metric, s.passed) == ("Elgg benchmark", "129", 8.0, True)
    (d,) = s.drivers
    assert (d.name, d.total_ops, d.users, d.mix_allowed_deviation) == ("ElggDriver", 240, 2, 0.02)
    assert len(d.operations) == 24
    assert sum(o.successes or 0 for o in d.operations) == 240
    login = d.operation("DoLogin")
    assert login is not None
    assert (login.successes, login.failures, login.mix, login.required_mix) == (6, 0, 0.025, 0.0448)
    assert (login.avg_ms, login.max_ms, login.sd_ms) == (263.226, 312.896, 24.723)
    p95 = login.percentile("95")
    assert p95 is not None and (p95.value_ms, p95.limit_ms) == (270.0, 500.0)
    assert login.percentile("99.9") is not None
    delay = (login.delay_type, login.delay_targeted_s, login.delay_passed)
    assert delay == ("thinkTime", 0.1, True)
    assert d.custom_stats[0] == (
        "Number of times home page was actually attempted to be accessed.", "22", True)
    assert s.verdict == (True, None)


def test_console_log_with_inline_summary_that_failed_on_mix() -> None:
    s = parse_summary(_read("parsa-epfl_cloudsuite__web-serving_log.txt"))
    assert s.run_id == "144" and s.passed is False
    ok, why = s.verdict
    assert not ok
    # The file says which criteria failed: operations whose mix is outside 2 %.
    failed = [o.name for o in s.drivers[0].operations if o.mix_passed is False]
    assert failed and all(name in why for name in failed)


def test_detail_sections_and_interval_series() -> None:
    d = parse_detail(_read(RUN + "detail.xan"))
    assert d.title == "Elgg benchmark Detailed Results"
    names = [s.name for s in d.sections]
    assert names[0] == "Benchmark Information" and len(names) == 6
    tput = d.series("throughput")
    assert tput["DoLogin"] == [(0.0, 0.2), (30.0, 0.23)]
    rt = d.series("response times")
    assert rt["Register"][1] == (30.0, 0.0)
    hist = d.section("Frequency Distribution of Response Times")
    assert hist is not None and hist.display == "Line" and len(hist.rows) == 49


def test_driver_log_phases_steady_window_and_flat_mix() -> None:
    log = parse_driver_log(_read(RUN + "driver.log"))
    assert log.steady_seconds == 30.0
    assert log.phases["ramp_down_end"].isoformat() == "2022-08-17T18:08:23"
    assert len(log.flat_mix) == 24 and log.flat_mix["Register"] == 0.0135
    assert log.problems == []
    assert log.records[-1].message.startswith("Detail finished.")


def test_import_joins_files_into_steady_state_figures() -> None:
    run = import_run(_read(RUN + "summary.xml"), _read(RUN + "detail.xan"),
                     _read(RUN + "driver.log"))  # fmt: skip
    assert run.passed and run.reason is None and run.steady_seconds == 30.0
    by_op = {o.operation: o for o in run.operations}
    login = by_op["DoLogin"]
    assert login.throughput == pytest.approx(6 / 30)
    assert login.p95_ms == 270.0 and login.p90_ms is None and login.p99_ms == 270.0
    assert login.interval_sd == pytest.approx(0.0212132, rel=1e-4)  # stdev(0.20, 0.23)
    # Without the log, the steady window comes from ops / metric (240 / 8.0 = 30 s).
    alone = import_run(_read(RUN + "summary.xml"))
    assert alone.steady_seconds == 30.0 and alone.operations[0].interval_sd is None


SUMMARY_ZERO = """<benchResults><benchSummary name="Olio"><runId>7</runId>
<metric unit="ops/sec">0.000</metric><passed>true</passed></benchSummary>
<driverSummary name="UIDriver"><metric unit="ops/sec">0.000</metric>
<totalOps unit="operations">0</totalOps><users>500</users><passed>true</passed>
<mix allowedDeviation="2.0"/><responseTimes unit="seconds"/></driverSummary></benchResults>"""

SUMMARY_OLD = """<benchResults><benchSummary name="Olio"><metric unit="ops/sec">50</metric>
<passed>false</passed></benchSummary><driverSummary name="UIDriver">
<metric unit="ops/sec">50</metric><totalOps unit="operations">100</totalOps>
<passed>false</passed><mix allowedDeviation="2.0"><operation name="HomePage">
<successes>100</successes><failures>1</failures><mix>1.0</mix><requiredMix>1.0</requiredMix>
<passed>true</passed></operation></mix><responseTimes unit="seconds">
<operation name="HomePage" r90th="1.000"><avg>0.250</avg><max>1.5</max><sd>0.1</sd>
<p90th>1.200</p90th><passed>false</passed></operation></responseTimes></driverSummary>
</benchResults>"""


def test_passed_true_with_zero_operations_is_a_failure_with_reason() -> None:
    run = import_run(SUMMARY_ZERO)
    assert not run.passed
    assert run.reason == "driver UIDriver: zero operations measured (file says passed=true)"
    assert run.operations == () and run.steady_seconds is None


def test_old_faban_p90th_in_seconds_converted_to_ms_with_its_limit() -> None:
    run = import_run(SUMMARY_OLD)
    (op,) = run.operations
    assert (op.avg_ms, op.max_ms, op.p90_ms) == (250.0, 1500.0, 1200.0)
    p90 = run.summary.drivers[0].operations[0].percentile("90")
    assert p90 is not None and p90.limit_ms == 1000.0
    assert run.steady_seconds == 2.0  # 100 ops at 50 ops/s
    assert op.throughput == 50.0 and op.passed is False
    assert run.reason == "driver UIDriver: HomePage response time"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello", "no <benchResults>"),
        ("<benchResults><oops></benchResults>", "malformed summary XML"),
        ("<benchResults><benchSummary><metric>abc</metric></benchSummary></benchResults>",
         "metric is not a number"),
    ],
)
def test_bad_summary_is_a_parse_error_naming_the_file(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=f"s.xml: .*{message}"):
        parse_summary(text, "s.xml")


def test_bad_detail_and_log_are_parse_errors() -> None:
    with pytest.raises(ParseError, match="no 'Section:'"):
        parse_detail("Title: x\n", "d.xan")
    with pytest.raises(ParseError, match="has no header and rule"):
        parse_detail("Section: A\nName  Value\n1  2\n", "d.xan")
    with pytest.raises(ParseError, match=r"no java\.util\.logging records"):
        parse_driver_log("just text\n", "driver.log")


@pytest.mark.parametrize("name", ["summary.xml", "detail.xan", "driver.log"])
def test_cli_parse_faban_reads_every_corpus_file(name: str) -> None:
    path = need(CORPUS / (RUN + name))
    result = CliRunner().invoke(cli, ["parse", "faban", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.output.count("{") >= 2
