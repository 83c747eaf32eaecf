"""One `vbench run`: load, plan, preflight, execute, store, report — and always clean up."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vbench.collectors.runtime import CollectorRuntime, RunEnv
from vbench.config.lab import Lab
from vbench.config.load import Loaded, load_lab, load_scenario
from vbench.config.resolve import vm_groups
from vbench.config.scenario import Scenario
from vbench.engine.environment import all_guest_facts, controller_facts
from vbench.engine.hooks import check_nodes, hooks_for, hooks_plan, undo_pending
from vbench.engine.lifecycle import RunSignals
from vbench.engine.metric_check import stored_catalogue
from vbench.engine.plan import Plan, build_plan
from vbench.engine.runner import Engine, ProgressSink, RunOutcome
from vbench.engine.schedule import SearchContext, make_schedule, prepare_resume
from vbench.engine.vm_scaling import vm_hooks
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import EXIT_INTERRUPTED, GuestError, Interrupted, LabError, VbenchError
from vbench.guest.labspec import guest_spec
from vbench.guest.ledger import GuestLedger
from vbench.guest.ssh import GuestPool
from vbench.results.identity import lab_fingerprint, scenario_hash
from vbench.results.records import RunInfo
from vbench.results.rundir import RunDir, new_run_id, redact
from vbench.results.store import Store
from vbench.vsphere.journal import pending
from vbench.workloads.base import get_driver


@dataclass(frozen=True)
class RunRequest:
    scenario: Path
    lab: Path
    sets: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    store_url: str | None = None
    results_dir: Path | None = None
    fail_fast: bool = False
    argv: tuple[str, ...] = ()
    resume: str | None = None  # a stored run to continue (its finished trials are kept)


@dataclass
class RunSession:
    """The loaded inputs of a run, ready to execute."""

    request: RunRequest
    scenario: Loaded[Scenario]
    lab: Loaded[Lab]
    plan: Plan

    @classmethod
    def load(cls, request: RunRequest) -> RunSession:
        scenario = load_scenario(request.scenario, list(request.sets))
        lab = load_lab(request.lab)
        plan = build_plan(scenario, lab)
        return cls(request, scenario, lab, plan)


def base_scenario_hash(session: RunSession, resolved: dict[str, Any]) -> str | None:
    """The hash of the scenario file as resolved without the run's --set overrides
    (None when the file alone does not validate, e.g. an override supplies a field)."""
    if not session.request.sets:
        return scenario_hash(resolved)
    try:
        base = load_scenario(session.request.scenario)
    except VbenchError:
        return None
    return scenario_hash(redact(base.model.model_dump(mode="json", exclude_none=True)))


def preflight(plan: Plan, pool: GuestPool, names: list[str] | None = None) -> None:
    """Reach every guest (or ``names``) and find the tools each role needs."""
    names = plan.node_names() if names is None else names
    pool.connect_all(names)
    needs = _tools_by_guest(plan)

    def check(guest: Any) -> None:
        for tool in sorted(needs.get(guest.name, ())):
            if guest.which(tool) is None:
                raise GuestError(
                    guest.name, f"{tool} not found in PATH (install the {tool} package)"
                )

    pool.fan_out(names, check)


def execute(
    session: RunSession,
    store: Store,
    results_dir: Path,
    progress: ProgressSink | None = None,
    cancel: threading.Event | None = None,
) -> tuple[RunOutcome, RunDir]:
    """Run the session. The run is stored before anything is created (status
    ``provisioning``), is ``running`` once its guests are ready, and ends ``ok``,
    ``failed`` or ``interrupted`` after the final clean-up, whatever ends it (see
    :mod:`vbench.engine.lifecycle`)."""
    req, plan = session.request, session.plan
    lab = session.lab.model
    cancel = cancel or threading.Event()
    vsphere = _vsphere_run(session, cancel, progress)
    vm_guests = {n for g in vsphere.group_vcenters for n in plan.groups.get(g, ())}
    static = [n for n in plan.node_names() if n not in vm_guests]
    specs = [guest_spec(lab, n) for n in static]
    pool = GuestPool(specs, max_parallel=plan.scenario.settings.max_parallel)
    rundir: RunDir | None = None
    signals: RunSignals | None = None
    status = "failed"  # what the store keeps unless the run gets further
    outcome: RunOutcome | None = None
    # The resolved scenario (defaults filled, durations in seconds, --set applied).
    scenario_doc = redact(session.scenario.model.model_dump(mode="json", exclude_none=True))
    try:
        # A resumed run's scenario is checked before the lab is touched and before its
        # run directory is written (a refused resume leaves the stored run as it was).
        done = prepare_resume(store, req.resume, scenario_doc) if req.resume else set()
        # Every check first, before anything is created: static guests, then vCenter.
        preflight(plan, pool, static)
        check_nodes(plan.scenario, lab)  # a lab hook's node, before anything is created
        vsphere.preflight()
        run_id = req.resume or new_run_id()
        rundir = RunDir(results_dir, run_id)
        signals = RunSignals(cancel, progress.notice if progress is not None else None,
                             f"vbench cleanup {run_id} --lab {req.lab}")
        signals.install()
        rundir.write_controller()
        lab_doc = redact(lab.redacted())
        rundir.write_yaml("scenario.yaml", scenario_doc)
        rundir.write_yaml("lab.yaml", lab_doc)
        _store_run(session, store, rundir, scenario_doc, lab_doc)
        # From here every guest reached and every process started is in the run
        # directory: `vbench cleanup` finds them after a kill -9.
        ledger = GuestLedger.in_run_dir(rundir.path)
        pool.set_recorder(ledger)
        testbed = None
        if vsphere.active:
            vm_specs = vsphere.provision(run_id, rundir.path)
            _release(pool)
            pool = GuestPool([*specs, *vm_specs.values()], max_parallel=pool.max_parallel,
                             recorder=ledger)
            preflight(plan, pool, list(vm_specs))
            testbed = vsphere.testbed()
            rundir.write_json("testbed.json", testbed)
            if cancel.is_set():
                raise Interrupted("interrupted before the first trial")
        # A random order draws its seed here (a resumed run keeps the one it drew, so the
        # recorded order is the one its trials ran in); a find-max search reads the run's
        # figures.
        seed = _stored_seed(rundir) if req.resume else None
        schedule = make_schedule(plan, done, seed=seed, search=SearchContext(
            session.scenario, session.lab, store, run_id, resume=bool(req.resume)))
        rundir.write_json("plan.json", {**plan.to_json(), "schedule": schedule.describe(),
                                        "hooks": hooks_plan(plan.scenario, plan.points)})
        env = {"controller": controller_facts(list(req.argv) or None)}
        # The guests there before the first trial (a VM cloned for a later point is a
        # clone of the same source as its group's first ones).
        tools = {n: t for n, t in _tools_by_guest(plan).items() if n in pool.names}
        env["guests"] = all_guest_facts(pool, tools)
        rundir.write_json("environment.json", env)
        if req.resume:
            rundir.log("run_resumed", run_id=run_id, kept=len(done))
            _undo_earlier_hooks(lab, rundir)
        store.set_running(run_id, env)
        if testbed:
            store.set_testbed(run_id, testbed)
        store.add_points(run_id, [(p.index, p.labels) for p in plan.points])
        collectors = _collectors(session, pool, rundir, run_id)
        engine = Engine(
            plan,
            pool,
            store,
            rundir,
            run_id,
            fail_fast=req.fail_fast,
            progress=progress,
            cancel=cancel,
            collectors=collectors,
            schedule=schedule,
            resources=lambda point: vsphere.resources(point.profiles),
            # The point's VMs first (clones it adds, VMs it drops), then its lab hooks.
            point_hooks=[*vm_hooks(
                vsphere, pool, check_guests=lambda names: preflight(plan, pool, names),
                testbed=lambda tb: _write_testbed(store, run_id, rundir, tb),
                log=rundir.log, notice=progress.notice if progress else None,
            ), *hooks_for(plan.scenario, lab, rundir.path, rundir.log)],
        )
        try:
            outcome = engine.run()  # a signal sets cancel: the engine stops and cleans up
        finally:
            if collectors is not None:
                collectors.close()
        status = outcome.status
    except BaseException as exc:
        interrupted = isinstance(exc, Interrupted | KeyboardInterrupt) or cancel.is_set()
        status = "interrupted" if interrupted else "failed"
        raise
    finally:
        failing = sys.exc_info()[1] is not None
        try:
            if signals is not None:
                signals.cleaning(lambda: _left_in_vsphere(vsphere))
            _release(pool)
            _vsphere_cleanup(vsphere, rundir, progress, raise_errors=not failing)
        except BaseException:
            status = "interrupted" if status == "interrupted" else "failed"
            raise
        finally:
            if signals is not None:
                try:
                    if signals.interrupted:
                        status = "interrupted"
                    _end_run(store, rundir, status, outcome)
                finally:
                    signals.restore()
    assert outcome is not None and rundir is not None
    if status == "interrupted" and outcome.status != "interrupted":
        # Ctrl-C during the final clean-up: it finished, the run counts as interrupted.
        outcome.status, outcome.exit_code = status, EXIT_INTERRUPTED
    return outcome, rundir


def _store_run(
    session: RunSession,
    store: Store,
    rundir: RunDir,
    scenario_doc: dict[str, Any],
    lab_doc: dict[str, Any],
) -> None:
    """The run in the store from its first moment (``provisioning``): a run killed while
    it sets up is still found by `show` and settled by `vbench cleanup`."""
    req, plan = session.request, session.plan
    run_id = rundir.run_id
    if req.resume:
        store.set_status(run_id, "provisioning")
    else:
        store.create_run(RunInfo(
            run_id=run_id,
            scenario_name=plan.scenario.name,
            started=time.time(),
            status="provisioning",
            tags=tuple(req.tags),
            scenario=scenario_doc,
            lab=lab_doc,
            lab_fingerprint=lab_fingerprint(lab_doc),
            scenario_hash=scenario_hash(scenario_doc),
            base_scenario_hash=base_scenario_hash(session, scenario_doc),
            overrides=tuple(req.sets),
            run_dir=str(rundir.path),
            headline=headline_of(plan),
            metrics=stored_catalogue(plan.scenario, get_driver(plan.driver),
                                     (p.workload.params for p in plan.points)),
        ))
    rundir.log("run_start", run_id=run_id, scenario=plan.scenario.name, trials=plan.n_trials)


def _end_run(store: Store, rundir: RunDir | None, status: str, outcome: RunOutcome | None) -> None:
    """The run's final status, its figures beside its raw outputs, and the log's end."""
    if rundir is None:
        return
    failed = len(outcome.failed) if outcome is not None else 0
    try:
        store.finish_run(rundir.run_id, status, time.time())
    except VbenchError as exc:
        rundir.log("status_not_stored", level="error", status=status, error=str(exc))
        if sys.exc_info()[1] is None:
            raise
    else:
        _write_figures(store, rundir.run_id, rundir)
    finally:
        rundir.log("run_end", status=status, failed=failed)


def _left_in_vsphere(vsphere: VSphereRun) -> list[str]:
    """What the journal still has to remove (for the second Ctrl-C during clean-up)."""
    if vsphere.journal is None:
        return []
    return [f"{i.kind} {i.name}" for i in pending(vsphere.journal.read())]


def _collectors(
    session: RunSession, pool: GuestPool, rundir: RunDir, run_id: str
) -> CollectorRuntime | None:
    """The scenario's collectors (esxtop, guest sysstat, vCenter counters), if any."""
    scenario = session.plan.scenario
    if not scenario.collectors:
        return None
    env = RunEnv(session.lab.model, pool, run_id, scenario.settings.max_parallel)
    return CollectorRuntime(scenario.collectors, env, rundir)


def _vsphere_run(
    session: RunSession, cancel: threading.Event, progress: ProgressSink | None
) -> VSphereRun:
    plan, lab = session.plan, session.lab.model
    notice = progress.notice if progress is not None else None
    return VSphereRun(
        plan.scenario,
        lab,
        vm_groups(plan.scenario, lab),
        plan.groups,
        cancel=cancel,
        notice=notice,
        workload_profiles=[p.profiles for p in plan.points if p.workload.needs_vcenter],
        point_profiles=[p.profiles for p in plan.points],
        point_guests=[[n for names in p.nodes.values() for n in names] for p in plan.points],
    )


def _write_testbed(store: Store, run_id: str, rundir: RunDir, testbed: dict[str, Any]) -> None:
    """The testbed again, after a point changed the run's VMs (or recorded its own)."""
    rundir.write_json("testbed.json", testbed)
    store.set_testbed(run_id, testbed)


def _vsphere_cleanup(
    vsphere: VSphereRun,
    rundir: RunDir | None,
    progress: ProgressSink | None,
    raise_errors: bool = True,
) -> None:
    """Remove what the run created — after a normal end, a failure or an interrupt. Ctrl-C
    does not stop it (:class:`RunSignals`; `vbench cleanup RUN_ID` if it is killed)."""
    try:
        if vsphere.journal is None:
            return
        if rundir is not None:
            rundir.log("vsphere_cleanup_start", pending=len(_left_in_vsphere(vsphere)))
        report = vsphere.cleanup()
        if rundir is not None:
            rundir.log(
                "vsphere_cleanup",
                level="error" if report.errors or report.skipped else "info",
                destroyed=report.destroyed,
                kept=report.kept,
                missing=report.missing,
                skipped=report.skipped,
                errors=report.errors,
            )
        if progress is not None:
            progress.notice(f"vSphere cleanup: {report.summary()}")
        if report.errors and raise_errors:
            raise LabError(
                "vSphere cleanup",
                f"{'; '.join(report.errors)} (finish with `vbench cleanup {vsphere.run_id}`)",
            )
    finally:
        vsphere.close()


def _write_figures(store: Store, run_id: str, rundir: RunDir) -> None:
    """Keep the run's figures beside its raw outputs, so the run directory stands on its
    own: every sample (samples.csv) and the per-point statistics (summary.json)."""
    try:
        from vbench.report.exports import csv_frame

        # Labels and names a spreadsheet would run as formulas are neutralised.
        csv_frame(store.samples_frame(run_id)).to_csv(rundir.path / "samples.csv", index=False)
        from vbench.report.build import run_summary_json

        rundir.write_json("summary.json", run_summary_json(store, run_id))
    except Exception as exc:  # the store already holds them; a copy must not fail a run
        rundir.log("figures_not_written", level="warning", error=str(exc))


def _release(pool: GuestPool) -> None:
    """Stop whatever is still tracked and close every connection. A guest that died
    during the run has already failed its trials; it must not turn the end of the run
    into an error as well."""
    for guest in pool.guests():
        with contextlib.suppress(VbenchError):
            guest.kill_all()
    pool.close()


def _tools_by_guest(plan: Plan) -> dict[str, tuple[str, ...]]:
    # Every point: parameters (and so tools) may differ between points.
    out: dict[str, set[str]] = {}
    for point in plan.points:
        tools = point.workload.tools()
        for role, names in point.guests.items():
            for n in names:
                out.setdefault(n, set()).update(tools.get(role, ()))
    return {n: tuple(sorted(t)) for n, t in out.items()}


def _undo_earlier_hooks(lab: Lab, rundir: RunDir) -> None:
    """A resumed run starts from the lab as it was: lab hooks an earlier session of the
    run left applied (killed with kill -9) are undone first, as `vbench cleanup` would."""
    done, errors = undo_pending(lab, rundir.path)
    for what in done:
        rundir.log("hook_undone_on_resume", what=what)
    if errors:
        raise LabError("hooks", "an earlier session left a lab hook applied and its undo "
                       "failed: " + "; ".join(errors))


def _stored_seed(rundir: RunDir) -> int | None:
    """The random-order seed an earlier session of this run drew (None when none)."""
    try:
        doc = json.loads((rundir.path / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    seed = (doc.get("schedule") or {}).get("seed")
    return seed if isinstance(seed, int) else None


def headline_of(plan: Plan) -> tuple[str, ...]:
    """The metrics the run's report leads with: the scenario's ``report.headline``, else
    the driver's (stored with the run, so a report needs no driver code)."""
    wanted = plan.scenario.report.headline
    if wanted:
        return tuple(wanted)
    return tuple(plan.points[0].workload.headline_metrics) if plan.points else ()
