"""Derived figures: normalisation, speedup with its ideal, expressions, geometric means."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import pandas as pd
import pytest
from scipy import stats as sp

from vbench.analysis import expr as ex
from vbench.analysis.derived import check_derived, compute_derived
from vbench.analysis.figures import RunFigures, build_figures
from vbench.config.scenario import Derived, Scenario


def figures(
    points: Sequence[tuple[Mapping[str, str], Mapping[str, Sequence[float | None]]]],
    factors: Sequence[str] = (),
) -> RunFigures:
    rows, trials = [], []
    for p, (_labels, metrics) in enumerate(points):
        n = max(len(v) for v in metrics.values())
        for t in range(n):
            trials.append({"point": p, "trial": t, "status": "ok"})
            for m, vals in metrics.items():
                rows.append({"point": p, "trial": t, "guest": None, "metric": m,
                             "value": vals[t], "unit": "ops/s", "source": "x", "labels": "{}"})
    run = {"run_id": "r", "scenario": {"factors": {f: {} for f in factors}}}
    pts = [{"point": p, "labels": dict(lab)} for p, (lab, _) in enumerate(points)]
    return build_figures(run, pts, trials, pd.DataFrame(rows))


# DVD Store-like: deployment x instances, normalised to native at the same instance count.
DEPLOY = figures(
    [
        ({"deployment": "native", "n": "1"}, {"opm": [100.0, 110.0, 90.0]}),
        ({"deployment": "vm", "n": "1"}, {"opm": [96.0, 94.0, 95.0]}),
        ({"deployment": "native", "n": "8"}, {"opm": [700.0, 720.0, 680.0]}),
        ({"deployment": "vm", "n": "8"}, {"opm": [630.0, 650.0, 640.0]}),
    ],
    ["deployment", "n"],
)


def test_normalise_divides_each_trial_by_the_baseline_point_mean_of_its_group() -> None:
    spec = Derived(name="rel", kind="normalize", metric="opm", baseline={"deployment": "native"})
    res = compute_derived(DEPLOY, [spec])
    by_point = {f.point: f for f in res.figures}
    assert by_point[1].values == {0: pytest.approx(0.96), 1: pytest.approx(0.94),
                                  2: pytest.approx(0.95)}
    assert by_point[3].summary.mean == pytest.approx(640.0 / 700.0)  # native n=8, not n=1
    assert by_point[0].summary.mean == pytest.approx(1.0)
    # The interval of a normalised figure: the point's own t-interval, scaled.
    low, high = sp.t.interval(0.95, 2, loc=640.0, scale=sp.sem([630.0, 650.0, 640.0]))
    assert by_point[3].summary.ci_low == pytest.approx(low / 700.0)
    assert by_point[3].summary.ci_high == pytest.approx(high / 700.0)
    assert by_point[1].reference == "relative to deployment=native (= 1.0)"
    assert not res.problems


def test_speedup_curve_has_the_ideal_from_the_factor_levels() -> None:
    curve = figures(
        [({"vms": v}, {"iops": [base * int(v) * eff] * 2})
         for v, base, eff in (("1", 1000.0, 1.0), ("2", 1000.0, 0.9), ("4", 1000.0, 0.75))],
        ["vms"],
    )
    spec = Derived(name="speedup", kind="speedup", metric="iops", baseline={"vms": "1"},
                   ideal="vms")
    figs = {f.labels["vms"]: f for f in compute_derived(curve, [spec]).figures}
    assert figs["1"].summary.mean == pytest.approx(1.0) and figs["1"].ideal == 1.0
    assert figs["2"].summary.mean == pytest.approx(1.8) and figs["2"].ideal == 2.0
    assert figs["4"].summary.mean == pytest.approx(3.0) and figs["4"].ideal == 4.0


def test_speedup_of_a_target_point_with_a_numeric_ideal() -> None:
    redis = figures(
        [({"layout": "baseline"}, {"ops": [400.0, 420.0]}),
         ({"layout": "scaleout"}, {"ops": [2000.0, 2100.0]})],
        ["layout"],
    )
    spec = Derived(name="speedup", kind="speedup", metric="ops",
                   baseline={"layout": "baseline"}, target={"layout": "scaleout"}, ideal=8)
    res = compute_derived(redis, [spec])
    assert len(res.figures) == 1
    f = res.figures[0]
    assert f.point == 1 and f.ideal == 8.0
    assert f.summary.mean == pytest.approx(2050.0 / 410.0)


def test_expression_is_per_trial_and_missing_or_zero_gives_none() -> None:
    f = figures(
        [({}, {"iops": [10_000.0, 12_000.0, 9_000.0], "cpu": [50.0, 0.0, None]})]
    )
    spec = Derived(name="cost", kind="expr", expr="cpu / (iops / 1000)", unit="% per kIO/s")
    fig = compute_derived(f, [spec]).figures[0]
    assert fig.values == {0: pytest.approx(5.0), 1: 0.0, 2: None}
    assert fig.summary.n == 2
    assert fig.better == "lower"  # a cost: its name says so


def test_later_figures_can_use_earlier_ones() -> None:
    specs = [
        Derived(name="rel", kind="normalize", metric="opm", baseline={"deployment": "native"}),
        Derived(name="rel_pct", kind="expr", expr="rel * 100", unit="%"),
    ]
    res = compute_derived(DEPLOY, specs)
    pct = {f.point: f.summary.mean for f in res.named("rel_pct")}
    assert pct[3] == pytest.approx(100 * 640.0 / 700.0)


def test_geomean_across_metrics_per_trial() -> None:
    f = figures([({}, {"a": [1.0, 4.0], "b": [4.0, 9.0], "c": [2.0, -1.0]})])
    spec = Derived(name="g", kind="geomean", metrics=["a", "b"])
    fig = compute_derived(f, [spec]).figures[0]
    assert fig.values[0] == pytest.approx(2.0) and fig.values[1] == pytest.approx(6.0)
    bad = compute_derived(f, [Derived(name="h", kind="geomean", metrics=["a", "c"])])
    assert bad.figures[0].values[1] is None  # a negative value has no geometric mean


def test_geomean_across_a_factor_uses_point_means() -> None:
    spec = Derived(name="score", kind="geomean", metric="opm", across="n")
    figs = {f.labels["deployment"]: f for f in compute_derived(DEPLOY, [spec]).figures}
    assert figs["native"].point is None
    assert figs["native"].summary.mean == pytest.approx(sp.gmean([100.0, 700.0]))
    assert figs["vm"].summary.mean == pytest.approx(sp.gmean([95.0, 640.0]))
    assert figs["vm"].summary.n == 3 and figs["vm"].summary.ci_low is None


def test_problems_are_reported_not_raised() -> None:
    specs = [
        Derived(name="x", kind="normalize", metric="nope", baseline={"deployment": "native"}),
        Derived(name="y", kind="normalize", metric="opm", baseline={"size": "big"}),
        Derived(name="z", kind="expr", expr="opm / missing"),
    ]
    res = compute_derived(DEPLOY, specs)
    assert res.figures == ()
    text = " ".join(res.problems)
    assert "no data for nope" in text and "no factor size" in text and "missing" in text


def test_scenario_mistakes_are_located_before_a_run() -> None:
    sc = Scenario.model_validate({
        "version": 1, "name": "s", "topology": {"g": {}}, "workload": {"driver": "fio"},
        "factors": {"bs": ["4k", "64k"]}, "phases": {"steady": 1},
        "derived": [
            {"name": "a", "kind": "normalize", "metric": "m", "baseline": {"bs": "8k"}},
            {"name": "a", "kind": "expr", "expr": "m *"},
            {"name": "b", "kind": "speedup", "metric": "m", "baseline": {"bs": "4k"},
             "ideal": "vms"},
        ],
    })
    issues = dict(((".".join(map(str, p)), m) for p, m in check_derived(sc)))
    assert "no level '8k'" in issues["derived.0.baseline.bs"]
    assert "declared twice" in issues["derived.1.name"]
    assert "end of expression" in issues["derived.1.expr"]
    assert "no factor 'vms'" in issues["derived.2.ideal"]


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("1 + 2 * 3", {}, 7.0),
        ("(1 + 2) * 3", {}, 9.0),
        ("-a / -b", {"a": 6.0, "b": 3.0}, 2.0),
        ("read_clat_p99.9 / 2", {"read_clat_p99.9": 3.0}, 1.5),
        ("max(a, b, 1e3) - min(a, b)", {"a": 5.0, "b": 7.0}, 995.0),
        ("abs(a - b)", {"a": 5.0, "b": 7.0}, 2.0),
        ("a / 0", {"a": 1.0}, None),
        ("a + b", {"a": 1.0, "b": None}, None),
        (".5 * a", {"a": 4.0}, 2.0),
    ],
)
def test_expression_language(text: str, env: dict[str, float | None], expected: float) -> None:
    value = ex.evaluate(ex.parse(text), env)
    assert value == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a +", "end of expression"),
        ("a $ b", "unexpected '$' at column 3"),
        ("(a", "expected ')'"),
        ("__import__(a)", "unknown function '__import__'"),
        ("a b", "unexpected 'b' at column 3"),
        ("", "empty"),
    ],
)
def test_expression_errors_say_where(text: str, message: str) -> None:
    with pytest.raises(ex.ExprError, match=re.escape(message)):
        ex.parse(text)


def test_expression_names() -> None:
    assert ex.names(ex.parse("a / (b + max(c, 2))")) == {"a", "b", "c"}
    assert math.isclose(ex.evaluate(ex.parse("2 - 3 - 4"), {}) or 0, -5.0)  # left assoc
