"""Driver semantics warnings (issue 23 item 9): a factor that cannot change anything with
the other parameters is said at validate/plan as a warning at the factor, from the
driver's `factor_findings` hook; the run stays valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan


def _warnings(tmp_path: Path, params: str, factors: str) -> list[tuple[str, str]]:
    p = tmp_path / "s.yaml"
    p.write_text("version: 1\nname: m\ntopology: {storage: {count: 1}}\n"
                 f"workload: {{driver: fio, params: {{rw: randread, size: 8m{params}}}}}\n"
                 f"factors:\n{factors}phases: {{steady: 2s}}\n")
    plan = build_plan(load_scenario(p))
    return [(f.where, f.message) for f in plan.findings
            if f.level == "warning" and f.where.startswith("factors.")]


@pytest.mark.parametrize("engine", ["psync", "sync", "pvsync", "pvsync2"])
def test_an_iodepth_factor_with_a_synchronous_engine_is_warned(
    tmp_path: Path, engine: str
) -> None:
    got = _warnings(tmp_path, f", ioengine: {engine}", "  iodepth: [1, 8, 32]\n")
    assert len(got) == 1
    where, message = got[0]
    assert where == "factors.iodepth"
    assert f"ioengine {engine} is synchronous: fio ignores iodepth" in message


def test_an_iodepth_factor_named_otherwise_is_warned_at_that_factor(tmp_path: Path) -> None:
    got = _warnings(tmp_path, ", ioengine: psync",
                    "  oio: {path: workload.params.iodepth, levels: [1, 16]}\n")
    assert [w for w, _ in got] == ["factors.oio"]


def test_iodepth_with_buffered_libaio_is_warned(tmp_path: Path) -> None:
    got = _warnings(tmp_path, ", direct: false", "  iodepth: [1, 8]\n")
    assert len(got) == 1 and "libaio with direct: false" in got[0][1]


def test_numjobs_under_a_per_job_rate_cap_is_warned(tmp_path: Path) -> None:
    got = _warnings(tmp_path, ", rate_iops: 100", "  numjobs: [1, 4]\n")
    assert len(got) == 1 and "follow the setting (numjobs × rate_iops)" in got[0][1]


@pytest.mark.parametrize(
    ("params", "factors"),
    [
        ("", "  iodepth: [1, 8]\n"),  # libaio, direct: the depth is real
        (", ioengine: psync", "  numjobs: [1, 4]\n"),  # jobs do add I/Os in flight
        (", ioengine: psync", "  iodepth: [8]\n"),  # one level varies nothing
        (", rate_iops: 100", "  numjobs: [1, 4]\n  rate_iops: [100, 200]\n"),
    ],
)
def test_factors_that_change_something_are_not_warned(
    tmp_path: Path, params: str, factors: str
) -> None:
    assert _warnings(tmp_path, params, factors) == []


def test_a_factor_warning_says_the_line_and_column_of_the_factor(tmp_path: Path) -> None:
    # Review: warnings printed `s.yaml: factors.iodepth: warning: …` without the
    # line:column errors have.
    from tests.unit.test_config_limits import run_cli

    p = tmp_path / "s.yaml"
    p.write_text("version: 1\nname: m\ntopology: {storage: {count: 1}}\n"
                 "workload: {driver: fio, params: {rw: randread, size: 8m, ioengine: psync}}\n"
                 "factors:\n  iodepth: [1, 8]\nphases: {steady: 2s}\n")
    code, err = run_cli("validate", str(p))
    assert code == 0, err
    assert f"{p}:6:12: factors.iodepth: warning: factor iodepth varies iodepth, but ioengine psync"\
        " is synchronous" in err, err
