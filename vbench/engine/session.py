"""One `vbench run`: load, plan, preflight, execute, store, report — and always clean up."""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vbench.config.lab import Lab
from vbench.config.load import Loaded, load_lab, load_scenario
from vbench.config.resolve import guest_spec
from vbench.config.scenario import Scenario
from vbench.engine.environment import all_guest_facts, controller_facts
from vbench.engine.plan import Plan, build_plan
from vbench.engine.runner import Engine, ProgressSink, RunOutcome
from vbench.errors import GuestError, VbenchError
from vbench.guest.ssh import GuestPool
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


def lab_fingerprint(lab: Lab) -> str:
    blob = json.dumps(lab.redacted(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def preflight(plan: Plan, pool: GuestPool) -> None:
    """Reach every guest and find the tools each role needs, before anything runs."""
    pool.connect_all(plan.node_names())
    needs = _tools_by_guest(plan)

    def check(guest: Any) -> None:
        for tool in sorted(needs.get(guest.name, ())):
            if guest.which(tool) is None:
                raise GuestError(
                    guest.name, f"{tool} not found in PATH (install the {tool} package)"
                )

    pool.fan_out(plan.node_names(), check)


@contextlib.contextmanager
def interrupt_handler(cancel: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set ``cancel``; the engine stops at once and cleans up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        cancel.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def execute(
    session: RunSession,
    store: Store,
    results_dir: Path,
    progress: ProgressSink | None = None,
    cancel: threading.Event | None = None,
) -> tuple[RunOutcome, RunDir]:
    req, plan = session.request, session.plan
    lab = session.lab.model
    cancel = cancel or threading.Event()
    specs = [guest_spec(lab, n) for n in plan.node_names()]
    pool = GuestPool(specs, max_parallel=plan.scenario.settings.max_parallel)
    try:
        preflight(plan, pool)
        run_id = new_run_id()
        rundir = RunDir(results_dir, run_id)
        # The resolved scenario (defaults filled, durations in seconds, --set applied).
        scenario_doc = redact(session.scenario.model.model_dump(mode="json", exclude_none=True))
        lab_doc = redact(lab.redacted())
        rundir.write_yaml("scenario.yaml", scenario_doc)
        rundir.write_yaml("lab.yaml", lab_doc)
        rundir.write_json("plan.json", plan.to_json())
        env = {"controller": controller_facts(list(req.argv) or None)}
        tools = _tools_by_guest(plan)
        env["guests"] = all_guest_facts(pool, tools)
        rundir.write_json("environment.json", env)
        info = RunInfo(
            run_id=run_id,
            scenario_name=plan.scenario.name,
            started=time.time(),
            tags=tuple(req.tags),
            scenario=scenario_doc,
            lab=lab_doc,
            lab_fingerprint=lab_fingerprint(lab),
            environment=env,
            run_dir=str(rundir.path),
        )
        store.create_run(info)
        store.add_points(run_id, [(p.index, p.labels) for p in plan.points])
        rundir.log("run_start", run_id=run_id, scenario=plan.scenario.name, trials=plan.n_trials)
        engine = Engine(
            plan,
            pool,
            store,
            rundir,
            run_id,
            fail_fast=req.fail_fast,
            progress=progress,
            cancel=cancel,
        )
        outcome = RunOutcome(run_id, "failed", exit_code=3)
        try:
            with interrupt_handler(cancel):
                outcome = engine.run()
        finally:
            store.finish_run(run_id, outcome.status, time.time())
            rundir.log("run_end", status=outcome.status, failed=len(outcome.failed))
    finally:
        _release(pool)
    return outcome, rundir


def _release(pool: GuestPool) -> None:
    """Stop whatever is still tracked and close every connection. A guest that died
    during the run has already failed its trials; it must not turn the end of the run
    into an error as well."""
    for guest in pool.guests():
        with contextlib.suppress(VbenchError):
            guest.kill_all()
    pool.close()


def _tools_by_guest(plan: Plan) -> dict[str, tuple[str, ...]]:
    driver = plan.points[0].workload
    out: dict[str, set[str]] = {}
    for role, names in plan.points[0].guests.items():
        for n in names:
            out.setdefault(n, set()).update(driver.required_tools.get(role, ()))
    return {n: tuple(sorted(t)) for n, t in out.items()}
