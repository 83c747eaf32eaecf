"""Topology VMs deployed from a content library item instead of cloned from a template.

A `vm:` group with ``library_item`` + ``library`` gets each VM from that item through
the vSphere Automation REST API (:mod:`content_library_deploy`: an OVF item's
``vcenter/ovf/library-item`` deploy, a VM-template item's
``vcenter/vm-template/library-items`` deploy) into the group's placement — pool, host
(one per VM when ``spread``), folder, datastore — and then goes through the steps a
clone goes through, so it has the same guarantees:

- the intent (``action: "deploy"``) is journaled right before the deploy call, its
  managed object id as soon as the call answers; cleanup (end of run, Ctrl-C, SIGTERM,
  ``vbench cleanup RUN`` after kill -9) removes it like a clone;
- it is marked as vbench's (the ``vbench.run`` extraConfig key, set by the reconfigure
  that follows the deploy, and the custom attribute). A deploy has no clone spec to
  carry the mark from the first instant: cleanup vouches for a deployed VM by the id the
  call returned or, when the process died with the call on the wire, by the name only
  this run gives (``vb-<run id>-<guest>``);
- it is reconfigured (CPUs, memory, reservations, vNIC type and network, SCSI, data
  disks), customized from the lab's address pool, powered on, and waited for until
  VMware Tools report its address — by the provisioner's own steps.

The REST deploy call is synchronous (vCenter answers when the VM exists), so an
interrupt waits for the calls in flight: the run then knows the VM's id.

Where only the simulator was verified: vcsim v0.46 deploys a VM-template item as a
*template*; it is turned into a VM in the group's pool (``MarkAsVirtualMachine``, a
call every vCenter has; a real vCenter deploys a VM and the step is skipped).
"""

from __future__ import annotations

import contextlib
import difflib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from pyVmomi import vim

from vbench.errors import Interrupted
from vbench.vsphere import content_library as cl
from vbench.vsphere import content_library_deploy as dp
from vbench.vsphere.connection import VCenterTarget, VSphereSession
from vbench.vsphere.specs import Placement, VmRequest

if TYPE_CHECKING:
    from vbench.vsphere.provision import ProvisionedVm

DEPLOY_ACTION = "deploy"  # the journal's `action` of a VM deployed from a library item
DEPLOYABLE = ("ovf", "vm-template")
# A deploy copies the item's disks inside one synchronous call: the read timeout is
# this long, not the lab's per-call timeout (seconds).
DEPLOY_TIMEOUT = 3600.0
_HINTS = 20  # names read back for a did-you-mean (a library is one call per name)


@dataclass(frozen=True)
class LibrarySource:
    """A library item found in one vCenter, ready to deploy from."""

    library: str
    item: str
    library_id: str
    item_id: str
    kind: str  # "ovf" | "vm-template"

    @property
    def label(self) -> str:
        return f"item {self.item!r} of content library {self.library!r}"


def _hint(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    shown = ", ".join(sorted(known)[:8])
    return f" (there are: {shown})" if known else " (there are none)"


def find_source(s: cl.RestSession, library: str, item: str) -> LibrarySource:
    """The library and the item by name; ``cl.NotFound`` naming the vCenter, with a
    did-you-mean, when either is missing; ``ContentLibraryError`` when the item cannot
    make a VM."""
    ids = cl.find_libraries(s, library)
    if not ids:
        every = list(s.call("GET", cl.LIBRARY, what="list libraries") or [])[:_HINTS]
        known = [cl.get_library(s, i).name for i in every]
        raise cl.NotFound(s.label, f"no content library named {library!r}{_hint(library, known)}")
    if len(ids) > 1:
        raise cl.ContentLibraryError(s.label, f"{len(ids)} content libraries are named "
                                     f"{library!r}: rename all but one")  # fmt: skip
    item_id = cl.find_item(s, ids[0], item)
    if item_id is None:
        known = [i.name for _, i in zip(range(_HINTS), cl.iter_items(s, ids[0]), strict=False)]
        raise cl.NotFound(
            s.label, f"content library {library!r} has no item {item!r}{_hint(item, known)}"
        )
    kind = cl.get_item(s, item_id).type
    if kind not in DEPLOYABLE:
        raise cl.ContentLibraryError(
            s.label, f"item {item!r} of content library {library!r} is of type "
            f"{kind or 'unknown'!r}: only OVF and VM-template items deploy a VM",
        )  # fmt: skip
    return LibrarySource(library, item, ids[0], item_id, kind)


def rest_placement(placement: Placement, index: int) -> dp.Placement:
    """The group's placement by managed object id, with the host of the ``index``-th VM."""
    host = placement.host_for(index)
    return dp.Placement(
        folder=placement.folder._moId,
        resource_pool=placement.pool._moId,
        host=host._moId if host is not None else None,
        datastore=placement.datastore._moId if placement.datastore is not None else None,
    )


def _on_the_wire(exc: BaseException) -> bool:
    """The deploy call got no answer (connection lost, timeout): vCenter may still be
    making the VM, so the intent stays open for cleanup to look again."""
    return isinstance(exc.__cause__ or exc.__context__, httpx.TransportError)


class LibraryDeploys:
    """REST sessions (one per vCenter, shared by the workers) and the items found."""

    def __init__(self, target_for: Callable[[str], VCenterTarget], pool_size: int = 8) -> None:
        self._target_for, self._pool_size = target_for, pool_size
        self._rest: dict[str, cl.RestSession] = {}
        self._sources: dict[tuple[str, str, str], LibrarySource] = {}
        self._lock = threading.Lock()

    def rest(self, vcenter: str) -> cl.RestSession:
        with self._lock:
            s = self._rest.get(vcenter)
            if s is None:
                target = self._target_for(vcenter)
                s = cl.session_for(target, pool_size=self._pool_size)
                s.http.timeout = httpx.Timeout(DEPLOY_TIMEOUT, connect=target.timeout)
                self._rest[vcenter] = s
            return s

    def source(self, vcenter: str, library: str, item: str) -> LibrarySource:
        key = (vcenter, library, item)
        with self._lock:
            found = self._sources.get(key)
        if found is None:
            found = find_source(self.rest(vcenter), library, item)
            with self._lock:
                self._sources[key] = found
        return found

    def deploy(self, vcenter: str, src: LibrarySource, name: str, where: dp.Placement) -> str:
        """Deploy one VM (powered off); its managed object id."""
        s = self.rest(vcenter)
        if src.kind == "ovf":
            return dp.deploy_ovf(s, src.item_id, name, where)
        return dp.deploy_template(s, src.item_id, name, where, powered_on=False)

    def close(self) -> None:
        with self._lock:
            sessions, self._rest = list(self._rest.values()), {}
        for s in sessions:
            s.close()


def as_vm(session: VSphereSession, vm: Any, placement: Placement, index: int) -> None:
    """Make a deployed template a VM in the group's pool (vcsim v0.46 deploys a
    VM-template item as a template; a real vCenter makes a VM and this does nothing)."""
    if session.call(lambda: vm.config.template):
        host = placement.host_for(index)
        session.call(lambda: vm.MarkAsVirtualMachine(pool=placement.pool, host=host))


class LibraryDeploying:
    """The provisioner's deploy path (mixed into :class:`~provision.Provisioner`, whose
    journal, task slots and steps it uses: the steps after the create are the clone's)."""

    _library_lock = threading.Lock()
    _library: LibraryDeploys | None = None

    def library_deploys(self) -> LibraryDeploys:
        with self._library_lock:
            if self._library is None:
                p: Any = self
                self._library = LibraryDeploys(p.sessions.target, pool_size=p.parallel + 2)
            return self._library

    def close_library_sessions(self) -> None:
        if self._library is not None:
            self._library.close()

    def _deploy(self, req: VmRequest) -> ProvisionedVm:
        from vbench.vsphere.provision import ProvisionedVm  # provision imports this module

        p: Any = self  # the Provisioner
        st = p.state(req.vcenter)
        if req.spec.keep:
            kept = p._kept(st, req)
            if kept is not None:
                return p._reuse(st, req, kept)
        placement: Placement = st.placements[req.group]
        deploys = self.library_deploys()
        assert req.spec.library is not None and req.spec.library_item is not None
        src = deploys.source(req.vcenter, req.spec.library, req.spec.library_item)
        where = rest_placement(placement, req.index)
        where_vm = {"vcenter": req.vcenter, "name": req.vm_name}
        with p._slot(p._clone_slots):
            if p.cancel.is_set():
                raise Interrupted("interrupted")
            # Journaled right before the call, as a clone's intent is.
            p.journal.write("intent", action=DEPLOY_ACTION, source=src.label,
                            group=req.group, keep=req.spec.keep, **where_vm)  # fmt: skip
            try:
                moid = deploys.deploy(req.vcenter, src, req.vm_name, where)
            except cl.ContentLibraryError as exc:
                if not _on_the_wire(exc):
                    p.journal.write("failed", error=str(exc)[:300], **where_vm)
                raise
        p.journal.write("created", moid=moid, **where_vm)
        vm = vim.VirtualMachine(moid, st.session.stub)
        as_vm(st.session, vm, placement, req.index)
        if st.mark_field is not None:  # for people; the extraConfig mark holds without it
            with contextlib.suppress(vim.fault.NoPermission):
                st.session.call(lambda: st.session.content.customFieldsManager.SetField(
                    vm, st.mark_field, p.run_id))  # fmt: skip
        p._configure(st, req, vm, placement)
        p._step(st, req, "power on", lambda: vm.PowerOnVM_Task())
        ip = p._wait_ip(st, vm, req)
        return ProvisionedVm(req.group, req.guest, req.vm_name, req.vcenter, moid, ip, True,
                             kept=req.spec.keep, ref=vm)  # fmt: skip
