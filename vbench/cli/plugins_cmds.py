"""plugins: what discovery found — workload drivers, collectors and parsers, where each
came from, and the plugins that could not be loaded (with the reason)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import click

from vbench.cli.options import json_option
from vbench.errors import EXIT_LAB


@dataclass(frozen=True)
class PluginRow:
    kind: str  # the entry-point group: vbench.workloads | vbench.collectors | vbench.parsers
    name: str
    origin: str  # the module it was registered from
    builtin: bool  # found inside vbench, not through an entry point of another distribution


@dataclass(frozen=True)
class BrokenRow:
    kind: str
    name: str  # the entry point or package that failed to load
    reason: str


def _registries() -> list[Any]:
    # Imported here: listing plugins is the only reason to load all of them.
    from vbench.collectors.base import REGISTRY as COLLECTORS
    from vbench.parsers.base import REGISTRY as PARSERS
    from vbench.workloads.base import REGISTRY as WORKLOADS

    return [WORKLOADS, COLLECTORS, PARSERS]


def survey() -> tuple[list[PluginRow], list[BrokenRow]]:
    """Every registered plugin of every kind, and every one that failed to load."""
    rows: list[PluginRow] = []
    broken: list[BrokenRow] = []
    for reg in _registries():
        for name in reg.names():
            origin = reg.origin(name)
            builtin = origin == reg.package or origin.startswith(f"{reg.package}.")
            rows.append(PluginRow(reg.package, name, origin, builtin))
        for name, reason in sorted(reg.broken().items()):
            broken.append(BrokenRow(reg.package, name, reason))
    return rows, broken


def _short(kind: str) -> str:
    return kind.removeprefix("vbench.")


@click.command()
@json_option
@click.option(
    "--check", is_flag=True,
    help=f"Exit {EXIT_LAB} when a plugin could not be loaded (for CI and lab set-up scripts).",
)
def plugins(as_json: bool, check: bool) -> None:
    """List workload drivers, collectors and parsers, where each comes from, and the
    plugins that could not be loaded."""
    rows, broken = survey()
    if as_json:
        click.echo(json.dumps(
            {"plugins": [asdict(r) for r in rows], "broken": [asdict(b) for b in broken]},
            indent=2,
        ))
    else:
        _print(rows, broken)
    if check and broken:
        raise click.exceptions.Exit(EXIT_LAB)


def _print(rows: list[PluginRow], broken: list[BrokenRow]) -> None:
    width = max((len(r.name) for r in rows), default=0)
    kind = None
    for r in rows:
        if r.kind != kind:
            kind = r.kind
            click.echo(f"{_short(kind)}:")
        where = r.origin if r.builtin else f"{r.origin} (entry point)"
        click.echo(f"  {r.name:<{width}}  {where}")
    if broken:
        click.echo("broken:")
        for b in broken:
            click.echo(f"  {_short(b.kind)} {b.name}: {b.reason}")


COMMANDS = [plugins]
