"""fio driver: parameter validation, job-file rendering, plan, registry (no SSH)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from vbench.errors import ConfigError
from vbench.workloads.base import get_driver
from vbench.workloads.fio import FioWorkload, fio_argv, guest_dir
from vbench.workloads.fio.jobs import (
    FioParams,
    adapt_user_job,
    fio_time,
    parse_size,
    render_layout,
    render_measure,
    render_prepare,
    scan_job_file,
)


def options(text: str) -> dict[str, dict[str, str]]:
    """section -> {key: last value}, as fio would read the job file."""
    out: dict[str, dict[str, str]] = {}
    for o in scan_job_file(text):
        out.setdefault(o.section, {})[o.key] = o.value
    return out


DEDUP = {"dedupe_percentage": 50, "buffer_compress_percentage": 30, "randrepeat": False}


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("text", "size"),
    [("4k", 4096), ("4K", 4096), ("64KiB", 65536), ("1m", 1 << 20), ("2g", 2 << 30),
     ("512", 512), (4096, 4096), ("1mb", 1 << 20)],
)
def test_parse_size_reads_fio_sizes(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["4q", "k", "", "-4k", "4.5k", "4 k b"])
def test_parse_size_refuses_non_sizes(text: str) -> None:
    with pytest.raises(ValueError, match="not a fio size"):
        parse_size(text)


def test_fio_time_uses_milliseconds_only_when_needed() -> None:
    assert (fio_time(60), fio_time(60.0), fio_time(1.5), fio_time(0.25)) == (
        "60", "60", "1500ms", "250ms")
    with pytest.raises(ConfigError):
        fio_time(-1)


# ---------------------------------------------------------------- params


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"rwmixread": 101}, "rwmixread"),
        ({"rwmixread": -1}, "rwmixread"),
        ({"iodepth": 0}, "iodepth"),
        ({"numjobs": 0}, "numjobs"),
        ({"bs": "4q"}, "bs"),
        ({"bs": "0"}, "bs"),
        ({"dedupe_percentage": 101}, "dedupe_percentage"),
        ({"buffer_compress_percentage": -5}, "buffer_compress_percentage"),
        ({"percentage_random": 200}, "percentage_random"),
        ({"size": "150%"}, "size"),
        ({"rw": "randomread"}, "rw"),
        ({"filename": "data/file"}, "filename"),
        ({"filename": "/dev/sdb\nrw=write"}, "filename"),
        ({"ioengine": "libaio\n[evil]"}, "ioengine"),
        ({"ioengine": "lib aio"}, "ioengine"),
        ({"extra": {"ioprio": "1\nzero_buffers"}}, "extra"),
        ({"extra": {"runtime": 30}}, "extra"),
        ({"extra": {"bs": "8k"}}, "extra"),
        ({"extra": {"blocksize": "8k"}}, "extra"),
        ({"extra": {"Bad-Key": 1}}, "extra"),
        ({"runtime": 30}, "runtime"),
        ({"prepare": "sometimes"}, "prepare"),
        ({"prepare": "never", "prepare_size": "1g"}, "prepare_size"),
    ],
)
def test_bad_params_are_refused(params: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as err:
        FioParams(**params)
    assert where in str(err.value)


def test_params_accept_yaml_shapes() -> None:
    p = FioParams(bs=4096, size="10%", iodepth=32, direct=1, filename="/dev/sdb",
                  extra={"ioprio": 2, "thread": True, "dedupe_mode": "working_set"})
    assert p.bs == "4096" and p.size == "10%" and p.direct is True
    assert p.extra_options() == [("ioprio", "2"), ("thread", "1"), ("dedupe_mode", "working_set")]


@pytest.mark.parametrize(
    ("params", "prepare", "layout"),
    [
        ({}, False, True),
        ({"filename": "/dev/sdb"}, False, False),
        ({"dedupe_percentage": 0}, True, False),
        ({"buffer_compress_chunk": "4k"}, True, False),
        ({"dedupe_percentage": 10, "prepare": "never"}, False, True),
        ({"prepare": "always", "filename": "/dev/sdb"}, True, False),
        ({"job_file": "/x.fio"}, False, False),
    ],
)
def test_prepare_phase_selection(params: dict[str, Any], prepare: bool, layout: bool) -> None:
    p = FioParams(**params)
    assert (p.needs_prepare(), p.needs_layout()) == (prepare, layout)


# ---------------------------------------------------------------- rendering


def test_measure_job_is_time_based_with_phases_and_group_reporting() -> None:
    p = FioParams(rw="randrw", rwmixread=70, bs="8k", iodepth=32, numjobs=4,
                  random_distribution="zipf:1.2", percentage_random=80, rate_iops=500,
                  norandommap=True, extra={"ioprio": 2})
    text = render_measure(p, 1.5, 60, "/tmp/vb/run/fio.data", header="run r1")
    o = options(text)
    assert text.startswith("; vbench fio measured job — run r1\n")
    assert o["global"] == {
        "ioengine": "libaio", "direct": "1", "filename": "/tmp/vb/run/fio.data",
        "size": "1g", "time_based": "1", "ramp_time": "1500ms", "runtime": "60",
        "group_reporting": "1",
    }
    assert o["measure"] == {
        "rw": "randrw", "rwmixread": "70", "bs": "8k", "iodepth": "32", "numjobs": "4",
        "norandommap": "1", "random_distribution": "zipf:1.2", "percentage_random": "80",
        "rate_iops": "500", "ioprio": "2",
    }


def test_measure_job_leaves_out_what_is_not_set() -> None:
    o = options(render_measure(FioParams(rw="randread", rwmixread=30, filename="/dev/sdb"),
                               0, 10, "/dev/sdb"))
    assert "ramp_time" not in o["global"] and "size" not in o["global"]
    assert "rwmixread" not in o["measure"]  # only meaningful for a mixed rw
    assert "randrepeat" not in o["measure"]


def test_measure_job_carries_dedupe_settings_and_fresh_buffers() -> None:
    p = FioParams(**DEDUP, buffer_compress_chunk="512", extra={"dedupe_mode": "working_set"})
    o = options(render_measure(p, 0, 5, "/d"))["measure"]
    assert o["dedupe_percentage"] == "50" and o["buffer_compress_percentage"] == "30"
    assert o["buffer_compress_chunk"] == "512" and o["randrepeat"] == "0"
    assert o["refill_buffers"] == "1" and o["dedupe_mode"] == "working_set"


def test_bare_flag_in_extra_is_rendered_without_value() -> None:
    text = render_measure(FioParams(extra={"thread": ""}), 0, 5, "/d")
    assert "\nthread\n" in text


def test_measure_job_needs_a_steady_phase() -> None:
    with pytest.raises(ConfigError, match="steady"):
        render_measure(FioParams(), 10, 0, "/d")


def test_prepare_job_is_sequential_4k_aligned_with_fresh_seeds() -> None:
    p = FioParams(**DEDUP, bs="64k", iodepth=1, numjobs=8, rw="randread", filename="/dev/sdb",
                  prepare_size="20g", extra={"dedupe_mode": "working_set", "ioprio": 1},
                  direct=False)
    o = options(render_prepare(p, "/dev/sdb"))
    assert o["global"]["filename"] == "/dev/sdb" and o["global"]["size"] == "20g"
    assert o["global"]["direct"] == "1"  # the fill always bypasses the page cache
    assert o["prepare"] == {
        "rw": "write", "bs": "4k", "blockalign": "4k", "iodepth": "32", "numjobs": "1",
        "randrepeat": "0", "dedupe_percentage": "50", "buffer_compress_percentage": "30",
        "refill_buffers": "1", "dedupe_mode": "working_set",
    }


def test_prepare_of_whole_device_has_no_size() -> None:
    o = options(render_prepare(FioParams(**DEDUP, filename="/dev/sdc"), "/dev/sdc"))
    assert "size" not in o["global"]


def test_layout_job_only_creates_the_file() -> None:
    o = options(render_layout(FioParams(size="64m"), "/w/fio.data"))
    assert o["layout"] == {"filename": "/w/fio.data", "size": "64m", "rw": "write",
                           "create_only": "1"}


def test_rendering_refuses_a_filename_with_a_newline() -> None:
    with pytest.raises(ValueError, match="control"):
        render_measure(FioParams(), 0, 5, "/w/x\n[evil]")


USER_JOB = """; my job
[global]
ioengine=psync
runtime=600

[a]
rw=randread
runtime=30
[b]
rw=write
"""


def test_user_job_gets_timing_appended_to_every_section() -> None:
    text = adapt_user_job(USER_JOB, 2, 10, "/w/d", header="vbench")
    o = options(text)
    for section in ("global", "a", "b"):
        assert o[section]["runtime"] == "10" and o[section]["ramp_time"] == "2"
        assert o[section]["time_based"] == "1"
    assert o["a"]["rw"] == "randread"  # the user's own options survive
    assert text.startswith("; vbench\n[global]\ndirectory=/w/d\n")


def test_user_job_naming_its_files_gets_no_directory() -> None:
    text = adapt_user_job("[j]\nfilename=/dev/sdb\nrw=read\n", 0, 5, "/w/d")
    assert "directory=" not in text
    assert "ramp_time" not in text  # no warm-up, no ramp_time


# ---------------------------------------------------------------- driver surface


def test_driver_is_registered_with_its_role_and_tool() -> None:
    cls = get_driver("fio")
    assert cls is FioWorkload
    assert cls.roles == ("target",) and cls.required_tools == {"target": ("fio",)}
    assert cls.headline_metrics[0] == "total_iops"
    assert cls.Params is FioParams


def test_plan_lists_prepare_run_collect_teardown() -> None:
    cmds = FioWorkload(FioParams(**DEDUP)).planned_commands(30, 60)
    assert [c.step for c in cmds] == ["prepare", "run", "collect", "teardown"]
    run = cmds[1]
    assert run.background and run.files == ("measure.fio",)
    assert run.argv[:4] == ("fio", "--output-format=json", "--output",
                            "<workdir>/<run_id>/fio-<guest>-p<point>-t<trial>/fio.json")


def test_plan_without_own_file_or_prepare_has_no_prepare_step() -> None:
    cmds = FioWorkload(FioParams(filename="/dev/sdb")).planned_commands(0, 60)
    assert [c.step for c in cmds] == ["run", "collect", "teardown"]


def test_guest_dir_is_per_guest_and_trial_and_safe() -> None:
    assert guest_dir("/tmp/vb/", "r1", "web 1/x", 2, 3) == "/tmp/vb/r1/fio-web_1_x-p2-t3"
    assert fio_argv("/o.json", "/j.fio") == [
        "fio", "--output-format=json", "--output", "/o.json", "/j.fio"]
