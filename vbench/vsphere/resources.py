"""Run resources: what a workload may use of vCenter during a trial, typed.

``TrialContext.vsphere`` is a :class:`VSphereResources` when the run reaches a vCenter
(the driver sets ``needs_vcenter = True``, or the scenario has `vm:` groups); ``None``
otherwise. It exposes, for the point's lab profile:

- ``vcenter``: the point's default vCenter (the profile's, else the lab's only one);
  ``placement``: the datacenter, cluster, resource pool, folder, datastore and network
  the profile names (``None`` for what it leaves to the lab or the driver);
- ``session(vc)``, ``inventory(vc)``, ``watcher(vc)``: the run's logged-in session, an
  inventory snapshot (read once, ``refresh=True`` to read again) and the run's shared
  task :class:`~vbench.vsphere.tasks.Watcher` (one PropertyCollector filter for every
  task: ``wait_task(task, …)``, never a polling loop of one's own);
- ``create_vm(name, source, …)`` and ``create_snapshot(vm, name)``: objects created with
  the journal written first, named ``vb-<run id>-<name>`` and (VMs) marked with the run id;
- ``track(kind, name, data=…)``: any other object (a content library, a library item, a
  subscription): journal the intent, then ``started(task)`` / ``created(id)`` /
  ``failed(error)`` on the handle. Register how to remove that kind with
  :func:`vbench.vsphere.destroyers.register_destroyer` at import of your package;
- ``destroy(obj)``: remove one created object now (e.g. in ``teardown``), journaled.

Everything created and still there is removed at the end of the run in the reverse
order of creation — after a normal end, a failure, Ctrl-C or SIGTERM, and by ``vbench
cleanup RUN`` after ``kill -9`` — exactly like provisioned VMs. Objects a scenario names
as existing are never modified or destroyed: a snapshot is taken only of a VM this run
created.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyVmomi import vim

from vbench.config.lab import Lab
from vbench.config.scenario import VmSpec
from vbench.errors import ConfigError, LabError
from vbench.vsphere.cleanup import CleanupReport, cleanup_journal
from vbench.vsphere.connection import SessionPool, VSphereSession
from vbench.vsphere.destroyers import SNAPSHOT_KIND
from vbench.vsphere.inventory import Inventory, retrieve_refs
from vbench.vsphere.journal import FINAL, VM_KIND, IndexedJournal, Journal
from vbench.vsphere.provision import nic_network
from vbench.vsphere.specs import (
    VmRequest,
    clone_spec,
    mark_options,
    reconfig_spec,
    resolve_placement,
    vm_name,
)
from vbench.vsphere.tasks import Watcher

WatcherFor = Callable[[str], Watcher]


@dataclass(frozen=True)
class ProfilePlacement:
    """Where a point's objects go, as its lab profile names it (None: not named)."""

    vcenter: str
    profile: str | None = None
    datacenter: str | None = None
    cluster: str | None = None
    resource_pool: str | None = None
    folder: str | None = None
    datastore: str | None = None
    network: str | None = None


def point_placement(
    lab: Lab, profiles: Sequence[str], default_vcenter: str | None
) -> ProfilePlacement | None:
    """The placement of a point whose factor levels select ``profiles`` (the first
    profile naming a field wins); None when no vCenter can be told."""
    chosen = [(n, lab.profiles[n]) for n in profiles if n in lab.profiles]
    vcenter = next((p.vcenter for _, p in chosen if p.vcenter), None) or default_vcenter
    if vcenter is None:
        return None

    def first(attr: str) -> str | None:
        return next((getattr(p, attr) for _, p in chosen if getattr(p, attr)), None)

    return ProfilePlacement(
        vcenter=vcenter,
        profile=chosen[0][0] if chosen else None,
        datacenter=first("datacenter"),
        cluster=first("cluster"),
        resource_pool=first("resource_pool"),
        folder=first("folder"),
        datastore=first("datastore"),
        network=first("network"),
    )


@dataclass(frozen=True)
class Created:
    """An object a run created (and will remove)."""

    kind: str  # "vm", "snapshot", or a plugin's kind ("library", …)
    name: str  # its name in vCenter
    vcenter: str
    moid: str | None  # managed object id, or the REST id of a REST-side object
    ref: Any = field(default=None, compare=False, repr=False)  # pyVmomi reference, if any


class Tracked:
    """One object being created: its intent is journaled already; say what happened."""

    def __init__(self, journal: Journal, kind: str, name: str, vcenter: str) -> None:
        self._journal, self.kind, self.name, self.vcenter = journal, kind, name, vcenter
        self.result: Created | None = None

    def _where(self) -> dict[str, str]:
        return {"vcenter": self.vcenter, "name": self.name, "kind": self.kind}

    def started(self, task: str) -> None:
        """The creating task's id (cleanup after kill -9 waits for it to learn the id)."""
        self._journal.write("started", task=task, **self._where())

    def created(self, ident: str, ref: Any = None) -> Created:
        """The object exists: its managed object id (or REST id)."""
        self._journal.write("created", moid=ident, **self._where())
        self.result = Created(self.kind, self.name, self.vcenter, ident, ref)
        return self.result

    def failed(self, error: str) -> None:
        """The create call failed (cleanup still looks for the object, then skips it)."""
        self._journal.write("failed", error=error[:300], **self._where())


class RunResources:
    """The vSphere resources of one run: sessions, inventories, shared watchers, journal."""

    def __init__(
        self,
        lab: Lab,
        sessions: SessionPool,
        watcher_for: WatcherFor,
        journal: IndexedJournal,
        run_id: str,
        cancel: threading.Event | None = None,
    ) -> None:
        self.lab, self.sessions, self.journal, self.run_id = lab, sessions, journal, run_id
        self.watcher_for = watcher_for
        self.cancel = cancel or threading.Event()
        self._inventories: dict[str, Inventory] = {}
        self._lock = threading.Lock()

    def inventory(self, vcenter: str, refresh: bool = False) -> Inventory:
        with self._lock:
            inv = None if refresh else self._inventories.get(vcenter)
        if inv is None:
            inv = Inventory.load(self.sessions.get(vcenter))
            with self._lock:
                self._inventories[vcenter] = inv
        return inv

    def for_point(self, placement: ProfilePlacement) -> VSphereResources:
        return VSphereResources(self, placement)


class VSphereResources:
    """What one point's trials may use of vCenter (see the module docstring)."""

    def __init__(self, run: RunResources, placement: ProfilePlacement) -> None:
        self._run = run
        self.placement = placement
        self.run_id = run.run_id

    @property
    def vcenter(self) -> str:
        return self.placement.vcenter

    @property
    def vcenters(self) -> tuple[str, ...]:
        """Every vCenter of the lab (``session(name)`` opens any of them)."""
        return tuple(self._run.lab.vcenters)

    @property
    def journal(self) -> IndexedJournal:
        """The run's cleanup journal (for a driver that journals its own calls)."""
        return self._run.journal

    def datacenter_of(self, vcenter: str | None = None) -> str | None:
        """The datacenter the lab names for a vCenter (the profile's, when it sets one)."""
        if self.placement.datacenter and (vcenter is None or vcenter == self.vcenter):
            return self.placement.datacenter
        return self._run.lab.vcenters[self._vc(vcenter)].datacenter

    def _vc(self, vcenter: str | None) -> str:
        vc = vcenter or self.placement.vcenter
        if vc not in self._run.lab.vcenters:
            known = ", ".join(self._run.lab.vcenters) or "none"
            raise ConfigError(f"no vCenter {vc!r} in the lab (vcenters: {known})")
        return vc

    def session(self, vcenter: str | None = None) -> VSphereSession:
        return self._run.sessions.get(self._vc(vcenter))

    def inventory(self, vcenter: str | None = None, refresh: bool = False) -> Inventory:
        return self._run.inventory(self._vc(vcenter), refresh)

    def watcher(self, vcenter: str | None = None) -> Watcher:
        return self._run.watcher_for(self._vc(vcenter))

    def object_name(self, name: str) -> str:
        """The name vbench gives an object it creates: ``vb-<run id>-<name>``."""
        return vm_name(self.run_id, name)

    def wait_task(
        self, task: Any, target: str, operation: str, vcenter: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """A task's result through the shared watcher (TaskFailed names target + fault);
        gives up with Interrupted when the run is cancelled."""
        return self.watcher(vcenter).wait_task(task, target, operation, self._run.cancel, timeout)

    # --- creating ---------------------------------------------------------------------
    def track(
        self,
        kind: str,
        name: str,
        *,
        vcenter: str | None = None,
        data: Mapping[str, Any] | None = None,
        plugin: str | None = None,
    ) -> Tracked:
        """Journal the intent to create ``name`` of ``kind`` (before the create call)."""
        vc = self._vc(vcenter)
        payload = dict(data or {})
        if plugin:
            payload["plugin"] = plugin
        self._run.journal.write(
            "intent", vcenter=vc, name=name, kind=kind, action="create", data=payload
        )
        return Tracked(self._run.journal, kind, name, vc)

    @contextmanager
    def creating(
        self, kind: str, name: str, *, vcenter: str | None = None,
        data: Mapping[str, Any] | None = None, plugin: str | None = None,
    ) -> Iterator[Tracked]:
        """``track`` as a block: an exception before ``created()`` is journaled as failed."""
        handle = self.track(kind, name, vcenter=vcenter, data=data, plugin=plugin)
        try:
            yield handle
        except BaseException as exc:
            if handle.result is None:
                handle.failed(str(exc) or type(exc).__name__)
            raise

    def create_vm(
        self,
        name: str,
        source: str,
        *,
        vcenter: str | None = None,
        cluster: str | None = None,
        host: str | None = None,
        resource_pool: str | None = None,
        datastore: str | None = None,
        folder: str | None = None,
        network: str | None = None,
        power_on: bool = False,
    ) -> Created:
        """Clone ``source`` (a template or VM) into ``vb-<run id>-<name>``, marked with
        the run id; placement defaults come from the point's profile, then the source's
        (``network``: the port group of the first vNIC)."""
        vc = self._vc(vcenter)
        p = self.placement if vc == self.placement.vcenter else ProfilePlacement(vc)
        spec = VmSpec(
            template=source,
            cluster=cluster or (None if host or resource_pool else p.cluster),
            host=host,
            resource_pool=resource_pool or (None if host or cluster else p.resource_pool),
            datastore=datastore or p.datastore,
            folder=folder or p.folder,
            network=network or p.network,
        )
        datacenter = p.datacenter or self._run.lab.vcenters[vc].datacenter
        placement = resolve_placement(self.inventory(vc), spec, datacenter)
        req = VmRequest("resources", name, self.object_name(name), vc, spec, 0)
        clone = clone_spec(req, placement, self.run_id)
        session = self.session(vc)
        journal = self._run.journal
        journal.write("intent", vcenter=vc, name=req.vm_name, action="clone",
                      source=placement.template.name, keep=False)
        task = session.call(lambda: placement.template.ref.CloneVM_Task(
            folder=placement.folder, name=req.vm_name, spec=clone))
        journal.write("started", vcenter=vc, name=req.vm_name, task=task._moId)
        try:
            vm = self.wait_task(task, f"VM {req.vm_name}", "clone", vc)
        except Exception as exc:
            journal.write("failed", vcenter=vc, name=req.vm_name, error=str(exc)[:300])
            raise
        journal.write("created", vcenter=vc, name=req.vm_name, moid=vm._moId)
        created = Created(VM_KIND, req.vm_name, vc, vm._moId, vm)
        # vCenters that ignore a clone spec's extraConfig (vcsim) get the mark here, with
        # the vNIC moved to the placement's network if it names one.
        devices: list[Any] = []
        if placement.network is not None or spec.disks:
            found = retrieve_refs(session, [vm], {vim.VirtualMachine: ["config.hardware.device"]})
            devices = found[0].get("config.hardware.device", []) if found else []
        net, dvs_uuid = nic_network(session, placement.network)
        marks = mark_options(self.run_id, spec, name)
        config = reconfig_spec(spec, devices, net, dvs_uuid, marks)
        self._vm_step(created, "reconfigure", lambda: vm.ReconfigVM_Task(spec=config))
        if power_on:
            self._vm_step(created, "power on", lambda: vm.PowerOnVM_Task())
        return created

    def _vm_step(self, vm: Created, operation: str, start: Callable[[], Any]) -> Any:
        """One task on a created VM, journaled as provisioning does (cleanup waits for it)."""
        where = {"vcenter": vm.vcenter, "name": vm.name, "op": operation}
        journal = self._run.journal
        journal.write("call", durable=False, **where)
        try:
            task = self.session(vm.vcenter).call(start)
        except BaseException as exc:
            journal.write("task", durable=False, error=str(exc)[:200], **where)
            raise
        journal.write("task", durable=False, task=task._moId, **where)
        return self.wait_task(task, f"VM {vm.name}", operation, vm.vcenter)

    def create_snapshot(
        self, vm: Created, name: str, *, memory: bool = False, description: str = ""
    ) -> Created:
        """Snapshot a VM this run created (never a VM the scenario names as existing)."""
        if vm.kind != VM_KIND or not self._created_here(vm):
            raise ConfigError(
                f"snapshot {name}: {vm.name} was not created by this run (vbench never "
                "changes a VM it did not create)"
            )
        snap_name = self.object_name(name)
        ref = vm.ref or vim.VirtualMachine(vm.moid, self.session(vm.vcenter).stub)
        with self.creating(SNAPSHOT_KIND, snap_name, vcenter=vm.vcenter,
                           data={"vm": vm.moid, "vm_name": vm.name}) as handle:
            task = self.session(vm.vcenter).call(lambda: ref.CreateSnapshot_Task(
                name=snap_name, description=description, memory=memory, quiesce=False))
            handle.started(task._moId)
            snap = self.wait_task(task, f"VM {vm.name}", f"snapshot {snap_name}", vm.vcenter)
            return handle.created(snap._moId, snap)

    def _created_here(self, obj: Created) -> bool:
        item = self._run.journal.item(obj.vcenter, obj.kind, obj.name)
        return item is not None and item.moid == obj.moid and item.state not in FINAL

    # --- removing early -----------------------------------------------------------------
    def destroy(self, obj: Created) -> None:
        """Remove one object this run created now (journaled; LabError on failure)."""
        item = self._run.journal.item(obj.vcenter, obj.kind, obj.name)
        if item is None or item.state in FINAL:
            return
        todo = [item]
        report: CleanupReport = cleanup_journal(
            self._run.sessions.get, self._run.watcher_for, self._run.journal,
            self.run_id, todo, parallel=1, include_kept=True,
        )
        if report.errors or report.skipped:
            raise LabError(f"{obj.kind} {obj.name}", "; ".join(report.errors + report.skipped))

