"""lab check (preflight) and cleanup (what a killed run left, orphans) for the vSphere side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vbench.cli.options import open_store, store_options

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


# --- vbench lab check -------------------------------------------------------------------


def run_lab_check(lab_file: Path, scenario_file: Path | None, sets: tuple[str, ...]) -> int:
    """Every check, printed as a table; returns the exit code (0, or 3 on a failure)."""
    return show_checks(collect_checks(lab_file, scenario_file, sets), f"lab check: {lab_file}")


def show_checks(checks: list[Any], title: str, console: Any = None) -> int:
    """The checks as a table on a terminal (else one line each), then the counts; the
    exit code (0, or 3 on a failure)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    if console.is_terminal:
        table = Table(title=title, title_justify="left")
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
    from vbench.engine.vsphere_run import default_vcenter, placement_checks, workload_checks
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
            vs, inventories = placement_checks(lab, sessions, plan.scenario, placements,
                                               all_vcenters=True)
            vs += workload_checks(
                lab, sessions, plan.driver,
                [(p.profiles, p.workload.lab_objects(p.workload.params)) for p in plan.points],
                default_vcenter(lab, vm_groups(plan.scenario, lab)), inventories,
            )
            vs += _hygiene_checks(lab, sessions, plan, inventories)
        else:
            vs, _ = vsphere_checks(lab, sessions)
        checks.extend(vs)
        checks.extend(check_profiles(lab, sessions))
    checks.extend(_ssh_checks(lab, plan, lab_loaded.source))
    return checks + _warning_checks(warnings)


def _hygiene_checks(lab: Any, sessions: Any, plan: Any, inventories: dict[str, Any]
                    ) -> list[Any]:
    """The lab hygiene findings of what the scenario uses (docs/lab-hygiene.md): a
    ``fail`` fails the check, a ``warn`` is a warning."""
    from vbench.engine.lab_tune import check_findings, scope_of
    from vbench.errors import LabError
    from vbench.vsphere.checks import Check

    try:
        found = check_findings(lab, sessions, scope_of(plan, lab), inventories)
    except LabError as exc:  # the vCenter's own check already says it does not answer
        return [Check("lab hygiene", "read", False, str(exc))]
    return hygiene_rows(found)


def hygiene_rows(found: list[Any]) -> list[Any]:
    """The rows of hygiene findings: each target named with its vCenter ("host esx1
    (vcenter vc1)"), as the run's warnings name it — in a lab of several vCenters a host
    or cluster of the same name may be in each (every vcsim has a DC0_C0_H0)."""
    from vbench.vsphere.checks import Check

    return [Check(f.where, f"hygiene {f.check}", f.level != "fail", f.detail,
                  level="warning" if f.level == "warn" else "info") for f in found]


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
        from vbench.engine.session import tools_by_guest

        vm_names = {n for g in vm_groups(plan.scenario, lab) for n in plan.groups.get(g, ())}
        needs = {k: v for k, v in tools_by_guest(plan).items() if k not in vm_names}
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
    from vbench.engine.settle import find_orphans, settle_run
    from vbench.errors import ConfigError

    if bool(run_id) == orphans:
        raise ConfigError("give either RUN_ID or --orphans")
    lab = load_lab(lab_file).model
    store, rdir = open_store(store_url, results_dir)
    try:
        if run_id:
            settled = settle_run(lab, store, rdir, run_id, include_kept,
                                 lambda line, err: click.echo(line, err=err))
            ctx.exit(settled.exit_code)
        try:
            age = parse_duration(older_than)
        except Exception:
            raise ConfigError(f"--older-than {older_than!r}: not a duration (e.g. 24h)") from None
        found = find_orphans(lab, store, rdir, age, include_kept)
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
    from vbench.engine.settle import remove_orphans

    errors = remove_orphans(lab, found)
    for e in errors:
        click.echo(f"error: {e}", err=True)
    click.echo(f"removed {len(found) - len(errors)} of {len(found)} orphaned VMs")
    ctx.exit(3 if errors else 0)


COMMANDS = [cleanup]
