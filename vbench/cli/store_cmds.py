"""ls, show, report: read stored runs without touching any guest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from vbench.cli.analysis_cmds import HISTORY_FILTERS, history_filters, trend_report
from vbench.cli.options import json_option, open_store, store_options, write_report


def _run_dict(row: Any) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(row) if dataclasses.is_dataclass(row) else dict(row)


@click.command(name="ls")
@store_options
@click.option("--scenario", help="Only runs of this scenario.")
@click.option("--tag", help="Only runs with this tag.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
def ls_cmd(
    store_url: str | None,
    results_dir: Path | None,
    scenario: str | None,
    tag: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List stored runs, newest first."""
    from rich.console import Console

    from vbench.report.terminal import runs_table

    store, _ = open_store(store_url, results_dir)
    try:
        rows = [_run_dict(r) for r in store.list_runs(scenario=scenario, tag=tag, limit=limit)]
    finally:
        store.close()
    if as_json:
        for r in rows:
            r.pop("scenario", None), r.pop("lab", None), r.pop("environment", None)
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        click.echo("no runs stored")
        return
    from vbench.cli.options import output_width

    # Fitted to the terminal by runs_table itself; rich must not wrap it again.
    Console().print(runs_table(rows, output_width()), soft_wrap=True)


@click.command()
@click.argument("run_id")
@store_options
@json_option
def show(run_id: str, store_url: str | None, results_dir: Path | None, as_json: bool) -> None:
    """Describe one stored run: context, points, trials and the summary table."""
    from vbench.cli.options import text_console
    from vbench.engine.verdict import with_verdict
    from vbench.report.build import report_data_of, show_json_of, show_text_of
    from vbench.results.collected import series_listing
    from vbench.results.stored import StoredRun

    store, _ = open_store(store_url, results_dir)
    try:
        # Read once; a run stored without a verdict gets it once.
        data = with_verdict(report_data_of(StoredRun.load(store, run_id)))
        series = series_listing(data.stored.run_dir)
        if as_json:
            doc = {**show_json_of(data), "collectors": series}
            click.echo(json.dumps(doc, indent=2, default=str))
        else:
            show_text_of(data, text_console())
            _print_series(series)
    finally:
        store.close()


def _print_series(series: list[dict[str, Any]]) -> None:
    """The collectors' series per target (files under the run's series/ folder)."""
    if not series:
        return
    click.echo("collector series (run dir series/<point>-<trial>/<collector>/<target>.parquet):")
    for s in series:
        offs = s["clock_offsets"]
        clock = f"clock {min(offs):+.3f}..{max(offs):+.3f} s" if offs else "clock -"
        ok = s["trials"] - s["failed"]
        click.echo(
            f"  {s['collector']} on {s['target']}: {ok}/{s['trials']} trials, "
            f"{s['metrics']} metrics, {s['rows']} rows, {clock}"
        )
        for err in s["errors"]:
            click.echo(f"    failed, {err}")


@click.command()
@click.argument("run_ids", metavar="[RUN_ID ...]", nargs=-1)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    required=True,
    help="Where to write the report; - for standard output.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "json", "csv", "junit", "markdown"]),
    help="Output format (default: from the file name: .json, .csv, .xml, .md, else html).",
)
@click.option(
    "--template",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A Jinja2 template to use instead of reports/default.html.j2.",
)
@click.option(
    "--baseline",
    metavar="SPEC",
    help="Also check the first run for regressions against this baseline "
    "(auto, last, last:K, tag:NAME or a run id).",
)
@click.option(
    "--history",
    "history_of",
    metavar="SCENARIO",
    help="Instead of RUN_IDs: an HTML trend page over the stored runs of SCENARIO, chosen "
    "as `vbench history` chooses them (--metric, --tag, --limit, --all, --lab, "
    "--same-scenario).",
)
@history_filters
@store_options
def report(
    run_ids: tuple[str, ...],
    output: Path,
    fmt: str | None,
    template: Path | None,
    baseline: str | None,
    store_url: str | None,
    results_dir: Path | None,
    history_of: str | None,
    **filters: Any,
) -> None:
    """Render stored runs (no guest is touched): the first in full, the others overlaid
    and compared with it. HTML, JSON, CSV, JUnit XML or Markdown. With --history, a trend
    page over a scenario's runs."""
    from vbench.report.exports import format_for

    if _trend_or_refuse(run_ids, history_of, template, baseline):
        assert history_of is not None
        trend_report(history_of, output, fmt, store_url, results_dir, filters)
        return
    kind = format_for(str(output), fmt)
    from vbench.engine.verdict import with_verdict
    from vbench.report.build import render_report_of, report_data_of
    from vbench.results.stored import StoredRun

    store, _ = open_store(store_url, results_dir)
    try:
        # Each run read once; a run stored without a verdict gets it once.
        datas = [with_verdict(report_data_of(StoredRun.load(store, r))) for r in run_ids]
        text = render_report_of(store, datas, kind, template=template, baseline=baseline)
    finally:
        store.close()
    write_report(text, output)


def _trend_or_refuse(
    run_ids: tuple[str, ...], history_of: str | None, template: Path | None,
    baseline: str | None,
) -> bool:
    """True for a trend page (--history); a usage error for options of the other kind."""
    ctx = click.get_current_context()
    given = [p.opts[-1] for p in ctx.command.params if p.name in HISTORY_FILTERS
             and ctx.get_parameter_source(p.name) is not ParameterSource.DEFAULT]
    if history_of is None:
        if not run_ids:
            raise click.UsageError("give RUN_ID(s), or --history SCENARIO for a trend page")
        if given:
            raise click.UsageError(f"{', '.join(given)}: only with --history SCENARIO")
        return False
    if run_ids or template or baseline:
        raise click.UsageError("--history SCENARIO takes no RUN_ID, --template or --baseline")
    return True


COMMANDS = [ls_cmd, show, report]
