"""parse: turn a tool's output file into the tidy records runs store.

The text parsers share one command shape (FILE, --format json|csv), so they are made
from a table; `vbench parse esxtop` has options of its own (vbench/cli/esxtop_cmds.py).
"""

from __future__ import annotations

import csv
import importlib
import io
import json
from pathlib import Path

import click

FORMATS = click.Choice(["json", "csv"])

# command name -> (help, module, parse function, rows function)
PARSERS: dict[str, tuple[str, str, str, str]] = {
    "fio": (
        "fio --output-format=json output (fio 2.x and 3.x).",
        "vbench.parsers.fio", "parse_fio_json", "records_to_rows",
    ),
    "redis-benchmark": (
        "redis-benchmark output: --csv (7.x and the older two-column form), text or -q.",
        "vbench.parsers.redis_benchmark", "parse_redis_benchmark", "result_rows",
    ),
    "memtier": (
        "memtier_benchmark output: the text report or --json-out-file.",
        "vbench.parsers.memtier", "parse_memtier", "result_rows",
    ),
}


@click.group()
def parse() -> None:
    """Parse a tool's output file into tidy records."""


def _make(name: str, help_text: str, module: str, parse_fn: str, rows_fn: str) -> None:
    @parse.command(name=name, help=help_text)
    @click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--format", "fmt", type=FORMATS, default="csv", show_default=True)
    def command(file: Path, fmt: str) -> None:
        mod = importlib.import_module(module)  # parsers load only when used
        text = file.read_text(encoding="utf-8", errors="replace")
        rows = getattr(mod, rows_fn)(getattr(mod, parse_fn)(text, source=str(file)))
        click.echo(_render(rows, fmt), nl=False)


for _name, _spec in PARSERS.items():
    _make(_name, *_spec)


def _render(rows: list[dict[str, object]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue()


COMMANDS = [parse]
