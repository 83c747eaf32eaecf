"""Several runs in one report (`vbench report RUN_A RUN_B …`): the first run is reported
in full; the others are overlaid on its charts and compared with it, point by point."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from vbench.analysis.compare import CompareResult, compare_figures, match_points
from vbench.analysis.figures import RunFigures, present
from vbench.analysis.stats import summarize
from vbench.report.chartplan import ChartIds, whiskers
from vbench.report.charts import Bar, grouped_bar_chart_svg
from vbench.report.data import MISSING, fmt_mean_ci, fmt_time
from vbench.report.units import choose
from vbench.results.stored import StoredRun


def run_label(run: Mapping[str, Any]) -> str:
    version = run.get("vbench_version")
    lab = StoredRun.of(run).lab_name
    extra = ", ".join(x for x in (str(lab) if lab else "", f"vbench {version}" if version else "")
                      if x)
    return f"{run.get('run_id', '?')}" + (f" ({extra})" if extra else "")


def comparability_rows(result: CompareResult) -> list[tuple[str, str, str]]:
    """(what, A, B) for every scenario, --set and lab difference of the two runs."""
    comp = result.comparability
    if comp is None:
        return []
    rows = [(f"scenario: {c.path}", c.a or "absent", c.b or "absent") for c in comp.scenario]
    if not comp.same_overrides:
        rows.append(("--set", " ".join(comp.a.overrides) or "none",
                     " ".join(comp.b.overrides) or "none"))
    rows += [(f"lab: {c.path}", c.a or "absent", c.b or "absent") for c in comp.lab]
    return rows


def compare_rows(result: CompareResult) -> list[dict[str, str]]:
    rows = []
    for r in result.rows:
        ratio = r.ratio
        rows.append({
            "point": r.title,
            "metric": r.metric,
            "a": fmt_mean_ci(r.a, r.unit) + f" (n={r.a.n})",
            "b": fmt_mean_ci(r.b, r.unit) + f" (n={r.b.n})",
            "ratio": f"{ratio:.3f}" if ratio is not None else MISSING,
            "verdict": r.verdict,
            "test": r.sig.reason,
        })
    return rows


def overlay_section(
    primary: RunFigures,
    others: Sequence[RunFigures],
    metrics: Sequence[str],
    ids: ChartIds,
    mode: str,
    better_overrides: Mapping[str, str],
) -> dict[str, Any] | None:
    if not others:
        return None
    runs = [
        {"label": run_label(f.run), "scenario": str(f.run.get("scenario_name", MISSING)),
         "started": fmt_time(f.run.get("started"), seconds=False),
         "status": str(f.run.get("status", MISSING)),
         "tags": ", ".join(f.run.get("tags") or ()) or "none"}
        for f in (primary, *others)
    ]
    comparisons = []
    for other in others:
        result = compare_figures(primary, other, metrics, better_overrides=better_overrides)
        comparisons.append({
            "a": primary.run_id,
            "b": other.run_id,
            "rows": compare_rows(result),
            # What the runs measured and where first (scenario after --set, overrides,
            # lab), then the testbed facts.
            "differences": [*comparability_rows(result),
                            *((d.key, d.a or "absent", d.b or "absent")
                              for d in result.differences)],
            "only_a": list(result.only_a),
            "only_b": list(result.only_b),
        })
    charts = [c for m in metrics if (c := _overlay_chart(primary, others, m, ids, mode))]
    return {"runs": runs, "comparisons": comparisons, "charts": charts}


def _overlay_chart(
    primary: RunFigures, others: Sequence[RunFigures], metric: str, ids: ChartIds, mode: str
) -> dict[str, Any] | None:
    points = sorted(primary.points)
    cats = [primary.title(p) for p in points]
    groups = []
    for f in (primary, *others):
        pairs = dict(match_points(primary, f)) if f is not primary else {p: p for p in points}
        bars = []
        for p, cat in zip(points, cats, strict=True):
            q = pairs.get(p)
            s = summarize(present(f.trial_values(q, metric))) if q is not None else None
            low, high = whiskers(s, mode)
            bars.append(Bar(cat, s.mean if s and s.n else None, low, high))
        groups.append((f.run_id, bars))
    if all(not b.has_data for _, bars in groups for b in bars):
        return None
    # One unit for the chart, the one its bars read best in (µs, GiB/s, k IO/s …).
    sc = choose(primary.units.get(metric, ""), [b.mean for _, bars in groups for b in bars])
    groups = [(name, [Bar(b.label, sc.value(b.mean), sc.value(b.low), sc.value(b.high))
                      for b in bars]) for name, bars in groups]
    unit = sc.unit
    ylabel = f"{metric} ({unit})" if unit else metric
    svg = grouped_bar_chart_svg(cats, groups, ylabel, chart_id=ids.next(), legend_title="run")
    whisk = "95 % CI" if mode == "ci" else "min–max over trials"
    cap = (f"{metric} in {unit or 'no unit'}: one bar per run at each point of "
           f"{primary.run_id} (points matched by labels); bar = mean, whiskers = {whisk}.")
    return {"svg": Markup(svg), "caption": cap, "title": metric, "kind": "overlay"}
