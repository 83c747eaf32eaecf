"""Removing what a run created — and nothing else.

An object is removed only when all of these hold: the run's journal names it, its name
is the one vbench gave it, and its ``extraConfig`` carries this run's id (the mark the
clone itself set). A VM kept on purpose (``keep: true``) stays unless asked for. VMs are
powered off and destroyed in the reverse order of their creation, at most ``parallel``
at a time, every task awaited through one watcher. Running it twice is harmless: what is
gone is journaled as ``missing`` and skipped.

Orphans are marked VMs (name ``vb-…`` and the extraConfig mark) whose run is no longer
active; :func:`find_marked` lists them in one inventory scan plus one read of the
candidates' marks.
"""

from __future__ import annotations

import calendar
import contextlib
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyVmomi import vim

from vbench.errors import LabError
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.destroyers import DestroyRequest, destroyer_for
from vbench.vsphere.faults import fault_text
from vbench.vsphere.inventory import Obj, retrieve, retrieve_refs
from vbench.vsphere.journal import (
    JOURNAL_FILE,
    VM_KIND,
    Journal,
    JournalItem,
    opened_by,
    parse_lines,
)
from vbench.vsphere.library_deploy import DEPLOY_ACTION
from vbench.vsphere.simulator import pid_alive
from vbench.vsphere.specs import KEEP_KEY, MARK_KEY, NAME_PREFIX, vm_name
from vbench.vsphere.tasks import TaskFailed, Watcher, task_done, wait_future

TASK_GRACE = 120.0  # how long cleanup waits for a clone still running to finish
# How long after a run journaled a step call (reconfigure, customize, power on) that call
# may still turn into a task: the process may have died with the request on the wire.
CALL_GRACE = 30.0
CLONE_GRACE = 3600.0  # how long an intent without a task may still turn into a VM


@dataclass
class CleanupReport:
    destroyed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "name: why it was left alone"
    errors: list[str] = field(default_factory=list)

    def merge(self, other: CleanupReport) -> None:
        for name in ("destroyed", "kept", "missing", "skipped", "errors"):
            getattr(self, name).extend(getattr(other, name))

    def summary(self) -> str:
        parts = [f"{len(self.destroyed)} destroyed"]
        for name in ("kept", "missing", "skipped", "errors"):
            if getattr(self, name):
                parts.append(f"{len(getattr(self, name))} {name}")
        return ", ".join(parts)


def marks(extra_config: Iterable[Any] | None) -> dict[str, str]:
    """vbench's marks from a VM's extraConfig option values."""
    out = {}
    for opt in extra_config or ():
        key = getattr(opt, "key", None)
        if key in (MARK_KEY, KEEP_KEY):
            out[key] = str(getattr(opt, "value", ""))
    return out


def owned_by(
    name: str,
    vm_marks: Mapping[str, str],
    run_id: str,
    expected_name: str,
    moid: str | None = None,
    created_moid: str | None = None,
) -> str | None:
    """None when the VM is this run's to remove, else why it must be left alone.

    It must have the name vbench gave it, and either carry this run's mark or be the
    very object this run's own clone task returned (the journal's ``created`` moid):
    that covers a VM whose mark was not yet set when the run was killed."""
    if name != expected_name or not name.startswith(NAME_PREFIX):
        return f"its name is {name!r}, not {expected_name!r}"
    if created_moid is not None and moid == created_moid and not vm_marks.get(MARK_KEY):
        return None
    if vm_marks.get(MARK_KEY) != run_id:
        found = vm_marks.get(MARK_KEY)
        return f"it is not marked by run {run_id}" + (f" (marked {found})" if found else "")
    return None


# --- removing VMs ----------------------------------------------------------------------

MARK_PROPS = {vim.VirtualMachine: ["name", "config.extraConfig", "runtime.powerState"]}
SETTLE_PROPS = {vim.VirtualMachine: ["recentTask", "runtime.powerState"]}


def _finish_running_clones(
    session: VSphereSession, watcher: Watcher, items: Sequence[JournalItem]
) -> dict[str, str]:
    """Wait for clones that were still running when the run stopped; name -> new moid."""
    out = {}
    for item in items:
        if item.moid or not item.task:
            continue
        task = vim.Task(item.task, session.stub)
        try:
            state, value = watcher.task_outcome(task, None, TASK_GRACE)
        except (TimeoutError, LabError):
            watcher.forget(task)
            continue
        if state == "success" and value is not None:
            out[item.name] = value._moId
    return out


def _may_still_appear(item: JournalItem, now: float | None = None) -> bool:
    """A clone whose call was in flight when the run died has no task id in the journal;
    its VM appears only when the clone finishes. Such an intent stays pending for a while
    (CLONE_GRACE) instead of being written off as missing."""
    if item.state != "intent" or item.since is None:
        return False
    return (now if now is not None else time.time()) - item.since < CLONE_GRACE


def _locate(session: VSphereSession, names: set[str]) -> dict[str, Obj]:
    """VMs by name (one scan of names, then the marks of the matches)."""
    if not names:
        return {}
    found = [o for o in retrieve(session, {vim.VirtualMachine: ["name"]}) if o.name in names]
    detailed = retrieve_refs(session, [o.ref for o in found], MARK_PROPS)
    by_name: dict[str, Obj] = {}
    for o in detailed:
        by_name.setdefault(o.name, o)
    return by_name


def _deployed_by(item: JournalItem, vm: Obj, run_id: str) -> str | None:
    """A VM deployed from a library item carries no mark until the reconfigure after the
    deploy call, and a run killed with that call on the wire journaled only the intent:
    the name only this run gives (``vb-<run id>-…``) vouches for it then."""
    if item.action == DEPLOY_ACTION and item.name.startswith(vm_name(run_id, "")):
        return vm.moid
    return None


def cleanup_items(
    session: VSphereSession,
    watcher: Watcher,
    journal: Journal,
    run_id: str,
    items: Sequence[JournalItem],
    *,
    parallel: int = 8,
    include_kept: bool = False,
) -> CleanupReport:
    """Power off and destroy the journal's pending VMs of one vCenter, newest first."""
    report = CleanupReport()
    items = [i for i in items if i.vcenter == session.target.name and i.kind == VM_KIND]
    if not items:
        return report
    # A clone the killed run saw start but not end made a VM that may carry no mark yet
    # (the mark is set by the clone spec or, where vCenter ignores that, a reconfigure the
    # run never reached): the task this run started vouches for it instead.
    finished = _finish_running_clones(session, watcher, items)
    located = _locate(session, {i.name for i in items})
    doomed: list[tuple[JournalItem, Obj]] = []
    for item in items:
        vm = located.get(item.name)
        if vm is None and _may_still_appear(item):
            report.errors.append(
                f"VM {item.name}: not found, but its clone may still be running (the run "
                "stopped before vCenter returned the task): run this cleanup again later"
            )
            continue
        if vm is None:
            journal.write("missing", vcenter=item.vcenter, name=item.name)
            report.missing.append(item.name)
            continue
        if item.keep and not include_kept:
            journal.write("kept", vcenter=item.vcenter, name=item.name, moid=vm.moid)
            report.kept.append(item.name)
            continue
        vm_marks = marks(vm.get("config.extraConfig"))
        created = item.moid or finished.get(item.name) or _deployed_by(item, vm, run_id)
        why = owned_by(vm.name, vm_marks, run_id, item.name, vm.moid, created)
        if why is not None:
            report.skipped.append(f"{item.name}: left alone, {why}")
            continue
        doomed.append((item, vm))
    done = remove_vms(
        session,
        watcher,
        [vm for _, vm in doomed],
        parallel=parallel,
        items=[item for item, _ in doomed],
    )
    for (item, vm), error in zip(doomed, done, strict=True):
        if error is None:
            journal.write("destroyed", vcenter=item.vcenter, name=item.name, moid=vm.moid)
            report.destroyed.append(item.name)
        else:
            report.errors.append(error)
    return report


GONE = "gone"  # what _settle says of a VM that no longer exists


def _settle(
    session: VSphereSession, watcher: Watcher, vm: Obj, item: JournalItem | None
) -> str | None:
    """Wait until no task runs on ``vm`` (vCenter refuses to destroy it meanwhile, and a
    step the dead run had on the wire would meet a VM that is gone); its power state, or
    GONE when it vanished meanwhile (a destroy the killed run had started finished)."""
    known = set(item.step_tasks) if item is not None else set()
    deadline = item.open_call + CALL_GRACE if item and item.open_call is not None else 0.0
    while True:
        now = retrieve_refs(session, [vm.ref], SETTLE_PROPS)
        if not now:
            return GONE
        recent = now[0].get("recentTask") or []
        if time.time() < deadline and not {t._moId for t in recent} - known:
            time.sleep(0.25)  # the call in flight has not shown its task yet
            continue
        break
    states = retrieve_refs(session, recent, {vim.Task: ["info.state"]})
    for task in states:
        if task.get("info.state") in ("queued", "running"):
            try:
                wait_future(watcher.watch(task.ref, task_done), None, TASK_GRACE)
            except (TimeoutError, LabError):
                watcher.forget(task.ref)
    if any(t.get("info.state") in ("queued", "running") for t in states):
        now = retrieve_refs(session, [vm.ref], SETTLE_PROPS)
        if not now:
            return GONE
    return now[0].get("runtime.powerState")


def remove_vms(
    session: VSphereSession,
    watcher: Watcher,
    vms: Sequence[Obj],
    *,
    parallel: int = 8,
    items: Sequence[JournalItem | None] | None = None,
) -> list[str | None]:
    """Power off (when on) and destroy each VM, the last first, once no task of its own
    is still running (``items``: what the journal knows of each); an error text per VM."""
    known = dict(zip((vm.moid for vm in vms), items or [None] * len(vms), strict=True))

    def one(vm: Obj) -> str | None:
        label = f"VM {vm.name}"
        try:
            power = _settle(session, watcher, vm, known[vm.moid])
            if power == GONE:
                return None  # destroyed by the task it waited for: the goal is reached
            if power == "poweredOn":
                _power_off(session, watcher, vm, label)
            try:
                _destroy(session, watcher, vm, label)
            except TaskFailed as exc:
                # Powered on since it was read: a power-on the killed run had asked for
                # and no journal knew of (vcbench's operations) ended in between.
                if "InvalidPowerState" not in str(exc):
                    raise
                _power_off(session, watcher, vm, label)
                _destroy(session, watcher, vm, label)
        except TaskFailed as exc:
            if "ManagedObjectNotFound" in str(exc):
                return None
            return str(exc)
        except TimeoutError:
            return f"{label}: destroy did not finish within {TASK_GRACE:g}s"
        except Exception as exc:
            return f"{label}: {fault_text(exc)}"
        return None

    ordered = list(reversed(vms))
    with ThreadPoolExecutor(max(1, parallel), thread_name_prefix="vbench-clean") as pool:
        results = list(pool.map(one, ordered))
    return list(reversed(results))


def _power_off(session: VSphereSession, watcher: Watcher, vm: Obj, label: str) -> None:
    task = session.call(lambda: vm.ref.PowerOffVM_Task())
    with contextlib.suppress(TaskFailed):  # already off is fine
        watcher.wait_task(task, label, "power off", timeout=TASK_GRACE)


def _destroy(session: VSphereSession, watcher: Watcher, vm: Obj, label: str) -> None:
    task = session.call(lambda: vm.ref.Destroy_Task())
    watcher.wait_task(task, label, "destroy", timeout=TASK_GRACE)


# --- every kind, in reverse order -------------------------------------------------------


def cleanup_journal(
    session_for: Callable[[str], VSphereSession],
    watcher_for: Callable[[str], Watcher],
    journal: Journal,
    run_id: str,
    items: Sequence[JournalItem],
    *,
    parallel: int = 8,
    include_kept: bool = False,
) -> CleanupReport:
    """Remove every pending object of the journal, the last created first: a run of VMs
    of one vCenter goes together (in parallel, newest first), any other kind through its
    registered destroyer (see :mod:`vbench.vsphere.destroyers`). A snapshot is thus gone
    before its VM, a library item before its library."""
    report = CleanupReport()
    for vcenter, kind, batch in _segments(items):
        try:
            session, watcher = session_for(vcenter), watcher_for(vcenter)
        except LabError as exc:
            report.errors.extend(f"{i.kind} {i.name}: {exc}" for i in batch)
            continue
        if kind == VM_KIND:
            report.merge(
                cleanup_items(
                    session,
                    watcher,
                    journal,
                    run_id,
                    batch,
                    parallel=parallel,
                    include_kept=include_kept,
                )
            )
            continue
        for item in reversed(batch):
            _destroy_one(DestroyRequest(session, watcher, item, run_id), journal, report,
                         include_kept)
    return report


def _segments(items: Sequence[JournalItem]) -> list[tuple[str, str, list[JournalItem]]]:
    """Reverse intent order, in runs of one (vCenter, kind); each run in intent order."""
    out: list[tuple[str, str, list[JournalItem]]] = []
    for item in reversed(items):
        if out and out[-1][0] == item.vcenter and out[-1][1] == item.kind:
            out[-1][2].insert(0, item)
        else:
            out.append((item.vcenter, item.kind, [item]))
    return out


def _destroy_one(
    req: DestroyRequest, journal: Journal, report: CleanupReport, include_kept: bool
) -> None:
    item = req.item
    where = {"vcenter": item.vcenter, "name": item.name, "kind": item.kind}
    label = f"{item.kind} {item.name}"
    if item.keep and not include_kept:
        journal.write("kept", **where)
        report.kept.append(label)
        return
    destroyer = destroyer_for(item.kind)
    if destroyer is None:
        origin = item.data.get("plugin")
        report.errors.append(
            f"{label}: no destroyer for kind {item.kind!r}"
            + (f" (registered by {origin}: is it installed?)" if origin else "")
        )
        return
    try:
        outcome = destroyer(req)
    except Exception as exc:
        report.errors.append(f"{label}: {fault_text(exc)}")
        return
    if outcome == "missing":
        journal.write("missing", **where)
        report.missing.append(label)
    else:
        journal.write("destroyed", **where)
        report.destroyed.append(label)


# --- orphans ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkedVm:
    vcenter: str
    name: str
    moid: str
    run_id: str
    kept: bool
    power: str | None
    ref: Any = field(default=None, compare=False, repr=False)


def find_marked(session: VSphereSession) -> list[MarkedVm]:
    """Every VM carrying vbench's mark in this vCenter."""
    candidates = [
        o
        for o in retrieve(session, {vim.VirtualMachine: ["name"]})
        if o.name.startswith(NAME_PREFIX)
    ]
    out = []
    for o in retrieve_refs(session, [c.ref for c in candidates], MARK_PROPS):
        m = marks(o.get("config.extraConfig"))
        if m.get(MARK_KEY):
            out.append(
                MarkedVm(
                    session.target.name,
                    o.name,
                    o.moid,
                    m[MARK_KEY],
                    KEEP_KEY in m,
                    o.get("runtime.powerState"),
                    o.ref,
                )
            )
    return out


def run_started(run_id: str) -> float | None:
    """The start time a run id carries (``YYYYMMDD-HHMMSS-…``, UTC)."""
    try:
        return float(calendar.timegm(time.strptime(run_id[:15], "%Y%m%d-%H%M%S")))
    except ValueError:
        return None


def select_orphans(
    marked: Sequence[MarkedVm],
    is_active: Callable[[str], bool],
    older_than: float,
    now: float,
    include_kept: bool = False,
) -> list[MarkedVm]:
    """Marked VMs whose run is not active and started at least ``older_than`` ago."""
    out = []
    for vm in marked:
        if vm.kept and not include_kept:
            continue
        started = run_started(vm.run_id)
        if started is not None and now - started < older_than:
            continue
        if is_active(vm.run_id):
            continue
        out.append(vm)
    return out


def journal_says_alive(run_dir: Path) -> bool | None:
    """Whether the process that opened the run's journal still runs here; None when the
    journal is missing or was written on another machine (then nobody here can tell)."""
    try:
        entries = parse_lines((run_dir / JOURNAL_FILE).read_text().splitlines())
    except OSError:
        return None
    opened = opened_by(entries)
    if opened is None or opened.get("host") != socket.gethostname():
        return None
    try:
        return pid_alive(int(opened.get("pid", -1)))
    except (TypeError, ValueError):
        return None


def remove_orphan_vms(lab: Any, orphans: Sequence[Any]) -> list[str]:
    """Destroy marked VMs whose run is gone (``vbench cleanup --orphans --yes``); each
    orphan has ``vcenter``, ``moid``, ``name`` and ``power``. An error text per failure."""
    from vbench.vsphere.connection import SessionPool

    errors: list[str] = []
    with SessionPool.for_lab(lab) as sessions:
        for vc in dict.fromkeys(o.vcenter for o in orphans):
            session = sessions.get(vc)
            objs = [
                Obj(
                    vim.VirtualMachine(o.moid, session.stub),
                    {"name": o.name, "runtime.powerState": o.power},
                )
                for o in orphans
                if o.vcenter == vc
            ]
            with Watcher(session) as watcher:
                errors += [e for e in remove_vms(session, watcher, objs) if e]
    return errors
