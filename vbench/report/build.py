"""Assemble report data from the store: a report is a pure function of stored runs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from vbench.analysis.figures import RunFigures
from vbench.analysis.regression import RegressionResult, run_regression
from vbench.analysis.run_analysis import RunAnalysis, analysis_of, analyze, load_figures
from vbench.config.hookspec import shell_hook_warnings
from vbench.config.scenario import RegressionSpec
from vbench.report.data import ReportData
from vbench.results.collected import collector_warnings
from vbench.results.store import Store
from vbench.results.stored import StoredRun


def _map_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def report_data(
    store: Store, run_id: str, *, regression: RegressionResult | None = None
) -> ReportData:
    """Read the run and assemble its report data (a command that does more with the run
    loads a :class:`StoredRun` once and calls :func:`report_data_of`)."""
    return report_data_of(StoredRun.load(store, run_id), regression=regression)


def report_data_of(
    run: StoredRun, *, regression: RegressionResult | None = None
) -> ReportData:
    """The report data of a run read once with :meth:`StoredRun.load`; its analysis is
    computed here, once, for every output drawn from it."""
    run_d = dict(run.record)
    trials = list(run.trials)
    samples = run.samples
    if samples is None:  # a StoredRun built from a record alone: no samples
        import pandas as pd

        samples = pd.DataFrame()
    ok = {(t["point"], t["trial"]) for t in trials if t["status"] == "ok"}
    warnings: list[str] = []
    if len(samples):
        # Statistics use successful trials only; failed trials stay listed with their error.
        keep = [(p, t) in ok for p, t in zip(samples["point"], samples["trial"], strict=True)]
        samples = samples[keep].reset_index(drop=True)
    failed = [t for t in trials if t["status"] != "ok"]
    if failed:
        warnings.append(
            f"{len(failed)} of {len(trials)} trials did not complete; their figures are kept "
            "in the store but left out of the statistics."
        )
    if run.status != "ok":
        warnings.append(f"run status: {run.status}")
    # Collector failures and clock warnings, from series/*/collectors.json (collectors).
    warnings.extend(collector_warnings(run.run_dir))
    # A lab hook that handed its level values to a shell: the reader of the figures sees it.
    warnings.extend(f"{path}: {message}" for path, message in
                    shell_hook_warnings(_map_of(run.scenario.doc.get("factors"))))
    points = list(run.points)
    analysis = analyze(run_d, points, trials, samples)
    # Where the workload's per-second series settled, against the configured warm-up.
    warnings.extend(warmup_warnings(run, trials, analysis))
    # Lab hygiene not ok before the run, trials disturbed during it (engine/hygiene.py).
    from vbench.report.hygiene_text import hygiene_warnings

    warnings.extend(hygiene_warnings(run_d, trials))
    return ReportData(
        run=run_d,
        points=points,
        trials=trials,
        samples=samples,
        headline_metrics=run.headline,
        warnings=tuple(warnings),
        analysis=analysis,
        regression=regression,
        source=run,
    )


def warmup_warnings(run: StoredRun, trials: list[dict[str, Any]], analysis: RunAnalysis
                    ) -> list[str]:
    """"total_iops at bs=4k: settled 42 s into a 30 s warm-up …" for every metric and
    point of the workload's own series that settled late or not at all (MSER-5); under
    ``phases.warmup: auto``, first the warm-up every trial took (from its phase marks)."""
    from vbench.analysis.warmup import auto_warmup_lines, auto_warmups, settling_warnings
    from vbench.report.series import workload_settlings

    out = []
    cap = run.scenario.auto_warmup_cap
    if cap is not None:
        ok = [t for t in trials if t.get("status") == "ok"]
        auto = auto_warmups(ok, cap, settled=_kept_settled(run.run_dir, ok))
        out += auto_warmup_lines(auto, cap, {a.point: analysis.figures.title(a.point)
                                             for a in auto})
    driver = _map_of(run.scenario.doc.get("workload")).get("driver")
    found = workload_settlings(run.run_dir, driver, trials)
    if not found:
        return out
    titles = {p: analysis.figures.title(p) for p in {s.point for s in found}}
    return out + settling_warnings(found, titles)


def _kept_settled(run_dir: str | None, trials: list[dict[str, Any]]
                  ) -> dict[tuple[int, int], bool]:
    """Per (point, trial): whether the detector ended its automatic warm-up, from the
    observations the driver kept (none kept: not known)."""
    from vbench.report.warmup_chart import kept_warmup

    out = {}
    for t in trials:
        key = (int(t["point"]), int(t["trial"]))
        doc = kept_warmup(run_dir, *key)
        if doc is not None:
            out[key] = doc.get("settled_at") is not None
    return out


def headline_metrics(run: Mapping[str, Any]) -> tuple[str, ...]:
    """The metrics the run's report leads with, as stored with the run; for a run stored
    before they were (schema < 3), the scenario's ``report.headline``, else none."""
    return StoredRun.of(run).headline


def check_regression(
    store: Store,
    run_id: str,
    spec: str | None = None,
    *,
    metrics: Sequence[str] = (),
    min_effect: float | None = None,
) -> RegressionResult:
    """The run against its baseline, as its scenario's ``regression`` section says
    (``spec``, ``metrics`` and ``min_effect`` override it)."""
    run = StoredRun.load(store, run_id)
    return check_regression_of(store, run, analysis_of(run).figures, spec, metrics=metrics,
                               min_effect=min_effect)


def check_regression_of(
    store: Store,
    run: StoredRun,
    figures: RunFigures,
    spec: str | None = None,
    *,
    metrics: Sequence[str] = (),
    min_effect: float | None = None,
) -> RegressionResult:
    """:func:`check_regression` of a run already loaded and analysed (``figures``); the
    store is read only for the baseline runs."""
    if run.row is None:
        raise ValueError("check_regression_of needs a run read with StoredRun.load")
    try:
        conf = RegressionSpec.model_validate(run.scenario.regression)
    except ValueError:  # a shape another version stored: the defaults still apply
        conf = RegressionSpec()
    cache: dict[str, RunFigures] = {run.run_id: figures}

    def load(rid: str) -> RunFigures:
        if rid not in cache:
            cache[rid] = load_figures(store, rid)
        return cache[rid]

    chosen = list(metrics) or conf.metrics or list(run.headline)
    from vbench.analysis.nightly_check import nightly_check, noise_floor

    result = run_regression(
        store, run.row, load, chosen,
        spec=spec or conf.baseline,
        min_effect=conf.min_effect if min_effect is None else min_effect,
        alpha=conf.alpha,
        better_overrides=run.scenario.better,
        floor=noise_floor(store, run.row),  # the lab's measured noise (vbench run --aa)
    )
    # Tonight against the change points of this lab's history, and their triage.
    return nightly_check(store, run.row, result, chosen)


def render_run_report(
    store: Store,
    run_id: str,
    output: Path,
    template: Path | None = None,
    *,
    regression: RegressionResult | None = None,
) -> Path:
    return write_run_report(report_data(store, run_id, regression=regression), output,
                            template)


def write_run_report(data: ReportData, output: Path, template: Path | None = None) -> Path:
    """The HTML report of a run already loaded, written to ``output``."""
    from vbench.report.html import render_html

    html = render_html(data, template=template)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(html, encoding="utf-8")
    return output


def render_report(
    store: Store,
    run_ids: Sequence[str],
    fmt: str,
    *,
    template: Path | None = None,
    baseline: str | None = None,
) -> str:
    """One or several runs in one of :data:`exports.FORMATS`; the first run is the one
    reported in full (and checked against ``baseline`` when given)."""
    datas = [report_data_of(StoredRun.load(store, r)) for r in run_ids]
    return render_report_of(store, datas, fmt, template=template, baseline=baseline)


def render_report_of(
    store: Store,
    datas: Sequence[ReportData],
    fmt: str,
    *,
    template: Path | None = None,
    baseline: str | None = None,
) -> str:
    """:func:`render_report` of runs already loaded (``report_data_of``); the store is
    read only for the baseline runs."""
    from vbench.report import exports
    from vbench.report.html import render_html

    first, *rest = datas
    if baseline is not None:
        reg = check_regression_of(store, first.stored, first.analyzed().figures, baseline)
        first = dataclasses.replace(first, regression=reg)
    if fmt == "html":
        return render_html(dataclasses.replace(first, others=tuple(rest)), template=template)
    writer = {"json": exports.to_json, "csv": exports.to_csv, "junit": exports.to_junit,
              "markdown": exports.to_markdown}[fmt]
    return writer([first, *rest])


def summary_for_terminal(store: Store, run_id: str, console: Console) -> None:
    print_summary(report_data(store, run_id), console)


def print_summary(data: ReportData, console: Console, *, with_verdict: bool = True) -> None:
    """The summary table of a run already loaded, fitted to the console (see
    :func:`vbench.report.fit.fit_table`)."""
    from vbench.report.disturbed import by_title
    from vbench.report.exports import shown_text
    from vbench.report.fit import console_width, fit_table
    from vbench.report.terminal import disturbed_lines, summary_table
    from vbench.report.verdict_view import print_verdict

    if with_verdict:  # the answer first, then the figures per point
        print_verdict(data.verdicted(), console, by_title(data))
    # Too narrow even with cells wrapped: the spread and the cv leave before any name.
    table = fit_table(summary_table(data), console_width(console), drop=("min–max", "cv"))
    console.print(table)
    for line in disturbed_lines(data):  # the † beside a point's n
        console.print(shown_text(line), highlight=False, markup=False)


def show_json(store: Store, run_id: str) -> dict[str, Any]:
    return show_json_of(report_data(store, run_id))


def show_json_of(data: ReportData) -> dict[str, Any]:
    """What `vbench show --json` prints, of a run already loaded."""
    from vbench.analysis.aggregate import point_summaries
    from vbench.report.disturbed import of_data, verdict_json
    from vbench.report.exports import qos_json

    summary = point_summaries(data.samples) if len(data.samples) else None
    return {
        "run": data.run,
        "points": data.points,
        "trials": data.trials,
        "summary": json.loads(summary.to_json(orient="records")) if summary is not None else [],
        "disturbed": [p.to_json() for _, p in sorted(of_data(data).items())],
        "qos": qos_json(data.analyzed().qos, data.verdicted().qos),
        "warnings": list(data.warnings),
        "verdict": verdict_json(data),
    }


def show_text(store: Store, run_id: str, console: Console) -> None:
    show_text_of(report_data(store, run_id), console)


def show_text_of(data: ReportData, console: Console) -> None:
    """What `vbench show` prints, of a run already loaded."""
    from rich.text import Text

    from vbench.report.exports import shown_text
    from vbench.report.fit import console_width

    r = data.run
    console.print(
        f"[bold]run {r['run_id']}[/]  scenario {r['scenario_name']}  status {r['status']}",
        highlight=False,
    )
    from vbench.report.disturbed import by_title
    from vbench.report.verdict_view import print_verdict

    verdict = data.verdicted()
    print_verdict(verdict, console, by_title(data))  # the study's answer before the details
    console.print(
        f"tags: {', '.join(r.get('tags') or ()) or '-'}  run dir: {r.get('run_dir')}",
        highlight=False,
    )
    env = StoredRun.of(r).environment
    ctl = env.controller
    console.print(
        f"controller: {ctl.get('hostname')} vbench {ctl.get('vbench_version')} "
        f"python {ctl.get('python')}",
        highlight=False,
    )
    for g in env.guests:
        tools = ", ".join(f"{k}: {v}" for k, v in g.tools.items())
        console.print(
            f"guest {g.name} ({g.address}): {g.kernel}, "
            f"{g.vcpus} vCPU, {g.cpu_model}; {tools}",
            highlight=False,
        )
    # What a lab named (a VM another team named in vCenter, a tool's error) is text:
    # never rich markup ("db [/old]" raised MarkupError), no control character raw.
    if r.get("testbed"):
        from vbench.report.testbed_text import testbed_lines

        # A disturbance or finding the warnings below say is said there only.
        said = {w.strip() for w in data.warnings}
        for line in testbed_lines(r["testbed"], data.trials):
            if line.strip() not in said:
                console.print(shown_text(line), highlight=False, markup=False)
    for w in data.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {shown_text(w)}"),
                      highlight=False)
    for t in data.trials:
        if t["status"] != "ok":
            console.print(shown_text(f"point {t['point'] + 1} trial {t['trial']}: "
                                     f"{t['status']} — {t['error']}"),
                          highlight=False, markup=False)
    print_summary(data, console, with_verdict=False)
    qos = data.analyzed().qos
    # A search's failing levels are its bracket (the verdict says so), not a QoS failure.
    if qos.declared and verdict.qos.status != "bracket":
        from vbench.report.textfmt import format_qos

        console.print(format_qos(qos, console_width(console)), highlight=False, markup=False,
                      end="")


def run_summary_json(
    store: Store, run_id: str, regression: RegressionResult | None = None
) -> dict[str, Any]:
    """What `vbench run --json` prints: per point the headline and derived figures
    (trial statistics), the QoS and regression verdicts and the warnings."""
    return summary_json_of(report_data(store, run_id, regression=regression))


def summary_json_of(data: ReportData) -> dict[str, Any]:
    """:func:`run_summary_json` of a run already loaded (its regression: ``data``'s)."""
    from vbench.analysis.figures import present
    from vbench.analysis.stats import summarize
    from vbench.report.disturbed import of_data, verdict_json
    from vbench.report.exports import STAT_FIELDS, qos_json, regression_json

    found = of_data(data)
    regression = data.regression
    a = data.analyzed()
    f = a.figures
    names = [m for m in (*data.headline_metrics, *a.derived.names()) if m in f.units]
    ok = {}
    for t in data.trials:
        ok.setdefault(int(t["point"]), [0, 0])
        ok[int(t["point"])][1] += 1
        ok[int(t["point"])][0] += t["status"] == "ok"
    points = []
    for p in sorted(f.points):
        figures = {}
        for m in names:
            s = summarize(present(f.trial_values(p, m)))
            figures[m] = {"unit": f.units.get(m, ""), **{k: getattr(s, k) for k in STAT_FIELDS}}
        done, total = ok.get(p, [0, 0])
        mine = found.get(p)
        points.append({"point": p, "point_number": p + 1, "labels": dict(f.points[p]),
                       "title": f.title(p),
                       "trials_ok": done, "trials": total, "figures": figures,
                       # its disturbed trials, in the figures or not (report/disturbed.py)
                       "disturbed_included": mine.included if mine else [],
                       "disturbed_excluded": mine.excluded if mine else [],
                       "disturbed": mine.to_json()["disturbed"] if mine else []})
    run = data.run
    return {
        "run_id": run["run_id"],
        "scenario_name": run["scenario_name"],  # the key `ls --json` and the store use
        "scenario": run["scenario_name"],  # the same, under its first name (kept for scripts)
        "status": run["status"],
        "tags": list(run.get("tags") or ()),
        "points": points,
        "qos": qos_json(a.qos, data.verdicted().qos),
        "regression": regression_json(regression),
        "warnings": [*data.warnings, *a.problems],
        "verdict": verdict_json(data),
    }
