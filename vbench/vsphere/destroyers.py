"""Destroyers: how cleanup removes an object of each kind a run created.

VMs are removed by :mod:`vbench.vsphere.cleanup` itself (marks, parallel power-off and
destroy). Every other kind — snapshots here, content libraries, library items and
subscriptions from the plugins that create them — has a destroyer registered under its
kind. A plugin registers at import (``register_destroyer("library", fn)`` at module
level); ``vbench cleanup RUN`` discovers the workload plugins before it reads the
journal, so a kind whose destroyer lives in a workload package is cleaned after a
``kill -9`` as well.

A destroyer gets the journal's item (name, ``moid`` — a managed object id or a REST id
— the task that was creating it, and the ``data`` its creator journaled) with the
session and the shared task watcher of its vCenter, and answers ``"destroyed"`` or
``"missing"`` (already gone, or never created); it raises to report an error. It must
remove only that object: the journal names what this run created, nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.errors import ConfigError, LabError
from vbench.lazy import lazy_module
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.inventory import retrieve_refs
from vbench.vsphere.journal import VM_KIND, JournalItem
from vbench.vsphere.tasks import TaskFailed, Watcher

if TYPE_CHECKING:
    from pyVmomi import vim, vmodl
else:
    vim = lazy_module("pyVmomi", "vim")
    vmodl = lazy_module("pyVmomi", "vmodl")

SNAPSHOT_KIND = "snapshot"
TASK_GRACE = 120.0  # how long a destroyer waits for the creating task or its own


@dataclass(frozen=True)
class DestroyRequest:
    """One object to remove, with what reaches its vCenter."""

    session: VSphereSession
    watcher: Watcher
    item: JournalItem
    run_id: str

    def created_moid(self) -> str | None:
        """The object's id: journaled, else the result of the creating task once it has
        finished (a run killed between the task's start and its end)."""
        if self.item.moid or not self.item.task:
            return self.item.moid
        task = vim.Task(self.item.task, self.session.stub)
        try:
            state, value = self.watcher.task_outcome(task, None, TASK_GRACE)
        except (TimeoutError, LabError):
            self.watcher.forget(task)
            return None
        return getattr(value, "_moId", None) if state == "success" else None


Destroyer = Callable[[DestroyRequest], str]

_DESTROYERS: dict[str, Destroyer] = {}
_LOCK = threading.Lock()


def register_destroyer(kind: str, destroyer: Destroyer) -> Destroyer:
    """Make ``destroyer`` remove the objects of ``kind`` (once per kind)."""
    if kind == VM_KIND:
        raise ConfigError("VMs are removed by vbench's cleanup itself; register another kind")
    with _LOCK:
        known = _DESTROYERS.get(kind)
        if known is not None and known is not destroyer:
            raise ConfigError(f"two destroyers for vSphere object kind {kind!r}")
        _DESTROYERS[kind] = destroyer
    return destroyer


def destroyer_for(kind: str) -> Destroyer | None:
    with _LOCK:
        return _DESTROYERS.get(kind)


def destroyer_kinds() -> list[str]:
    with _LOCK:
        return sorted(_DESTROYERS)


# --- snapshots ---------------------------------------------------------------------------


def _find_snapshot(tree: Any, name: str) -> Any:
    for node in tree or ():
        if node.name == name:
            return node.snapshot
        found = _find_snapshot(node.childSnapshotList, name)
        if found is not None:
            return found
    return None


def destroy_snapshot(req: DestroyRequest) -> str:
    """Remove one snapshot (its children stay) of a VM the run created."""
    moid = req.created_moid()
    session, item = req.session, req.item
    if moid is None:
        vm_moid = item.data.get("vm")
        if not vm_moid:
            return "missing"
        vm = vim.VirtualMachine(str(vm_moid), session.stub)
        found = retrieve_refs(session, [vm], {vim.VirtualMachine: ["snapshot.rootSnapshotList"]})
        tree = found[0].get("snapshot.rootSnapshotList") if found else None
        snap = _find_snapshot(tree, item.name)
        if snap is None:
            return "missing"
    else:
        snap = vim.vm.Snapshot(moid, session.stub)
    try:
        task = session.call(lambda: snap.RemoveSnapshot_Task(removeChildren=False))
        req.watcher.wait_task(task, f"snapshot {item.name}", "remove", timeout=TASK_GRACE)
    except vmodl.fault.ManagedObjectNotFound:
        return "missing"
    except TaskFailed as exc:
        if "ManagedObjectNotFound" in str(exc) or "not found" in str(exc).lower():
            return "missing"
        raise
    return "destroyed"


register_destroyer(SNAPSHOT_KIND, destroy_snapshot)
