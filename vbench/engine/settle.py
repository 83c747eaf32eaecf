"""Settling a run whose vbench process is gone (kill -9, a crash): `vbench cleanup RUN`.

What the run left is finished in the order it was made, backwards: its lab hooks are
undone (they need no vCenter), its processes on the guests stopped and their scratch
directories removed while their VMs still exist, what it created in vSphere removed
(its journal), and it is marked ``interrupted`` in the store once its process is known
to be gone. Each line is handed to ``say`` as it happens (the CLI prints it). Also the
marked VMs of runs no longer active (``--orphans``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.errors import EXIT_LAB, EXIT_OK, RunNotFound

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.results.store import Store

# A line of output and whether it is an error (the CLI prints those on stderr).
Say = Callable[[str, bool], None]


@dataclass(frozen=True)
class Settled:
    """What `vbench cleanup RUN` did."""

    run_id: str
    failed: bool  # something could not be undone, stopped or removed
    changed: bool  # something was undone, stopped, removed or marked

    @property
    def exit_code(self) -> int:
        return EXIT_LAB if self.failed else EXIT_OK


def settle_run(
    lab: Lab, store: Store, results_dir: Path, run_id: str, include_kept: bool, say: Say
) -> Settled:
    """Finish what the run ``run_id`` (or a unique prefix) left; idempotent."""
    full_id, run_dir = run_dir_of(store, results_dir, run_id)
    hooks_failed, undone = _undo_hooks(lab, run_dir, say)
    tune_failed, untuned = _undo_tune(lab, run_dir, say)
    guests_failed, killed = _clean_guests(lab, full_id, run_dir, say)
    report = cleanup_run(lab, full_id, run_dir, include_kept)
    _say_report(report, say)
    sessions_failed, ended = _end_sessions(lab, run_dir, say)
    say(f"run {full_id}: {report.summary()}", False)
    status_line, marked = settle_status(store, full_id, run_dir)
    say(status_line, False)
    failed = bool(report.errors or hooks_failed or tune_failed or guests_failed
                  or sessions_failed)
    changed = bool(undone or untuned or killed or report.destroyed or marked or ended)
    if not (failed or changed):
        say(f"run {full_id}: nothing left to clean up", False)
    return Settled(full_id, failed, changed)


def run_dir_of(store: Store, results_dir: Path, run_id: str) -> tuple[str, Path]:
    """The full id and run directory of a run: the store's, else a folder of that name
    (a run killed before the store held it)."""
    try:
        row = store.get_run(run_id)
        if row.run_dir:
            return row.run_id, Path(row.run_dir)
        return row.run_id, results_dir / row.run_id
    except RunNotFound:
        path = results_dir / run_id
        if path.is_dir():
            return run_id, path
        raise


def cleanup_run(lab: Lab, run_id: str, run_dir: Path, include_kept: bool) -> Any:
    """Remove what the run's journal says it created in vSphere (a CleanupReport)."""
    from vbench.vsphere.cleanup import cleanup_journal
    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.journal import Journal, pending
    from vbench.vsphere.tasks import Watcher
    from vbench.workloads.base import REGISTRY

    journal = Journal.in_run_dir(run_dir)
    todo = pending(journal.read())
    # Workload plugins register the destroyers of the kinds they create at import.
    REGISTRY.loaded()
    watchers: dict[str, Any] = {}
    with SessionPool.for_lab(lab) as sessions:

        def watcher_for(vc: str) -> Any:
            if vc not in watchers:
                watchers[vc] = Watcher(sessions.get(vc))
            return watchers[vc]

        try:
            return cleanup_journal(
                sessions.get, watcher_for, journal, run_id, todo, include_kept=include_kept
            )
        finally:
            for w in watchers.values():
                w.close()


def _undo_hooks(lab: Lab, run_dir: Path, say: Say) -> tuple[bool, bool]:
    """Undo the per-point lab hooks a killed run left applied: (one failed, one was
    undone)."""
    from vbench.engine.hooks import undo_pending

    return _said(undo_pending(lab, run_dir), say, "undone ")


def _undo_tune(lab: Lab, run_dir: Path, say: Say) -> tuple[bool, bool]:
    """Restore what a killed run tuned (lab_hygiene.tune): (one failed, one was
    restored). Before its VMs are removed: their DRS overrides are undone on them."""
    from vbench.engine.hygiene import undo_tune

    return _said(undo_tune(lab, run_dir), say, "lab tune: ")


def _said(undone: tuple[list[str], list[str]], say: Say, prefix: str) -> tuple[bool, bool]:
    """One line per undo done (``prefix``) and per error: (one failed, one was done)."""
    done, errors = undone
    for line in done:
        say(f"{prefix}{line}", False)
    for line in errors:
        say(f"error: {line}", True)
    return bool(errors), bool(done)


def _clean_guests(lab: Lab, run_id: str, run_dir: Path, say: Say) -> tuple[bool, bool]:
    """Kill what the run left running in its guests and remove its scratch directories;
    one line per guest. (a guest could not be cleaned, something was found)."""
    results = clean_earlier_guests(lab, run_id, run_dir)
    for r in results:
        say(r.line, not r.ok)
    found = any(": killed " in r.line for r in results)
    return not all(r.ok for r in results), found


def clean_earlier_guests(lab: Lab, run_id: str, run_dir: Path) -> list[Any]:
    """What an earlier, killed session of the run left in its guests (its ledger's
    process groups, its scratch folders), stopped and removed before a resumed session
    starts: a fio of the killed trial still running beside the trial run again would
    load the guest it measures, and write into the same folder. One GuestLeftovers
    each, as `vbench cleanup` reports them."""
    from vbench.guest.leftovers import clean_guests

    return clean_guests(lab, run_id, run_dir, vm_gone=_vm_gone(run_id, run_dir))


def _vm_gone(run_id: str, run_dir: Path) -> Callable[[str], bool]:
    """guest name -> whether the journal says its VM was destroyed (or found missing):
    then nothing of the run can still run in it."""
    import yaml

    from vbench.vsphere.journal import VM_KIND, Journal, items
    from vbench.vsphere.specs import kept_vm_name, vm_name

    gone = {i.name for i in items(Journal.in_run_dir(run_dir).read())
            if i.kind == VM_KIND and i.state in ("destroyed", "missing")}
    scenario = ""
    try:
        doc = yaml.safe_load((run_dir / "scenario.yaml").read_text(encoding="utf-8"))
        scenario = str(doc.get("name") or "") if isinstance(doc, dict) else ""
    except (OSError, yaml.YAMLError):
        pass  # kept VMs are then not recognised: their guests are cleaned as reachable

    def vm_is_gone(guest: str) -> bool:
        names = {vm_name(run_id, guest)} | ({kept_vm_name(scenario, guest)} if scenario else set())
        return bool(names & gone)

    return vm_is_gone


def settle_status(store: Store, run_id: str, run_dir: Path) -> tuple[str, bool]:
    """Mark a run whose vbench process is gone (kill -9, a crash) interrupted in the
    store: (the line saying so, whether the status changed)."""
    from vbench.results.rundir import controller_alive
    from vbench.results.store import UNFINISHED_STATUSES
    from vbench.vsphere.cleanup import journal_says_alive

    try:
        row = store.get_run(run_id)
    except RunNotFound:
        return f"run {run_id}: not in the store ({store.url_display})", False
    if row.status not in UNFINISHED_STATUSES:
        return f"run {run_id}: status {row.status}", False
    alive = controller_alive(run_dir)
    if alive is None:
        alive = journal_says_alive(run_dir)
    if alive:
        return (f"run {run_id}: its vbench process still runs; status left as "
                f"{row.status}"), False
    changed = store.settle_unfinished(run_id, "interrupted", time.time())
    if not changed:  # it ended meanwhile
        return f"run {run_id}: status {store.get_run(run_id).status}", False
    return f"run {run_id}: status interrupted (was {row.status}; its vbench process is gone)", True


def _end_sessions(lab: Lab, run_dir: Path, say: Say) -> tuple[bool, bool]:
    """End the vCenter sessions the run left logged in: (failed, ended any)."""
    from vbench.vsphere.run_sessions import end_left_sessions, ended_lines

    result = end_left_sessions(lab, run_dir)
    for line, err in ended_lines(result):
        say(line, err)
    return bool(result and result.errors), bool(result and result.ended)


def _say_report(report: Any, say: Say) -> None:
    for name in report.destroyed:
        say(f"destroyed {name}", False)
    for name in report.kept:
        say(f"kept {name} (keep: true; --include-kept removes it)", False)
    for name in report.missing:
        say(f"already gone: {name}", False)
    for line in report.skipped:
        say(f"skipped {line}", False)
    for line in report.errors:
        say(f"error: {line}", True)


def find_orphans(
    lab: Lab, store: Store, results_dir: Path, older_than: float, include_kept: bool
) -> list[Any]:
    """VMs vbench marked whose run is no longer active, started ``older_than`` ago."""
    from vbench.vsphere.cleanup import find_marked, select_orphans
    from vbench.vsphere.connection import SessionPool

    found: list[Any] = []
    with SessionPool.for_lab(lab) as sessions:
        for name in lab.vcenters:
            marked = find_marked(sessions.get(name))
            found += select_orphans(marked, lambda rid: _is_active(store, results_dir, rid),
                                    older_than, time.time(), include_kept)
    return found


def _is_active(store: Store, results_dir: Path, run_id: str) -> bool:
    """Whether a run's vbench process still runs (its run directory says, else its
    journal, else the store's status)."""
    from vbench.results.rundir import controller_alive
    from vbench.results.store import UNFINISHED_STATUSES
    from vbench.vsphere.cleanup import journal_says_alive

    alive = controller_alive(results_dir / run_id)
    if alive is None:
        alive = journal_says_alive(results_dir / run_id)
    if alive is not None:
        return alive
    try:
        return store.get_run(run_id).status in UNFINISHED_STATUSES
    except RunNotFound:
        return False


def remove_orphans(lab: Lab, orphans: list[Any]) -> list[str]:
    """Remove the orphaned VMs; the errors, one per VM that could not be removed."""
    from vbench.vsphere.cleanup import remove_orphan_vms

    return remove_orphan_vms(lab, orphans)
