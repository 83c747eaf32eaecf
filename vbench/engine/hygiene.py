"""Lab hygiene in a run: checked before it, tuned for it, watched during every trial.

:class:`RunHygiene` holds the steps `vbench run` takes on an active vSphere run:

- :meth:`preflight` (before anything is created): the findings of
  vbench/vsphere/hygiene_rules.py on the run's hosts and clusters; a ``fail`` stops the
  run (LabError naming every failed check), a ``warn`` is said. With
  ``lab_hygiene.tune`` the DRS and power-policy checks wait for the tuning.
- :meth:`after_provision`: with ``lab_hygiene.tune``, the changes `vbench lab tune`
  proposes, journaled in the run directory (``tune.jsonl``); then the findings again,
  now with the run's VMs, kept in the testbed (``testbed["hygiene"]``).
- called after each trial (a source of engine/disturbances.py's trial watch, which
  flags, fails or runs again a disturbed trial and keeps it in
  ``testbed["disturbances"]`` and ``disturbances.jsonl``): vCenter's events and tasks
  in the trial's steady window (vbench/vsphere/hygiene_events.py).
- :meth:`undo`: the tuning restored, at the run's end whatever ends it (before its VMs
  are removed); `vbench cleanup RUN` does it for a killed run (:func:`undo_tune`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.config.hygiene import DisturbanceSpec, LabHygiene
from vbench.engine.disturbances import PartlyRead, Said, why_not
from vbench.errors import LabError
from vbench.results.records import TrialResult
from vbench.vsphere.hygiene import read_facts, run_hosts
from vbench.vsphere.hygiene_events import Disturbance, disturbance_text, read_disturbances
from vbench.vsphere.hygiene_rules import Finding, LabFacts, failures, guest_clocks, judge
from vbench.vsphere.hygiene_tune import TuneJournal, apply_changes, propose, undo_pending
from vbench.vsphere.journal import items
from vbench.vsphere.specs import vm_name

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.engine.vsphere_run import VSphereRun

# The kinds of event always about a VM: those about a VM `disturbance.ignore` names are not
# disturbances (vCLS VMs vMotioned by vCenter itself).
IGNORABLE = ("migration", "vm", "snapshot")
Notice = Callable[[str], None]


def finding_line(f: Finding) -> str:
    return f"lab hygiene {f.level}: {f.check} {f.where}: {f.detail}"


def refuse(found: list[Finding]) -> None:
    """LabError naming every failed check (the run's preflight, `lab check`)."""
    bad = failures(found)
    if bad:
        raise LabError("lab hygiene", "; ".join(f"{f.check} {f.where}: {f.detail}"
                                                for f in bad)
                       + " (lab_hygiene: in the scenario sets each check; "
                       "docs/lab-hygiene.md)")


class RunHygiene:
    def __init__(self, vsphere: VSphereRun, notice: Notice | None = None) -> None:
        self.vsphere = vsphere
        scenario = vsphere.scenario
        self.spec = scenario.lab_hygiene or LabHygiene()
        self.watch = scenario.disturbance or DisturbanceSpec()
        self.notice = notice or (lambda _m: None)
        self.findings: list[Finding] = []
        self.offsets: dict[str, float] = {}
        self.run_dir: Path | None = None

    # --- before the run ----------------------------------------------------------------
    def facts(self, with_vms: bool) -> list[LabFacts]:
        """The facts of every vCenter the run works in (with its VMs once they exist)."""
        vs = self.vsphere
        facts = read_all(vs.lab, vs.sessions, vs.vcenters, vs.placements, vs.point_objects,
                         vs.inventories, vs.vms if with_vms else ())
        self.offsets.update({f.vcenter: f.vcenter_offset for f in facts
                             if f.vcenter_offset is not None})
        return facts

    def preflight(self, run_id: str = "") -> list[Finding]:
        """Judge the lab before anything is created; raise on a failed check. A resumed
        run's VMs an earlier session left (``vb-<run_id>-…``) are not other VMs."""
        spec = self.spec
        if spec.tune:  # the tuning after provisioning settles these two
            spec = spec.model_copy(update={"drs": "ignore", "power_policy": "ignore"})
        facts = [without_own(f, run_id) for f in self.facts(with_vms=False)]
        found = [f for fs in facts for f in judge(fs, spec)]
        for f in found:
            if f.level == "warn":
                self.notice(finding_line(f))
        refuse(found)
        return found

    def after_provision(self, run_dir: Path, log: Callable[..., None]) -> None:
        """Tune (when asked), then judge again with the run's VMs; kept in the testbed."""
        self.run_dir = run_dir
        if self.spec.tune:
            journal = TuneJournal.in_dir(run_dir)
            for facts in self.facts(with_vms=True):
                vc = facts.vcenter
                watcher = self.vsphere.watcher(vc)
                for line in apply_changes(self.vsphere.sessions.get(vc), propose(facts, self.spec),
                                          journal, waiter(watcher), log):
                    self.notice(f"lab tune: {line}")
        asked = time.monotonic()
        self.findings = [f for facts in self.facts(with_vms=True)
                         for f in judge(facts, self.spec)]
        log("lab_hygiene", findings=len(self.findings),
            not_ok=sum(f.level != "ok" for f in self.findings),
            seconds=round(time.monotonic() - asked, 3))
        self._publish()
        refuse(self.findings)

    def guest_clocks(self, guests: Mapping[str, Any]) -> None:
        """Add the guests' clock finding (their offsets from the run's environment
        facts); raise when it fails."""
        offsets = {name: g.get("clock_offset_s") for name, g in guests.items()
                   if isinstance(g, Mapping)}
        if not offsets:
            return
        found = guest_clocks(self.spec, offsets)
        self.findings.append(found)
        if found.level == "warn":
            self.notice(finding_line(found))
        self._publish()
        refuse([found])

    def _publish(self) -> None:
        self.vsphere.extra_testbed["hygiene"] = [f.to_json() for f in self.findings]

    def undo(self, log: Callable[..., None]) -> list[str]:
        """Restore what the run tuned; the error lines (also logged)."""
        if self.run_dir is None or not self.spec.tune:
            return []
        done, errors = undo_pending(self.vsphere.sessions.get, TuneJournal.in_dir(self.run_dir),
                                    lambda vc: waiter(self.vsphere.watcher(vc)))
        for line in done:  # said as the tuning was (a restore or what was left)
            log("tune_undone", change=line)
            self.notice(f"lab tune: {line}")
        for line in errors:
            log("tune_undo_failed", level="error", error=line)
        return errors

    # --- during the run: a source of the trial watch (engine/disturbances.py) -----------
    name, what, noun = "vcenter", "vCenter's events", "events"

    def __call__(self, result: TrialResult, window: tuple[float, float]) -> list[Said]:
        """vCenter's events and tasks in the trial's steady window, but those about the
        VMs ``disturbance.ignore`` names. A vCenter that does not answer is not watched:
        LabError when none did, else PartlyRead with what the others said."""
        found, unread = self._disturbances(window)
        said = [Said(d.at, disturbance_text(d, window[0]), d.to_json()) for d in found
                if not (d.kind in IGNORABLE and self.watch.ignores(d.about))]
        if unread and len(unread) == len(self.vsphere.vcenters):
            raise unread[0] if len(unread) == 1 else LabError(
                "vcenters", "; ".join(str(e) for e in unread))
        if unread:
            raise PartlyRead("; ".join(str(e) for e in unread), said)
        return said

    def _disturbances(self, window: tuple[float, float]
                      ) -> tuple[list[Disturbance], list[LabError]]:
        """What every vCenter said, in time order, and why those that did not answer."""
        vs = self.vsphere
        out: list[Disturbance] = []
        unread: list[LabError] = []
        user_of = {vc: vs.lab.vcenters[vc].user for vc in vs.vcenters}
        ignore = bool(vs.workload_vcenters)  # the workload's own vCenter work is no noise
        own = _own_tasks(vs)
        for vc in vs.vcenters:
            objects, shown = self._objects(vc)
            try:
                out += read_disturbances(vs.sessions.get(vc), window, objects,
                                         offset=self.offsets.get(vc, 0.0), own_tasks=own,
                                         ignore_user=user_of[vc] if ignore else None,
                                         shown=shown)
            except Exception as exc:  # said with the vCenter that did not answer
                unread.append(LabError(f"vcenter {vc}", why_not(exc)))
        return sorted(out, key=lambda d: d.at), unread

    def _objects(self, vc: str) -> tuple[set[str], dict[str, str]]:
        """The names (and moids) of the run's VMs, hosts and clusters in ``vc``."""
        shown: dict[str, str] = {}
        for v in self.vsphere.vms:
            if v.vcenter == vc:
                shown[v.vm_name] = shown[v.moid] = v.guest
        names: set[str] = set(shown)
        for f in self.findings:
            kind, _, name = f.target.partition(" ")
            if kind in ("host", "cluster"):
                names.add(name)
        hosts = [h for h in (self.vsphere.inventories.get(vc).candidates("host")
                             if self.vsphere.inventories.get(vc) else ()) if h.name in names]
        for h in hosts:
            shown[h.moid] = h.name
            names.add(h.moid)
        return names, shown


def without_own(facts: LabFacts, run_id: str) -> LabFacts:
    """``facts`` without the VMs of run ``run_id`` among the other VMs (those an earlier,
    killed session of a resumed run left: the run removes them before it starts)."""
    if not run_id:
        return facts
    mine = vm_name(run_id, "")
    return replace(facts, other_vms=tuple(v for v in facts.other_vms
                                          if not v.name.startswith(mine)))


def read_all(lab: Lab, sessions: Any, vcenters: Sequence[str], placements: Sequence[Any],
             point_objects: Sequence[Any], inventories: dict[str, Any],
             vms: Sequence[Any] = ()) -> list[LabFacts]:
    """The hygiene facts of each vCenter: its hosts and clusters the run names (every
    host when it names none), and the run's VMs (``vms``: ProvisionedVm)."""
    from vbench.vsphere.inventory import Inventory

    out = []
    for vc in vcenters:
        session = sessions.get(vc)
        inv = inventories.get(vc)
        if inv is None:
            inv = inventories[vc] = Inventory.load(session)
        hosts, clusters = named_places(lab, placements, point_objects, vc)
        refs = [v.ref for v in vms if v.vcenter == vc and v.ref is not None]
        # `vm: existing` VMs are the run's from the start (not "other VMs" in preflight).
        existing = {n for p in placements if p.vcenter == vc for n in p.spec.existing or ()}
        refs += [o.ref for o in inv.candidates("vm") if o.name in existing
                 and all(o.ref != r for r in refs)]
        out.append(read_facts(session, vc, run_hosts(inv, hosts, clusters), refs))
    return out


def named_places(lab: Lab, placements: Sequence[Any], point_objects: Sequence[Any],
                 vc: str) -> tuple[list[str], list[str]]:
    """The hosts and clusters the run names in ``vc``: the lab's hosts there, the
    `vm:` groups' placements and the objects the workload's parameters name."""
    hosts = [n for n, h in lab.hosts.items() if (h.vcenter or vc) == vc]
    clusters: list[str] = []
    for p in placements:
        if p.vcenter == vc:
            hosts += [p.spec.host] if p.spec.host else []
            clusters += [p.spec.cluster] if p.spec.cluster else []
    for _profiles, objects in point_objects:
        for o in objects:
            if o.vcenter in (None, vc):
                hosts += [o.name] if o.kind == "host" else []
                clusters += [o.name] if o.kind == "cluster" else []
    return hosts, clusters


def _own_tasks(vs: VSphereRun) -> set[str]:
    if vs.journal is None:
        return set()
    return {t for i in items(vs.journal.read()) for t in (i.task, *i.step_tasks) if t}


def waiter(watcher: Any) -> Callable[[Any, str, str], Any]:
    return lambda task, target, op: watcher.wait_task(task, target, op)


def undo_tune(lab: Lab, run_dir: Path) -> tuple[list[str], list[str]]:
    """`vbench cleanup RUN`: restore what a killed run tuned (done, errors)."""
    return undo_journal(lab, TuneJournal.in_dir(run_dir))


def undo_journal(lab: Lab, journal: TuneJournal) -> tuple[list[str], list[str]]:
    """Restore every change ``journal`` holds that is not undone yet (done, errors)."""
    if not journal.pending():
        return [], []
    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.tasks import Watcher

    watchers: dict[str, Any] = {}
    with SessionPool.for_lab(lab) as sessions:
        def wait_of(vc: str) -> Callable[[Any, str, str], Any]:
            if vc not in watchers:
                watchers[vc] = Watcher(sessions.get(vc))
            return waiter(watchers[vc])

        try:
            return undo_pending(sessions.get, journal, wait_of)
        finally:
            for w in watchers.values():
                w.close()
