"""fio JSON parser: every fio JSON of the shared corpus, exact values, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import SHARED, need
from vbench.errors import ParseError
from vbench.parsers.fio import (
    UNITS,
    FioResult,
    aggregate_guests,
    guest_samples,
    metric_unit,
    parse_fio_json,
    records_to_rows,
)
from vbench.results.records import Sample

CORPUS = SHARED / "fio"
JSON_FILES = sorted(CORPUS.glob("*.json")) + sorted(CORPUS.glob("*.json.txt"))


def corpus(name: str) -> FioResult:
    need(CORPUS)
    return parse_fio_json((CORPUS / name).read_text(), source=name)


def by_metric(samples: list[Sample], **labels: str) -> dict[str, float | None]:
    wanted = tuple(labels.items())
    return {s.metric: s.value for s in samples if s.labels == wanted}


def fio3(jobs: list[dict[str, Any]], version: str = "fio-3.33") -> str:
    return json.dumps({"fio version": version, "timestamp": 1, "jobs": jobs})


def direction(iops: float, ios: int, clat_mean_ns: float, p99_ns: float = 0) -> dict[str, Any]:
    return {
        "io_bytes": ios * 4096, "io_kbytes": ios * 4, "bw_bytes": iops * 4096, "bw": iops * 4,
        "iops": iops, "runtime": 1000, "total_ios": ios,
        "clat_ns": {"mean": clat_mean_ns, "percentile": {"99.000000": p99_ns}},
        "lat_ns": {"mean": clat_mean_ns + 1000},
    }


def job(name: str, read: dict[str, Any], write: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jobname": name, "error": 0, "read": read,
            "write": write or direction(0, 0, 0)}


# ---------------------------------------------------------------- every corpus file


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: p.name)
def test_every_corpus_json_parses_with_consistent_units(path: Path) -> None:
    result = parse_fio_json(path.read_text(), source=path.name)
    assert result.fio_version is not None and result.fio_version.startswith("fio-")
    assert result.jobs and len(set(result.jobs)) == len(result.jobs)
    assert {r.unit for r in result.records} <= set(UNITS.values())
    for jobname in result.jobs:
        for d in ("read", "write", "trim"):
            ios = result.value(jobname, d, "ios")
            iops = result.value(jobname, d, "iops")
            assert iops is not None and iops >= 0
            if not ios:
                # No I/O: zero rate, but no made-up latency.
                assert result.value(jobname, d, "lat_mean") is None
                assert result.value(jobname, d, "clat_p99") is None
                continue
            # bandwidth × runtime must give the bytes: catches KiB/bytes mix-ups.
            bw, runtime = result.value(jobname, d, "bw"), result.value(jobname, d, "runtime")
            io_bytes = result.value(jobname, d, "io_bytes")
            assert bw is not None and runtime is not None and io_bytes is not None
            assert bw * runtime * 1024 * 1024 == pytest.approx(io_bytes, rel=0.01)
            lat = result.value(jobname, d, "lat_mean")
            assert lat is not None and 0 < lat < 100_000  # ms, never µs or ns


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: p.name)
def test_every_corpus_json_gives_samples_or_names_the_failed_job(path: Path) -> None:
    result = parse_fio_json(path.read_text(), source=path.name)
    if result.errors:
        with pytest.raises(ParseError, match="failed with error"):
            guest_samples(result, "g1")
        return
    samples = guest_samples(result, "g1")
    guest_level = by_metric(samples)
    assert guest_level["total_iops"] == pytest.approx(
        sum(guest_level[f"{d}_iops"] or 0 for d in ("read", "write", "trim"))
    )
    assert all(s.source == "fio" and s.guest == "g1" for s in samples)
    assert all(s.unit == metric_unit(s.metric) for s in samples)


def test_corpus_has_the_versions_the_parser_claims_to_read() -> None:
    need(CORPUS)
    versions = {parse_fio_json(p.read_text()).fio_version for p in JSON_FILES}
    assert {"fio-2.1.4", "fio-3.1", "fio-3.33", "fio-3.26"} <= versions


# ---------------------------------------------------------------- exact values


def test_fio2_microseconds_and_kib_are_converted() -> None:
    r = corpus("louwrentius_fio-plot__fio-2.18_test-data02_randwrite-01-01.json")
    assert r.fio_version == "fio-2.18-59-g618e"
    assert r.timestamp == pytest.approx(1495057774.627)
    assert r.value("random-io", "write", "iops") == pytest.approx(16889.911009)
    assert r.value("random-io", "write", "bw") == pytest.approx(67559 / 1024)
    assert r.value("random-io", "write", "lat_mean") == pytest.approx(0.050998656)
    assert r.value("random-io", "write", "clat_mean") == pytest.approx(0.036954409)
    assert r.value("random-io", "write", "clat_p50") == pytest.approx(0.036)
    assert r.value("random-io", "write", "clat_p95") == pytest.approx(0.042)
    assert r.value("random-io", "write", "clat_p99") == pytest.approx(0.045)
    assert r.value("random-io", "write", "clat_p99.9") == pytest.approx(0.048)
    assert r.value("random-io", "write", "io_bytes") == 675664 * 1024  # 2.x io_bytes is KiB
    assert r.value("random-io", "write", "runtime") == pytest.approx(10.001)
    assert r.value("random-io", "write", "ios") == 168916
    assert r.value("random-io", "read", "iops") == 0.0
    assert r.value("random-io", "read", "lat_mean") is None


def test_fio3_nanoseconds_and_bytes_are_converted() -> None:
    r = corpus("louwrentius_fio-plot__fio-3.1_P420i_SAMSUNG860_randrw-1-1.json")
    assert r.value("iotest", "read", "iops") == pytest.approx(5737.754371)
    assert r.value("iotest", "read", "clat_p99") == pytest.approx(0.2304)
    assert r.value("iotest", "read", "clat_p99.9") == pytest.approx(0.577536)
    assert r.value("iotest", "write", "lat_mean") == pytest.approx(0.056647320226)
    assert r.value("iotest", "read", "io_bytes") == 1410134016
    assert r.value("iotest", "read", "bw") == pytest.approx(22951 / 1024)  # no bw_bytes in 3.1


def test_bw_bytes_is_preferred_over_rounded_kib() -> None:
    r = corpus("microsoft_VirtualClient__FIOExample.json.txt")
    job_name = "fio_randwrite_1GB_4k_d1_th1_direct"
    assert r.fio_version == "fio-3.26"
    assert r.value(job_name, "write", "bw") == pytest.approx(8876980 / 1048576)
    assert r.value(job_name, "write", "iops") == pytest.approx(2167.231601)


def test_fio21_without_total_ios_estimates_counts_and_keeps_jobs_apart() -> None:
    r = corpus("GoogleCloudPlatform_PerfKitBenchmarker__fio-parser-sample-result.json")
    assert r.timestamp is None
    assert r.jobs == ("sequential_write", "sequential_read", "random_write_test",
                      "random_read_test", "random_read_test_parallel")
    assert r.value("sequential_write", "write", "clat_p99") == pytest.approx(823.296)
    assert r.value("sequential_write", "write", "lat_mean") == pytest.approx(478.73747)
    assert r.value("sequential_write", "write", "io_bytes") == 361984 * 1024
    assert r.value("sequential_write", "write", "ios") == round(133 * 5.314)
    samples = guest_samples(r, "vm1")
    guest_level = by_metric(samples)
    assert guest_level["total_iops"] == 133 + 253 + 1610 + 317 + 323
    # Five jobs: percentiles cannot be combined, so the guest has none.
    assert guest_level["write_clat_p99"] is None
    assert by_metric(samples, job="sequential_write")["write_clat_p99"] == pytest.approx(823.296)


def test_failed_job_keeps_stderr_preamble_and_error_code() -> None:
    r = corpus("louwrentius_fio-plot__fio-3.33_write-64-1.json")
    assert r.errors == (("1m", 22),)
    assert r.preamble.count("\n") == 3
    assert r.preamble.startswith("fio: time_based requires a runtime/timeout setting")
    assert {rec.error for rec in r.records} == {22}
    with pytest.raises(ParseError) as err:
        guest_samples(r, "vm7")
    assert "vm7" in str(err.value) and "Invalid argument" in str(err.value)
    assert "err=22" in str(err.value)  # fio's own last line is quoted


def test_text_after_the_document_is_kept_apart() -> None:
    r = corpus("Arau_fio-results-tmp__fio-3.12_writes-100-0.json")
    assert r.trailer.startswith("root@")
    assert r.value("vol0", "write", "iops") == pytest.approx(457.18591)
    assert r.value("vol0", "write", "io_bytes") == 4294967296


def test_multiple_jobs_combine_by_sum_and_io_weighted_latency() -> None:
    r = corpus("GoogleCloudPlatform_gcsfuse__multiple_jobs_job_options.json")
    g = by_metric(guest_samples(r, "vm1"))
    assert g["read_iops"] == pytest.approx(88.851558)
    assert g["write_iops"] == pytest.approx(34.641075)
    assert g["total_iops"] == pytest.approx(88.851558 + 34.641075)
    assert g["read_lat_mean"] == pytest.approx(21799.839057909954)  # one job read
    assert g["read_clat_p99"] is None and g["write_clat_p99"] is None


def test_group_reporting_single_job_keeps_percentiles_at_guest_level() -> None:
    r = corpus("GoogleCloudPlatform_gcsfuse__fio-3.30_good_out_job.json")
    g = by_metric(guest_samples(r, "vm1"))
    assert g["read_clat_p99"] == pytest.approx(893.386752)
    assert g["write_clat_p99"] is None  # no writes
    assert g["write_iops"] == 0.0


# ---------------------------------------------------------------- synthetic shapes


def test_latency_mean_is_weighted_by_io_count_across_jobs() -> None:
    text = fio3([job("a", direction(100, 100, 1_000_000, 2e6)),
                 job("b", direction(300, 300, 3_000_000, 9e6))])
    g = by_metric(guest_samples(parse_fio_json(text), "vm"))
    assert g["read_clat_mean"] == pytest.approx((1.0 * 100 + 3.0 * 300) / 400)
    assert g["read_iops"] == 400
    assert g["read_clat_p99"] is None


def test_duplicate_job_names_are_made_unique() -> None:
    r = parse_fio_json(fio3([job("w", direction(1, 1, 1)), job("w", direction(2, 2, 1))]))
    assert r.jobs == ("w.0", "w.1")
    assert r.value("w.1", "read", "iops") == 2


def test_unified_rw_reporting_gives_mixed_direction() -> None:
    text = fio3([{"jobname": "u", "error": 0, "mixed": direction(50, 50, 2e6, 4e6)}])
    g = by_metric(guest_samples(parse_fio_json(text), "vm"))
    assert g["mixed_iops"] == 50 and g["total_iops"] == 50
    assert g["mixed_clat_p99"] == pytest.approx(4.0)


def test_stderr_with_braces_before_the_json_is_skipped() -> None:
    text = "fio: warning {something odd}\n" + fio3([job("j", direction(5, 5, 1e6))])
    r = parse_fio_json(text)
    assert r.preamble == "fio: warning {something odd}\n"
    assert r.value("j", "read", "iops") == 5


def test_aggregate_sums_rates_and_takes_median_of_guest_means() -> None:
    per_guest = {
        "vm1": parse_fio_json(fio3([job("m", direction(100, 100, 1e6, 5e6))])),
        "vm2": parse_fio_json(fio3([job("m", direction(100, 300, 2e6, 7e6))])),
        "vm3": parse_fio_json(fio3([job("m", direction(200, 600, 9e6, 20e6))])),
    }
    samples = aggregate_guests(per_guest)
    assert all(s.guest is None and s.labels == () for s in samples)
    a = by_metric(samples)
    assert a["read_iops"] == 400 and a["total_iops"] == 400
    assert a["read_clat_mean_median"] == pytest.approx(2.0)
    assert a["read_lat_mean_median"] == pytest.approx(2.001)
    assert a["read_clat_mean"] == pytest.approx((1 * 100 + 2 * 300 + 9 * 600) / 1000)
    assert a["read_clat_p99"] is None and a["read_clat_p99_max"] == pytest.approx(20.0)
    assert a["write_lat_mean_median"] is None  # nobody wrote
    assert metric_unit("read_clat_p99.9_max") == "ms"


def test_aggregate_of_one_guest_keeps_its_percentiles() -> None:
    one = {"vm1": parse_fio_json(fio3([job("m", direction(10, 10, 1e6, 3e6))]))}
    assert by_metric(aggregate_guests(one))["read_clat_p99"] == pytest.approx(3.0)
    assert aggregate_guests({}) == []


def test_rows_for_the_parse_command() -> None:
    rows = records_to_rows(parse_fio_json(fio3([job("j", direction(5, 5, 1e6))])))
    assert rows[0].keys() == {"job", "direction", "metric", "value", "unit", "fio_version",
                              "error"}
    row = {(r["direction"], r["metric"]): r for r in rows}[("read", "iops")]
    assert (row["value"], row["unit"], row["fio_version"]) == (5.0, "IO/s", "fio-3.33")


# ---------------------------------------------------------------- refusals


def test_normal_text_output_is_refused_with_a_hint() -> None:
    need(CORPUS)
    path = CORPUS / "chris-sanders_ceph-fio-results__fio-2.2.10_normal_randread-4k.out"
    with pytest.raises(ParseError) as err:
        parse_fio_json(path.read_text(), source=path.name)
    assert str(err.value).startswith(path.name + ":")
    assert "--output-format=json" in str(err.value) and "normal" in str(err.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty input"),
        ("fio: failed parsing bs=4q\n", "ends with: fio: failed parsing bs=4q"),
        ('{"fio version": "fio-3.33", "jobs": [', "invalid JSON"),
        ('{"fio version": "fio-3.33"}', "no 'jobs' list"),
        ('{"fio version": "fio-3.33", "jobs": [{"error": 0}]}', "jobs[0] has no 'jobname'"),
        ('{"jobs": [{"jobname": "j", "read": {"iops": "fast"}}]}',
         "job 'j' read.iops: expected a number"),
        ('{"jobs": [{"jobname": "j", "error": "x"}]}', "expected an integer"),
        ('{"jobs": [{"jobname": "j", "read": [1]}]}', "'read' is not an object"),
    ],
)
def test_bad_input_names_the_source_and_the_problem(text: str, expected: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_fio_json(text, source="vm1:/tmp/fio.json")
    assert str(err.value).startswith("vm1:/tmp/fio.json: ")
    assert expected in str(err.value)
