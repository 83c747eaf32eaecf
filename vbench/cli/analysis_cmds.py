"""compare, history, baseline: read stored runs and judge them against each other."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from vbench.cli.options import (
    json_option,
    open_store,
    output_width,
    store_options,
    write_report,
)

metric_option = click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="A metric or derived figure (repeatable; default: the headline metrics).",
)


def _stats(s: Any) -> dict[str, Any]:
    return {k: getattr(s, k) for k in ("n", "mean", "stdev", "min", "max", "ci_low", "ci_high")}


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@metric_option
@click.option("--alpha", type=click.FloatRange(0.0, 0.5, min_open=True), default=0.05,
              show_default=True, help="Significance level.")
@store_options
@json_option
def compare(
    run_a: str,
    run_b: str,
    metrics: tuple[str, ...],
    alpha: float,
    store_url: str | None,
    results_dir: Path | None,
    as_json: bool,
) -> None:
    """Compare two runs point by point: values, ratio B/A and significance."""
    from vbench.analysis.comparable import comparable_json
    from vbench.analysis.compare import compare_figures
    from vbench.analysis.run_analysis import better_overrides
    from vbench.engine.verdict import with_verdict
    from vbench.report.build import headline_metrics, report_data_of
    from vbench.report.disturbed import compare_lines, of_data
    from vbench.report.textfmt import format_compare
    from vbench.report.verdict_view import compare_answer_lines, compare_answers
    from vbench.results.stored import StoredRun

    store, _ = open_store(store_url, results_dir)
    try:  # each run read and analysed once; one stored without a verdict gets it once
        da, db = (with_verdict(report_data_of(StoredRun.load(store, r))) for r in (run_a, run_b))
    finally:
        store.close()
    a, b = da.analyzed(), db.analyzed()
    answers = compare_answers(da.verdicted(), db.verdicted())
    chosen = list(metrics) or [
        *headline_metrics(a.figures.run), *a.derived.names()
    ] or a.figures.metrics()
    result = compare_figures(a.figures, b.figures, chosen, alpha=alpha,
                             better_overrides=better_overrides(a.figures.scenario))
    if not as_json:
        # The study's answers first; a search's levels are not its answer.
        click.echo("\n".join(["answers:", *compare_answer_lines(answers, output_width()), ""]))
        if answers["searches"]:
            click.echo("(levels of a find-max search, compared where both runs ran them:)")
        click.echo(format_compare(result, output_width()), nl=False)
        # Trials the lab's watch found disturbed: whether the figures above include them.
        for line in [*compare_lines(da, "run A"), *compare_lines(db, "run B")]:
            click.echo(line)
        return
    click.echo(json.dumps({
        "answers": answers,
        "a": result.run_a.get("run_id"),
        "b": result.run_b.get("run_id"),
        "alpha": alpha,
        "comparable": comparable_json(result.comparability),
        "differences": [dataclasses.asdict(d) | {"hardware": d.hardware}
                        for d in result.differences],
        "only_a": list(result.only_a),
        "only_b": list(result.only_b),
        "disturbed": {k: [p.to_json() for _, p in sorted(of_data(d).items())]
                      for k, d in (("a", da), ("b", db))},
        "rows": [
            {"point": r.title, "labels": dict(r.labels), "metric": r.metric, "unit": r.unit,
             "better": r.better, "a": _stats(r.a), "b": _stats(r.b), "ratio": r.ratio,
             "significant": r.sig.significant, "test": r.sig.method, "p_value": r.sig.p_value,
             "reason": r.reason, "min_effect": r.min_effect, "capped": r.capped,
             "verdict": r.verdict}
            for r in result.rows
        ],
    }, indent=2))


# The parameter names history_filters adds.
HISTORY_FILTERS = ("metrics", "tag", "limit", "include_failed", "lab", "same_scenario")


def history_filters(func: Any) -> Any:
    """The run selection of `vbench history` and `vbench report --history`."""
    options = [
        metric_option,
        click.option("--tag", help="Only runs with this tag (e.g. nightly)."),
        click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
                     help="The newest N runs."),
        click.option("--all", "include_failed", is_flag=True,
                     help="Include runs that did not complete (status other than ok)."),
        click.option("--lab", metavar="NAME|FINGERPRINT",
                     help="Only runs in this lab (its name, or 4+ digits of its fingerprint)."),
        click.option("--same-scenario", is_flag=True,
                     help="Only runs of the newest run's scenario as it ran (same hash after "
                     "--set): no variants."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def load_filtered_history(store: Any, scenario: str, filters: dict[str, Any]) -> Any:
    """The history ``filters`` (history_filters' values) select."""
    from vbench.analysis.history import load_history

    return load_history(
        store, scenario, list(filters["metrics"]), tag=filters["tag"], limit=filters["limit"],
        include_failed=filters["include_failed"], lab=filters["lab"],
        same_scenario=filters["same_scenario"],
    )


def selection_text(filters: dict[str, Any]) -> list[str]:
    """How history_filters chose the runs, in words (for the trend page)."""
    out = [f"the newest {filters['limit']} runs at most"]
    if filters["tag"]:
        out.append(f"tag {filters['tag']}")
    if filters["lab"]:
        out.append(f"lab {filters['lab']}")
    if filters["same_scenario"]:
        out.append("only the newest run's scenario variant")
    out.append("all statuses" if filters["include_failed"] else "completed runs only")
    return out


def trend_report(
    scenario: str, output: Path, fmt: str | None, store_url: str | None,
    results_dir: Path | None, filters: dict[str, Any],
) -> None:
    """`vbench report --history SCENARIO`: the trend page of the selected runs."""
    from vbench.report.trend import render_trend

    if fmt not in (None, "html"):
        raise click.UsageError("--history writes HTML only (use `vbench history --json`)")
    store, _ = open_store(store_url, results_dir)
    try:
        hist = load_filtered_history(store, scenario, filters)
    finally:
        store.close()
    chosen = selection_text(filters)
    if not hist.runs:
        from vbench.errors import RunNotFound

        raise RunNotFound(f"no stored run of scenario {scenario!r} matches "
                          f"({'; '.join(chosen)})")
    text = render_trend(hist, chosen)
    write_report(text, output)


@click.command()
@click.argument("scenario")
@history_filters
@click.pass_context
@click.option("--changes", is_flag=True,
              help="Only the change points of every series (per lab fingerprint): when a "
              "figure moved, by how much, how surely, the testbed differences between the "
              "runs either side, and their acknowledgements (`vbench ack`).")
@store_options
@json_option
def history(
    ctx: click.Context,
    scenario: str,
    store_url: str | None,
    results_dir: Path | None,
    as_json: bool,
    changes: bool,
    **filters: Any,
) -> None:
    """Show the trend of a scenario's figures, per point, over its stored runs: which lab
    each ran in, which ran with --set, and how scenario variants differ."""
    from vbench.analysis.comparable import comparable_json
    from vbench.engine.verdict import verdicts_of
    from vbench.report.history_watch import cells, figure_json, run_json
    from vbench.report.historyfmt import format_history
    from vbench.report.verdict_view import answer_json

    if changes:
        from vbench.analysis.nightly_check import HISTORY_RUNS

        if ctx.get_parameter_source("limit") == click.core.ParameterSource.DEFAULT:
            filters["limit"] = HISTORY_RUNS  # the runs the nightly check looks back over
        _history_changes(scenario, store_url, results_dir, as_json, filters)
        return
    store, _ = open_store(store_url, results_dir)
    try:
        hist = load_filtered_history(store, scenario, filters)
        # One row per run with its answer (verdict.json; computed once for older runs).
        verdicts = verdicts_of(store, [r.run_id for r in hist.runs])
    finally:
        store.close()
    if not as_json:
        if not hist.runs:  # say which selection found nothing
            click.echo(f"no stored run of scenario {scenario} matches "
                       f"({'; '.join(selection_text(filters))})")
            return
        click.echo(format_history(hist, verdicts), nl=False)
        return
    marked = cells(hist)
    click.echo(json.dumps({
        "scenario_name": hist.scenario,
        "scenario": hist.scenario,  # the same, under its first name (kept for scripts)
        # Each run's disturbed trials, each figure's (vbench/report/history_watch.py).
        "runs": [dataclasses.asdict(r) | answer_json(verdicts[r.run_id])
                 | {"disturbed": run_json(hist.watch.get(r.run_id))} for r in hist.runs],
        "variants": [
            {"name": v.name, "lab": v.lab, "lab_kind": v.lab_kind,
             "lab_fingerprint": v.lab_fingerprint, "scenario_hash": v.scenario_hash,
             "runs": v.runs, "against_a": comparable_json(v.against_a)}
            for v in hist.variants
        ],
        "series": [
            {"metric": s.metric, "unit": s.unit, "better": s.better, "point": s.title,
             "labels": dict(s.labels), "change": s.change,
             "values": [_stats(x) | figure_json(marked.get((k, i))) if x is not None else None
                        for i, x in enumerate(s.summaries)]}
            for k, s in enumerate(hist.series)
        ],
    }, indent=2, default=str))


@click.group()
def baseline() -> None:
    """The reference run of a scenario for `vbench run --check-regression`."""


@baseline.command(name="set")
@click.argument("run_id")
@click.option("--note", help="Why this run is the new reference (shown in reports).")
@store_options
def baseline_set(run_id: str, note: str | None, store_url: str | None,
                 results_dir: Path | None) -> None:
    """Make RUN_ID the baseline of its scenario (in its lab), e.g. after an intended change."""
    store, _ = open_store(store_url, results_dir)
    try:
        run = store.get_run(run_id)
        if run.status != "ok":
            click.echo(f"warning: run {run.run_id} has status {run.status}", err=True)
        row = store.set_baseline(run.run_id, note)
    finally:
        store.close()
    lab = f" in lab {row.scope}" if row.scope else ""
    click.echo(f"baseline of {row.scenario_name}{lab}: {row.run_id}")


@baseline.command(name="show")
@click.argument("scenario", required=False)
@store_options
@json_option
def baseline_show(scenario: str | None, store_url: str | None, results_dir: Path | None,
                  as_json: bool) -> None:
    """List the baselines (of one scenario, or all)."""
    from vbench.report.textfmt import table, utc

    store, _ = open_store(store_url, results_dir)
    try:
        rows = store.baselines(scenario)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    if not rows:
        click.echo("no baseline set" + (f" for {scenario}" if scenario else ""))
        return
    lines = table(["scenario", "lab", "run id", "set", "note"],
                  [[r.scenario_name, r.scope or "-", r.run_id, utc(r.set_at), r.note or ""]
                   for r in rows])
    click.echo("\n".join(lines))


@baseline.command(name="clear")
@click.argument("scenario")
@click.option("--lab", "scope", help="Only the baseline kept for this lab name.")
@store_options
def baseline_clear(scenario: str, scope: str | None, store_url: str | None,
                   results_dir: Path | None) -> None:
    """Forget the baseline of SCENARIO (regression checks fall back to the last run)."""
    store, _ = open_store(store_url, results_dir)
    try:
        n = store.clear_baseline(scenario, scope)
    finally:
        store.close()
    click.echo(f"{n} baseline{'s' if n != 1 else ''} cleared")


def _history_changes(scenario: str, store_url: str | None, results_dir: Path | None,
                     as_json: bool, filters: dict[str, Any]) -> None:
    """`vbench history SCENARIO --changes`."""
    from vbench.analysis.nightly import find_changes
    from vbench.report.changesfmt import changes_json, format_changes

    store, _ = open_store(store_url, results_dir)
    try:
        hist = load_filtered_history(store, scenario, filters)
        found = find_changes(store, hist)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(changes_json(hist, found), indent=2, default=str))
        return
    if not hist.runs:
        click.echo(f"no stored run of scenario {scenario} matches "
                   f"({'; '.join(selection_text(filters))})")
        return
    click.echo(format_changes(hist, found), nl=False)


@click.command()
@click.argument("change")
@click.option("--why", required=True, help="Why the change is expected (kept with it).")
@click.option("--who", help="Who acknowledges it (default: your login name).")
@store_options
def ack(change: str, why: str, who: str | None, store_url: str | None,
        results_dir: Path | None) -> None:
    """Acknowledge a change point (RUN:METRIC[@POINT], as `vbench history SCENARIO
    --changes` names it): it becomes the new normal and never alerts again."""
    import getpass

    from vbench.analysis.nightly import NEAR, acknowledge, change_of

    store, _ = open_store(store_url, results_dir)
    try:
        done = acknowledge(store, change, who or getpass.getuser(), why)
        found = change_of(store, done)
    finally:
        store.close()
    click.echo(f"acknowledged {done.run_id}:{done.series.metric} ({done.series.scenario}, "
               f"lab {done.series.lab_fingerprint or '-'}, point {done.series.point}) "
               f"by {done.who}: {done.why}")
    if found is None:  # a step too young to be a change point yet, or a wrong run
        click.echo(f"note: no change point of this series lies within {NEAR} runs of "
                   f"{done.run_id} yet (one needs 3 runs after it); the acknowledgement "
                   "applies to the one found there later", err=True)


COMMANDS = [compare, history, baseline, ack]
