"""Each study's answer, as its workload driver declares it, read from hand-made stored
runs whose figures are chosen here: vcbench's ops/s against Little's law (one chart,
the law dashed over the measured curve), and the answers of the other studies."""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.analysis_runs import UNITS, add_run, scenario_doc
from vbench.analysis.verdict import Verdict, verdict_from_json, verdict_to_json
from vbench.engine.verdict import verdict_of, with_verdict
from vbench.report.build import report_data
from vbench.report.data import ReportView
from vbench.report.html import render_html
from vbench.results.store import Store

Point = tuple[Mapping[str, str], Mapping[str, Sequence[float | None]]]


def stored(tmp: Path, points: Sequence[Point], **scenario: Any) -> tuple[Verdict, str]:
    """The run's verdict and its HTML report."""
    factors: dict[str, list[str]] = {}
    for labels, _ in points:
        for k, v in labels.items():
            factors.setdefault(k, [])
            if v not in factors[k]:
                factors[k].append(v)
    doc = scenario_doc("study", factors, **scenario)
    with Store.open(f"sqlite:///{tmp}/s.db", tmp) as store:
        add_run(store, "r1", points, scenario=doc)
        data = report_data(store, "r1")
    data = with_verdict(data)
    return verdict_of(data), render_html(data)


def summary_charts(html: str) -> list[tuple[str, str]]:
    summary = re.search(r'<section id="summary">(.*?)</section>', html, re.DOTALL)
    assert summary
    return re.findall(r"<figure>\s*(<svg.*?</svg>)\s*<figcaption>(.*?)</figcaption>",
                      summary.group(1), re.DOTALL)


def title_of(svg: str) -> str:
    found = re.search(r"<title>(.*?)</title>", svg)
    return html_lib.unescape(found.group(1)) if found else ""


def legend(svg: str) -> list[str]:
    return [html_lib.unescape(t) for t in re.findall(
        r'text-anchor="start" font-size="9.5" fill="#222222"[^>]*>([^<]*)<', svg)]


# ------------------------------------------------------------------ vcbench

# (vcenter, sessions) -> per-trial ops/s and mean latency (s); Little's law = N / L.
VCB = {("baseline", 8): ([12.0, 12.2], [0.66, 0.65]),
       ("baseline", 32): ([31.8, 32.8], [0.99, 0.97]),
       ("candidate", 8): ([8.85, 9.0], [0.89, 0.88]),
       ("candidate", 32): ([28.9, 29.3], [1.09, 1.08])}  # fmt: skip


def vcbench_points() -> list[Point]:
    out: list[Point] = []
    for (vc, n), (ops, lat) in VCB.items():
        out.append(({"vcenter": vc, "sessions": str(n)}, {
            "vcbench.ops_per_s": ops, "vcbench.latency_avg": lat,
            "vcbench.sessions": [float(n)] * 2,
            "vcbench.littles_ideal_ops_per_s": [n / x for x in lat],
            "vcbench.failed": [0.0, 0.0]}))
    return out


def vcbench_run(tmp: Path, **params: Any) -> tuple[Verdict, str]:
    return stored(tmp, vcbench_points(),
                  workload={"driver": "vcbench", "roles": {},
                            "params": {"template": "t", **params}},
                  report={"headline": ["vcbench.ops_per_s", "vcbench.latency_avg",
                                       "vcbench.failed"], "charts": []})


def test_vcbench_answers_ops_per_s_against_littles_law(tmp_path: Path) -> None:
    verdict, _ = vcbench_run(tmp_path)
    answer = verdict.answer
    assert answer is not None and answer.kind == "vcbench"
    # The best point is baseline at 32 sessions: 32.3 ops/s against 32 / 0.98 = 32.65.
    ideal = sum(32 / x for x in (0.99, 0.97)) / 2
    assert "at vcenter=baseline, sessions=32" in answer.text
    assert f"{32.3 / ideal * 100:.3g} % of Little's law" in answer.text
    ratios = [sum(ops) / sum(n / x for x in lat) for (_, n), (ops, lat) in VCB.items()]
    assert f"over {len(VCB)} points" in answer.text
    assert f"{min(ratios) * 100:.3g}–{max(ratios) * 100:.3g} %" in answer.text
    assert [c.metric for c in answer.charts] == ["vcbench.ops_per_s"]
    assert answer.charts[0].x == "sessions"
    assert answer.charts[0].ideal == "vcbench.littles_ideal_ops_per_s"


def test_vcbench_report_leads_with_ops_per_s_and_littles_law_on_one_chart(
    tmp_path: Path,
) -> None:
    _, html = vcbench_run(tmp_path)
    charts = summary_charts(html)
    svg, cap = charts[0]
    assert title_of(svg) == "ops/s against Little's law"
    entries = legend(svg)
    assert entries[:3] == ["vcenter", "baseline", "candidate"]
    assert sum("Little's law" in e for e in entries) == 2  # one per vCenter, dashed
    assert "dashed = Little's law" in html_lib.unescape(cap)
    # No second chart of the law on its own, and ops/s is not drawn twice.
    assert not any("littles_ideal" in title_of(s) for s, _ in charts)
    assert [title_of(s) for s, _ in charts].count("vcbench.ops_per_s") == 0


def test_a_chart_entry_the_answer_already_draws_is_drawn_once(tmp_path: Path) -> None:
    _, html = stored(tmp_path, vcbench_points(),
                     workload={"driver": "vcbench", "roles": {}, "params": {"template": "t"}},
                     report={"headline": ["vcbench.ops_per_s"], "charts": [
                         {"metric": "vcbench.ops_per_s", "kind": "line", "x": "sessions",
                          "title": "ops/s vs sessions"}]})
    titles = [title_of(s) for s, _ in summary_charts(html)]
    assert titles == ["ops/s against Little's law"]


def test_vcbench_open_loop_answers_against_the_offered_rate(tmp_path: Path) -> None:
    verdict, _ = vcbench_run(tmp_path, loop="open", rate=40)
    answer = verdict.answer
    assert answer is not None
    assert answer.text.startswith(f"32.30 ± 6.35 ops/s of 40 ops/s offered "
                                  f"({32.3 / 40 * 100:.3g} %) at vcenter=baseline")
    assert answer.charts[0].ideal is None


def test_the_answers_chart_survives_the_stored_verdict(tmp_path: Path) -> None:
    verdict, _ = vcbench_run(tmp_path)
    back = verdict_from_json(json.loads(json.dumps(verdict_to_json(verdict))))
    assert back is not None and back.answers == verdict.answers


# ------------------------------------------------------------------ CloudStone

OPS_MIX = {"HomePage": 30.0, "TagSearch": 40.0, "AddEvent": 30.0}  # required, %
CS_UNITS = {"rt_avg": "ms", "mix": "%", "mix_required": "%", "mix_outside_tolerance": "flag",
            "client_saturated": "flag"}


@pytest.fixture
def cs_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """The units the cloudstone driver gives its figures (the hand-made run's default is
    ops/s)."""
    for metric, unit in CS_UNITS.items():
        monkeypatch.setitem(UNITS, metric, unit)


def cloudstone_run(tmp: Path, achieved: Sequence[Mapping[str, float]],
                   rt: Sequence[float]) -> tuple[Verdict, str]:
    """One point per instances level: its achieved mix per operation (tolerance 5 pp)
    and every operation's mean response time (the QoS limit is 250 ms)."""
    points: list[Point] = []
    labelled = []
    for p, (mix, ms) in enumerate(zip(achieved, rt, strict=True)):
        points.append(({"instances": str(p + 1)}, {"ops_per_sec": [20.0 * (p + 1)],
                                                  "client_saturated": [0.0]}))
        for op, req in OPS_MIX.items():
            off = float(abs(mix[op] - req) > 5)
            labelled += [(p, 0, "mix", {"operation": op}, mix[op]),
                         (p, 0, "mix_required", {"operation": op}, req),
                         (p, 0, "mix_outside_tolerance", {"operation": op}, off),
                         (p, 0, "rt_avg", {"operation": op}, ms)]
    doc = scenario_doc(
        "cs", {"instances": [str(i + 1) for i in range(len(achieved))]}, repeat=1,
        workload={"driver": "cloudstone", "roles": {},
                  "params": {"profile": "olio", "mix_tolerance": 5}},
        qos=[{"name": "average", "metric": "rt_avg", "op": "<=", "threshold": 250,
              "unit": "ms", "stat": "mean", "where": {"operation": list(OPS_MIX)},
              "at": {}}],
        report={"headline": ["ops_per_sec"], "charts": []})
    with Store.open(f"sqlite:///{tmp}/s.db", tmp) as store:
        add_run(store, "r1", points, scenario=doc, labelled=labelled)
        data = with_verdict(report_data(store, "r1"))
    return verdict_of(data), render_html(data)


@pytest.mark.usefixtures("cs_units")
def test_cloudstone_answers_the_best_valid_point_by_fabans_criteria(tmp_path: Path) -> None:
    good = {"HomePage": 31.0, "TagSearch": 39.0, "AddEvent": 30.0}
    skewed = {"HomePage": 22.0, "TagSearch": 48.0, "AddEvent": 30.0}
    # 1 instance: valid; 2: mix valid but too slow; 3: fast, highest ops/s, mix off.
    verdict, html = cloudstone_run(tmp_path, [good, good, skewed], [100.0, 300.0, 90.0])
    answer = verdict.answer
    assert answer is not None and answer.kind == "cloudstone" and answer.ok is True
    assert answer.text == ("20.00 ops/s at instances=1: valid (mix valid: 3 operations "
                           "within ±5 pp · QoS pass 3/3 · load generator kept up)")
    two, three = answer.details[1:]
    assert "QoS FAIL 0/3 (rt_avg HomePage 300 ms vs <= 250 and 2 more)" in two
    assert ("mix INVALID: 2 of 3 operations outside ±5 pp (HomePage 22.0 % vs 30.0 % "
            "required, TagSearch 48.0 % vs 40.0 % required)") in three
    charts = summary_charts(html)
    mix_svg, mix_cap = charts[0]
    assert title_of(mix_svg) == "achieved vs required mix at instances=1"
    assert "dashed = required mix (±5 pp)" in mix_cap
    assert title_of(charts[1][0]) == "rt_avg per operation against its QoS limit at instances=1"


@pytest.mark.usefixtures("cs_units")
def test_cloudstone_with_no_valid_point_says_so_and_why(tmp_path: Path) -> None:
    skewed = {"HomePage": 22.0, "TagSearch": 48.0, "AddEvent": 30.0}
    verdict, html = cloudstone_run(tmp_path, [skewed], [100.0])
    answer = verdict.answer
    assert answer is not None and answer.ok is False and answer.status == "invalid"
    assert answer.text.startswith("no valid point: 1 of 1 fail Faban's criteria; best "
                                  "20.00 ops/s is mix INVALID")
    mix_svg = summary_charts(html)[0][0]
    assert mix_svg.count('fill="#b00020"') == 2  # the two operations outside, in red


# ------------------------------------------------------------------ DVD Store

DS_OPM = {"Native": [60000.0, 61000.0, 59000.0], "Native-Docker": [57000.0, 58000.0, 56000.0],
          "VM-8VMs": [54000.0, 55000.0, 53000.0]}


@pytest.fixture(autouse=True)
def ds_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(UNITS, "opm", "orders/min")


def dvdstore_run(tmp: Path, *, declared: bool) -> tuple[Verdict, str]:
    points: list[Point] = [({"config": c}, {"opm": v}) for c, v in DS_OPM.items()]
    derived = [{"name": "vs_native", "kind": "normalize", "metric": "opm",
                "baseline": {"config": "Native"}}] if declared else []
    return stored(tmp, points, derived=derived,
                  workload={"driver": "dvdstore", "roles": {}, "params": {}},
                  report={"headline": ["opm"], "charts": []})


def test_dvdstore_answers_opm_against_native_from_the_declared_ratio(tmp_path: Path) -> None:
    verdict, html = dvdstore_run(tmp_path, declared=True)
    answer = verdict.answer
    assert answer is not None and answer.kind == "dvdstore"
    assert answer.text.startswith("OPM against native: config=Native-Docker 95 % ± 4.1 pp; ")
    assert "config=VM-8VMs 90 % ± 4.1 pp" in answer.text
    assert answer.text.endswith("(= 100 %: native 60,000 ± 2,484 orders/min at config=Native)")
    svg, _ = summary_charts(html)[0]
    assert title_of(svg) == "OPM normalised to native"
    assert "native = 1.0" in legend(svg)


def test_dvdstore_without_a_declared_ratio_uses_the_native_level(tmp_path: Path) -> None:
    verdict, html = dvdstore_run(tmp_path, declared=False)
    answer = verdict.answer
    assert answer is not None
    assert answer.text.startswith("OPM against native: config=Native-Docker 95 %; "
                                  "config=VM-8VMs 90 %")
    svg, _ = summary_charts(html)[0]
    assert title_of(svg) == "OPM against native" and "native" in legend(svg)


# ------------------------------------------------------------------ Content Library

CL_STEPS = [{"op": "create_library", "library": "pub"},
            {"op": "import", "library": "pub", "label": "import"},
            {"op": "subscribe", "library": "sub", "publisher": "pub"},
            {"op": "sync", "library": "sub", "label": "sync"},
            {"op": "deploy", "library": "pub", "label": "deploy", "item": "golden"}]
MIB8 = 8 * 2**20


def library_run(tmp: Path, *, simulated: bool, sync_s: float) -> Verdict:
    values = {"import_time": [0.21, 0.23], "import_ops": [3.0, 3.0],
              "import_bytes": [3.0 * MIB8] * 2, "import_throughput": [38.0, 36.0],
              "sync_time": [sync_s] * 2, "sync_items": [3.0, 3.0],
              "deploy_time": [0.046, 0.050]}
    doc = scenario_doc("cl", workload={"driver": "content_library", "roles": {},
                                       "params": {"steps": CL_STEPS}},
                       report={"headline": ["import_throughput", "sync_time"], "charts": []})
    vc = {"url": "https://127.0.0.1/sdk"} | ({"simulator": {"hosts": 1}} if simulated else {})
    with Store.open(f"sqlite:///{tmp}/s.db", tmp) as store:
        add_run(store, "r1", [({}, values)], scenario=doc,
                lab={"name": "sim", "vcenters": {"vc1": vc}}, testbed={"vcenters": []})
        return verdict_of(with_verdict(report_data(store, "r1")))


def test_content_library_on_vcsim_says_a_sync_moved_no_data(tmp_path: Path) -> None:
    answer = library_run(tmp_path, simulated=True, sync_s=0.0012).answer
    assert answer is not None and answer.kind == "content library"
    assert answer.text.startswith("time per operation: import 220 ms (37 MB/s) · sync 1.2 "
                                  "ms* · deploy 48 ms*")
    assert ("* sync: vcsim shares the publisher's items with the subscriber: no data is "
            "copied (25.2 MB in 1.2 ms)") in answer.text
    assert "* deploy: vcsim clones no disk data" in answer.text
    assert answer.text.endswith("(simulated vCenter)")


def test_content_library_flags_an_impossible_transfer_on_a_real_lab(tmp_path: Path) -> None:
    answer = library_run(tmp_path, simulated=False, sync_s=0.0012).answer
    assert answer is not None
    assert ("* sync: 25.2 MB in 1.2 ms implies 21 GB/s, faster than any link: the content "
            "was not copied in this step") in answer.text
    assert "deploy 48 ms*" not in answer.text and "deploy 48 ms" in answer.text
    honest = library_run(tmp_path / "real", simulated=False, sync_s=2.5).answer
    assert honest is not None and "*" not in honest.text and "sync 2.5 s" in honest.text


# ------------------------------------------------------------------ scaling studies

def scaling_run(tmp: Path, iops: Mapping[str, float]) -> tuple[Verdict, str]:
    points: list[Point] = [({"workers": n}, {"iops": [v * 0.99, v * 1.01]})
                           for n, v in iops.items()]
    doc = scenario_doc("sc", {"workers": list(iops)}, repeat=2,
                       workload={"driver": "fio", "roles": {}, "params": {}},
                       report={"headline": ["iops"], "charts": []})
    doc["factors"]["workers"]["path"] = "topology.clients.count"
    with Store.open(f"sqlite:///{tmp}/s.db", tmp) as store:
        add_run(store, "r1", points, scenario=doc)
        data = with_verdict(report_data(store, "r1"))
    return verdict_of(data), render_html(data)


def test_a_count_factor_is_answered_with_speedup_and_efficiency(tmp_path: Path) -> None:
    verdict, html = scaling_run(tmp_path, {"1": 1000.0, "2": 1950.0, "4": 3700.0,
                                           "8": 5200.0})
    answer = verdict.answer
    assert answer is not None and answer.kind == "scaling"
    assert answer.text == ("iops at workers=8: speedup 5.2× over workers=1 against ideal "
                           "8× (efficiency 65 %); efficiency ≥ 90 % up to workers=4")
    assert answer.details == ("speedup over 1 → 2: 1.95× of 2× (98 %); 4: 3.7× of 4× (92 %); "
                              "8: 5.2× of 8× (65 %)",)
    svg, cap = summary_charts(html)[0]
    assert title_of(svg) == "iops: speedup against linear scaling"
    assert "dashed = ideal linear scaling from the smallest level" in cap
    # The ideal is drawn over the measured curve: its dashed line comes after the curve.
    polylines = re.findall(r"<polyline [^>]*>", svg)
    assert [("5 3" in p, "#0072b2" in p) for p in polylines] == [(False, True), (True, False)]


def test_efficiency_held_counts_only_from_the_first_level(tmp_path: Path) -> None:
    verdict, _ = scaling_run(tmp_path, {"1": 1000.0, "2": 1500.0, "4": 3900.0})
    answer = verdict.answer
    assert answer is not None and "up to" not in answer.text


def test_a_declared_speedup_with_its_ideal_answers_the_redis_scale_out(tmp_path: Path) -> None:
    points: list[Point] = [({"layout": "baseline"}, {"ops": [100e3, 102e3, 98e3]}),
                           ({"layout": "scale-out"}, {"ops": [160e3, 165e3, 155e3]})]
    verdict, _ = stored(tmp_path, points, derived=[
        {"name": "speedup", "kind": "speedup", "metric": "ops",
         "baseline": {"layout": "baseline"}, "target": {"layout": "scale-out"}, "ideal": 2}],
        workload={"driver": "redis_scaleout", "roles": {}, "params": {}})
    answer = verdict.answer
    assert answer is not None and answer.kind == "scaling"
    assert answer.text.startswith("layout=scale-out: speedup 1.6× ± ")
    assert answer.text.endswith("against ideal 2× (efficiency 80 %)")


@pytest.mark.parametrize("many", [False, True])
def test_content_library_knows_vcsim_by_its_product_name(tmp_path: Path, many: bool) -> None:
    """A lab pointing at a vcsim started elsewhere has no `simulator:`: the testbed's
    product name (vcsim's about.fullName) tells, with one vCenter or several."""
    values = {"sync_time": [0.0012], "sync_items": [3.0]}
    doc = scenario_doc("cl", workload={"driver": "content_library", "roles": {},
                                       "params": {"steps": CL_STEPS}},
                       report={"headline": ["sync_time"], "charts": []})
    vc = {"name": "vc1",
          "product": "VMware vCenter Server 6.5.0 build-5973321 (govmomi simulator)"}
    with Store.open(f"sqlite:///{tmp_path}/s.db", tmp_path) as store:
        add_run(store, "r1", [({}, values)], scenario=doc,
                lab={"name": "ext", "vcenters": {"vc1": {"url": "https://127.0.0.1/sdk"}}},
                testbed={"vcenters": [vc]} if many else {"vcenter": vc})
        answer = verdict_of(with_verdict(report_data(store, "r1"))).answer
    assert answer is not None
    assert "* sync: vcsim shares the publisher's items with the subscriber" in answer.text


# ------------------------------------------------------------------ find-max charts

def test_a_findmax_charts_x_labels_name_the_answers_levels_first(tmp_path: Path) -> None:
    from tests.unit.test_findmax_report import stored_search
    from vbench.report.lead import answer_levels

    store, run_id, search = stored_search(tmp_path, headline=("lat",))
    data = with_verdict(report_data(store, run_id))
    outcome = search.outcome()
    levels = answer_levels(ReportView(data), data.verdicted().answers)
    assert levels == {"users": {outcome.highest_pass, outcome.lowest_fail}}
    charts = summary_charts(render_html(data))
    labels = re.findall(r'text-anchor="middle" font-size="9.5" fill="#222222">([^<]*)<',
                        charts[0][0])
    assert f"{outcome.highest_pass:g}" in labels
