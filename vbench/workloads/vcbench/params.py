"""Parameters of the ``vcbench`` driver and the checks on them (pure, unit-tested).

User documentation: ``docs/vcbench.md``; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field, field_validator, model_validator

from vbench.config.types import Duration, new_list
from vbench.workloads.base import Finding, LabObject, Params

# The operations (vbench.vsphere.operations.OPS; repeated here so that this module stays
# free of pyVmomi and the plan can be checked without it).
OPS: tuple[str, ...] = (
    "power_on", "power_off", "clone_full", "clone_linked", "relocate_host",
    "relocate_datastore", "reconfigure_cpu", "reconfigure_memory", "reconfigure_annotation",
    "register", "unregister", "snapshot_create", "snapshot_remove", "snapshot_revert",
    "create", "destroy",
)  # fmt: skip

# The default mix: dominated by power and provisioning operations, as management traffic
# in customer datacenters is (power cycles of desktops and test VMs, clone-and-destroy of
# short-lived VMs), then migrations, reconfiguration and snapshots (backup products take
# and remove one per VM per run). Weights are relative; each pair of inverse operations
# (power on/off, clone+create/destroy, unregister/register, snapshot create/remove)
# carries equal weight, so a VM's state does not drift and the realised mix can match.
DEFAULT_MIX: dict[str, float] = {
    "power_on": 16,
    "power_off": 16,
    "clone_full": 10,
    "clone_linked": 4,
    "create": 2,
    "destroy": 16,
    "relocate_host": 8,
    "relocate_datastore": 2,
    "reconfigure_cpu": 3,
    "reconfigure_memory": 3,
    "reconfigure_annotation": 4,
    "snapshot_create": 4,
    "snapshot_remove": 4,
    "snapshot_revert": 2,
    "register": 3,
    "unregister": 3,
}

Loop = Literal["closed", "open"]


class VcbenchParams(Params):
    """A vCenter management-operation mix driven by many sessions."""

    sessions: int = Field(32, ge=1, le=4096, description="concurrent sessions (one login each)")
    mix: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_MIX),
        description="operation -> relative weight (see docs/vcbench.md; default: the "
        "customer-like mix)",
    )
    loop: Loop = Field(
        "closed",
        description="closed: each session issues its next operation when the last ends "
        "(after think_time); open: operations start at `rate` per second in total",
    )
    think_time: Duration = Field(0.0, ge=0, description="closed loop: pause between operations")
    rate: float | None = Field(
        None, gt=0, description="open loop: target operations per second over all sessions"
    )
    vcenters: list[str] = Field(
        default_factory=new_list,
        description="vCenters the sessions are spread over (default: the point's vCenter)",
    )
    template: str | None = Field(
        None, description="VM or template the session VMs are cloned from (one per session)"
    )
    vms: list[str] = Field(
        default_factory=new_list,
        description="existing VMs to use instead (one per session; named, so vbench may "
        "change them: power, snapshots, host)",
    )
    cluster: str | None = Field(None, description="cluster to work in (default: the first)")
    datastores: list[str] = Field(
        default_factory=new_list,
        description="datastores for storage vMotion (default: every accessible one)",
    )
    spares: int = Field(
        2, ge=1, le=16, description="clones/new VMs a session may hold before it must destroy"
    )
    pool_parallel: int = Field(16, ge=1, le=256, description="clones in flight creating the pool")
    drain: Duration = Field(
        120.0, gt=0, description="after the steady window, wait this long for operations in flight"
    )
    seed: int = Field(1, description="seed of the operation choice (runs are repeatable)")

    @field_validator("mix")
    @classmethod
    def _known_ops(cls, mix: dict[str, float]) -> dict[str, float]:
        unknown = [op for op in mix if op not in OPS]
        if unknown:
            raise ValueError(
                f"unknown operation(s) {', '.join(unknown)} (known: {', '.join(OPS)})"
            )
        negative = [op for op, w in mix.items() if w < 0]
        if negative:
            raise ValueError(f"negative weight for {', '.join(negative)}")
        if not any(w > 0 for w in mix.values()):
            raise ValueError("the mix needs at least one operation with a positive weight")
        return mix

    @model_validator(mode="after")
    def _loop(self) -> VcbenchParams:
        if self.loop == "open" and self.rate is None:
            raise ValueError("loop: open needs `rate` (operations per second)")
        if self.loop == "closed" and self.rate is not None:
            raise ValueError("`rate` is for loop: open (closed loop uses think_time)")
        if self.template and self.vms:
            raise ValueError("give `template` (vbench creates the VMs) or `vms`, not both")
        if not self.template and not self.vms:
            raise ValueError("give `template` (vbench clones one VM per session) or `vms`")
        return self


def mix_findings(p: VcbenchParams) -> list[Finding]:
    """Pitfalls of a mix: operations whose inverse has no weight drift to a standstill."""
    out: list[Finding] = []
    w: Mapping[str, float] = p.mix
    pairs = (
        (("power_on",), ("power_off",)),
        (("clone_full", "clone_linked", "create"), ("destroy",)),
        (("unregister",), ("register",)),
        (("snapshot_create",), ("snapshot_remove",)),
    )
    for make, undo in pairs:
        made = sum(w.get(o, 0) for o in make)
        undone = sum(w.get(o, 0) for o in undo)
        if made > 0 and undone == 0:
            out.append(
                Finding(
                    "warning",
                    "mix",
                    f"{'/'.join(make)} without {'/'.join(undo)}: once every session has "
                    "reached the limit, these operations are no longer legal and the "
                    "realised mix departs from the weights",
                )
            )
    if p.vms and p.sessions != len(p.vms):
        out.append(
            Finding(
                "error",
                "vms",
                f"{len(p.vms)} VMs named for {p.sessions} sessions: each session leases "
                "exactly one VM",
            )
        )
    if w.get("clone_linked", 0) > 0 and w.get("snapshot_create", 0) == 0:
        out.append(
            Finding(
                "warning",
                "mix",
                "clone_linked needs a snapshot of the session's VM: give snapshot_create a weight",
            )
        )
    return out


def lab_objects(p: VcbenchParams) -> tuple[LabObject, ...]:
    """What the sessions work on, in each vCenter they are spread over: the template (a
    VM or template, cloned once per session), the named VMs (split over the vCenters in
    order, as the sessions are), the cluster and the storage vMotion datastores."""
    vcenters: list[tuple[str | None, str | None]] = [
        (vc, f"vcenters.{i}") for i, vc in enumerate(p.vcenters)] or [(None, None)]
    out: list[LabObject] = []
    first = 0
    for j, (vc, where) in enumerate(vcenters):
        n = p.sessions // len(vcenters) + (1 if j < p.sessions % len(vcenters) else 0)
        named = [("vm", p.template, "template")] if p.template else []
        named += [("vm", v, f"vms.{first + i}") for i, v in enumerate(p.vms[first:first + n])]
        named += [("cluster", p.cluster, "cluster")] if p.cluster else []
        named += [("datastore", d, f"datastores.{i}") for i, d in enumerate(p.datastores)]
        out += [LabObject(kind, name, path, vc, vcenter_path=where) for kind, name, path in named]
        first += n
    return tuple(out)
