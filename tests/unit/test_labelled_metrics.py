"""Labelled metrics: a catalogue entry says which labels its samples carry and which
values the driver can produce, so a QoS `where:` is held against them at validate —
a figure that exists only per label needs a `where:`, an unknown label or value is
refused with a did-you-mean, and a did-you-mean only proposes what would validate
(issue 23, items 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.analysis.catalogue import labelled, merge_labels, metric, relabel
from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError
from vbench.workloads.cloudstone import Cloudstone
from vbench.workloads.vcbench import VcbenchWorkload

ROOT = Path(__file__).resolve().parents[2]

VCBENCH = """\
version: 1
name: v
workload: {driver: vcbench, params: {template: DC0_C0_RP0_VM0}}
factors: {sessions: [2, 4]}
phases: {steady: 5s}
"""


def _issues(path: Path) -> list[str]:
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(path))
    return [str(i) for i in exc.value.issues]


def _vcbench(tmp_path: Path, qos: str) -> Path:
    p = tmp_path / "v.yaml"
    p.write_text(VCBENCH + "qos:\n" + qos)
    return p


def test_did_you_mean_never_proposes_a_per_label_figure_that_needs_a_where(
    tmp_path: Path,
) -> None:
    # Item 2: vcbench.latency_p95 used to propose vcbench.op_latency_p95, which then
    # validated and had no data at run time (it exists only per operation).
    got = _issues(_vcbench(tmp_path, "  - {metric: vcbench.latency_p95, op: '<=', "
                                     "threshold: 2}\n"))
    assert len(got) == 1
    assert ":7:" in got[0] and "qos.0.metric:" in got[0]
    assert "did you mean vcbench.latency_avg?" in got[0]
    assert "vcbench.op_latency_p95 exists only per op: a QoS on it needs where: {op: [" in got[0]


def test_a_per_label_figure_without_where_is_refused(tmp_path: Path) -> None:
    got = _issues(_vcbench(tmp_path, "  - {metric: vcbench.op_latency_p95, op: '<=', "
                                     "threshold: 2}\n"))
    assert len(got) == 1 and "qos.0.metric:" in got[0]
    assert "vcbench.op_latency_p95 exists only per op: add where: {op: [power_on" in got[0]


def test_a_per_label_figure_with_the_mix_operations_validates(tmp_path: Path) -> None:
    p = _vcbench(tmp_path, "  - {metric: vcbench.op_latency_p95, where: {op: [clone_full, "
                           "power_on]}, op: '<=', threshold: 2}\n")
    build_plan(load_scenario(p))


def test_an_operation_outside_the_mix_is_refused_with_did_you_mean(tmp_path: Path) -> None:
    p = tmp_path / "v.yaml"
    p.write_text(VCBENCH.replace("{template: DC0_C0_RP0_VM0}",
                                 "{template: DC0_C0_RP0_VM0, mix: {power_on: 1, power_off: 1}}")
                 + "qos:\n  - {metric: vcbench.op_latency_avg, where: {op: [power_of, clone_full]"
                   ", opp: x}, op: '<=', threshold: 2}\n")  # fmt: skip
    got = _issues(p)
    assert [g.split(": ", 2)[1] for g in got] == [
        "qos.0.where.op.0", "qos.0.where.op.1", "qos.0.where.opp"]
    assert got[0].endswith("this run makes it for op power_on, power_off; "
                           "did you mean power_off?")
    assert "did you mean" not in got[1]  # clone_full is not in this mix
    assert "has no label 'opp' (its labels: op); did you mean op?" in got[2]


def test_cloudstone_operation_typo_is_refused_at_its_line(tmp_path: Path) -> None:
    # Item 3: `where: {operation: [TagSerch]}` validated and was MISSING at run time.
    text = (ROOT / "scenarios" / "cloudstone.yaml").read_text()
    assert "[HomePage, TagSearch," in text
    p = tmp_path / "cs.yaml"
    p.write_text(text.replace("[HomePage, TagSearch,", "[HomePage, TagSerch,"))
    got = _issues(p)
    assert got and all("where.operation.1" in g and "did you mean TagSearch?" in g
                       for g in got)
    line = next(i for i, x in enumerate(p.read_text().splitlines(), 1) if "TagSerch" in x)
    assert f"cs.yaml:{line}:" in got[0]


def test_catalogues_carry_the_operations_of_each_points_parameters() -> None:
    cs = Cloudstone.metric_catalogue(
        Cloudstone.Params.model_validate({"profile": "rate", "rate": 5}))
    rt = next(m for m in cs if m.pattern == "rt_avg")
    assert rt.label_map == {"operation": ("StaticPage",)} and not rt.per_label
    vc = VcbenchWorkload.metric_catalogue(VcbenchWorkload.Params.model_validate(
        {"template": "t", "mix": {"create": 1, "destroy": 1}}))
    op = next(m for m in vc if m.pattern == "vcbench.op_latency_<stat>")
    assert op.per_label and op.label_map == {"op": ("create", "destroy")}


def test_merged_label_values_are_the_union_and_unknown_wins() -> None:
    base = labelled([metric("x", "s", "lower")], per_label=True, op=(), kind=())
    a = relabel(base, op=["a", "b"], kind=["k"])
    b = relabel(base, op=["b", "c"])
    (m,) = merge_labels((*a, *b))
    assert m.label_map == {"op": ("a", "b", "c"), "kind": ()} and m.per_label


def _catalog_with_qos(tmp_path: Path, name: str, qos: str) -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text((ROOT / "scenarios" / f"{name}.yaml").read_text() + "qos:\n" + qos)
    return p


def test_a_label_the_driver_does_not_put_on_a_metric_is_refused(tmp_path: Path) -> None:
    # DVD Store's operations are named by its driver's output (values not known in
    # advance), but the label is `operation`: `op` would select nothing at run time.
    p = _catalog_with_qos(tmp_path, "dvdstore-oltp", "  - {metric: op_rt_avg_ms, where: "
                                                     "{op: Login}, op: '<=', threshold: 5}\n")
    got = _issues(p)
    assert len(got) == 1 and "qos.0.where.op:" in got[0]
    assert got[0].endswith("has no label 'op' (its labels: operation)")


def test_dvdstore_per_operation_figures_need_a_where(tmp_path: Path) -> None:
    p = _catalog_with_qos(tmp_path, "dvdstore-oltp", "  - {metric: op_rt_avg_ms, op: '<=', "
                                                     "threshold: 5}\n")
    got = _issues(p)
    assert len(got) == 1
    assert "op_rt_avg_ms exists only per operation: add where: {operation: [" in got[0]
    any_value = _catalog_with_qos(tmp_path, "dvdstore-oltp", "  - {metric: op_rt_avg_ms, "
                                  "where: {operation: Login}, op: '<=', threshold: 5}\n")
    build_plan(load_scenario(any_value))  # values unknown before the run: not refused


def test_a_per_label_figure_outside_a_qos_is_refused(tmp_path: Path) -> None:
    # A derived figure, a regression check, the headline and a chart read a point's
    # unlabelled figure: a per-operation one has none ("no data" after the whole run).
    p = tmp_path / "v.yaml"
    p.write_text(VCBENCH + "derived:\n  - {name: r, kind: normalize, metric: "
                 "vcbench.op_latency_p95, baseline: {sessions: '2'}}\n"
                 "regression: {metrics: [vcbench.mix_share]}\n"
                 "report: {charts: [{metric: vcbench.op_ops_per_s, x: sessions}]}\n")
    got = _issues(p)
    assert [g.split(": ", 2)[1] for g in got] == [
        "derived.0.metric", "regression.metrics.0", "report.charts.0.metric"]
    assert "vcbench.op_latency_p95 exists only per op: only a QoS criterion can select it" \
        in got[0]


def test_a_where_on_a_figure_without_labels_is_refused(tmp_path: Path) -> None:
    got = _issues(_vcbench(tmp_path, "  - {metric: vcbench.ops_per_s, where: {op: power_on}, "
                                     "op: '>=', threshold: 1}\n"))
    assert len(got) == 1 and "qos.0.where:" in got[0]
    assert "vcbench.ops_per_s carries no label: leave `where` out" in got[0]


def test_with_a_where_did_you_mean_proposes_a_figure_carrying_those_labels(
    tmp_path: Path,
) -> None:
    got = _issues(_vcbench(tmp_path, "  - {metric: vcbench.latency_p95, where: {op: power_on},"
                                     " op: '<=', threshold: 2}\n"))
    assert len(got) == 1 and got[0].endswith("did you mean vcbench.op_latency_p95?")
