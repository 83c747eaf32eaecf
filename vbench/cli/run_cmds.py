"""validate, plan, run, schema, drivers."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vbench.cli.failure_json import one_json_document
from vbench.cli.options import counted, json_option, open_store, set_option, span, store_options
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import json

    # The engine pulls in pandas and paramiko: import it when a command runs, so that
    # `vbench --help`, `ls` and `show` start quickly.
    from vbench.engine.finish import RunResult
    from vbench.engine.plan import Plan
    from vbench.engine.vm_scaling import PlannedVms
    from vbench.results.store import Store
else:  # for --json and schema only: validate prints no JSON (≈ 1 ms of its start-up)
    json = lazy_module("json")

FILE = click.Path(exists=False, dir_okay=False, path_type=Path)


def _load_plan(scenario: Path, lab: Path | None, sets: tuple[str, ...]) -> Plan:
    # Loading imports the config and engine layers and makes their models, classes and
    # the plan: objects that live to the end of the command. The cyclic collector would
    # walk them again and again while they are made, finding nothing (≈ 5 % of
    # `validate`'s CPU time), so it is paused for the load, and what the load made is put
    # straight in the oldest generation (freeze, then unfreeze: nothing stays frozen).
    collecting = gc.isenabled()
    gc.disable()
    try:
        from vbench.config.load import load_lab, load_scenario
        from vbench.engine.estimate import history_estimate
        from vbench.engine.plan import build_plan

        loaded = load_scenario(scenario, list(sets))
        lab_loaded = load_lab(lab) if lab else None
        # The estimate learns prepare, teardown and clean-up from stored runs, if any.
        return history_estimate(build_plan(loaded, lab_loaded),
                                lab_loaded.model.name if lab_loaded else None)
    finally:
        gc.freeze()
        gc.unfreeze()
        if collecting:
            gc.enable()


@click.command()
@click.argument("scenario", type=FILE)
@click.option("--lab", type=FILE, help="Also check the scenario against this lab file.")
@set_option
def validate(scenario: Path, lab: Path | None, sets: tuple[str, ...]) -> None:
    """Check a scenario (and lab) without touching anything. Exit 2 on a mistake."""
    plan = _load_plan(scenario, lab, sets)
    if lab:
        from vbench.engine.lab_files import check_key_files

        check_key_files(plan, lab)
    for f in plan.findings:
        click.echo(f"{f.at or scenario}: {f.where}: {f.level}: {f.message}", err=True)
    size = f"{_size_text(plan)}, {_estimate_text(plan)}"
    on_lab = f"; lab {lab}: ok" if lab else ""
    click.echo(f"{scenario}: ok — {_search_text(plan) or size}{on_lab}")


def _size_text(p: Plan) -> str:
    """``2 points × 3 trials = 6 trials`` (``1 point × 1 trial = 1 trial``); a find-max
    search: the levels and trials it may run, ``6–10 levels, 8–12 trials``."""
    from vbench.engine.estimate import search_estimate

    est = search_estimate(p)
    if est is not None:
        return f"{span(est.outlook.levels)} levels, {span(est.outlook.trials)} trials"
    if p.repeat_max is not None:  # repeat: {min, max, target}
        lo, hi = p.trials_span
        until = ("rounds until steady state" if p.scenario.steady_state is not None
                 else "until the confidence target")
        return (f"{counted(len(p.points), 'point')} × {span((p.repeat, p.repeat_max))} trials "
                f"({until}) = {span((lo, hi))} trials")
    return (f"{counted(len(p.points), 'point')} × {counted(p.repeat, 'trial')} = "
            f"{counted(p.n_trials, 'trial')}")


def _estimate_text(p: Plan) -> str:
    """``estimated 3 min``; a find-max search: the range of its possible paths."""
    from vbench.config.types import format_duration
    from vbench.engine.estimate import search_estimate

    est = search_estimate(p)
    if est is None and p.repeat_max is not None:
        return f"estimated {span(p.seconds_span, format_duration)}"
    if est is None:
        return f"estimated {format_duration(p.estimated_seconds)}"
    # Under an adaptive repeat the most already counts every level at its max trials.
    noisy = "" if p.repeat_max is not None else " (if no level is noisy)"
    return f"estimated {span(est.seconds, format_duration)}{noisy}"


def _search_text(p: Plan) -> str:
    """A find-max plan in one line: its levels are chosen while it runs."""
    s = p.scenario.search
    if s is None:
        return ""
    from vbench.config.search import bound_text

    n = len(p.points)
    span = f"{bound_text(s, s.min)}..{bound_text(s, s.max)}"
    return (
        f"find-max over {s.factor} in {span}, {counted(n, 'search', 'searches')}"
        f" (levels chosen from the results as it runs), {_per_level(p)}: "
        f"{_size_text(p)}, {_estimate_text(p)}"
    )


def _per_level(p: Plan) -> str:
    """The trials a find-max level takes: ``search.trials`` (or the repeat), and under an
    adaptive repeat one more at a time while its verdict is uncertain, up to max."""
    assert p.scenario.search is not None
    first = p.scenario.search.trials or p.repeat
    if p.repeat_max is not None and p.repeat_max > first:  # decided by the interval
        return (f"{first}–{p.repeat_max} trials per level (more while its verdict is "
                "uncertain)")
    return f"{counted(first, 'trial')} per level"


def _point_trials(p: Plan) -> str:
    """The trials of one point of the plan: a find-max level's, a fixed count, or an
    adaptive repeat's range and what ends it."""
    if p.scenario.search is not None:
        return _per_level(p)
    if p.scenario.steady_state is not None:
        return f"trials 1..{p.repeat}, then rounds up to {p.repeat_max} until steady state"
    if p.repeat_max is not None:
        return (f"trials 1..{p.repeat}, then up to {p.repeat_max} until the confidence "
                "target is met")
    return f"trials 1..{p.repeat}"


@click.command()
@click.argument("scenario", type=FILE)
@click.option("--lab", type=FILE, help="Bind groups to this lab's nodes.")
@set_option
@json_option
def plan(scenario: Path, lab: Path | None, sets: tuple[str, ...], as_json: bool) -> None:
    """Print the expansion: points × trials, phases, guests, commands, estimated duration."""
    p = _load_plan(scenario, lab, sets)
    vms = _planned_vms(p, lab)
    sources = _vm_sources(p, lab)
    if as_json:
        doc = p.to_json()
        if vms is not None:
            doc["vms"] = vms.to_json()
        if sources:
            doc["vm_sources"] = sources
        doc["lab_objects"] = [dataclasses.asdict(o) for o in _lab_objects(p)]
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(_plan_text(p, vms, sources))


def _lab_objects(p: Plan) -> list[Any]:
    """The vCenter objects the driver's parameters name over every point, once each."""
    seen: dict[Any, None] = {}
    for pt in p.points:
        seen.update(dict.fromkeys(pt.workload.lab_objects(pt.workload.params)))
    return list(seen)


def _objects_text(p: Plan) -> list[str]:
    """One line naming them: `lab check --scenario` and the run look each one up."""
    objects = _lab_objects(p)
    if not objects:
        return []
    named = ", ".join(f"{o.kind.replace('_', ' ')} {o.name}"
                      + (f" (vCenter {o.vcenter})" if o.vcenter else "") for o in objects)
    return [f"vCenter objects named: {named} (looked up by `vbench lab check --scenario` "
            "and by the run before anything is created)"]


def _vm_sources(p: Plan, lab: Path | None) -> dict[str, str]:
    """Where each `vm:` group's VMs come from (a template, a library item, existing
    VMs); with a lab, only the groups its vCenters provide (the others bind to nodes)."""
    from vbench.config.load import load_lab
    from vbench.config.resolve import vm_groups

    specs = {g: t.vm for g, t in p.scenario.topology.items() if t.vm is not None}
    if lab is None:
        return {g: f"{s.source_text} (in a lab with a vCenter)" for g, s in specs.items()}
    provided = vm_groups(p.scenario, load_lab(lab).model)
    return {g: f"{s.source_text} (vCenter {provided[g]})" for g, s in specs.items()
            if g in provided}  # fmt: skip


def _planned_vms(p: Plan, lab: Path | None) -> PlannedVms | None:
    """The clones and removals of a plan's `vm:` groups, point by point (with a lab)."""
    from vbench.config.load import load_lab
    from vbench.engine.vm_scaling import plan_units, planned_vms

    if lab is None:
        return None
    return planned_vms(p, plan_units(p, load_lab(lab).model))


def _warmup_text(pt: Any) -> str:
    """A point's warm-up: its duration, or ``auto (≤ 5m)`` for ``phases.warmup: auto``."""
    from vbench.config.types import format_duration

    if getattr(pt, "auto_warmup", False):
        return f"auto (≤ {format_duration(pt.warmup)}, ended by the detector)"
    return format_duration(pt.warmup)


def _plan_text(
    p: Plan, vms: PlannedVms | None = None, vm_sources: dict[str, str] | None = None
) -> str:
    import shlex

    from vbench.config.types import format_duration
    from vbench.engine.hooks import planned_hooks
    from vbench.engine.vm_scaling import plan_text

    vm_head, vm_points = plan_text(vms) if vms is not None else ([], {})

    lines = [
        f"scenario {p.scenario.name}: driver {p.driver}, {_size_text(p)}, {_estimate_text(p)}",
        "groups: " + "; ".join(f"{g} = {', '.join(n)}" for g, n in p.groups.items()),
        *(f"vm {g}: {text}" for g, text in (vm_sources or {}).items()),
        *_objects_text(p),
    ]
    if p.estimate_basis:
        lines.insert(1, f"estimate: {p.estimate_basis}")
    if not p.bound_to_lab:
        lines.append("(no --lab: guests shown as group[i])")
    if p.scenario.search is not None:
        lines.append(_search_text(p))
    lines.extend(vm_head)
    for f in p.findings:
        lines.append(f"{f.level}: {f.where}: {f.message}")
    for c in p.scenario.collectors:
        on = ", ".join(c.targets) or "all targets"
        need = " (required)" if c.required else ""
        lines.append(
            f"collector {c.name or c.kind}: {c.kind} every {format_duration(c.interval)} on "
            f"{on}, before warm-up to after cool-down{need}"
        )
    for pt in p.points:
        label = ", ".join(f"{k}={v}" for k, v in pt.labels.items()) or "(single point)"
        if p.scenario.label:  # the template's name first, the levels it stands for after
            label = f"{pt.title} ({label})"
        lines.append("")
        lines.append(f"point {pt.index + 1}: {label}")
        lines.append(
            f"  phases: warm-up {_warmup_text(pt)}, steady {format_duration(pt.steady)}"
            f", cool-down {format_duration(pt.cooldown)}; trial ≈ "
            f"{format_duration(pt.trial_seconds)}; {_point_trials(p)}"
        )
        if pt.profiles:
            lines.append(f"  lab profile: {', '.join(pt.profiles)}")
        for h in planned_hooks(p.scenario, pt.labels):
            lines.append(f"  hook {h.factor}={h.level} on node {h.node}: before: "
                         f"{shlex.join(h.run)}; after: {shlex.join(h.undo)}")
        for role, names in pt.guests.items():
            lines.append(f"  {role}: {', '.join(names)}")
        if pt.index in vm_points:
            lines.append(vm_points[pt.index])
        for c in pt.commands:
            bg = " (background)" if c.background else ""
            files = f" [pushes {', '.join(c.files)}]" if c.files else ""
            lines.append(f"  {c.step:9s} on {c.role}: {shlex.join(c.argv)}{bg}{files}")
    return "\n".join(lines)


@click.command()
@click.argument("scenario", type=FILE, required=False)
@click.option("--lab", type=FILE, required=True, help="The lab to run in.")
@click.option(
    "--resume",
    metavar="RUN",
    default=None,
    help="Continue an interrupted run: its finished trials are kept, the rest (or the rest "
    "of its find-max search) runs. SCENARIO defaults to the one the run stored.",
)
@set_option
@click.option("--tag", "tags", multiple=True, help="Tag the run (repeatable), e.g. nightly.")
@store_options
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed trial.")
@click.option(
    "--wait", is_flag=True,
    help="When another run holds the lab's lease, queue behind it (saying who holds it "
    "every 10 s) instead of exiting 3.",
)
@click.option(
    "--wait-max", metavar="DURATION", default=None,
    help="With --wait: give up (exit 3, naming the holder) after queueing this long, "
    "e.g. 2h.",
)
@click.option("--no-report", is_flag=True, help="Do not write report.html.")
@click.option(
    "--fail-on-qos", is_flag=True, help="Exit 1 when a QoS criterion of the scenario fails."
)
@click.option(
    "--check-regression",
    "regression_spec",
    is_flag=False,
    flag_value="",  # given alone: the scenario's regression.baseline (default auto)
    default=None,
    metavar="[BASELINE]",
    help="Compare with a baseline and exit 1 on a significant regression: auto, last, "
    "last:K, tag:NAME or a run id (alone: regression.baseline of the scenario, default "
    "auto). Put it after SCENARIO.",
)
@click.option(
    "--aa", "aa_runs", type=int, is_flag=False, flag_value=0, default=None,
    metavar="[N]",
    help="An A/A test: N runs back to back (alone: the scenario's aa.runs, default 5), "
    "tagged aa, whose run-to-run noise per metric is stored with the lab fingerprint as "
    "the floor of the minimum effect of regression checks and change points.",
)
@json_option
@click.pass_context
@one_json_document
def run(
    ctx: click.Context,
    scenario: Path | None,
    lab: Path,
    resume: str | None,
    sets: tuple[str, ...],
    tags: tuple[str, ...],
    store_url: str | None,
    results_dir: Path | None,
    fail_fast: bool,
    wait: bool,
    wait_max: str | None,
    no_report: bool,
    fail_on_qos: bool,
    regression_spec: str | None,
    aa_runs: int | None,
    as_json: bool,
) -> None:
    """Execute a scenario in a lab, store every figure and write the report."""
    import sys

    from vbench.cli.options import output_width
    from vbench.cli.progress import Kept, RichProgress
    from vbench.engine.finish import FinishOptions, finish_run
    from vbench.engine.session import RunRequest, RunSession, execute

    wait_seconds = _wait_max(wait, wait_max)
    store, rdir = open_store(store_url, results_dir)
    try:
        scenario, rdir, resume = _resumed(store, scenario, rdir, resume)
        request = RunRequest(
            scenario, lab, tuple(sets), tuple(tags), store_url, results_dir, fail_fast,
            tuple(sys.argv), resume=resume, wait=wait, wait_max=wait_seconds,
        )
        session = RunSession.load(request, store)
        # The driver's warnings (allow_exec on, a run configuration missing …), as
        # validate and plan print them: a run from cron shows them in its log.
        for f in session.plan.findings:
            click.echo(f"{f.at or scenario}: {f.where}: {f.level}: {f.message}",
                       err=True)
        options = FinishOptions(lab, regression_spec, fail_on_qos, write_report=not no_report,
                                as_json=as_json, width=output_width())
        from vbench.engine.aa import aa_count

        count = aa_count(aa_runs, session.plan.scenario.aa)
        if count is not None:
            ctx.exit(_run_aa(request, store, rdir, count, options, as_json))
        progress = RichProgress(kept=Kept.of(store, resume) if resume else None)
        outcome, rundir = execute(session, store, rdir, progress=progress)
        result = finish_run(store, outcome, rundir, options)
    finally:
        store.close()
    _print_result(result, progress.console, as_json)
    ctx.exit(result.exit_code)


def _run_aa(request: Any, store: Store, rdir: Path, count: int, options: Any,
            as_json: bool) -> int:
    """`vbench run --aa`: the runs, each printed as it ends, then the noise measured."""
    from vbench.cli.progress import RichProgress
    from vbench.engine.aa import run_aa
    from vbench.report.changesfmt import noise_lines

    if request.resume:
        raise click.UsageError("--aa starts new runs: it cannot --resume one")
    progress = RichProgress()
    found = run_aa(request, store, rdir, count, options, lambda: progress,
                   on_run=lambda r: click.echo(r.last_line, err=True) if as_json
                   else _print_result(r, progress.console, False))
    say = (lambda text: click.echo(text, err=True)) if as_json else click.echo
    for line in noise_lines(found.runs, found.series, found.stored, found.lab_fingerprint):
        say(line)
    if as_json:
        click.echo(json.dumps({
            "runs": [r.run_id for r in found.runs], "lab_fingerprint": found.lab_fingerprint,
            "noise": [{"metric": s.metric, "unit": s.unit, "labels": dict(s.labels),
                       "cv": s.cv, "means": list(s.means)} for s in found.series],
            "stored": found.stored, "exit_code": found.exit_code}, indent=2))
    return found.exit_code


def _wait_max(wait: bool, text: str | None) -> float | None:
    """--wait-max in seconds (only with --wait)."""
    if text is None:
        return None
    if not wait:
        raise click.UsageError("--wait-max goes with --wait")
    from pydantic_core import PydanticCustomError

    from vbench.config.types import parse_duration

    try:
        return parse_duration(text)
    except (PydanticCustomError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="--wait-max") from None


def _print_result(result: RunResult, console: Any, as_json: bool) -> None:
    """What a finished run prints: the verdict and summary table (on the progress
    console), the QoS and regression verdicts, the report's path and how the run ended; with
    --json, stdout carries the JSON document only."""
    if result.kept:
        console.print(result.kept, highlight=False, markup=False,
                      soft_wrap=True)  # paths are copied: no wrap
    if result.show_table:
        from vbench.report.build import print_summary

        print_summary(result.data, console)
    say = (lambda text: click.echo(text, err=True)) if as_json else click.echo
    if result.verdicts is not None and result.verdicts.text:
        say(result.verdicts.text.rstrip("\n"))
    if result.report is not None:
        say(f"report: {result.report}")
    for o in result.published:  # a target that failed does not change the exit code
        say(o.line(result.run_dir, result.run_id))
    say(result.last_line)
    if as_json:
        click.echo(json.dumps(result.doc, indent=2, default=str))


def _resumed(
    store: Store, scenario: Path | None, rdir: Path, resume: str | None
) -> tuple[Path, Path, str | None]:
    """The scenario file, results folder and full run id of ``--resume RUN`` (the run's
    own stored scenario and folder unless told otherwise)."""
    if resume is None:
        if scenario is None:
            raise click.UsageError("give a SCENARIO file (or --resume RUN)")
        return scenario, rdir, None
    run = store.get_run(resume)
    if run.run_dir:
        rdir = Path(run.run_dir).parent
        scenario = scenario or Path(run.run_dir) / "scenario.yaml"
    if scenario is None:
        raise click.UsageError(f"run {run.run_id} has no run directory: give its SCENARIO")
    return scenario, rdir, run.run_id


@click.command()
@click.option("--lab", "for_lab", is_flag=True, help="The lab file's schema instead.")
def schema(for_lab: bool) -> None:
    """Print the JSON Schema of scenario files (or lab files with --lab)."""
    from vbench.config.schema import json_schema

    click.echo(json.dumps(json_schema("lab" if for_lab else "scenario"), indent=2))


@click.command()
@json_option
def drivers(as_json: bool) -> None:
    """List workload drivers, their roles and parameters."""
    from vbench.workloads.base import driver_names, get_driver

    out = []
    for name in driver_names():
        d = get_driver(name)
        out.append(
            {
                "name": name,
                "roles": list(d.roles),
                "tools": {r: list(t) for r, t in d.required_tools.items()},
                "params": sorted(d.Params.model_fields),
            }
        )
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    for d in out:
        click.echo(f"{d['name']}: roles {', '.join(d['roles'])}; params {', '.join(d['params'])}")


COMMANDS = [validate, plan, run, schema, drivers]
