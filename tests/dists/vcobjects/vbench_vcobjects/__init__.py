"""A test workload driver shipped as its own distribution (tests/e2e/plugin_dist.py builds
a wheel of this folder and pip installs it next to a `vbench` process): it needs no
guests and acts on vCenter only, through the run's resources (``ctx.vsphere``).

In ``prepare`` it creates a VM (cloned, powered on), a snapshot of it and a VM folder —
a kind vbench itself does not know, whose destroyer this package registers at import,
as a Content Library plugin registers the REST deletion of its libraries. Nothing is
removed by the driver: the run's cleanup (or `vbench cleanup RUN` after kill -9) must.
"""

from __future__ import annotations

from typing import ClassVar

from pyVmomi import vim, vmodl

from vbench.results.records import Sample
from vbench.vsphere.destroyers import DestroyRequest, register_destroyer
from vbench.workloads.base import Params, PlannedCommand, TrialContext, Workload, register

FOLDER_KIND = "test-folder"


class VcObjectsParams(Params):
    source: str  # template to clone
    power_on: bool = True


def destroy_folder(req: DestroyRequest) -> str:
    """Remove one (empty) VM folder the run created."""
    moid = req.item.moid
    if moid is None:
        return "missing"
    folder = vim.Folder(moid, req.session.stub)
    try:
        task = req.session.call(lambda: folder.Destroy_Task())
    except vmodl.fault.ManagedObjectNotFound:
        return "missing"
    req.watcher.wait_task(task, f"folder {req.item.name}", "destroy", timeout=60)
    return "destroyed"


register_destroyer(FOLDER_KIND, destroy_folder)


@register
class VcObjects(Workload):
    """Creates vCenter objects through the run resources; measures nothing real."""

    name: ClassVar[str] = "vcobjects"
    Params: ClassVar[type[VcObjectsParams]] = VcObjectsParams
    roles: ClassVar[tuple[str, ...]] = ()
    needs_vcenter: ClassVar[bool] = True

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        return []

    def prepare(self, ctx: TrialContext) -> None:
        res = ctx.vsphere
        assert res is not None, "needs_vcenter: the engine must give vSphere resources"
        tag = f"p{ctx.point}-t{ctx.trial}"
        params = self.params
        assert isinstance(params, VcObjectsParams)
        vm = res.create_vm(tag, params.source, power_on=params.power_on)
        snap = res.create_snapshot(vm, f"{tag}-snap")
        dc = res.inventory().datacenter(res.placement.datacenter)
        parent = dc.get("vmFolder")
        name = res.object_name(f"{tag}-folder")
        with res.creating(FOLDER_KIND, name, plugin=__name__) as handle:
            folder = res.session().call(lambda: parent.CreateFolder(name))
            handle.created(folder._moId, folder)
        ctx.log("vcobjects_created", vcenter=res.vcenter, profile=res.placement.profile,
                vm=vm.name, snapshot=snap.name, folder=name)

    def run(self, ctx: TrialContext) -> None:
        ctx.mark("warmup_start")
        ctx.mark("steady_start")
        ctx.cancel.wait(ctx.steady)
        ctx.mark("steady_end")

    def collect(self, ctx: TrialContext) -> list[Sample]:
        res = ctx.vsphere
        vcenter = res.vcenter if res is not None else "none"
        return [Sample("objects_created", 3.0, "count", "vcobjects",
                       labels=(("vcenter", vcenter),))]
