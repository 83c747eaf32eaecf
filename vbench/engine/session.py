"""One `vbench run`: load, plan, preflight, execute, store, report — and always clean up."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vbench.collectors.runtime import CollectorRuntime, RunEnv
from vbench.config.lab import Lab
from vbench.config.load import Loaded, load_lab, load_scenario
from vbench.config.resolve import vm_groups
from vbench.config.scenario import Scenario
from vbench.engine.disturbances import TrialWatch
from vbench.engine.environment import all_guest_facts, controller_facts
from vbench.engine.estimate import learn, with_estimate
from vbench.engine.hooks import check_nodes, hooks_for, hooks_plan, undo_pending
from vbench.engine.hygiene import RunHygiene, undo_tune
from vbench.engine.lifecycle import RunSignals
from vbench.engine.metric_check import stored_catalogue
from vbench.engine.plan import Plan, build_plan
from vbench.engine.runner import Engine, ProgressSink, RunOutcome
from vbench.engine.schedule import Schedule, SearchContext, make_schedule, prepare_resume
from vbench.engine.teardown import end_run, left_in_vsphere, release_guests, vsphere_cleanup
from vbench.engine.vm_scaling import vm_hooks
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import EXIT_INTERRUPTED, GuestError, Interrupted, LabError, VbenchError
from vbench.guest.labspec import guest_spec
from vbench.guest.ledger import GuestLedger
from vbench.guest.spec import GuestSpec
from vbench.guest.ssh import GuestPool
from vbench.results.identity import lab_fingerprint, scenario_hash
from vbench.results.lease import Holder, Lease, take_lease
from vbench.results.records import RunInfo
from vbench.results.rundir import RunDir, new_run_id, redact
from vbench.results.store import Store


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
    wait: bool = False  # the lab leased by another run: queue behind it (else LabBusy)
    wait_max: float | None = None  # … for at most this many seconds (None: as long as it takes)


@dataclass
class RunSession:
    """The loaded inputs of a run, ready to execute."""

    request: RunRequest
    scenario: Loaded[Scenario]
    lab: Loaded[Lab]
    plan: Plan

    @classmethod
    def load(cls, request: RunRequest, store: Store | None = None) -> RunSession:
        """Load and plan; with ``store``, the plan's estimate learns from its runs."""
        scenario = load_scenario(request.scenario, list(request.sets))
        lab = load_lab(request.lab)
        plan = build_plan(scenario, lab)
        if store is not None:
            plan = with_estimate(plan, learn(store, plan, lab.model.name))
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
    needs = tools_by_guest(plan)

    def check(guest: Any) -> None:
        for tool in sorted(needs.get(guest.name, ())):
            if guest.which(tool) is None:
                raise GuestError(
                    guest.name, f"{tool} not found in PATH (install the {tool} package)"
                )

    pool.fan_out(names, check)


@dataclass
class _Live:
    """What a run holds while it runs: what every step uses and what the final clean-up
    releases, whatever ends the run."""

    session: RunSession
    store: Store
    cancel: threading.Event
    progress: ProgressSink | None
    vsphere: VSphereRun
    static: list[str]  # the lab's own guests (not the run's VMs)
    specs: list[GuestSpec]  # theirs
    pool: GuestPool
    rundir: RunDir | None = None
    signals: RunSignals | None = None
    status: str = "failed"  # what the store keeps unless the run gets further
    outcome: RunOutcome | None = None
    hygiene: RunHygiene | None = None  # lab hygiene of an active vSphere run
    watch: TrialWatch | None = None  # what disturbs each trial (vCenter, esxtop)
    run_id: str = ""  # chosen when the lab's lease is taken

    @classmethod
    def open(cls, session: RunSession, store: Store, cancel: threading.Event,
             progress: ProgressSink | None) -> _Live:
        plan, lab = session.plan, session.lab.model
        vsphere = _vsphere_run(session, cancel, progress)
        vm_guests = {n for g in vsphere.group_vcenters for n in plan.groups.get(g, ())}
        static = [n for n in plan.node_names() if n not in vm_guests]
        specs = [guest_spec(lab, n) for n in static]
        pool = GuestPool(specs, max_parallel=plan.scenario.settings.max_parallel)
        live = cls(session, store, cancel, progress, vsphere, static, specs, pool)
        if vsphere.active:
            live.hygiene = RunHygiene(vsphere, live.notice)
        return live

    @property
    def notice(self) -> Callable[[str], None] | None:
        return self.progress.notice if self.progress is not None else None


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
    :mod:`vbench.engine.lifecycle`). When it returns, :func:`vbench.engine.finish.finish_run`
    reads the run back and writes its figures and report; when it raises, the figures
    are written here."""
    live = _Live.open(session, store, cancel or threading.Event(), progress)
    lease = _take_lease(live)  # before anything touches the lab; given back after clean-up
    try:
        _run_and_close(live, lease, results_dir)
    except VbenchError as exc:
        if live.status == "failed" and live.rundir is not None:  # stored: say it failed
            from vbench.engine.finish import publish_stopped

            publish_stopped(live.store, live.rundir, exc.exit_code, live.notice)
        raise
    outcome, rundir = live.outcome, live.rundir
    assert outcome is not None and rundir is not None
    if live.status == "interrupted" and outcome.status != "interrupted":
        # Ctrl-C during the final clean-up: it finished, the run counts as interrupted.
        outcome.status, outcome.exit_code = live.status, EXIT_INTERRUPTED
    return outcome, rundir


def _run_and_close(live: _Live, lease: Lease, results_dir: Path) -> None:
    """The run, then its final clean-up and the lease given back, whatever ends it."""
    try:
        _run(live, results_dir)
    except BaseException as exc:
        interrupted = isinstance(exc, Interrupted | KeyboardInterrupt) or live.cancel.is_set()
        live.status = "interrupted" if interrupted else "failed"
        raise
    finally:
        try:
            _close(live)
        finally:
            lease.release()


def _run(live: _Live, results_dir: Path) -> None:
    """Check, store, provision, then run every trial."""
    req, plan, store = live.session.request, live.session.plan, live.store
    # The resolved scenario (defaults filled, durations in seconds, --set applied).
    scenario_doc = redact(live.session.scenario.model.model_dump(mode="json",
                                                                 exclude_none=True))
    # A resumed run's scenario is checked before the lab is touched and before its
    # run directory is written (a refused resume leaves the stored run as it was).
    done = prepare_resume(store, req.resume, scenario_doc) if req.resume else set()
    # Every check first, before anything is created: static guests, then vCenter.
    preflight(plan, live.pool, live.static)
    check_nodes(plan.scenario, live.session.lab.model)  # a lab hook's node, first too
    live.vsphere.preflight()
    if live.hygiene is not None:
        live.hygiene.preflight(live.run_id)
    run_id = live.run_id
    live.rundir = rundir = RunDir(results_dir, run_id)
    live.signals = RunSignals(live.cancel, live.notice,
                              f"vbench cleanup {run_id} --lab {req.lab}")
    live.signals.install()
    _write_inputs(live, rundir, scenario_doc)
    if req.resume:  # before this session reaches a guest: the ledger is the earlier ones'
        _clean_earlier_guests(live, rundir)
    # From here every guest reached and every process started is in the run
    # directory: `vbench cleanup` finds them after a kill -9.
    ledger = GuestLedger.in_run_dir(rundir.path)
    live.pool.set_recorder(ledger)
    if req.resume:  # what an earlier session tuned, restored before this one tunes
        _undo_earlier_tune(live.session.lab.model, rundir)
    live.watch = _trial_watch(live, rundir, done if req.resume else None)
    testbed = _provision(live, rundir, ledger)
    schedule = _schedule(live, rundir, done)
    env = _environment(live, rundir)
    if live.hygiene is not None and testbed:  # the guests' clocks, measured just now
        live.hygiene.guest_clocks(env.get("guests") or {})
        testbed = live.vsphere.testbed(refresh=False)
        rundir.write_json("testbed.json", testbed)
    if req.resume:
        rundir.log("run_resumed", run_id=run_id, kept=len(done))
        _undo_earlier_hooks(live.session.lab.model, rundir)
    store.set_running(run_id, env)
    if testbed:
        store.set_testbed(run_id, testbed)
    store.add_points(run_id, [(p.index, p.labels) for p in plan.points])
    _run_trials(live, rundir, schedule)


def lab_fingerprint_of(lab: Lab) -> str:
    """The fingerprint a run of ``lab`` stores (and leases the lab by)."""
    return lab_fingerprint(redact(lab.redacted()))


def _take_lease(live: _Live) -> Lease:
    """The lab's lease (vbench/results/lease.py): one run at a time on a lab. Held by
    another run: refused, or with --wait queued behind it, saying so every 10 s."""
    req, lab = live.session.request, live.session.lab.model
    fingerprint = lab_fingerprint_of(lab)

    def describe() -> Holder:
        return Holder.me(lab.name, fingerprint, req.resume or new_run_id(),
                         live.session.plan.scenario.name)

    def waiting(holder: Holder | None, waited: float) -> None:
        who = holder.text() if holder else "another run"
        if live.notice is not None:
            live.notice(f"waiting for lab {lab.name}: in use by {who} (waited {waited:.0f} s)")

    lease = take_lease(live.store, describe, wait=req.wait, on_wait=waiting,
                       cancel=live.cancel, max_wait=req.wait_max)
    live.run_id = lease.holder.run_id
    if lease.waited and live.notice is not None:
        live.notice(f"lab {lab.name} is free after {lease.waited:.0f} s: starting")
    return lease


def _write_inputs(live: _Live, rundir: RunDir, scenario_doc: dict[str, Any]) -> None:
    """The controller's mark, the resolved scenario and lab, and the run in the store."""
    rundir.write_controller()
    lab_doc = redact(live.session.lab.model.redacted())
    rundir.write_yaml("scenario.yaml", scenario_doc)
    rundir.write_yaml("lab.yaml", lab_doc)
    _store_run(live.session, live.store, rundir, scenario_doc, lab_doc)


def _provision(live: _Live, rundir: RunDir, ledger: GuestLedger) -> dict[str, Any] | None:
    """The run's VMs, reached and checked like the static guests; their testbed."""
    if not live.vsphere.active:
        return None
    vm_specs = live.vsphere.provision(rundir.run_id, rundir.path)
    release_guests(live.pool)
    live.pool = GuestPool([*live.specs, *vm_specs.values()],
                          max_parallel=live.pool.max_parallel, recorder=ledger)
    preflight(live.session.plan, live.pool, list(vm_specs))
    if live.hygiene is not None:
        live.hygiene.after_provision(rundir.path, rundir.log)
    testbed = live.vsphere.testbed()
    rundir.write_json("testbed.json", testbed)
    if live.cancel.is_set():
        raise Interrupted("interrupted before the first trial")
    return testbed


def _schedule(live: _Live, rundir: RunDir, done: set[tuple[int, int]]) -> Schedule:
    """The order of points and trials, recorded in plan.json. A random order draws its
    seed here (a resumed run keeps the one it drew, so the recorded order is the one its
    trials ran in); a find-max search reads the run's figures."""
    session, plan = live.session, live.session.plan
    resume = bool(session.request.resume)
    seed = _stored_seed(rundir) if resume else None
    schedule = make_schedule(plan, done, seed=seed, search=SearchContext(
        session.scenario, session.lab, live.store, rundir.run_id, resume=resume))
    rundir.write_json("plan.json", {**plan.to_json(), "schedule": schedule.describe(),
                                    "hooks": hooks_plan(plan.scenario, plan.points)})
    return schedule


def _environment(live: _Live, rundir: RunDir) -> dict[str, Any]:
    """Controller and guest facts (environment.json). The guests there before the first
    trial: a VM cloned for a later point is a clone of its group's first ones' source."""
    plan, pool = live.session.plan, live.pool
    env: dict[str, Any] = {"controller": controller_facts(list(live.session.request.argv)
                                                          or None)}
    tools = {n: t for n, t in tools_by_guest(plan).items() if n in pool.names}
    env["guests"] = all_guest_facts(pool, tools)
    rundir.write_json("environment.json", env)
    return env


def _run_trials(live: _Live, rundir: RunDir, schedule: Schedule) -> None:
    """The engine over the schedule; a signal sets cancel: it stops and cleans up."""
    plan, pool, lab = live.session.plan, live.pool, live.session.lab.model
    run_id = rundir.run_id
    collectors = _collectors(live.session, pool, rundir, run_id)
    engine = Engine(
        plan, pool, live.store, rundir, run_id,
        fail_fast=live.session.request.fail_fast,
        progress=live.progress,
        cancel=live.cancel,
        collectors=collectors,
        schedule=schedule,
        resources=lambda point: live.vsphere.resources(point.profiles),
        trial_check=live.watch.check_trial if live.watch is not None else None,
        # The point's VMs first (clones it adds, VMs it drops), then its lab hooks.
        point_hooks=[*vm_hooks(
            live.vsphere, pool, check_guests=lambda names: preflight(plan, pool, names),
            testbed=lambda tb: _write_testbed(live.store, run_id, rundir, tb),
            log=rundir.log, notice=live.notice,
        ), *hooks_for(plan.scenario, lab, rundir.path, rundir.log)],
    )
    try:
        live.outcome = engine.run()
    finally:
        if collectors is not None:
            collectors.close()
    live.status = live.outcome.status


def _close(live: _Live) -> None:
    """The final clean-up (guests' processes, then vSphere; a signal cannot cut it
    short), then the run's end in the store. Called with the run's exception, if any,
    being raised."""
    failing = sys.exc_info()[1] is not None
    try:
        if live.signals is not None:
            live.signals.cleaning(lambda: left_in_vsphere(live.vsphere))
        release_guests(live.pool)
        # The tuning first: DRS overrides are undone while the run's VMs still exist.
        untuned = live.hygiene.undo(_log_of(live)) if live.hygiene is not None else []
        vsphere_cleanup(live.vsphere, live.rundir, live.progress, raise_errors=not failing)
        if untuned and not failing:
            raise LabError("lab tune", "; ".join(untuned) + " (finish with `vbench cleanup "
                           f"{live.vsphere.run_id}`)")
    except BaseException:
        live.status = "interrupted" if live.status == "interrupted" else "failed"
        raise
    finally:
        if live.signals is not None:
            try:
                if live.signals.interrupted:
                    live.status = "interrupted"
                end_run(live.store, live.rundir, live.status, live.outcome)
            finally:
                live.signals.restore()


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
            metrics=stored_catalogue(plan.scenario, type(plan.points[0].workload),
                                     (p.workload.params for p in plan.points)),
        ))
    rundir.log("run_start", run_id=run_id, scenario=plan.scenario.name, trials=plan.n_trials)






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
        workload_extra=[vc for p in plan.points for vc in p.workload.vcenters(p.workload.params)],
        point_profiles=[p.profiles for p in plan.points],
        point_guests=[[n for names in p.nodes.values() for n in names] for p in plan.points],
        point_objects=[(p.profiles, p.workload.lab_objects(p.workload.params))
                       for p in plan.points],
    )


def _write_testbed(store: Store, run_id: str, rundir: RunDir, testbed: dict[str, Any]) -> None:
    """The testbed again, after a point changed the run's VMs (or recorded its own)."""
    rundir.write_json("testbed.json", testbed)
    store.set_testbed(run_id, testbed)








def tools_by_guest(plan: Plan) -> dict[str, tuple[str, ...]]:
    """The tools each guest needs, over every point (parameters, and so tools, may
    differ between points)."""
    out: dict[str, set[str]] = {}
    for point in plan.points:
        tools = point.workload.tools()
        for role, names in point.guests.items():
            for n in names:
                out.setdefault(n, set()).update(tools.get(role, ()))
    return {n: tuple(sorted(t)) for n, t in out.items()}


def _trial_watch(live: _Live, rundir: RunDir, kept: set[tuple[int, int]] | None
                 ) -> TrialWatch | None:
    """What is asked after each trial (docs/lab-hygiene.md): vCenter's events on an active
    vSphere run, the CPU of VMs that are not the run's where esxtop is collected; a
    resumed run keeps what was found in the trials it keeps (``kept``)."""
    from vbench.engine.neighbours import benchmarks_of, esxtop_source

    scenario, lab = live.session.plan.scenario, live.session.lab.model
    own = benchmarks_of(scenario, lab, rundir.run_id, live.static, lambda: live.vsphere.vms)
    sources = [s for s in (live.hygiene, esxtop_source(scenario, own, rundir.path))
               if s is not None]
    if not sources:
        return None
    watch = TrialWatch(scenario.disturbance, sources, live.notice)
    watch.run_dir, watch.log = rundir.path, rundir.log

    def publish(entries: list[dict[str, Any]]) -> None:
        if not live.vsphere.active:  # a lab without vCenter: they are its testbed
            _write_testbed(live.store, rundir.run_id, rundir, {"disturbances": entries})
            return
        live.vsphere.extra_testbed["disturbances"] = entries
        testbed = live.vsphere.testbed(refresh=False)
        if testbed is not None:  # else the testbed taken after provisioning has them
            _write_testbed(live.store, rundir.run_id, rundir, testbed)

    watch.publish = publish
    if kept is not None:
        watch.resumed(rundir.path, kept)
    return watch


def _undo_earlier_hooks(lab: Lab, rundir: RunDir) -> None:
    """A resumed run starts from the lab as it was: lab hooks an earlier session of the
    run left applied (killed with kill -9) are undone first, as `vbench cleanup` would."""
    _undone_earlier(undo_pending(lab, rundir.path), rundir, "hook_undone_on_resume", "what",
                    LabError("hooks", "an earlier session left a lab hook applied and its "
                             "undo failed: "))


def _log_of(live: _Live) -> Callable[..., None]:
    return live.rundir.log if live.rundir is not None else (lambda *_a, **_k: None)


def _clean_earlier_guests(live: _Live, rundir: RunDir) -> None:
    """A resumed run starts from the guests as they were: what an earlier, killed session
    left running in them is stopped first, as `vbench cleanup` would; a guest that could
    not be cleaned is said (the run goes on: using that guest will fail on its own)."""
    from vbench.engine.settle import clean_earlier_guests

    for r in clean_earlier_guests(live.session.lab.model, rundir.run_id, rundir.path):
        rundir.log("guest_cleaned_on_resume", level="info" if r.ok else "warning",
                   guest=r.guest, line=r.line)
        if live.notice is not None and (not r.ok or ": killed " in r.line):
            live.notice(f"resume: {r.line}")


def _undo_earlier_tune(lab: Lab, rundir: RunDir) -> None:
    """A resumed run starts from the lab as it was: what an earlier, killed session of
    it tuned (lab_hygiene.tune) is restored first, as `vbench cleanup` would."""
    _undone_earlier(undo_tune(lab, rundir.path), rundir, "tune_undone_on_resume", "change",
                    LabError("lab tune", "an earlier session left the lab tuned and "
                             "restoring it failed: "))


def _undone_earlier(undone: tuple[list[str], list[str]], rundir: RunDir, event: str,
                    field: str, refused: LabError) -> None:
    """Log what was undone on resume; raise ``refused`` (its cause + the errors) if any
    undo failed: the run does not start on a lab left half as an earlier session set it."""
    done, errors = undone
    for line in done:
        rundir.log(event, **{field: line})
    if errors:
        raise LabError(refused.target, refused.cause + "; ".join(errors))


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
    # Each point's driver says what it can produce (a read-only fio job: no write
    # figures); the run leads with the union, in the driver's order.
    if not plan.points:
        return ()
    can = {m for p in plan.points for m in type(p.workload).headline_for(p.workload.params)}
    first = plan.points[0].workload  # a `workloads:` bundle orders its members' headlines
    order = type(first).headline_metrics or type(first).headline_for(first.params)
    return tuple(m for m in order if m in can)
