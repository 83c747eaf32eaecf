"""parse: turn a tool's output file into the tidy records runs store."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click

FORMATS = click.Choice(["json", "csv"])


@click.group()
def parse() -> None:
    """Parse a tool's output file into tidy records."""


@parse.command(name="fio")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=FORMATS, default="csv", show_default=True)
def parse_fio(file: Path, fmt: str) -> None:
    """fio --output-format=json output (fio 2.x and 3.x)."""
    from vbench.parsers.fio import parse_fio_json, records_to_rows

    text = file.read_text(encoding="utf-8", errors="replace")
    rows = records_to_rows(parse_fio_json(text, source=str(file)))
    click.echo(_render(rows, fmt), nl=False)


@parse.command(name="redis-benchmark")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=FORMATS, default="csv", show_default=True)
def parse_redis_benchmark(file: Path, fmt: str) -> None:
    """redis-benchmark output: --csv (7.x and the older two-column form), text or -q."""
    from vbench.parsers.redis_benchmark import parse_redis_benchmark, result_rows

    text = file.read_text(encoding="utf-8", errors="replace")
    rows = result_rows(parse_redis_benchmark(text, source=str(file)))
    click.echo(_render(rows, fmt), nl=False)


@parse.command(name="memtier")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=FORMATS, default="csv", show_default=True)
def parse_memtier(file: Path, fmt: str) -> None:
    """memtier_benchmark output: the text report or --json-out-file."""
    from vbench.parsers.memtier import parse_memtier, result_rows

    text = file.read_text(encoding="utf-8", errors="replace")
    rows = result_rows(parse_memtier(text, source=str(file)))
    click.echo(_render(rows, fmt), nl=False)


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
