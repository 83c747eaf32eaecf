"""vCenter management operations for throughput runs ("vcbench"), one session each.

An :class:`Operator` is one logged-in session issuing operations on the VMs it leases
exclusively (:class:`Lease`): power on/off, full and linked clones, relocation to another
host (vMotion) or datastore (storage vMotion), reconfiguration (CPU, memory, annotation),
unregister/register, snapshot create/remove/revert, create and destroy. Which operations
are legal depends on the lease's state (:func:`legal_ops`): no power-on of a running VM,
no snapshot removal without a snapshot, no destroy without a spare VM to destroy.

Every task is awaited through the vCenter's one shared
:class:`~vbench.vsphere.tasks.Watcher` (never a polling loop per task). Each operation
gives an :class:`OpRecord` — (op, start, end, ok, fault) — and a failed task is a record
with vCenter's fault message, never an exception: a throughput run counts failures, it
does not stop on them. Everything created (clones, new VMs) is named ``vb-<run>-…``,
marked with the run id in ``extraConfig`` and journaled before the call, so cleanup (at
run end or ``vbench cleanup RUN`` after a kill) removes it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pyVmomi import vim

from vbench.errors import Interrupted
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.faults import fault_name, fault_text
from vbench.vsphere.inventory import retrieve_refs
from vbench.vsphere.journal import Journal
from vbench.vsphere.specs import MARK_KEY
from vbench.vsphere.tasks import UNREAD, Watcher, task_done, wait_future

OPS: tuple[str, ...] = (
    "power_on",
    "power_off",
    "clone_full",
    "clone_linked",
    "relocate_host",
    "relocate_datastore",
    "reconfigure_cpu",
    "reconfigure_memory",
    "reconfigure_annotation",
    "register",
    "unregister",
    "snapshot_create",
    "snapshot_remove",
    "snapshot_revert",
    "create",
    "destroy",
)
MAX_SNAPSHOTS = 3  # per leased VM: a snapshot chain stays short, as in customer use
TASK_TIMEOUT = 600.0  # an operation that takes longer is recorded as failed


@dataclass(frozen=True)
class OpRecord:
    """One operation: when it was issued and when vCenter said it had finished."""

    op: str
    session: int
    vcenter: str
    vm: str
    start: float  # epoch seconds, just before the call that starts the task
    end: float  # epoch seconds, when the shared watcher saw the task finish
    ok: bool
    fault_type: str | None = None  # e.g. DuplicateName; None when it succeeded
    fault: str | None = None  # vCenter's fault message, one line
    task: str | None = None  # the task's managed object id (None: not a task, or refused)

    @property
    def latency(self) -> float:
        return self.end - self.start

    @property
    def registered_already(self) -> str | None:
        """The VM's managed object id when a register failed because the VM is registered
        already (an earlier call vCenter carried out though its answer was lost, or one
        still on the wire when a trial was cancelled): it is back, as wanted."""
        found = re.search(r"name=(vm-\d+)", self.fault or "")
        return found.group(1) if self.fault_type == "AlreadyExists" and found else None


@dataclass(frozen=True)
class Site:
    """Where one vCenter's operations place VMs: resource pool, folder, the hosts of
    the pool's cluster (vMotion targets) and the datastores (storage vMotion targets)."""

    vcenter: str
    pool: Any
    folder: Any
    hosts: tuple[Any, ...]
    datastores: tuple[tuple[str, Any], ...]  # (name, ref)


@dataclass
class VmState:
    """What an operator knows of a VM it leases (it is the only one changing it)."""

    name: str
    ref: Any
    powered_on: bool = False
    host: Any = None
    datastore: str | None = None
    cpus: int = 1
    memory_mb: int = 256
    snapshots: list[Any] = field(default_factory=list)  # oldest first
    vmx: str | None = None  # set while unregistered


@dataclass
class Lease:
    """The VMs one session may touch: its home VM and the spares it created."""

    home: VmState
    spares: list[VmState] = field(default_factory=list)
    unregistered: list[VmState] = field(default_factory=list)
    created: int = 0  # clones and new VMs so far (names stay unique)
    max_spares: int = 2


def legal_ops(lease: Lease, site: Site) -> list[str]:
    """The operations the lease's current state allows."""
    home = lease.home
    room = len(lease.spares) + len(lease.unregistered) < lease.max_spares
    legal = {
        "power_on": not home.powered_on,
        "power_off": home.powered_on,
        "clone_full": room,
        "clone_linked": room and bool(home.snapshots),
        "relocate_host": len(site.hosts) > 1,
        "relocate_datastore": len(site.datastores) > 1,
        # CPU and memory change with the VM off (hot-add is off by default).
        "reconfigure_cpu": not home.powered_on,
        "reconfigure_memory": not home.powered_on,
        "reconfigure_annotation": True,
        "register": bool(lease.unregistered),
        "unregister": bool(lease.spares),
        "snapshot_create": len(home.snapshots) < MAX_SNAPSHOTS,
        "snapshot_remove": bool(home.snapshots),
        "snapshot_revert": bool(home.snapshots),
        "create": room,
        "destroy": bool(lease.spares),
    }
    return [op for op in OPS if legal[op]]


def mark(run_id: str) -> list[Any]:
    return [vim.option.OptionValue(key=MARK_KEY, value=run_id)]


class Operator:
    """One session's operations on its lease; tasks awaited through the shared watcher."""

    def __init__(
        self,
        index: int,
        session: VSphereSession,
        watcher: Watcher,
        site: Site,
        journal: Journal,
        run_id: str,
        prefix: str,
        cancel: threading.Event,
    ) -> None:
        self.index, self.session, self.watcher, self.site = index, session, watcher, site
        self.journal, self.run_id, self.prefix, self.cancel = journal, run_id, prefix, cancel
        self.vc = site.vcenter
        # Steps (power, relocate, reconfigure, snapshots) are not journaled by default:
        # hundreds a second from every session would queue on the run's one journal lock
        # behind the durable writes of clone intents. Cleanup needs no step entries to be
        # safe: it waits for the tasks running on a VM before destroying it, and a step
        # still on the wire when a run is killed creates nothing (every create is
        # journaled, durably, before its call).
        self.journal_steps = False

    # --- one operation ---------------------------------------------------------------
    def run(self, op: str, lease: Lease) -> OpRecord:
        """Issue ``op`` on ``lease`` (legal for its state) and wait for it to finish."""
        handler: Callable[[Lease], OpRecord] = getattr(self, f"_op_{op}")
        rec = handler(lease)
        if not rec.ok and rec.fault_type == "InvalidPowerState":
            # Our idea of the VM's power state was wrong (changed behind our back):
            # read it again, or every later choice would fail the same way.
            with contextlib.suppress(Exception):
                self._read_power(lease.home)
        return rec

    def own(self, ref: Any) -> Any:
        """``ref`` bound to this operator's session: every call it makes on an object
        goes through its own login, as a separate client's would."""
        if ref is None or getattr(ref, "_stub", None) is self.session.stub:
            return ref
        return type(ref)(ref._moId, self.session.stub)

    def adopt(self, lease: Lease) -> Lease:
        """Bind the lease's objects to this session (they were read by another one)."""
        for vm in (lease.home, *lease.spares):
            vm.ref = self.own(vm.ref)
            vm.snapshots = [self.own(s) for s in vm.snapshots]
        return lease

    def _read_power(self, vm: VmState) -> None:
        props = {vim.VirtualMachine: ["runtime.powerState"]}
        now = retrieve_refs(self.session, [vm.ref], props)
        if now:
            vm.powered_on = now[0].get("runtime.powerState") == "poweredOn"

    def _timed(
        self,
        op: str,
        vm: VmState,
        start_call: Callable[[], Any],
        *,
        is_task: bool = True,
        journaled: bool | None = None,
    ) -> tuple[OpRecord, Any]:
        """Start the call, await its task through the watcher; (record, task result).

        A refused call or a failed task makes a failed record with vCenter's fault; the
        result is read (one more call, outside the timed span) only when ``is_task``."""
        where = {"vcenter": self.vc, "name": vm.name, "op": op}
        if journaled is None:
            journaled = self.journal_steps
        if journaled:  # cleanup waits for a step still on the wire before destroying
            self.journal.write("call", durable=False, **where)
        start = time.time()
        try:
            task = self.session.call(start_call)
        except Interrupted:
            raise
        except Exception as exc:
            end = time.time()
            if journaled:
                self.journal.write("task", durable=False, error=fault_text(exc)[:200], **where)
            return self._failed(op, vm, start, end, exc), None
        if not is_task:
            if journaled:
                self.journal.write("task", durable=False, **where)
            return OpRecord(op, self.index, self.vc, vm.name, start, time.time(), True), task
        if journaled:
            self.journal.write("task", durable=False, task=task._moId, **where)
        try:
            state, value = wait_future(
                self.watcher.watch(task, task_done), self.cancel, TASK_TIMEOUT, task_ref=task
            )
        except TimeoutError:
            self.watcher.forget(task)
            end = time.time()
            msg = f"no answer within {TASK_TIMEOUT:g}s"
            rec = OpRecord(op, self.index, self.vc, vm.name, start, end, False, "Timeout", msg)
            return rec, None
        end = time.time()
        ident = task._moId
        if value is UNREAD:  # read on this session: the shared one serves every waiter
            path = "info.result" if state == "success" else "info.error"
            value = None
            with contextlib.suppress(Exception):
                found = retrieve_refs(self.session, [self.own(task)], {vim.Task: [path]})
                value = found[0].get(path) if found else None
        if state == "error":
            return replace(self._failed(op, vm, start, end, value), task=ident), None
        return OpRecord(op, self.index, self.vc, vm.name, start, end, True, task=ident), value

    def _failed(self, op: str, vm: VmState, start: float, end: float, fault: Any) -> OpRecord:
        kind = fault_name(fault) if fault is not None else "Unknown"
        text = fault_text(fault) if fault is not None else "the task failed (no fault given)"
        return OpRecord(op, self.index, self.vc, vm.name, start, end, False, kind, text)

    # --- power -----------------------------------------------------------------------
    def _op_power_on(self, lease: Lease) -> OpRecord:
        vm = lease.home
        rec, _ = self._timed("power_on", vm, lambda: vm.ref.PowerOnVM_Task())
        vm.powered_on = vm.powered_on or rec.ok
        return rec

    def _op_power_off(self, lease: Lease) -> OpRecord:
        vm = lease.home
        rec, _ = self._timed("power_off", vm, lambda: vm.ref.PowerOffVM_Task())
        vm.powered_on = vm.powered_on and not rec.ok
        return rec

    # --- provisioning ----------------------------------------------------------------
    def _spare_name(self, lease: Lease) -> str:
        lease.created += 1
        return f"{self.prefix}-s{self.index}-{lease.created}"

    def _create_journaled(
        self, op: str, lease: Lease, name: str, start_call: Callable[[], Any], source: str
    ) -> OpRecord:
        """Clone or create: intent journaled (durably) before the call, the task and the
        new VM after it, so cleanup finds the VM whatever instant the run dies at."""
        self.journal.write("intent", vcenter=self.vc, name=name, action=op, source=source)
        holder = VmState(name, None)

        def call() -> Any:
            task = start_call()
            self.journal.write("started", vcenter=self.vc, name=name, task=task._moId)
            return task

        rec, result = self._timed(op, holder, call, journaled=False)
        if rec.ok and result is not None:
            self.journal.write("created", vcenter=self.vc, name=name, moid=result._moId)
            lease.spares.append(
                VmState(name, self.own(result), datastore=self.site.datastores[0][0])
            )
        elif not rec.ok:
            self.journal.write("failed", vcenter=self.vc, name=name, error=rec.fault)
        return rec

    def _clone(self, lease: Lease, linked: bool) -> OpRecord:
        home = lease.home
        name = self._spare_name(lease)
        location = vim.vm.RelocateSpec(pool=self.site.pool)
        spec = vim.vm.CloneSpec(
            location=location,
            powerOn=False,
            template=False,
            config=vim.vm.ConfigSpec(extraConfig=mark(self.run_id)),
        )
        if linked:
            location.diskMoveType = "createNewChildDiskBacking"
            spec.snapshot = home.snapshots[-1]
        op = "clone_linked" if linked else "clone_full"
        return self._create_journaled(
            op,
            lease,
            name,
            lambda: home.ref.CloneVM_Task(folder=self.site.folder, name=name, spec=spec),
            home.name,
        )

    def _op_clone_full(self, lease: Lease) -> OpRecord:
        return self._clone(lease, linked=False)

    def _op_clone_linked(self, lease: Lease) -> OpRecord:
        return self._clone(lease, linked=True)

    def _op_create(self, lease: Lease) -> OpRecord:
        name = self._spare_name(lease)
        ds = self.site.datastores[0][0]
        config = vim.vm.ConfigSpec(
            name=name,
            guestId="otherGuest64",
            numCPUs=1,
            memoryMB=128,
            files=vim.vm.FileInfo(vmPathName=f"[{ds}]"),
            extraConfig=mark(self.run_id),
        )
        return self._create_journaled(
            "create",
            lease,
            name,
            lambda: self.site.folder.CreateVM_Task(config=config, pool=self.site.pool),
            "(new)",
        )

    def _op_destroy(self, lease: Lease) -> OpRecord:
        vm = lease.spares[0]
        rec, _ = self._timed("destroy", vm, lambda: vm.ref.Destroy_Task())
        if rec.ok:
            lease.spares.pop(0)
            self.journal.write("destroyed", vcenter=self.vc, name=vm.name, moid=vm.ref._moId)
        return rec

    def _op_unregister(self, lease: Lease) -> OpRecord:
        vm = lease.spares[0]
        found = retrieve_refs(self.session, [vm.ref], {vim.VirtualMachine: ["config.files"]})
        vmx = getattr(found[0].get("config.files") if found else None, "vmPathName", None)
        if not vmx:  # without its path it could not be registered again: leave it be
            now = time.time()
            msg = f"cannot read the path of {vm.name} (config.files.vmPathName)"
            return OpRecord("unregister", self.index, self.vc, vm.name, now, now, False,
                            "NoPath", msg)
        rec, _ = self._timed("unregister", vm, lambda: vm.ref.UnregisterVM(), is_task=False)
        if rec.ok:
            lease.spares.pop(0)
            vm.vmx = vmx
            lease.unregistered.append(vm)
            self.journal.write("unregistered", vcenter=self.vc, name=vm.name, vmx=vm.vmx)
        return rec

    def _op_register(self, lease: Lease) -> OpRecord:
        vm = lease.unregistered[0]
        # The VM comes back as a new object: journaled like a create (intent first, then
        # the task), so cleanup recognises it whenever the run stops.
        self.journal.write("intent", vcenter=self.vc, name=vm.name, action="register",
                           source=vm.vmx)

        def call() -> Any:
            task = self.site.folder.RegisterVM_Task(
                path=vm.vmx, name=vm.name, asTemplate=False, pool=self.site.pool
            )
            self.journal.write("started", vcenter=self.vc, name=vm.name, task=task._moId)
            return task

        rec, result = self._timed("register", vm, call, journaled=False)
        if not rec.ok:
            # Registered already (an earlier call vCenter carried out though its answer
            # was lost): the fault names the VM, which is ours again. Any other failure:
            # give the VM up rather than fail on it forever (cleanup still looks for it).
            if rec.registered_already:
                result = vim.VirtualMachine(rec.registered_already, self.session.stub)
            else:
                lease.unregistered.pop(0)
                return rec
        if result is not None:
            lease.unregistered.pop(0)
            vm.ref, vm.vmx = self.own(result), None
            lease.spares.append(vm)
            self.journal.write("created", vcenter=self.vc, name=vm.name, moid=result._moId)
        return rec

    # --- relocation ------------------------------------------------------------------
    def _op_relocate_host(self, lease: Lease) -> OpRecord:
        vm = lease.home
        hosts = self.site.hosts
        current = next((i for i, h in enumerate(hosts) if h == vm.host), -1)
        target = hosts[(current + 1 + self.index) % len(hosts)]
        if target == vm.host:
            target = hosts[(current + 1) % len(hosts)]
        spec = vim.vm.RelocateSpec(host=target, pool=self.site.pool)
        rec, _ = self._timed("relocate_host", vm, lambda: vm.ref.RelocateVM_Task(spec=spec))
        if rec.ok:
            vm.host = target
        return rec

    def _op_relocate_datastore(self, lease: Lease) -> OpRecord:
        vm = lease.home
        names = [n for n, _ in self.site.datastores]
        current = names.index(vm.datastore) if vm.datastore in names else -1
        name, ref = self.site.datastores[(current + 1) % len(names)]
        spec = vim.vm.RelocateSpec(datastore=ref)
        rec, _ = self._timed("relocate_datastore", vm, lambda: vm.ref.RelocateVM_Task(spec=spec))
        if rec.ok:
            vm.datastore = name
        return rec

    # --- reconfiguration ---------------------------------------------------------------
    def _reconfigure(self, op: str, vm: VmState, spec: Any) -> OpRecord:
        rec, _ = self._timed(op, vm, lambda: vm.ref.ReconfigVM_Task(spec=spec))
        return rec

    def _op_reconfigure_cpu(self, lease: Lease) -> OpRecord:
        vm = lease.home
        cpus = 2 if vm.cpus == 1 else 1
        rec = self._reconfigure("reconfigure_cpu", vm, vim.vm.ConfigSpec(numCPUs=cpus))
        vm.cpus = cpus if rec.ok else vm.cpus
        return rec

    def _op_reconfigure_memory(self, lease: Lease) -> OpRecord:
        vm = lease.home
        memory = 512 if vm.memory_mb == 256 else 256
        rec = self._reconfigure("reconfigure_memory", vm, vim.vm.ConfigSpec(memoryMB=memory))
        vm.memory_mb = memory if rec.ok else vm.memory_mb
        return rec

    def _op_reconfigure_annotation(self, lease: Lease) -> OpRecord:
        text = f"vbench run {self.run_id}: session {self.index} at {time.time():.3f}"
        return self._reconfigure(
            "reconfigure_annotation", lease.home, vim.vm.ConfigSpec(annotation=text)
        )

    # --- snapshots ---------------------------------------------------------------------
    def _op_snapshot_create(self, lease: Lease) -> OpRecord:
        vm = lease.home
        name = f"vbench-{len(vm.snapshots) + 1}"
        rec, snap = self._timed(
            "snapshot_create",
            vm,
            lambda: vm.ref.CreateSnapshot_Task(
                name=name, description=f"vbench run {self.run_id}", memory=False, quiesce=False
            ),
        )
        if rec.ok and snap is not None:
            vm.snapshots.append(self.own(snap))
        return rec

    def _op_snapshot_remove(self, lease: Lease) -> OpRecord:
        vm = lease.home
        snap = vm.snapshots[-1]
        rec, _ = self._timed(
            "snapshot_remove", vm, lambda: snap.RemoveSnapshot_Task(removeChildren=False)
        )
        if rec.ok:
            vm.snapshots.pop()
        return rec

    def _op_snapshot_revert(self, lease: Lease) -> OpRecord:
        vm = lease.home
        snap = vm.snapshots[-1]
        rec, _ = self._timed("snapshot_revert", vm, lambda: snap.RevertToSnapshot_Task())
        if rec.ok:
            # The VM comes back in the snapshot's power state: ask, untimed.
            self._read_power(vm)
        return rec


def read_vm_states(session: VSphereSession, refs: Sequence[Any]) -> list[VmState]:
    """The current state of VMs (power, host, datastore, size, snapshots) in one read."""
    props = [
        "name",
        "runtime.powerState",
        "runtime.host",
        "config.hardware.numCPU",
        "config.hardware.memoryMB",
        "datastore",
        "snapshot",
    ]
    out = []
    for o in retrieve_refs(session, list(refs), {vim.VirtualMachine: props}):
        ds = o.get("datastore") or []
        snaps: list[Any] = []
        tree = getattr(o.get("snapshot"), "rootSnapshotList", None) or []
        while tree:  # the chain vbench would build is linear: follow the first child
            snaps.append(tree[0].snapshot)
            tree = tree[0].childSnapshotList or []
        ds_name = None
        if ds:
            named = retrieve_refs(session, [ds[0]], {vim.Datastore: ["name"]})
            ds_name = named[0].name if named else None
        out.append(
            VmState(
                o.name,
                o.ref,
                powered_on=o.get("runtime.powerState") == "poweredOn",
                host=o.get("runtime.host"),
                datastore=ds_name,
                cpus=int(o.get("config.hardware.numCPU") or 1),
                memory_mb=int(o.get("config.hardware.memoryMB") or 256),
                snapshots=snaps,
            )
        )
    return out
