"""publish: send a stored run to its lab's publishing targets again; site: a static
site of the store for reviewers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from vbench.cli.options import json_option, open_store, store_options


@click.command()
@click.argument("run_id")
@click.option("--again", is_flag=True,
              help="Send every delivery again, also those already sent.")
@store_options
@json_option
@click.pass_context
def publish(ctx: click.Context, run_id: str, again: bool, store_url: str | None,
            results_dir: Path | None, as_json: bool) -> None:
    """Send RUN_ID to its lab's publishing targets: what it could not deliver when it
    ended (kept in its run directory's publish.json), or — a run that ended before
    publishing — everything. Exit 0 when every target took it, 3 when one did not."""
    from vbench.errors import EXIT_LAB, EXIT_OK

    store, _ = open_store(store_url, results_dir)
    try:
        outcomes = _publish(store, run_id, again)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([o.__dict__ for o in outcomes], indent=2))
    else:
        for o in outcomes:
            click.echo(f"{o.target}: sent" if o.sent else f"{o.target}: not sent: {o.error}")
    ctx.exit(EXIT_OK if all(o.sent for o in outcomes) else EXIT_LAB)


def _publish(store: Any, run_id: str, again: bool) -> list[Any]:
    from vbench.errors import ConfigError
    from vbench.publish import OUTBOX, retry_run
    from vbench.results.stored import StoredRun

    row = store.get_run(run_id)
    if not row.run_dir:
        raise ConfigError(f"run {row.run_id} has no run directory to publish from")
    run_dir = Path(row.run_dir)
    if (run_dir / OUTBOX).is_file():
        return retry_run(run_dir, every=again)
    if not (row.lab or {}).get("publish"):
        raise ConfigError(f"run {row.run_id}: its lab has no `publish:` section "
                          "(docs/publishing.md)")
    from vbench.engine.finish import publish_stored
    from vbench.report.build import report_data_of

    run = StoredRun.load(store, row.run_id)
    data = report_data_of(run)
    verdict = data.verdicted()
    code = verdict.exit_code if verdict.exit_code is not None else 0
    report = run_dir / "report.html"
    return publish_stored(run, data, code, str(report) if report.is_file() else None)


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), default=30, show_default=True,
              help="The newest runs of each scenario the site shows.")
@click.option("--fresh", is_flag=True,
              help="Render every run's report again (default: only new and unfinished runs',"
              " those that ended since (resumed) and each scenario's newest).")
@store_options
def site(directory: Path, limit: int, fresh: bool, store_url: str | None,
         results_dir: Path | None) -> None:
    """Write a static, offline site of the store into DIRECTORY: an index of scenarios
    with their latest verdict, each scenario's trend page with its change points and
    acknowledgements, each run's report. Relative links only: copy it to a file share."""
    from vbench.report.site import write_site

    store, _ = open_store(store_url, results_dir)
    try:
        done = write_site(store, directory, limit=limit, fresh=fresh,
                          say=lambda line: click.echo(line, err=True))
    finally:
        store.close()
    n, w = len(done.scenarios), done.reports_written
    click.echo(f"site: {done.root / 'index.html'} ({n} scenario{'s' if n != 1 else ''}, "
               f"{w} report{'s' if w != 1 else ''} written, {done.reports_kept} kept)")


COMMANDS = [publish, site]
