"""Metric names and QoS units are checked before a run against what the driver and the
collectors produce (their catalogues), located in the scenario with a did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.analysis.catalogue import Catalogue, metric, unit_problem
from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError

BASE = """\
version: 1
name: m
topology: {storage: {count: 1}}
workload: {driver: fio, params: {rw: randread, size: 8m}}
factors: {iodepth: [1, 8]}
phases: {steady: 2s}
"""


def _issues(tmp_path: Path, extra: str) -> list[str]:
    p = tmp_path / "s.yaml"
    p.write_text(BASE + extra)
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(p))
    return [str(i) for i in exc.value.issues]


def _ok(tmp_path: Path, extra: str) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(BASE + extra)
    build_plan(load_scenario(p))


def test_unknown_qos_metric_is_located_with_did_you_mean(tmp_path: Path) -> None:
    got = _issues(tmp_path, "qos:\n  - {metric: read_lat_p99, op: '<=', threshold: 5}\n")
    assert got == [
        f"{tmp_path / 's.yaml'}:8:14: qos.0.metric: no metric read_lat_p99 in fio's "
        "catalogue; did you mean read_clat_p99?"
    ]


@pytest.mark.parametrize(
    ("metric", "unit", "accepted"),
    [
        ("read_clat_p99", "msec", "accepted: ms, ns, us, µs, μs, s, min, h"),
        ("total_iops", "kIOPS", "accepted: IO/s"),
    ],
)
def test_qos_unit_outside_the_metrics_family_is_refused(
    tmp_path: Path, metric: str, unit: str, accepted: str
) -> None:
    got = _issues(tmp_path, f"qos:\n  - {{metric: {metric}, op: '<=', threshold: 5, "
                            f"unit: {unit}}}\n")
    assert len(got) == 1
    assert ":8:" in got[0] and "qos.0.unit:" in got[0]
    assert f"unit {unit!r} does not fit {metric}" in got[0] and got[0].endswith(accepted)


def test_convertible_units_and_known_names_pass(tmp_path: Path) -> None:
    _ok(tmp_path, "qos:\n  - {metric: read_clat_p99.9, op: '<=', threshold: 900, unit: us}\n"
                  "  - {metric: total_bw, op: '>=', threshold: 1, unit: KiB/s}\n"
                  "  - {metric: rel, op: '>=', threshold: 0.5}\n"
                  "derived:\n  - {name: rel, kind: normalize, metric: total_iops, "
                  "baseline: {iodepth: '1'}}\n")


def test_derived_regression_and_report_names_are_checked(tmp_path: Path) -> None:
    got = _issues(tmp_path, "derived:\n"
                            "  - {name: r, kind: normalize, metric: totl_iops, "
                            "baseline: {iodepth: '1'}}\n"
                            "  - {name: e, kind: expr, expr: 'read_iops / read_lat_man'}\n"
                            "regression: {metrics: [read_iopss]}\n"
                            "report: {headline: [total_iops, r, e, writ_bw]}\n")
    assert [g.split(": ", 2)[1] for g in got] == [
        "derived.0.metric", "derived.1.expr", "regression.metrics.0", "report.headline.3"]
    assert "did you mean total_iops?" in got[0]
    assert "no metric read_lat_man" in got[1] and "did you mean read_lat_mean?" in got[1]


def test_collector_metrics_are_known_when_the_collector_is_listed(tmp_path: Path) -> None:
    qos = "qos:\n  - {metric: guest_cpu_util, op: '<=', threshold: 90, unit: '%'}\n"
    got = _issues(tmp_path, qos)
    assert "no metric guest_cpu_util in fio's catalogue" in got[0]
    _ok(tmp_path, qos + "collectors: [{kind: guest_sysstat}]\n")


def test_a_derived_figure_without_unit_takes_no_unit(tmp_path: Path) -> None:
    got = _issues(tmp_path, "derived:\n  - {name: rel, kind: normalize, metric: total_iops, "
                            "baseline: {iodepth: '1'}}\n"
                            "qos:\n  - {metric: rel, op: '>=', threshold: 1, unit: '%'}\n")
    assert len(got) == 1 and got[0].endswith("rel has no unit: leave `unit` out")


def test_redis_per_operation_names_follow_the_mix() -> None:
    from vbench.workloads.redis_scaleout import RedisScaleout

    params = RedisScaleout.Params.model_validate({"mix": {"get": 50, "incr": 50}})
    c = Catalogue("redis_scaleout", RedisScaleout.metric_catalogue(params))
    assert c.find("incr_latency_p99_max") is not None
    assert c.find("set_ops_per_sec") is None  # not in this mix


def test_unit_problem_accepts_the_family_and_unknown_units() -> None:
    assert unit_problem("x", "ms", "s") is None
    assert unit_problem("x", None, "anything") is None  # the unit varies: not checked
    assert unit_problem("x", "Gbps", "Mbit/s") is None
    assert unit_problem("x", "ops/s", "kops/s") == (
        "unit 'kops/s' does not fit x (stored in ops/s); accepted: ops/s")
    assert metric("<d>_x", "ms", "lower", d=("a", "b")).names() == ["a_x", "b_x"]


def test_invalid_driver_parameters_are_not_buried_under_unknown_metric_names(
    tmp_path: Path,
) -> None:
    """With the parameters refused, the catalogue is unknown: only the real mistake shows."""
    p = tmp_path / "s.yaml"
    p.write_text(BASE.replace("rw: randread", "rw: randred")
                 + "qos:\n  - {metric: read_clat_p99_max, op: '<=', threshold: 5}\n"
                 + "report: {headline: [total_iops]}\n")  # fmt: skip
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(p))
    got = [str(i) for i in exc.value.issues]
    assert len(got) == 1 and "workload.params.rw" in got[0], got


def test_steady_state_metric_and_at_are_checked_against_the_run(tmp_path: Path) -> None:
    # bs is the one factor, levels 4k and 1m (BASE's iodepth replaced).
    base = "steady_state:\n  metric: {metric}\n  at: {at}\n"
    head = BASE.replace("factors: {iodepth: [1, 8]}\n", "") + "factors: {bs: [4k, 1m]}\n"
    p = tmp_path / "s.yaml"

    def issues(metric: str, at: str) -> list[str]:
        p.write_text(head + base.format(metric=metric, at=at))
        with pytest.raises(ConfigValidationError) as exc:
            build_plan(load_scenario(p))
        return [str(i) for i in exc.value.issues]

    assert issues("total_iopz", "{bs: 4k}") == [
        f"{p}:8:11: steady_state.metric: no metric total_iopz in fio's catalogue; "
        "did you mean total_iops?"]
    assert issues("total_iops", "{bs: 4K}") == [
        f"{p}:9:12: steady_state.at.bs: bs has no level '4K'; did you mean 4k? "
        "(its levels: 4k, 1m)"]
    (got,) = issues("total_iops", "{bsz: 4k}")
    assert got.startswith(f"{p}:9:13: steady_state.at.bsz: no factor 'bsz'; did you mean bs?")
    p.write_text(head + base.format(metric="total_iops", at="{bs: 4k}"))
    assert build_plan(load_scenario(p)).points


def test_an_adaptive_repeats_target_metrics_are_checked(tmp_path: Path) -> None:
    got = _issues(tmp_path, "repeat: {min: 3, max: 6, target: {ci_half_width: 5%}, "
                            "metrics: [total_iopz]}\n")
    assert got == [f"{tmp_path / 's.yaml'}:7:65: repeat.metrics.0: no metric total_iopz in "
                   "fio's catalogue; did you mean total_iops?"]
    _ok(tmp_path, "repeat: {min: 3, max: 6, target: {ci_half_width: 5%}, metrics: [total_iops]}\n")


def test_a_steady_state_at_that_no_point_has_is_refused() -> None:
    from vbench.analysis.steady_state import at_issues

    points = [{"bs": "4k", "rw": "read"}, {"bs": "1m", "rw": "write"}]  # 4k write excluded
    assert at_issues({"bs": "4k", "rw": "write"}, points) == [
        (("at",), "no point of the run has all of bs=4k, rw=write (an excluded combination?)")]
    assert at_issues({"bs": "4k", "rw": "read"}, points) == []
