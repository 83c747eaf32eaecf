"""The parser registry: every tool-output parser that `vbench parse <tool>` offers.

A parser is one package under ``vbench/parsers/<tool>/`` (or a module named by a
``vbench.parsers`` entry point) that registers a :class:`ToolParser`. Parsers are pure:
text in, tidy records out; the workloads and collectors call their functions directly,
the registry only feeds the CLI and the docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vbench.plugins import Registry

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class ToolParser:
    """One tool's output parser as the CLI offers it.

    ``rows`` turns a file's text into flat rows (``vbench parse TOOL FILE``). A parser
    whose files are too big to read whole (esxtop) sets ``rows`` to None: the CLI has a
    streaming command of its own for it (a test holds that every parser has a command).
    ``detail`` gives finer rows on request (the command's ``--<detail_flag>``), for files
    whose finest rows would drown the answer (fio: one row per job of a 64-job run).
    """

    name: str  # the command name: "fio", "redis-benchmark"
    summary: str  # one line: what files it reads
    rows: Callable[[str, str], Rows] | None = None  # (text, source) -> rows
    detail: Callable[[str, str], Rows] | None = None  # (text, source) -> finer rows
    detail_flag: str = ""  # e.g. "per-job": the option `--per-job`
    detail_help: str = ""

    def parse_rows(self, text: str, source: str, *, detail: bool = False) -> Rows:
        fn = self.detail if detail and self.detail is not None else self.rows
        assert fn is not None
        return fn(text, source)


def _origin(p: ToolParser) -> str:
    if p.rows is not None:
        return p.rows.__module__
    # A streaming parser has its command in vbench.cli.parse_cmds, so it is a built-in
    # one, in the package named after its tool.
    return f"vbench.parsers.{p.name}"


REGISTRY: Registry[ToolParser] = Registry(
    "vbench.parsers", "parser", lambda p: p.name, origin=_origin
)


def register(parser: ToolParser) -> ToolParser:
    return REGISTRY.register(parser)


def get_parser(name: str) -> ToolParser:
    return REGISTRY.get(name)


def parser_names() -> list[str]:
    return REGISTRY.names()
