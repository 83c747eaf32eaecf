"""The dedup/compression pitfalls of the storage studies are stopped or flagged before a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.corpus import SHARED, need
from vbench.workloads.base import Finding
from vbench.workloads.fio import FioWorkload
from vbench.workloads.fio.jobs import FioParams

CORPUS = SHARED / "fio"
SAFE = {"dedupe_percentage": 50, "randrepeat": False}


def found(**params: Any) -> dict[str, Finding]:
    return {f.path: f for f in FioWorkload.findings(FioParams(**params))}


def corpus_job(name: str) -> str:
    need(CORPUS)
    return str(CORPUS / name)


def test_safe_dedup_setup_has_no_findings() -> None:
    assert found(**SAFE, bs="8k", blockalign="4k") == {}


def test_plain_fio_without_data_options_is_not_bothered_about_randrepeat() -> None:
    assert found(rw="randread") == {}


@pytest.mark.parametrize("randrepeat", [None, True])
def test_randrepeat_on_with_dedupe_is_an_error(randrepeat: bool | None) -> None:
    f = found(dedupe_percentage=50, randrepeat=randrepeat)["randrepeat"]
    assert f.level == "error"
    assert "~80% dedup for a 0% setting" in f.message and "randrepeat: false" in f.message


def test_zero_percent_dedupe_still_counts_as_a_dedup_target() -> None:
    # The published failure: a 0 % setting reported as ~80 % because of randrepeat.
    assert found(dedupe_percentage=0)["randrepeat"].level == "error"


@pytest.mark.parametrize("key", ["buffer_compress_percentage", "buffer_compress_chunk"])
def test_compression_settings_alone_trigger_the_checks(key: str) -> None:
    value = 40 if key == "buffer_compress_percentage" else "4k"
    assert found(**{key: value})["randrepeat"].level == "error"


def test_prepare_never_with_dedupe_is_a_warning() -> None:
    f = found(**SAFE, prepare="never")["prepare"]
    assert f.level == "warning" and "dd, zeros or random data" in f.message


@pytest.mark.parametrize(("key", "value"), [("bs", "6k"), ("bs", "512"), ("blockalign", "2k")])
def test_unaligned_blocks_with_dedupe_are_errors(key: str, value: str) -> None:
    f = found(**SAFE, **{key: value})[key]
    assert f.level == "error" and "not a multiple of 4 KiB" in f.message


def test_unaligned_blocks_without_dedupe_are_fine() -> None:
    assert found(bs="6k") == {}


@pytest.mark.parametrize(
    ("extra", "path", "text"),
    [
        ({"zero_buffers": True}, "extra.zero_buffers", "all-zero"),
        ({"zero_buffers": ""}, "extra.zero_buffers", "all-zero"),
        ({"randseed": 1234}, "extra.randseed", "same seed"),
        ({"allrandrepeat": 1}, "extra.allrandrepeat", "same data stream"),
        ({"bssplit": "4k/50:6k/50"}, "extra.bssplit", "4 KiB"),
    ],
)
def test_extra_options_that_defeat_dedup_are_errors(
    extra: dict[str, Any], path: str, text: str
) -> None:
    f = found(**SAFE, extra=extra)[path]
    assert f.level == "error" and text in f.message


def test_zero_buffers_off_is_fine() -> None:
    assert found(**SAFE, extra={"zero_buffers": False}) == {}


def test_buffered_io_with_dedupe_is_a_warning() -> None:
    assert found(**SAFE, direct=False)["direct"].level == "warning"


def test_rwmixread_with_a_pure_pattern_is_a_warning() -> None:
    assert found(rw="randread", rwmixread=70)["rwmixread"].level == "warning"


# ---------------------------------------------------------------- user job files


def test_corpus_dedupe_job_without_randrepeat_is_an_error() -> None:
    path = corpus_job("axboe_fio__dedupe-global.fio")
    f = found(job_file=path)["job_file"]
    assert f.level == "error"
    assert "randrepeat" in f.message and "[global]" in f.message and path in f.message


def test_corpus_zfs_job_with_randseed_is_an_error_and_variables_are_not_guessed() -> None:
    job_file = corpus_job("openzfs_zfs__random_writes.fio")
    findings = FioWorkload.findings(FioParams(job_file=job_file))
    messages = [f.message for f in findings if f.level == "error"]
    assert any("randseed" in m for m in messages)
    assert any("randrepeat" in m for m in messages)
    assert not any("multiple of 4 KiB" in m for m in messages)  # bs=${BLOCKSIZE}


def test_clean_user_job_has_no_findings(tmp_path: Path) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[global]\nrandrepeat=0\ndedupe_percentage=30\nbs=4k\n[j]\nrw=randwrite\n")
    params = {"job_file": str(job), "dedupe_percentage": 30, "filename": "/dev/sdb"}
    assert found(**params) == {}


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ("randrepeat=0\nzero_buffers\n", "all-zero"),
        ("randrepeat=0\nbs=4k,6k\n", "6k is not a multiple"),
        ("randrepeat=0\nbsrange=4k-16k\n", "bsrange"),
        ("randrepeat=0\n[j2]\nrandrepeat=1\n", "not set to 0 everywhere"),
    ],
)
def test_user_job_pitfalls_are_found(tmp_path: Path, body: str, text: str) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[global]\nbuffer_compress_percentage=50\n" + body + "[j]\nrw=write\n")
    errors = [f for f in FioWorkload.findings(FioParams(job_file=str(job))) if f.level == "error"]
    assert any(text in f.message for f in errors), errors


def test_user_job_with_prepare_needs_a_filename(tmp_path: Path) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[global]\nrandrepeat=0\n[j]\nrw=write\n")
    f = found(job_file=str(job), **SAFE)["filename"]
    assert f.level == "error"


def test_user_job_data_options_missing_from_params_warns(tmp_path: Path) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[global]\nrandrepeat=0\ndedupe_percentage=50\n[j]\nrw=write\n")
    f = found(job_file=str(job))["job_file"]
    assert f.level == "warning" and "prepare phase uses params" in f.message


def test_missing_user_job_is_an_error(tmp_path: Path) -> None:
    f = found(job_file=str(tmp_path / "nope.fio"))["job_file"]
    assert f.level == "error" and "cannot read job file" in f.message


def test_params_shadowed_by_a_user_job_are_named(tmp_path: Path) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[j]\nrw=read\ninclude other.fio\n")
    messages = [f.message for f in FioWorkload.findings(
        FioParams(job_file=str(job), bs="64k", iodepth=8))]
    assert any(m.startswith("bs, iodepth ignored") for m in messages)
    assert any("include" in m for m in messages)
