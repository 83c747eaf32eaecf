"""parse: turn a tool's output file into the tidy records runs store.

The commands come from the parser registry (:mod:`vbench.parsers.base`): every parser
package found there is a `vbench parse <tool>` command, loaded only when `parse` is used.
Text parsers share one shape (FILE, --format json|csv); a streaming parser (esxtop) has
a command of its own here.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import click

FORMATS = click.Choice(["json", "csv"])


def _streaming_commands() -> dict[str, click.Command]:
    from vbench.cli.esxtop_cmds import parse_esxtop

    return {"esxtop": parse_esxtop}


class ParseGroup(click.Group):
    """Sub-commands built from the parser registry on first use (keeps --help fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from vbench.parsers.base import parser_names

        return parser_names()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from vbench.errors import ConfigError
        from vbench.parsers.base import get_parser

        try:
            parser = get_parser(name)
        except ConfigError:
            return None
        if parser.rows is None:
            return _streaming_commands().get(name)
        return _text_command(name, parser.summary, parser.detail_flag, parser.detail_help)


@click.group(cls=ParseGroup)
def parse() -> None:
    """Parse a tool's output file into tidy records."""


def _text_command(name: str, help_text: str, detail_flag: str = "",
                  detail_help: str = "") -> click.Command:
    @click.command(name=name, help=help_text)
    @click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--format", "fmt", type=FORMATS, default="csv", show_default=True)
    def command(file: Path, fmt: str, detail: bool = False) -> None:
        from vbench.parsers.base import get_parser

        text = file.read_text(encoding="utf-8", errors="replace")
        rows = get_parser(name).parse_rows(text, str(file), detail=detail)
        click.echo(_render(rows, fmt), nl=False)

    if detail_flag:  # finer rows only on request (fio: one row per job)
        command = click.option(f"--{detail_flag}", "detail", is_flag=True,
                               help=detail_help)(command)
    return command


def _render(rows: list[dict[str, object]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2, default=str) + "\n"
    from vbench.report.exports import write_csv

    buf = io.StringIO()
    if rows:  # cells a spreadsheet would run (text starting with = + - @) neutralised
        write_csv(buf, list(rows[0]), rows)
    return buf.getvalue()


COMMANDS = [parse]
