"""lab check (preflight) and cleanup (what a killed run left, orphans) for the vSphere side."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from vbench.cli.options import open_store, store_options

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


# --- vbench lab check -------------------------------------------------------------------


def run_lab_check(lab_file: Path, scenario_file: Path | None, sets: tuple[str, ...]) -> int:
    """Every check, printed as a table; returns the exit code (0, or 3 on a failure)."""
    from rich.console import Console
    from rich.table import Table

    checks = collect_checks(lab_file, scenario_file, sets)
    console = Console()
    if console.is_terminal:
        table = Table(title=f"lab check: {lab_file}", title_justify="left")
        for col in ("target", "check", "result", "detail"):
            table.add_column(col, overflow="fold")
        for c in checks:
            colour = {"pass": "green", "warn": "yellow", "FAIL": "red"}[_result(c)]
            result = f"[{colour}]{_result(c)}[/]"
            table.add_row(c.target, c.check, result, c.detail)
        console.print(table)
    else:  # logs and pipes: one unwrapped line per check
        for c in checks:
            click.echo(f"{_result(c)}  {c.target}  {c.check}: {c.detail}")
    n = {r: sum(_result(c) == r for c in checks) for r in ("pass", "warn", "FAIL")}
    warned = f", {n['warn']} warnings" if n["warn"] else ""
    console.print(f"{n['pass']} passed{warned}, {n['FAIL']} failed", highlight=False)
    return 3 if n["FAIL"] else 0


def _result(check: Any) -> str:
    """pass, FAIL, or warn: passed but not proven (something vCenter did not report)."""
    if not check.ok:
        return "FAIL"
    return "warn" if getattr(check, "level", "info") == "warning" else "pass"


def collect_checks(lab_file: Path, scenario_file: Path | None, sets: tuple[str, ...]) -> list[Any]:
    from vbench.config.load import load_lab, load_scenario
    from vbench.config.profiles import vm_placements
    from vbench.config.resolve import vm_groups
    from vbench.engine.plan import build_plan
    from vbench.engine.vsphere_run import placement_checks
    from vbench.vsphere.checks import check_profiles, vsphere_checks
    from vbench.vsphere.connection import SessionPool

    lab_loaded = load_lab(lab_file)
    lab = lab_loaded.model
    plan = None
    if scenario_file is not None:
        plan = build_plan(load_scenario(scenario_file, list(sets)), lab_loaded)
    warnings: list[str] = []
    checks: list[Any] = []
    with SessionPool.for_lab(lab, warn=warnings.append) as sessions:
        if plan is not None:
            placements = vm_placements(
                plan.scenario.topology, lab, vm_groups(plan.scenario, lab), plan.groups,
                [p.profiles for p in plan.points],
            )
            vs, _ = placement_checks(lab, sessions, plan.scenario, placements,
                                     all_vcenters=True)
        else:
            vs, _ = vsphere_checks(lab, sessions)
        checks.extend(vs)
        checks.extend(check_profiles(lab, sessions))
    checks.extend(_ssh_checks(lab, plan, lab_loaded.source))
    return checks + _warning_checks(warnings)


def _warning_checks(warnings: list[str]) -> list[Any]:
    from vbench.vsphere.checks import Check

    out = []
    for w in warnings:
        # "TARGET: detail"; the target may hold a colon of its own
        # (``vcenter sim (127.0.0.1:18542)``): it ends at the first ": ".
        target, sep, detail = w.partition(": ")
        out.append(Check(target if sep else "lab", "warning", True,
                         detail.strip() if sep else w, level="warning"))
    return out


def _ssh_checks(lab: Any, plan: Any, src: Any = None) -> list[Any]:
    """SSH to every static node and ESXi host (and, with a scenario, the tools its roles
    need on the nodes it uses); a failure names where SSH went and the lab file line."""
    from vbench.config.resolve import vm_groups
    from vbench.errors import VbenchError
    from vbench.guest.ssh import GuestPool
    from vbench.vsphere.checks import Check

    specs = ssh_check_specs(lab)
    needs: dict[str, tuple[str, ...]] = {}
    if plan is not None:
        from vbench.engine.session import _tools_by_guest

        vm_names = {n for g in vm_groups(plan.scenario, lab) for n in plan.groups.get(g, ())}
        needs = {k: v for k, v in _tools_by_guest(plan).items() if k not in vm_names}
    out: list[Any] = []
    if not specs:
        return out
    with GuestPool(specs) as pool:

        def check(guest: Any) -> list[Any]:
            kind = "host" if guest.name.startswith("esxi:") else "node"
            target = f"{kind} {guest.name.removeprefix('esxi:')}"
            try:
                guest.connect()
            except VbenchError as exc:
                return [Check(target, "ssh", False, ssh_failure(guest.spec, exc, src))]
            rows = [Check(target, "ssh", True, f"{guest.spec.address}:{guest.spec.port}")]
            for tool in needs.get(guest.name, ()):
                path = guest.which(tool)
                rows.append(
                    Check(target, f"tool {tool}", path is not None, path or "not found in PATH")
                )
            return rows

        results = pool.fan_out([s.name for s in specs], check)
    for rows in results.values():
        out.extend(rows)
    return out


def ssh_failure(spec: Any, exc: Exception, src: Any) -> str:
    """``127.0.0.2:2299 (nodes.guest1, lab.yaml:12): connection refused``: where SSH
    went (after the address map), which lab file entry sent it there, and why it failed."""
    kind, name = ("hosts", spec.name[5:]) if spec.name.startswith("esxi:") else ("nodes",
                                                                                 spec.name)
    where = f"{kind}.{name}"
    if src is not None:
        file, line, _col = src.locate((kind, name), key=True)
        if line:
            where += f", {file}:{line}"
    via = f" via jump host {spec.jump.name}" if spec.jump is not None else ""
    return f"{spec.address}:{spec.port}{via} ({where}): {getattr(exc, 'cause', str(exc))}"


def ssh_check_specs(lab: Any) -> list[Any]:
    """What lab check reaches by SSH: every static node, and every ESXi host (named
    ``esxi:<host>``) as esxtop reaches it, through its jump host."""
    import dataclasses

    from vbench.guest.labspec import guest_spec, host_spec

    specs = [guest_spec(lab, n) for n in lab.nodes]
    return specs + [dataclasses.replace(host_spec(lab, n), name=f"esxi:{n}") for n in lab.hosts]


# --- vbench cleanup ---------------------------------------------------------------------


def _run_dir(store: Any, results_dir: Path, run_id: str) -> tuple[str, Path]:
    from vbench.errors import RunNotFound

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


def cleanup_run(lab: Any, run_id: str, run_dir: Path, include_kept: bool) -> Any:
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


def _undo_hooks(lab: Any, run_dir: Path) -> tuple[bool, bool]:
    """Undo the per-point lab hooks a killed run left applied: (one failed, one was
    undone)."""
    from vbench.engine.hooks import undo_pending

    done, errors = undo_pending(lab, run_dir)
    for line in done:
        click.echo(f"undone {line}")
    for line in errors:
        click.echo(f"error: {line}", err=True)
    return bool(errors), bool(done)


def _clean_guests(lab: Any, run_id: str, run_dir: Path) -> tuple[bool, bool]:
    """Kill what the run left running in its guests and remove its scratch directories;
    one line per guest. (a guest could not be cleaned, something was found)."""
    from vbench.guest.leftovers import clean_guests

    results = clean_guests(lab, run_id, run_dir, vm_gone=_vm_gone(run_id, run_dir))
    for r in results:
        click.echo(r.line, err=not r.ok)
    found = any(": killed " in r.line for r in results)
    return not all(r.ok for r in results), found


def _vm_gone(run_id: str, run_dir: Path) -> Any:
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


def _settle_status(store: Any, run_id: str, run_dir: Path) -> tuple[str, bool]:
    """Mark a run whose vbench process is gone (kill -9, a crash) interrupted in the
    store: (the line saying so, whether the status changed)."""
    from vbench.errors import RunNotFound
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


def _print_report(report: Any) -> None:
    for name in report.destroyed:
        click.echo(f"destroyed {name}")
    for name in report.kept:
        click.echo(f"kept {name} (keep: true; --include-kept removes it)")
    for name in report.missing:
        click.echo(f"already gone: {name}")
    for line in report.skipped:
        click.echo(f"skipped {line}")
    for line in report.errors:
        click.echo(f"error: {line}", err=True)


def _orphans(
    lab: Any, store: Any, results_dir: Path, older_than: float, include_kept: bool
) -> list[Any]:
    from vbench.errors import RunNotFound
    from vbench.vsphere.cleanup import find_marked, journal_says_alive, select_orphans
    from vbench.vsphere.connection import SessionPool

    def is_active(run_id: str) -> bool:
        from vbench.results.rundir import controller_alive
        from vbench.results.store import UNFINISHED_STATUSES

        alive = controller_alive(results_dir / run_id)
        if alive is None:
            alive = journal_says_alive(results_dir / run_id)
        if alive is not None:
            return alive
        try:
            return store.get_run(run_id).status in UNFINISHED_STATUSES
        except RunNotFound:
            return False

    found: list[Any] = []
    with SessionPool.for_lab(lab) as sessions:
        for name in lab.vcenters:
            marked = find_marked(sessions.get(name))
            found += select_orphans(marked, is_active, older_than, time.time(), include_kept)
    return found


def remove_orphans(lab: Any, orphans: list[Any]) -> list[str]:
    from vbench.vsphere.cleanup import remove_orphan_vms

    return remove_orphan_vms(lab, orphans)


@click.command()
@click.argument("run_id", required=False)
@click.option("--lab", "lab_file", type=FILE, required=True, help="The lab the run used.")
@click.option("--orphans", is_flag=True, help="List VMs vbench marked whose run is not active.")
@click.option(
    "--older-than",
    default="24h",
    show_default=True,
    metavar="DURATION",
    help="With --orphans: only runs that started at least this long ago.",
)
@click.option("--yes", is_flag=True, help="With --orphans: remove them (default: only list).")
@click.option("--include-kept", is_flag=True, help="Also remove VMs kept with `keep: true`.")
@store_options
@click.pass_context
def cleanup(
    ctx: click.Context,
    run_id: str | None,
    lab_file: Path,
    orphans: bool,
    older_than: str,
    yes: bool,
    include_kept: bool,
    store_url: str | None,
    results_dir: Path | None,
) -> None:
    """Finish what a run left (idempotent), or find marked orphans.

    For RUN_ID: undo its lab hooks, stop its processes on the guests and remove their
    scratch directories, remove what it created in vSphere, and mark it interrupted in
    the store when its vbench process is gone. Only VMs named by vbench and marked with
    the run's id are ever touched."""
    from vbench.config.load import load_lab
    from vbench.config.types import format_duration, parse_duration
    from vbench.errors import ConfigError

    if bool(run_id) == orphans:
        raise ConfigError("give either RUN_ID or --orphans")
    lab = load_lab(lab_file).model
    store, rdir = open_store(store_url, results_dir)
    try:
        if run_id:
            full_id, run_dir = _run_dir(store, rdir, run_id)
            # Lab set-ups first (they need no vCenter), then the guests' processes and
            # scratch directories while their VMs still exist, then vSphere.
            hooks_failed, undone = _undo_hooks(lab, run_dir)
            guests_failed, killed = _clean_guests(lab, full_id, run_dir)
            report = cleanup_run(lab, full_id, run_dir, include_kept)
            _print_report(report)
            click.echo(f"run {full_id}: {report.summary()}")
            status_line, settled = _settle_status(store, full_id, run_dir)
            click.echo(status_line)
            failed = bool(report.errors or hooks_failed or guests_failed)
            if not (failed or undone or killed or report.destroyed or settled):
                click.echo(f"run {full_id}: nothing left to clean up")
            ctx.exit(3 if failed else 0)
        try:
            age = parse_duration(older_than)
        except Exception:
            raise ConfigError(f"--older-than {older_than!r}: not a duration (e.g. 24h)") from None
        found = _orphans(lab, store, rdir, age, include_kept)
    finally:
        store.close()
    for o in found:
        click.echo(
            f"{o.vcenter}  {o.name}  run {o.run_id}  {o.power or '-'}"
            + ("  (kept)" if o.kept else "")
        )
    if not found:
        click.echo(f"no orphans (marked VMs of inactive runs older than {format_duration(age)})")
        return
    if not yes:
        click.echo(f"{len(found)} orphaned VMs; add --yes to remove them")
        return
    errors = remove_orphans(lab, found)
    for e in errors:
        click.echo(f"error: {e}", err=True)
    click.echo(f"removed {len(found) - len(errors)} of {len(found)} orphaned VMs")
    ctx.exit(3 if errors else 0)


COMMANDS = [cleanup]
