"""Assemble report data from the store: a report is a pure function of stored runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from vbench.report.data import ReportData
from vbench.results.store import Store


def report_data(store: Store, run_id: str) -> ReportData:
    run = store.get_run(run_id)
    run_d = dataclasses.asdict(run)
    trials = [dataclasses.asdict(t) for t in store.trials(run.run_id)]
    samples = store.samples_frame(run.run_id)
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
    return ReportData(
        run=run_d,
        points=[dataclasses.asdict(p) for p in store.points(run.run_id)],
        trials=trials,
        samples=samples,
        headline_metrics=_headline(run_d),
        warnings=tuple(warnings),
    )


def _headline(run: dict[str, Any]) -> tuple[str, ...]:
    from vbench.workloads.base import get_driver

    scenario = run.get("scenario") or {}
    wanted = (scenario.get("report") or {}).get("headline") or []
    if wanted:
        return tuple(wanted)
    try:
        return tuple(get_driver(scenario["workload"]["driver"]).headline_metrics)
    except Exception:  # an old run of a driver this version lacks: lead with nothing
        return ()


def render_run_report(
    store: Store, run_id: str, output: Path, template: Path | None = None
) -> Path:
    from vbench.report.html import render_html

    html = render_html(report_data(store, run_id), template=template)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(html, encoding="utf-8")
    return output


def summary_for_terminal(store: Store, run_id: str, console: Console) -> None:
    from vbench.report.terminal import summary_table

    console.print(summary_table(report_data(store, run_id)))


def show_json(store: Store, run_id: str) -> dict[str, Any]:
    from vbench.analysis.aggregate import point_summaries

    data = report_data(store, run_id)
    summary = point_summaries(data.samples) if len(data.samples) else None
    return {
        "run": data.run,
        "points": data.points,
        "trials": data.trials,
        "summary": json.loads(summary.to_json(orient="records")) if summary is not None else [],
        "warnings": list(data.warnings),
    }


def show_text(store: Store, run_id: str, console: Console) -> None:
    from vbench.report.terminal import summary_table

    data = report_data(store, run_id)
    r = data.run
    console.print(
        f"[bold]run {r['run_id']}[/]  scenario {r['scenario_name']}  status {r['status']}",
        highlight=False,
    )
    console.print(
        f"tags: {', '.join(r.get('tags') or ()) or '-'}  run dir: {r.get('run_dir')}",
        highlight=False,
    )
    env = r.get("environment") or {}
    ctl = env.get("controller") or {}
    console.print(
        f"controller: {ctl.get('hostname')} vbench {ctl.get('vbench_version')} "
        f"python {ctl.get('python')}",
        highlight=False,
    )
    for name, g in (env.get("guests") or {}).items():
        tools = ", ".join(f"{k}: {v}" for k, v in (g.get("tools") or {}).items())
        console.print(
            f"guest {name} ({g.get('address')}): {g.get('kernel')}, "
            f"{g.get('vcpus')} vCPU, {g.get('cpu_model')}; {tools}",
            highlight=False,
        )
    if r.get("testbed"):
        console.print("testbed: captured (see the report)")
    for w in data.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    for t in data.trials:
        if t["status"] != "ok":
            console.print(
                f"point {t['point'] + 1} trial {t['trial']}: {t['status']} — {t['error']}",
                highlight=False,
            )
    console.print(summary_table(data))
