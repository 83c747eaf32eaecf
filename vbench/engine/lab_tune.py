"""Lab hygiene outside a run: `vbench lab check --scenario` and `vbench lab tune`.

`lab check` adds the hygiene findings of the hosts and clusters a scenario would use
(vbench/vsphere/hygiene_rules.py) to its table. `lab tune LAB --scenario S` proposes the
changes that make the lab still for the scenario (DRS override to manual for the VMs it
names that exist — `vm: existing` and the workload's VMs — and the wanted host power
policy); ``--apply`` makes them, journaled in ``<vbench home>/lab/tune/<lab>.jsonl``, and
``--undo`` restores exactly what that journal recorded. Inside a run,
``lab_hygiene: {tune: true}`` makes the same changes for the run's own VMs and restores
them at its end (engine/hygiene.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vbench.config.hygiene import LabHygiene
from vbench.engine.hygiene import read_all, waiter
from vbench.engine.plan import Plan
from vbench.vsphere.hygiene_rules import Finding, LabFacts, judge
from vbench.vsphere.hygiene_tune import TuneChange, TuneJournal, propose

Say = Callable[[str], None]


@dataclass(frozen=True)
class Scope:
    """What a scenario uses of a lab's vCenters, as `lab check` and `lab tune` see it."""

    vcenters: tuple[str, ...]
    placements: tuple[Any, ...]
    point_objects: tuple[Any, ...]
    spec: LabHygiene
    named_vms: tuple[str, ...]  # VMs the scenario names that exist before a run
    clones: bool  # the run clones VMs (their overrides are made by the run itself)


def scope_of(plan: Plan, lab: Any) -> Scope:
    from vbench.config.profiles import default_vcenter, vm_placements
    from vbench.config.resolve import vm_groups

    groups = vm_groups(plan.scenario, lab)
    placements = vm_placements(plan.scenario.topology, lab, groups, plan.groups,
                               [p.profiles for p in plan.points])
    objects = tuple((p.profiles, p.workload.lab_objects(p.workload.params))
                    for p in plan.points)
    vcs = [p.vcenter for p in placements]
    if any(p.workload.needs_vcenter for p in plan.points):
        vc = default_vcenter(lab, groups)
        vcs += [vc] if vc else []
    named = [n for p in placements for n in (p.spec.existing or ())]
    named += [o.name for _p, objs in objects for o in objs if o.kind == "vm"]
    return Scope(tuple(dict.fromkeys(vcs)), tuple(placements), objects,
                 plan.scenario.lab_hygiene or LabHygiene(), tuple(dict.fromkeys(named)),
                 any(not p.spec.existing for p in placements))


def facts_of(lab: Any, sessions: Any, scope: Scope, inventories: dict[str, Any]
             ) -> list[LabFacts]:
    return read_all(lab, sessions, scope.vcenters, scope.placements, scope.point_objects,
                    inventories)


def check_findings(lab: Any, sessions: Any, scope: Scope, inventories: dict[str, Any]
                   ) -> list[Finding]:
    """The findings `lab check --scenario` shows (as the run's preflight judges)."""
    return tuned_by_the_run([f for facts in facts_of(lab, sessions, scope, inventories)
                             for f in judge(facts, scope.spec)], scope.spec)


def tuned_by_the_run(found: Sequence[Finding], spec: LabHygiene) -> list[Finding]:
    """With ``lab_hygiene.tune`` the run tunes DRS and the power policy before it judges
    them (its preflight waits): such a finding not ok now is said to be tuned, never
    waived — the user required it. A policy vCenter does not report is not tuned (it
    could not be set back): judged as the run will judge it. Pure."""
    if not spec.tune:
        return list(found)
    return [replace(f, level="ok", detail=f"{f.detail} (the run tunes it first: "
                    "lab_hygiene.tune)")
            if f.level != "ok" and (f.check == "drs" or (
                f.check == "power_policy" and f.state != "unknown")) else f
            for f in found]


def proposal(facts: Sequence[LabFacts], scope: Scope) -> tuple[list[TuneChange], list[str]]:
    """The changes for the VMs and hosts that exist now, and the notes on what only a
    run can do (the overrides of the VMs it clones)."""
    changes = [c for f in facts for c in propose(f, scope.spec, scope.named_vms)]
    notes = []
    if scope.clones and scope.spec.drs != "ignore":
        movable = [c.name for f in facts for c in f.clusters
                   if c.drs_enabled is not False
                   and (c.drs_behavior or "fullyAutomated") == "fullyAutomated"]
        if movable:
            notes.append(f"the VMs the run clones: DRS override to manual in cluster "
                         f"{', '.join(movable)} is made by the run itself with "
                         "`lab_hygiene: {tune: true}` in the scenario")
    return changes, notes


def journal_of(lab: Any) -> TuneJournal:
    from vbench.guest.locallab import lab_dir

    return TuneJournal(lab_dir() / "tune" / f"{lab.name}.jsonl")


def apply_all(lab: Any, sessions: Any, changes: Sequence[TuneChange], journal: TuneJournal,
              log: Callable[..., None]) -> list[str]:
    """Make ``changes`` (journaled in ``journal``); the lines of what was done."""
    from vbench.vsphere.hygiene_tune import apply_changes
    from vbench.vsphere.tasks import Watcher

    done: list[str] = []
    for vc in dict.fromkeys(c.vcenter for c in changes):
        with Watcher(sessions.get(vc)) as watcher:
            done += apply_changes(sessions.get(vc), [c for c in changes if c.vcenter == vc],
                                  journal, waiter(watcher), log)
    return done


