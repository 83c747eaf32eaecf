"""cloudstone: parameters, the Olio matrix's required mix, and the steady-window figures
computed from Locust records (pure functions; the end-to-end run is in integration)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vbench.workloads.cloudstone import metrics
from vbench.workloads.cloudstone.params import (
    OLIO_MATRIX,
    CloudstoneParams,
    integer_weights,
    olio_limits,
    stationary_mix,
)

# The CloudStone study: the mix Faban reports for the Olio matrix (1500 users), percent.
STUDY_MIX = {"HomePage": 26.14, "Login": 10.22, "TagSearch": 33.37, "EventDetail": 24.71,
             "PersonDetail": 2.65, "AddPerson": 0.86, "AddEvent": 2.04}  # fmt: skip


def test_olio_matrix_settles_into_the_studys_mix() -> None:
    mix = stationary_mix(OLIO_MATRIX)
    assert sum(mix.values()) == pytest.approx(1.0)
    for op, pct in STUDY_MIX.items():
        assert 100 * mix[op] == pytest.approx(pct, abs=0.1), op


def test_seed_limits_are_the_default() -> None:
    limits = olio_limits()
    assert (limits["HomePage"].avg_ms, limits["HomePage"].p95_ms) == (250, 500)
    assert (limits["AddEvent"].avg_ms, limits["AddEvent"].p95_ms) == (500, 1000)
    assert integer_weights(OLIO_MATRIX)["Login"] == {"TagSearch": 6000, "EventDetail": 2000,
                                                     "AddEvent": 2000}  # fmt: skip


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"matrix": {"HomePage": {"Nope": 1}}}, "unknown operation"),
        ({"matrix": {"HomePage": {"Login": 1}}}, "leads to Login, which has no row"),
        ({"matrix": {"HomePage": {"HomePage": 0}}}, "one of them > 0"),
        ({"profile": "rate"}, "needs `rate`"),
        ({"deploy": False}, "one base_urls entry per instance"),
        ({"deploy": False, "base_urls": ["ftp://x"]}, "not an http"),
        ({"static_path": "/a b"}, "absolute URL path"),
        ({"bind": "1.2.3.4\nuser root;"}, "control characters"),
        ({"usres": 5}, "usres"),
    ],
)
def test_bad_params_are_refused(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CloudstoneParams.model_validate(params)


def _ops(spec: list[tuple[float, str, float, bool]]) -> list[metrics.OpRecord]:
    return [metrics.OpRecord(t, op, ms, ok, 1000) for t, op, ms, ok in spec]


def test_figures_cover_the_steady_window_only() -> None:
    recs = _ops([(0.5, "A", 999, True), (10.5, "A", 10, True), (11, "A", 20, True),
                 (12, "B", 30, True), (13, "B", 40, False), (25, "A", 999, True)])  # fmt: skip
    figs = metrics.op_figures(recs, 10, 20, {"A": 0.5, "B": 0.5}, 2.0, 5.0)
    a, b, every = figs["A"], figs["B"], figs[metrics.ALL]
    assert (a.count, a.errors, a.throughput, a.avg_ms, a.max_ms) == (2, 0, 0.2, 15.0, 20.0)
    assert (b.count, b.errors, b.avg_ms) == (2, 1, 30.0)  # the failed one is not timed
    assert (every.count, every.errors, every.throughput) == (4, 1, 0.3)
    assert a.mix_pct == 50.0 and a.required_pct == 50.0 and a.mix_ok is True
    # Two 5-second sub-windows: A has 2 then 0 successes; B 1 then 0.
    assert a.sub_throughput_sd == pytest.approx(0.2828427, rel=1e-6)
    assert a.sub_avg_sd_ms is None  # only one sub-window had an A


def test_mix_outside_tolerance_is_flagged_once_enough_operations() -> None:
    recs = _ops([(1 + i * 0.001, "A" if i % 10 else "B", 1, True) for i in range(10_000)])
    figs = metrics.op_figures(recs, 0, 100, {"A": 0.8, "B": 0.2}, 2.0, 30.0)
    assert figs["A"].mix_pct == pytest.approx(90.0) and figs["A"].mix_ok is False
    # The same 10-point gap over 10 operations cannot be judged: 3 standard errors win.
    few = metrics.op_figures(recs[:10], 0, 100, {"A": 0.8, "B": 0.2}, 2.0, 30.0)
    assert few["A"].mix_ok is True


def test_percentiles_of_successful_operations() -> None:
    recs = _ops([(1 + i / 1000, "A", float(i + 1), True) for i in range(100)])
    a = metrics.op_figures(recs, 0, 10, {"A": 1.0}, 2.0, 30.0)["A"]
    assert (a.p90_ms, a.p95_ms, a.p99_ms, a.max_ms) == pytest.approx((90.1, 95.05, 99.01, 100))


def test_records_parse_with_clock_offset_and_skip_cut_lines() -> None:
    text = "S 1000.0\nR 1010.5 HomePage 12.5 1 3000\nC 1011.0 2.5 40\nR 1011 Ho"
    r = metrics.parse_records(text, "g2:77", offset=5.0)
    assert r.start == 995.0
    assert r.ops == (metrics.OpRecord(1005.5, "HomePage", 12.5, True, 3000),)
    assert r.cpu == (metrics.CpuSample("g2:77", 1006.0, 2.5, 40),)


def test_load_check_flags_cpu_missing_users_and_low_rate() -> None:
    rows = [("w1", 10, 0.0, 5), ("w1", 20, 9.0, 5), ("w2", 10, 0.0, 4), ("w2", 20, 1.0, 4)]
    cpu = [metrics.CpuSample(p, t, c, u) for p, t, c, u in rows]
    ok = metrics.load_check(cpu, 9, 21, 9, None, 0.0, 0.95)
    assert ok.cpu_max == pytest.approx(0.9) and ok.users_min == 9 and not ok.saturated
    hot = metrics.load_check(cpu, 9, 21, 10, 50.0, 40.0, 0.8)
    assert hot.saturated
    assert hot.reasons == ("Locust CPU 90% of a core > 80%", "only 9 of 10 users running",
                           "achieved 40.0 req/s of 50 asked")  # fmt: skip


def test_across_instances_throughput_summed_latency_averaged() -> None:
    one = metrics.op_figures(_ops([(1, "A", 10, True), (2, "A", 30, True)]), 0, 10,
                             {"A": 1.0}, 2.0, 30.0)  # fmt: skip
    two = metrics.op_figures(_ops([(1, "A", 50, True)]), 0, 10, {"A": 1.0}, 2.0, 30.0)
    checks = [metrics.LoadCheck(0.5, 1, False, ()), metrics.LoadCheck(0.9, 1, True, ("x",))]
    out = {(s.metric, s.labels): s.value for s in metrics.aggregate_samples([one, two], checks)}
    assert out[("ops_per_sec", ())] == pytest.approx(0.3)
    assert out[("rt_avg", (("operation", "A"),))] == pytest.approx((20 + 50) / 2)
    assert out[("client_saturated", ())] == 1.0 and out[("client_cpu", ())] == 0.9
    per = metrics.instance_samples(2, "guest1", two, checks[1])
    assert {s.guest for s in per} == {"guest1"}
    assert all(dict(s.labels)["instance"] == "2" for s in per)


def test_an_empty_window_has_no_throughput_rather_than_zero() -> None:
    figs = metrics.op_figures(_ops([(5.0, "HomePage", 10.0, True)]), 10.0, 10.0,
                              {"HomePage": 1.0}, 2.0, 1.0)  # fmt: skip
    assert figs[metrics.ALL].throughput is None
    assert figs["HomePage"].count == 0 and figs["HomePage"].avg_ms is None


def test_the_whole_mix_carries_the_validity_verdict_and_no_empty_shares() -> None:
    # Issue 22: the overall row's mix, mix_required and mix_outside_tolerance were empty,
    # so reports said "no figure at any point" beside 40 per-operation values.
    inside = metrics.op_figures(_ops([(1, "A", 10, True), (2, "B", 10, True)]), 0, 10,
                                {"A": 0.5, "B": 0.5}, 2.0, 30.0)  # fmt: skip
    # 90 % A against 50 % asked: outside even the 3-standard-error band of 100 operations.
    skewed = metrics.op_figures(_ops([(1, "A", 10, True)] * 90 + [(2, "B", 10, True)] * 10),
                                0, 10, {"A": 0.5, "B": 0.5}, 2.0, 30.0)  # fmt: skip
    check = metrics.LoadCheck(0.1, 1, False, ())

    def overall(per: list[dict[str, metrics.OpFigures]]) -> dict[str, float | None]:
        return {s.metric: s.value for s in metrics.aggregate_samples(per, [check] * len(per))
                if not s.labels}

    assert "mix" not in overall([inside]) and "mix_required" not in overall([inside])
    assert overall([inside])["mix_outside_tolerance"] == 0.0
    assert overall([inside, skewed])["mix_outside_tolerance"] == 1.0
