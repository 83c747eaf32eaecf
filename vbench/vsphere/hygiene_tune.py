"""`vbench lab tune`: the changes that make the lab still for a run, made and undone.

:func:`propose` (pure) reads the hygiene facts and the scenario's ``lab_hygiene:`` and
proposes: a DRS override to ``manual`` for each of the run's VMs a fully automated DRS
could move, and the wanted power policy on each run's host that has another one. Nothing
else is ever changed.

Every change is journaled in a ``tune.jsonl`` (the run directory's, or the lab's for a
`lab tune --apply` outside a run) *before* vCenter is asked, with the state it replaces
(``applying``, then ``applied``/``apply_failed``, ``undone`` once restored or found
never made). The undo
(:func:`undo_pending`) restores exactly what was recorded: an override the VM did not
have is removed, one it had is set back; a power policy is set back to the recorded one.
Only a change still as vbench made it is set back (:func:`undo_step`): one in the
recorded state already is not touched, one someone else changed since is left as they
set it. A VM already gone took its override with it. Records are appended and fsynced, so a run
killed with kill -9 leaves what `vbench cleanup RUN` needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pyVmomi import vim, vmodl

from vbench.analysis.simulator import is_simulator
from vbench.config.hygiene import POLICY_NAMES, LabHygiene
from vbench.errors import LabError, VbenchError
from vbench.results.journal_file import AppendJournal
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.hygiene_rules import STILL_DRS, LabFacts, policy_name
from vbench.vsphere.inventory import Inventory, NotInInventory

TUNE_FILE = "tune.jsonl"
# Every change not undone is pending, a failed one too: a wait cut short (Ctrl-C, a
# timeout, a socket error) does not mean vCenter did not make it. The undo reads the
# object first (undo_step), so one that was never made is not touched.
PENDING = ("applying", "applied", "apply_failed", "undo_failed")
SHORT_NAMES = {v: k for k, v in POLICY_NAMES.items()}
Wait = Callable[[Any, str, str], Any]  # task, target, operation -> result (raises on error)


@dataclass(frozen=True)
class TuneChange:
    kind: str  # drs_override | power_policy
    vcenter: str
    target: str  # cluster or host name
    vm: str | None  # the VM of a DRS override
    current: str | None  # what it is now (None: no override)
    wanted: str

    @property
    def text(self) -> str:
        if self.kind == "drs_override":
            was = f"override {self.current}" if self.current else "no override"
            return (f"cluster {self.target}: DRS override {self.wanted} for VM {self.vm} "
                    f"(now {was})")
        return f"host {self.target}: power policy {self.wanted} (now {self.current or '?'})"


def propose(facts: LabFacts, spec: LabHygiene, vms: Sequence[str] | None = None
            ) -> list[TuneChange]:
    """The changes that make the lab still: DRS override for ``vms`` (default: the
    run's VMs in the facts) where DRS could move them, and the wanted power policy."""
    out = []
    vms = facts.run_vms if vms is None else vms
    for c in facts.clusters:
        if spec.drs == "ignore" or c.drs_enabled is False or (
                c.drs_behavior or "fullyAutomated") in STILL_DRS:
            continue
        out += [TuneChange("drs_override", facts.vcenter, c.name, vm, c.vm_overrides.get(vm),
                           "manual") for vm in vms if c.vm_overrides.get(vm) not in STILL_DRS]
    if spec.power_policy != "ignore":
        for h in facts.hosts:
            now = policy_name(h.power_policy)
            # A policy vCenter does not report could not be set back: not changed.
            if now is not None and now != spec.wanted_policy:
                out.append(TuneChange("power_policy", facts.vcenter, h.name, None, now,
                                      spec.wanted_policy))
    return out


class TuneJournal(AppendJournal):
    """The changes made, fsynced line by line (vbench/results/journal_file.py)."""

    @classmethod
    def in_dir(cls, folder: Path) -> TuneJournal:
        return cls(folder / TUNE_FILE)

    def pending(self) -> list[dict[str, Any]]:
        """The last record of every change not undone, oldest first."""
        return self.last_in(PENDING)


def _drs_spec(vm: Any, behavior: str | None, add: bool, simulator: bool = False) -> Any:
    if behavior is None and simulator:
        # vcsim (govmomi 0.46) cannot read the removeKey pyVmomi sends (its xsi:type
        # "ManagedObject"): it panics and dies. There the override is set back to the
        # cluster's default behaviour instead, which DRS treats as no override.
        info = vim.cluster.DrsVmConfigInfo(key=vm, enabled=True, behavior="fullyAutomated")
        op = vim.cluster.DrsVmConfigSpec(operation="edit", info=info)
    elif behavior is None:
        op = vim.cluster.DrsVmConfigSpec(operation="remove", removeKey=vm)
    else:
        info = vim.cluster.DrsVmConfigInfo(key=vm, enabled=behavior != "disabled",
                                           behavior=None if behavior == "disabled"
                                           else behavior)
        op = vim.cluster.DrsVmConfigSpec(operation="add" if add else "edit", info=info)
    return vim.cluster.ConfigSpecEx(drsVmConfigSpec=[op])


def _set(session: VSphereSession, inv: Inventory, rec: Mapping[str, Any], value: str | None,
         wait: Wait, applying: bool) -> None:
    """Set the recorded object to ``value`` (the wanted state, or the recorded one)."""
    if rec["kind"] == "drs_override":
        cluster = inv.find("cluster", rec["target"]).ref
        vm = inv.find("vm", rec["vm"]).ref
        spec = _drs_spec(vm, value, add=applying and rec.get("current") is None,
                         simulator=is_simulator(session.content.about.fullName))
        task = session.call(lambda: cluster.ReconfigureComputeResource_Task(spec, True))
        wait(task, f"cluster {rec['target']}", f"DRS override for {rec['vm']}")
        return
    host = inv.find("host", rec["target"]).ref
    power = host.configManager.powerSystem
    short = SHORT_NAMES.get(value or "", value)
    try:
        available = session.call(lambda: power.capability.availablePolicy)
    except vmodl.fault.ManagedObjectNotFound:  # vcsim names a power system it lacks
        raise LabError(f"host {rec['target']}", "vCenter has no power system for this host "
                       "(vcsim, the vCenter simulator, has none): its power policy cannot be set"
                       ) from None
    keys = [p.key for p in available if p.shortName == short]
    if not keys:
        raise LabError(f"host {rec['target']}", f"power policy {value} is not available")
    session.call(lambda: power.ConfigurePowerPolicy(key=keys[0]))


def apply_changes(session: VSphereSession, changes: Sequence[TuneChange],
                  journal: TuneJournal, wait: Wait, log: Callable[..., None]) -> list[str]:
    """Make ``changes`` (journaled first); the lines saying what was done. The first
    failure raises LabError after it is journaled (the undo restores what was made)."""
    if not changes:
        return []
    inv = Inventory.load(session)
    done = []
    count = len(journal.read())
    for ch in changes:
        count += 1
        rec = {"id": f"t{count}", **asdict(ch)}
        journal.append({**rec, "state": "applying"})
        try:
            _set(session, inv, rec, ch.wanted, wait, applying=True)
        except (VbenchError, vmodl.MethodFault) as exc:
            journal.append({**rec, "state": "apply_failed", "error": _why(exc)})
            raise LabError(f"vcenter {ch.vcenter}", f"lab tune: {ch.text}: {_why(exc)}"
                           ) from None
        journal.append({**rec, "state": "applied"})
        log("tune_applied", change=ch.text)
        done.append(ch.text)
    return done


def _why(exc: BaseException) -> str:
    return str(getattr(exc, "msg", "") or getattr(exc, "cause", "") or exc).strip() or \
        type(exc).__name__


def _same(a: str | None, b: str | None) -> bool:
    # No override is the cluster's default; vcsim's "undo" leaves fullyAutomated.
    return a == b or {a, b} == {None, "fullyAutomated"}


def undo_step(recorded: str | None, wanted: str, now: str | None) -> str:
    """What the undo does to one change, by the object's state now: ``restore`` it
    (it is what vbench set), ``already`` (it is the recorded state: a change journaled
    as applying but never made, or restored by hand), or ``left`` (someone else changed
    it since: vbench does not overwrite what it did not set). Pure."""
    if _same(now, wanted):
        return "restore"
    return "already" if _same(now, recorded) else "left"


def _now(session: VSphereSession, inv: Inventory, rec: Mapping[str, Any]) -> str | None:
    """The recorded object's state now: the VM's DRS override (None: none), or the
    host's power policy name."""
    if rec["kind"] == "drs_override":
        cluster = inv.find("cluster", rec["target"]).ref
        moid = inv.find("vm", rec["vm"]).moid
        for ov in session.call(lambda: cluster.configurationEx.drsVmConfig) or ():
            if str(ov.key._moId) == moid:
                return "disabled" if ov.enabled is False else str(ov.behavior or "")
        return None
    host = inv.find("host", rec["target"]).ref
    policy = session.call(lambda: host.config.powerSystemInfo.currentPolicy)
    return policy_name(getattr(policy, "shortName", None))


def _undo_one(session: VSphereSession, inv: Inventory, rec: Mapping[str, Any],
              wait: Wait) -> str:
    """Restore one journaled change when it is still what vbench set; what was done."""
    now = _now(session, inv, rec)
    step = undo_step(rec.get("current"), rec["wanted"], now)
    if step == "restore":
        _set(session, inv, rec, rec.get("current"), wait, applying=False)
    return step if step != "left" else f"someone else changed it since, to {now or 'none'}"


def undo_pending(session_of: Callable[[str], VSphereSession], journal: TuneJournal,
                 wait_of: Callable[[str], Wait]) -> tuple[list[str], list[str]]:
    """Restore every change not yet undone, newest first: (done lines, error lines).
    Only a change still as vbench made it is set back (:func:`undo_step`)."""
    done, errors = [], []
    inventories: dict[str, Inventory] = {}
    for rec in reversed(journal.pending()):
        what = TuneChange(**{k: rec.get(k) for k in ("kind", "vcenter", "target", "vm",
                                                     "current", "wanted")}).text
        try:
            session = session_of(rec["vcenter"])
            inv = inventories.get(rec["vcenter"]) or Inventory.load(session)
            inventories[rec["vcenter"]] = inv
            step = _undo_one(session, inv, rec, wait_of(rec["vcenter"]))
        except NotInInventory:
            # The run's VM is gone, and its override went with it.
            journal.append({**rec, "state": "undone", "note": "object gone"})
            done.append(f"restored {what} (object gone)")
            continue
        except Exception as exc:  # a vCenter gone (a socket error) too: said,
            # and the rest of the undo and the run's VM clean-up after it go on
            journal.append({**rec, "state": "undo_failed", "error": _why(exc)})
            errors.append(f"lab tune undo on vcenter {rec['vcenter']}: {what}: {_why(exc)}")
            continue
        if step == "restore":
            journal.append({**rec, "state": "undone"})
            done.append(f"restored {what}")
        else:  # not pending any more: nothing of vbench's is left to set back
            note = "already as recorded" if step == "already" else step
            journal.append({**rec, "state": "undone", "note": note})
            done.append(f"nothing to restore: {what} ({note})" if step == "already"
                        else f"left {what}: {note}")
    return done, errors
