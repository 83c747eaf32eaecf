"""How long a run will take, learned from the stored runs of the same scenario.

A plan knows the phases of every trial; what it cannot know is what lies around them:
each trial's prepare (pushing files, laying out data), collect and teardown, and the
run's own set-up before the first trial (connecting, provisioning VMs) and clean-up
after the last (destroying VMs, removing scratch directories). The quick start's
estimate was 1.7× short for that reason. The last finished runs of the scenario (the
same lab preferred) hold all of it: every trial's phase marks and the run's start and
end. Each run gives its trials' mean overhead, its set-up and its clean-up; the median over
runs is used, so one slow run does not skew the next estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.engine.plan import Plan
from vbench.errors import VbenchError
from vbench.lazy import lazy_module
from vbench.results.store_engine import resolve_url

if TYPE_CHECKING:  # the store (SQLAlchemy) only when one exists to learn from
    import statistics

    from vbench.analysis.findmax import Outlook
    from vbench.results.store import RunRow, Store, TrialRow
else:  # learning from stored runs, or a search's estimate: not a first validate's
    statistics = lazy_module("statistics")

RUNS = 3  # stored runs learned from
# Without a stored run: the run's set-up and clean-up guessed (a lab is bound).
GUESS_SETUP = 2.0
GUESS_FINISH = 2.0


@dataclass(frozen=True)
class Learned:
    per_trial: float  # trial wall time beyond its planned phases
    setup: float  # run start -> first trial
    finish: float  # last trial -> run end
    runs: int


def with_estimate(plan: Plan, learned: Learned | None) -> Plan:
    """The plan with its overheads from ``learned`` (or guessed without it)."""
    if learned is None:
        if not plan.bound_to_lab:
            return plan
        return replace(plan, setup_seconds=GUESS_SETUP, finish_seconds=GUESS_FINISH,
                       estimate_basis="no stored run of this scenario: prepare, teardown "
                                      "and clean-up guessed")  # fmt: skip
    extra = _driver_extra(plan)
    runs = f"{learned.runs} stored run{'s' if learned.runs != 1 else ''}"
    return replace(
        plan,
        overhead_per_trial=max(0.0, learned.per_trial - extra),
        setup_seconds=learned.setup,
        finish_seconds=learned.finish,
        estimate_basis=f"prepare, teardown and clean-up as in the last {runs} of this scenario",
    )


def learn(store: Store, plan: Plan, lab_name: str | None = None) -> Learned | None:
    """Overheads from the last finished runs of the plan's scenario (those in the lab of
    this name first); None when there is none."""
    try:
        rows = [r for r in store.list_runs(scenario=plan.scenario.name, limit=50)
                if r.status == "ok" and r.ended is not None]  # fmt: skip
        if lab_name is not None:
            same = [r for r in rows if (r.lab or {}).get("name") == lab_name]
            rows = same or rows
        picked = [(r, store.trials(r.run_id)) for r in rows[:RUNS]]
    except VbenchError:
        return None  # an unreadable store only costs the estimate its history
    return learned_from(picked)


def learned_from(runs: Sequence[tuple[RunRow, Sequence[TrialRow]]]) -> Learned | None:
    """Overheads from (run, its trials) pairs (pure)."""
    per_trial: list[float] = []
    setup: list[float] = []
    finish: list[float] = []
    for run, trials in runs:
        ok = [t for t in trials if t.status == "ok"
              and t.phases.get("prepare_start") is not None
              and t.phases.get("teardown_end") is not None]
        spans = [(t.phases["prepare_start"], t.phases["teardown_end"]) for t in ok]
        if not spans or run.ended is None:
            continue
        # A run's trials in total matter: their mean overhead (a median would drop
        # the slow trials that every run has), then the median over runs.
        per_trial.append(statistics.fmean(
            float(b) - float(a) - _trial_phases(run.scenario, t)
            for (a, b), t in zip(spans, ok, strict=True)))
        setup.append(min(a for a, _ in spans) - run.started)
        finish.append(run.ended - max(b for _, b in spans))
    if not per_trial:
        return None
    return Learned(
        per_trial=statistics.median(per_trial),
        setup=max(0.0, statistics.median(setup)),
        finish=max(0.0, statistics.median(finish)),
        runs=len(setup),
    )


def _planned_phases(scenario: Mapping[str, Any]) -> float:
    from vbench.config.warmup import planned_seconds

    ph = scenario.get("phases") or {}
    # An automatic warm-up is planned at its cap ("auto" is no number).
    return planned_seconds(ph) + sum(float(ph.get(k) or 0.0) for k in ("steady", "cooldown"))


def _trial_phases(scenario: Mapping[str, Any], trial: TrialRow) -> float:
    """The phases one trial ran: the planned ones, but an automatic warm-up as long as
    its marks say (against its cap, what vbench itself spends would come out negative)."""
    from vbench.config.warmup import auto_cap

    ph = scenario.get("phases") or {}
    start, steady = trial.phases.get("warmup_start"), trial.phases.get("steady_start")
    if auto_cap(ph) is None or start is None or steady is None:
        return _planned_phases(scenario)
    return float(steady) - float(start) + sum(float(ph.get(k) or 0.0)
                                              for k in ("steady", "cooldown"))


def _driver_extra(plan: Plan) -> float:
    """What the driver's own trial estimate adds to the phases (e.g. a preload), which the
    learned overhead already holds."""
    if not plan.points:
        return 0.0
    extras = [p.trial_seconds - (p.warmup + p.steady + p.cooldown) for p in plan.points]
    return statistics.fmean(extras)


def history_estimate(plan: Plan, lab_name: str | None = None, store_url: str | None = None,
                     results_dir: Path | None = None) -> Plan:
    """The plan's estimate with what the store knows, for validate and plan: only a store
    that exists is read (they never create one), and any failure leaves the guesses."""
    from vbench.results.rundir import results_dir_default

    url = resolve_url(store_url, results_dir or results_dir_default())
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return with_estimate(plan, None)
    from vbench.results.store import Store

    try:
        store = Store.open(url, results_dir or results_dir_default())
    except VbenchError:
        return with_estimate(plan, None)
    try:
        return with_estimate(plan, learn(store, plan, lab_name))
    finally:
        store.close()


@dataclass(frozen=True)
class SearchEstimate:
    """A find-max plan's size and time: each search played out from its start level for
    every place its pass/fail boundary may lie (no level noisy), as (fewest, most)."""

    outlook: Outlook
    seconds: tuple[float, float]


def search_estimate(plan: Plan) -> SearchEstimate | None:
    """The levels, trials and run time a find-max plan may take; None for a matrix (its
    points × repeat say it). The trials take the time of the start level's (with the
    learned overhead); the run's set-up and clean-up are added once."""
    spec = plan.scenario.search
    if spec is None or not plan.points:
        return None
    # The search's own modules: a matrix (validate's usual case) never needs them.
    from vbench.analysis.findmax import FindMax, Outlook
    from vbench.analysis.findmax_qos import search_params

    one = FindMax(search_params(spec, plan.repeat, plan.repeat_max)).outlook()
    n = len(plan.points)  # one search per combination of the other factors
    outlook = Outlook((one.levels[0] * n, one.levels[1] * n), (one.trials[0] * n,
                                                                one.trials[1] * n))
    per_trial = statistics.fmean(p.trial_seconds for p in plan.points) + plan.overhead_per_trial
    around = plan.setup_seconds + plan.finish_seconds
    lo, hi = outlook.trials
    return SearchEstimate(outlook, (around + lo * per_trial, around + hi * per_trial))
