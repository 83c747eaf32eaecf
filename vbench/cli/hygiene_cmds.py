"""`vbench lab tune`: what keeps a lab still for a scenario, proposed, made, undone
(the command itself is in lab_cmds.py; the work in vbench/engine/lab_tune.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.config.load import Loaded
    from vbench.vsphere.hygiene_tune import TuneJournal


def run_tune(lab_file: Path, scenario: Path | None, sets: tuple[str, ...], apply: bool,
             undo: bool) -> int:
    """Print the proposal (or what was made or restored); the exit code (0, or 3)."""
    from vbench.config.load import load_lab
    from vbench.engine.lab_tune import journal_of
    from vbench.errors import ConfigError

    lab_loaded = load_lab(lab_file)
    lab = lab_loaded.model
    journal = journal_of(lab)
    if undo:
        if apply:
            raise ConfigError("give either --apply or --undo")
        return _undo(lab, journal)
    if scenario is None:
        raise ConfigError("--scenario is required (but with --undo)")
    return _propose(lab_file, lab_loaded, scenario, sets, apply, journal)


def _undo(lab: Lab, journal: TuneJournal) -> int:
    from vbench.engine.hygiene import undo_journal

    done, errors = undo_journal(lab, journal)
    for line in done:
        click.echo(line)
    for line in errors:
        click.echo(f"error: {line}", err=True)
    if not (done or errors):
        click.echo(f"nothing to restore ({journal.path})")
    return 3 if errors else 0


def _propose(lab_file: Path, lab_loaded: Loaded[Lab], scenario: Path, sets: tuple[str, ...],
             apply: bool, journal: TuneJournal) -> int:
    from vbench.config.load import load_scenario
    from vbench.engine.lab_tune import apply_all, facts_of, proposal, scope_of
    from vbench.engine.plan import build_plan
    from vbench.errors import VbenchError
    from vbench.vsphere.connection import SessionPool

    lab = lab_loaded.model
    plan = build_plan(load_scenario(scenario, list(sets)), lab_loaded)
    scope = scope_of(plan, lab)
    with SessionPool.for_lab(lab) as sessions:
        changes, notes = proposal(facts_of(lab, sessions, scope, {}), scope)
        for c in changes if not apply else ():
            click.echo(f"propose: {c.text}")
        for n in notes:
            click.echo(f"at run time: {n}")
        if not changes:
            click.echo("nothing to change now")
            return 0
        if not apply:
            click.echo(f"{len(changes)} changes proposed; --apply makes them")
            return 0
        undo = f"`vbench lab tune {lab_file} --undo` restores"
        done: list[str] = []

        def said(_event: str, change: str) -> None:  # each change as it is made
            done.append(change)
            click.echo(f"applied: {change}")

        try:
            apply_all(lab, sessions, changes, journal, said)
        except VbenchError:
            # What was made before the failure is journaled; what was not is said.
            for c in changes:
                if c.text not in done:
                    click.echo(f"not made: {c.text}")
            click.echo(f"journaled in {journal.path}; {undo} what was applied")
            raise
    click.echo(f"journaled in {journal.path}; {undo} them")
    return 0
