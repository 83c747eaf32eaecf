"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

if TYPE_CHECKING:
    from rich.console import Console

F = Callable[..., Any]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 point``, ``2 points``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def span(bounds: tuple[Any, Any], fmt: Callable[[Any], str] = str) -> str:
    """``7–9`` (fewest–most), or ``8`` when both are the same."""
    lo, hi = (fmt(b) for b in bounds)
    return lo if lo == hi else f"{lo}–{hi}"


def store_options(f: F) -> F:
    f = click.option(
        "--store",
        "store_url",
        envvar="VBENCH_STORE",
        metavar="URL",
        help="Results store: sqlite:///path.db or postgresql://user@host/db "
        "(default: SQLite in the results directory; env VBENCH_STORE).",
    )(f)
    f = click.option(
        "--results",
        "results_dir",
        envvar="VBENCH_RESULTS",
        type=click.Path(path_type=Path),
        help="Results directory (default: <vbench home>/results; env VBENCH_RESULTS).",
    )(f)
    return f


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(f)


def set_option(f: F) -> F:
    return click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="PATH=VALUE",
        help="Override a scenario field by its dotted path (repeatable), e.g. repeat=5.",
    )(f)


def open_store(store_url: str | None, results_dir: Path | None) -> tuple[Any, Path]:
    from vbench.results.rundir import results_dir_default
    from vbench.results.store import Store

    rdir = results_dir or results_dir_default()
    return Store.open(store_url, rdir), rdir


def output_width(stream: TextIO | None = None) -> int | None:
    """Columns that text output fits (tables fold columns, prose wraps between words):
    ``$COLUMNS`` when set, else the terminal's when ``stream`` (standard output by
    default) is one; None — no fitting — in a pipe or a cron log, so those read the same
    everywhere."""
    import os
    import shutil
    import sys

    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if (stream or sys.stdout).isatty():
        return shutil.get_terminal_size().columns
    return None


def text_console(stderr: bool = False) -> Console:
    """A rich console for standard output (or error) fitted to :func:`output_width`; in a
    pipe or a cron log so wide that rich cuts and wraps nothing (not its default 80)."""
    import sys

    from rich.console import Console

    from vbench.report.fit import UNFITTED

    width = output_width(sys.stderr if stderr else sys.stdout)
    return Console(stderr=stderr, width=width or UNFITTED)


def write_report(text: str, output: Path) -> None:
    """``text`` to standard output for ``-``, else to the file ``output`` (its folder made),
    which is then named on standard output."""
    if str(output) == "-":
        click.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    click.echo(f"report: {output}")
