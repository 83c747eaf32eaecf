"""Provisioning a run's VMs: clone, reconfigure, customize, power on, wait for an IP.

Each VM goes through its steps in a worker; at most ``parallel`` VMs are in flight
(default 8) and every task of every worker is awaited through one
:class:`~vbench.vsphere.tasks.Watcher`. Before each create the intent is journaled; a
failure stops new VMs from starting, lets the others finish their current step, and is
raised naming the VM, the operation and vCenter's fault. Existing VMs named by a
scenario are only read. Cleanup is :mod:`vbench.vsphere.cleanup`'s job.

:meth:`Provisioner.prepare` may be given every VM the run can need before
:meth:`~Provisioner.provision` makes some of them: placements and pool addresses are
then fixed for the run (a VM destroyed between points and cloned again gets its
address back).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyVmomi import vim

from vbench.config.lab import Lab
from vbench.errors import Interrupted, LabError
from vbench.vsphere.connection import SessionPool, VSphereSession
from vbench.vsphere.disks import added_slots, disk_uuids
from vbench.vsphere.inventory import Inventory, Obj, retrieve_refs
from vbench.vsphere.journal import Journal
from vbench.vsphere.library_deploy import LibraryDeploying
from vbench.vsphere.spbm import resolve_policies
from vbench.vsphere.specs import (
    KEEP_KEY,
    MARK_KEY,
    Placement,
    VmRequest,
    clone_spec,
    customization_spec,
    expand_addresses,
    mark_options,
    reconfig_spec,
    resolve_placement,
)
from vbench.vsphere.tasks import TaskFailed, Watcher, ip_known, wait_future

Notice = Callable[[str], None]


@dataclass(frozen=True)
class ProvisionedVm:
    group: str
    guest: str
    vm_name: str
    vcenter: str
    moid: str
    ip: str
    created: bool  # vbench created it in this run (and will remove it unless kept)
    kept: bool = False
    ref: Any = field(default=None, compare=False, repr=False)


@dataclass
class _VcState:
    """Per-vCenter state shared by the workers."""

    session: VSphereSession
    watcher: Watcher
    inventory: Inventory
    mark_field: int | None = None
    placements: dict[str, Placement] = field(default_factory=dict)
    addresses: list[str] = field(default_factory=list)
    ip_for: dict[str, str] = field(default_factory=dict)  # VM name -> pool address
    policy_ids: dict[str, str] = field(default_factory=dict)  # storage policy -> profile id


def custom_field_key(session: VSphereSession, name: str) -> int | None:
    """The key of the VM custom attribute ``name``, defining it when missing; None when
    custom attributes are not available (the extraConfig mark still holds)."""
    cfm = session.content.customFieldsManager
    if cfm is None:
        return None

    def find() -> int | None:
        for f in cfm.field or ():
            if f.name == name and f.managedObjectType in (None, vim.VirtualMachine):
                return int(f.key)
        return None

    key = session.call(find)
    if key is not None:
        return key
    with contextlib.suppress(vim.fault.DuplicateName):
        return int(session.call(lambda: cfm.AddCustomFieldDef(name, vim.VirtualMachine)).key)
    return session.call(find)


class Provisioner(LibraryDeploying):
    """Creates (or finds) the VMs of a run; remembers what it did for cleanup."""

    def __init__(
        self,
        sessions: SessionPool,
        lab: Lab,
        journal: Journal,
        run_id: str,
        *,
        parallel: int = 8,
        cancel: threading.Event | None = None,
        notice: Notice | None = None,
        watcher_for: Callable[[str], Watcher] | None = None,
    ) -> None:
        self.sessions, self.lab, self.journal, self.run_id = sessions, lab, journal, run_id
        # The run's shared watchers when given (closed by their owner), else our own.
        self._watcher_for = watcher_for
        self.parallel = max(1, parallel)
        self.cancel = cancel or threading.Event()
        self.notice = notice or (lambda _m: None)
        self._vcs: dict[str, _VcState] = {}
        self._failed = threading.Event()
        # Clones (long: a disk copy) and the short steps after them (reconfigure,
        # customize, power on) have a budget of `parallel` tasks each, so that a VM's
        # power-on never queues behind other VMs' clones.
        self._clone_slots = threading.BoundedSemaphore(self.parallel)
        self._step_slots = threading.BoundedSemaphore(self.parallel)
        self.results: list[ProvisionedVm] = []
        # VM name -> uuids of the data disks its reconfigure added (vm.disks order).
        self.disk_uuids: dict[str, tuple[str, ...]] = {}

    # --- per vCenter -------------------------------------------------------------------
    def state(self, vcenter: str) -> _VcState:
        st = self._vcs.get(vcenter)
        if st is None:
            session = self.sessions.get(vcenter)
            watcher = self._watcher_for(vcenter) if self._watcher_for else Watcher(session)
            st = _VcState(session, watcher, Inventory.load(session))
            pool = self.lab.vcenters[vcenter].ip_pool
            if pool is not None:
                used = {o.get("guest.ipAddress") for o in st.inventory.candidates("vm")}
                st.addresses = [a for a in expand_addresses(pool.addresses) if a not in used]
            self._vcs[vcenter] = st
        return st

    def watchers(self) -> dict[str, Watcher]:
        return {name: st.watcher for name, st in self._vcs.items()}

    def close(self) -> None:
        self.close_library_sessions()
        if self._watcher_for is None:
            for st in self._vcs.values():
                st.watcher.close()

    # --- the run's VMs -----------------------------------------------------------------
    def prepare(self, requests: Sequence[VmRequest]) -> None:
        """Resolve placements, policies and pool addresses (once per VM, in request order)."""
        for vc in dict.fromkeys(r.vcenter for r in requests):
            self._prepare(vc, [r for r in requests if r.vcenter == vc])

    def provision(self, requests: Sequence[VmRequest]) -> list[ProvisionedVm]:
        """All VMs of ``requests``, in request order; raises the first failure."""
        self.prepare(requests)
        self._failed.clear()  # a failure stops its own batch, not a later one
        created = [r for r in requests if not r.existing]
        if created:
            self.notice(f"provisioning {len(created)} VMs ({self.parallel} at a time)")
        # Every VM advances on its own; `parallel` bounds the vCenter tasks in flight
        # (see _task), so a VM powering on never holds up another one's clone.
        workers = max(1, min(len(requests), 4 * self.parallel))
        with ThreadPoolExecutor(workers, thread_name_prefix="vbench-prov") as pool:
            futures = [pool.submit(self._one, r) for r in requests]
            errors: list[BaseException] = []
            results: list[ProvisionedVm | None] = []
            for f in futures:
                try:
                    results.append(f.result())
                except BaseException as exc:
                    errors.append(exc)
                    results.append(None)
        if self.cancel.is_set():
            raise Interrupted("interrupted while provisioning")
        if errors:
            first = next((e for e in errors if not isinstance(e, Interrupted)), errors[0])
            if len(errors) > 1:
                first.add_note(f"{len(errors) - 1} more VM(s) failed too")
            raise first
        out = [r for r in results if r is not None]
        self.results = out
        return out

    def _prepare(self, vcenter: str, requests: Sequence[VmRequest]) -> None:
        st = self.state(vcenter)
        lab_dc = self.lab.vcenters[vcenter].datacenter
        if st.mark_field is None and any(not r.existing for r in requests):
            st.mark_field = custom_field_key(st.session, MARK_KEY)
        policies = [d.storage_policy for r in requests if not r.existing
                    for d in r.spec.disks if d.storage_policy
                    and d.storage_policy not in st.policy_ids]  # fmt: skip
        if policies:
            resolved = resolve_policies(st.session, policies)
            st.policy_ids.update({n: p.profile_id for n, p in resolved.items()})
        pool = self.lab.vcenters[vcenter].ip_pool
        for r in requests:
            if r.existing:
                continue
            if r.group not in st.placements:
                dc = r.datacenter or lab_dc
                st.placements[r.group] = resolve_placement(st.inventory, r.spec, dc)
            if pool is not None and r.vm_name not in st.ip_for:
                # Assigned in request order, so the n-th guest always gets the n-th address.
                if not st.addresses:
                    raise LabError(f"vcenter {vcenter}", "ip_pool has no free address left")
                st.ip_for[r.vm_name] = st.addresses.pop(0)

    def _one(self, req: VmRequest) -> ProvisionedVm:
        if self.cancel.is_set() or self._failed.is_set():
            raise Interrupted("not started")
        try:
            if req.existing:
                return self._existing(req)
            if req.spec.library_item is not None:  # see vbench.vsphere.library_deploy
                return self._deploy(req)
            return self._clone(req)
        except BaseException:
            self._failed.set()
            raise

    # --- existing and kept VMs: used as they are ---------------------------------------
    def _existing(self, req: VmRequest) -> ProvisionedVm:
        st = self.state(req.vcenter)
        dc = st.inventory.datacenter(req.datacenter or self.lab.vcenters[req.vcenter].datacenter)
        vm = st.inventory.find("vm", req.vm_name, dc)
        if vm.get("runtime.powerState") != "poweredOn":
            raise LabError(
                f"VM {req.vm_name}",
                "is powered off (vbench never changes a VM it did not create: power it on)",
            )
        ip = self._wait_ip(st, vm.ref, req)
        return ProvisionedVm(
            req.group, req.guest, req.vm_name, req.vcenter, vm.moid, ip, False, ref=vm.ref
        )

    def _kept(self, st: _VcState, req: VmRequest) -> Obj | None:
        """A VM an earlier run kept for this scenario's guest, if it is really ours."""
        hits = [o for o in st.inventory.candidates("vm") if o.name == req.vm_name]
        if len(hits) != 1:
            return None
        extra = retrieve_refs(
            st.session, [hits[0].ref], {vim.VirtualMachine: ["config.extraConfig"]}
        )
        marks = {
            o.key: o.value for o in (extra[0].get("config.extraConfig") if extra else ()) or ()
        }
        return hits[0] if marks.get(KEEP_KEY) == req.guest and marks.get(MARK_KEY) else None

    # --- clones --------------------------------------------------------------------------
    def _clone(self, req: VmRequest) -> ProvisionedVm:
        st = self.state(req.vcenter)
        label = f"VM {req.vm_name}"
        if req.spec.keep:
            kept = self._kept(st, req)
            if kept is not None:
                return self._reuse(st, req, kept)
        placement = st.placements[req.group]
        snapshot = self._snapshot(st, placement, req) if req.spec.linked else None
        spec = clone_spec(req, placement, self.run_id, snapshot)
        with self._slot(self._clone_slots):
            if self.cancel.is_set():
                raise Interrupted("interrupted")
            # Journaled right before the call (not before waiting for a slot): an intent
            # always means a clone that may exist, so an interrupted wait leaves none that
            # cleanup would have to treat as a clone still on its way.
            self.journal.write(
                "intent",
                vcenter=req.vcenter,
                name=req.vm_name,
                action="clone",
                source=placement.template.name,
                group=req.group,
                keep=req.spec.keep,
            )
            task = st.session.call(
                lambda: placement.template.ref.CloneVM_Task(
                    folder=placement.folder, name=req.vm_name, spec=spec
                )
            )
            self.journal.write("started", vcenter=req.vcenter, name=req.vm_name, task=task._moId)
            try:
                vm = st.watcher.wait_task(task, label, "clone", self.cancel)
            except TaskFailed as exc:
                self.journal.write("failed", vcenter=req.vcenter, name=req.vm_name, error=str(exc))
                raise
        self.journal.write("created", vcenter=req.vcenter, name=req.vm_name, moid=vm._moId)
        if st.mark_field is not None:
            with contextlib.suppress(vim.fault.NoPermission):
                st.session.call(
                    lambda: st.session.content.customFieldsManager.SetField(
                        vm, st.mark_field, self.run_id
                    )
                )
        self._configure(st, req, vm, placement)
        self._step(st, req, "power on", lambda: vm.PowerOnVM_Task())
        ip = self._wait_ip(st, vm, req)
        return ProvisionedVm(
            req.group,
            req.guest,
            req.vm_name,
            req.vcenter,
            vm._moId,
            ip,
            True,
            kept=req.spec.keep,
            ref=vm,
        )

    def _reuse(self, st: _VcState, req: VmRequest, vm: Obj) -> ProvisionedVm:
        self.journal.write("reused", vcenter=req.vcenter, name=req.vm_name, moid=vm.moid)
        if vm.get("runtime.powerState") != "poweredOn":
            self._step(st, req, "power on", lambda: vm.ref.PowerOnVM_Task(), journaled=False)
        ip = self._wait_ip(st, vm.ref, req)
        return ProvisionedVm(
            req.group,
            req.guest,
            req.vm_name,
            req.vcenter,
            vm.moid,
            ip,
            False,
            kept=True,
            ref=vm.ref,
        )

    def _snapshot(self, st: _VcState, placement: Placement, req: VmRequest) -> Any:
        objs = retrieve_refs(
            st.session, [placement.template.ref], {vim.VirtualMachine: ["snapshot.currentSnapshot"]}
        )
        snap = objs[0].get("snapshot.currentSnapshot") if objs else None
        if snap is None:
            raise LabError(
                f"template {placement.template.name}",
                "a linked clone needs a snapshot of it (take one, or set linked: false)",
            )
        return snap

    def _configure(self, st: _VcState, req: VmRequest, vm: Any, placement: Placement) -> None:
        hardware: Sequence[Any] = ()
        want = req.spec
        if want.nic_type or want.scsi_type or want.disks or placement.network is not None:
            props = {vim.VirtualMachine: ["config.hardware.device"]}
            devices = retrieve_refs(st.session, [vm], props)
            hardware = devices[0].get("config.hardware.device", ()) if devices else ()
        network, dvs_uuid = self._nic_network(st, placement.network)
        marks = mark_options(self.run_id, req.spec, req.guest)
        config = reconfig_spec(req.spec, hardware, network, dvs_uuid, marks, st.policy_ids)
        if config is not None:
            self._step(st, req, "reconfigure", lambda: vm.ReconfigVM_Task(spec=config))
            if want.disks:  # read back: vCenter gives each created disk its uuid
                after = retrieve_refs(st.session, [vm], props)
                now = after[0].get("config.hardware.device", ()) if after else ()
                self.disk_uuids[req.vm_name] = disk_uuids(now, added_slots(config, hardware))
        pool = self.lab.vcenters[req.vcenter].ip_pool
        if pool is not None:
            spec = customization_spec(req.vm_name, st.ip_for[req.vm_name], pool)
            self._step(st, req, "customize", lambda: vm.CustomizeVM_Task(spec=spec))

    def _nic_network(self, st: _VcState, network: Obj | None) -> tuple[Obj | None, str | None]:
        return nic_network(st.session, network)

    def _step(
        self,
        st: _VcState,
        req: VmRequest,
        operation: str,
        start: Callable[[], Any],
        journaled: bool = True,
    ) -> Any:
        """One task on a VM; a VM this run created has the call and its task journaled,
        so that cleanup can wait for them before destroying it."""
        with self._slot(self._step_slots):
            if self.cancel.is_set():
                raise Interrupted("interrupted")
            where = {"vcenter": req.vcenter, "name": req.vm_name, "op": operation}
            if journaled:
                self.journal.write("call", durable=False, **where)
            try:
                task = st.session.call(start)
            except BaseException as exc:
                if journaled:  # refused outright: there is no task for cleanup to await
                    self.journal.write("task", durable=False, error=str(exc)[:200], **where)
                raise
            if journaled:
                self.journal.write("task", durable=False, task=task._moId, **where)
            return st.watcher.wait_task(task, f"VM {req.vm_name}", operation, self.cancel)

    @contextlib.contextmanager
    def _slot(self, slots: threading.BoundedSemaphore) -> Iterator[None]:
        """A task slot, held from the call that starts a task to the task's end."""
        while not slots.acquire(timeout=0.2):
            if self.cancel.is_set():
                raise Interrupted("interrupted")
        try:
            yield
        finally:
            slots.release()

    def _wait_ip(self, st: _VcState, vm: Any, req: VmRequest) -> str:
        future = st.watcher.watch(vm, ip_known)
        try:
            return str(wait_future(future, self.cancel, req.spec.ip_timeout))
        except TimeoutError:
            st.watcher.forget(vm)
            raise LabError(
                f"VM {req.vm_name}",
                f"VMware Tools reported no IPv4 address within {req.spec.ip_timeout:g}s "
                "(are Tools installed and the NIC connected? raise vm.ip_timeout if it boots "
                "slowly)",
            ) from None


def nic_network(session: VSphereSession, network: Obj | None) -> tuple[Obj | None, str | None]:
    """The network with what a vNIC backing needs (a DV port group's key and switch)."""
    if network is None or network.kind != "DistributedVirtualPortgroup":
        return network, None
    pg = retrieve_refs(
        session,
        [network.ref],
        {vim.dvs.DistributedVirtualPortgroup: ["key", "config.distributedVirtualSwitch"]},
    )
    if not pg:
        return network, None
    switch = pg[0].get("config.distributedVirtualSwitch")
    sw = retrieve_refs(session, [switch], {vim.DistributedVirtualSwitch: ["uuid"]})
    return Obj(network.ref, {**network.props, **pg[0].props}), (
        sw[0].get("uuid") if sw else None
    )
