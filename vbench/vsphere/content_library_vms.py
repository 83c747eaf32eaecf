"""The VIM side of Content Library deploys: power-on of a deployed VM and removal of
one (pyVmomi stays in this layer; the workload calls these)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from vbench.errors import LabError
from vbench.lazy import lazy_module
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.destroyers import DestroyRequest
from vbench.vsphere.inventory import retrieve
from vbench.vsphere.tasks import TaskFailed

if TYPE_CHECKING:
    from pyVmomi import vim, vmodl
else:
    vim = lazy_module("pyVmomi", "vim")
    vmodl = lazy_module("pyVmomi", "vmodl")

GRACE = 120.0


def start_power_on(session: VSphereSession, moid: str, name: str) -> Any:
    """Start powering on a deployed VM; returns the task (the caller waits through the
    run's shared watcher)."""
    vm = vim.VirtualMachine(moid, session.stub)
    if session.call(lambda: vm.config.template):
        # vcsim v0.46 deploys a VM-template item by cloning it *as a template*; a real
        # vCenter makes a VM. Say so rather than fail on vCenter's "cannot power on".
        raise LabError(
            f"VM {name}",
            "the deploy made a template, not a VM, so it cannot be powered on (vcsim v0.46 "
            "deploys VM-template items as templates; a real vCenter deploys a VM)",
        )
    return session.call(lambda: vm.PowerOnVM_Task())


def destroy_deployed(req: DestroyRequest) -> str:
    """Power off (if on) and destroy one VM a deploy created: by its journaled id, or by
    the run-specific name when the run died before the deploy answered."""
    session, item = req.session, req.item
    moid = item.moid
    if not moid:
        if not item.name.startswith(f"vb-{req.run_id}-"):
            return "missing"  # not a name this run gave: never touch it
        hits = [o for o in retrieve(session, {vim.VirtualMachine: ["name"]}) if o.name == item.name]
        if not hits:
            return "missing"
        moid = hits[0].moid
    vm = vim.VirtualMachine(moid, session.stub)
    label = f"VM {item.name}"
    try:
        if session.call(lambda: vm.runtime.powerState) == "poweredOn":
            task = session.call(lambda: vm.PowerOffVM_Task())
            with contextlib.suppress(TaskFailed):  # already off is fine
                req.watcher.wait_task(task, label, "power off", timeout=GRACE)
        task = session.call(lambda: vm.Destroy_Task())
        req.watcher.wait_task(task, label, "destroy", timeout=GRACE)
    except vmodl.fault.ManagedObjectNotFound:
        return "missing"
    return "destroyed"
