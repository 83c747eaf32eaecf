"""parse esxtop, esxtop counters: read esxtop batch captures (any size) from the shell."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any

import click

from vbench.cli.options import json_option

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
TIDY_FIELDS = ("time", "host", "object", "instance", "counter", "value", "unit")


def select_option(f: Any) -> Any:
    return click.option(
        "--select",
        "select",
        multiple=True,
        metavar="PATTERN",
        help="Object(instance)\\Counter with * and ? wildcards, or a counter set "
        "(cpu, vcpu, memory, disk-adapter, disk-device, virtual-disk, network, power); "
        "repeatable. Default: every column.",
    )(f)


def _day(value: datetime | None) -> date | None:
    return value.date() if value is not None else None


def _open_reader(file: Path, select: tuple[str, ...], day: date | None, spread: bool) -> Any:
    from vbench.parsers.esxtop import EsxtopReader

    return EsxtopReader(file, select, day=day, spread_minutes=spread)


def _notes(reader: Any) -> None:
    for note in reader.notes:
        click.echo(f"note: {note}", err=True)


def _iso(t: float) -> str:
    ms = round(t * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{ms:03d}Z"


def _rows(reader: Any) -> Iterator[dict[str, Any]]:
    for rec in reader.records():
        rec["time"] = _iso(rec["time"])
        yield rec


def _write_csv(reader: Any, out: IO[str]) -> int:
    from vbench.report.exports import write_csv

    # Object names come from the host (VM names): cells a spreadsheet would run are
    # neutralised.
    return write_csv(out, TIDY_FIELDS, _rows(reader))


def _write_json(reader: Any, out: IO[str]) -> int:
    # Streamed element by element: a GB capture must not be held as one list.
    out.write("[")
    n = 0
    for rec in _rows(reader):
        out.write(("\n  " if n == 0 else ",\n  ") + json.dumps(rec))
        n += 1
    out.write("\n]\n" if n else "]\n")
    return n


@click.command(name="esxtop")
@click.argument("file", type=FILE)
@select_option
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json", "parquet"]), default="csv",
    show_default=True,
)  # fmt: skip
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
    help="Write here instead of standard output (required for parquet).",
)  # fmt: skip
@click.option(
    "--date", "day", type=click.DateTime(formats=["%Y-%m-%d"]),
    help="Capture date, for files whose time stamps lost it (spreadsheet re-saves).",
)  # fmt: skip
@click.option(
    "--spread-minutes", is_flag=True,
    help="Time stamps without seconds: spread each minute's samples evenly (an estimate).",
)  # fmt: skip
def parse_esxtop(
    file: Path,
    select: tuple[str, ...],
    fmt: str,
    output: Path | None,
    day: datetime | None,
    spread_minutes: bool,
) -> None:
    """esxtop -b output (also .csv.gz) → tidy records: time, host, object, instance,
    counter, value, unit. Reads only the selected columns, streaming."""
    from vbench.parsers.esxtop import write_parquet

    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet needs -o/--output FILE")
    with _open_reader(file, select, _day(day), spread_minutes) as reader:
        if fmt == "parquet":
            assert output is not None
            rows = write_parquet(reader, output)
            _notes(reader)
            click.echo(
                f"{output}: {rows} records ({reader.rows_read} samples × "
                f"{len(reader.columns)} columns)",
                err=True,
            )
            return
        write = _write_csv if fmt == "csv" else _write_json
        if output is None:
            write(reader, sys.stdout)
        else:
            with open(output, "w", encoding="utf-8", newline="") as out:
                write(reader, out)
        _notes(reader)


@click.group(name="esxtop")
def esxtop() -> None:
    """Inspect esxtop batch captures."""


@esxtop.command(name="counters")
@click.argument("file", type=FILE)
@select_option
@json_option
def counters(file: Path, select: tuple[str, ...], as_json: bool) -> None:
    """List the objects and counters of a capture with their column counts (header only,
    so instant even on a GB file)."""
    from vbench.parsers.esxtop import EsxtopReader

    with EsxtopReader(file, select) as reader:
        doc = counters_doc(reader)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(
        f"{file}: host {', '.join(doc['hosts'])}; {doc['columns']} of "
        f"{doc['columns_in_file']} columns; {doc['format']}"
    )
    click.echo(f"{'object / counter':<52} {'instances':>9} {'columns':>8}")
    for obj in doc["objects"]:
        click.echo(f"{obj['object']:<52} {obj['instances']:>9} {obj['columns']:>8}")
        for c in obj["counters"]:
            unit = f" [{c['unit']}]" if c["unit"] else ""
            click.echo(f"  {(c['counter'] + unit)[:50]:<50} {'':>9} {c['columns']:>8}")
    for note in doc["notes"]:
        click.echo(f"note: {note}", err=True)


def counters_doc(reader: Any) -> dict[str, Any]:
    """Objects → counters → column counts of the reader's selected columns."""
    from vbench.parsers.esxtop.names import unit_of

    objects: dict[str, dict[str, Any]] = {}
    for col in reader.columns:
        o = objects.setdefault(col.object, {"instances": set(), "counters": {}, "columns": 0})
        o["instances"].add(col.instance)
        o["counters"][col.counter] = o["counters"].get(col.counter, 0) + 1
        o["columns"] += 1
    h = reader.header
    return {
        "file": str(reader.path),
        "format": f"PDH-CSV {h.pdh_version} ({h.timezone})",
        "hosts": sorted({c.host for c in reader.columns}),
        "columns": len(reader.columns),
        "columns_in_file": len(h.columns),
        "objects": [
            {
                "object": name,
                "instances": len(o["instances"] - {""}),
                "columns": o["columns"],
                "counters": [
                    {"counter": c, "columns": n, "unit": unit_of(c)}
                    for c, n in o["counters"].items()
                ],
            }
            for name, o in objects.items()
        ],
        "notes": list(reader.notes),
    }


COMMANDS = [esxtop]
