"""The VMs of a topology group (``topology.<group>.vm``): where they come from (a template
clone, a content library item or existing VMs), their placement, hardware and data disks."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from vbench.config.guestname import GuestName
from vbench.config.types import Duration, Strict, located, new_list

MAX_MIB = 64 * 1024 * 1024  # 64 TiB: above a VM's memory (24 TB) and a disk (62 TB)
_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.I)
_MEM_MIB = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}


def _memory_mib(value: Any) -> Any:
    """``4096`` (MiB), ``"512m"``, ``"4g"``, ``"4GiB"`` -> MiB; other values pass through."""
    if isinstance(value, bool) or value is None:
        return value
    m = None if isinstance(value, int | float) else _MEM.match(str(value))
    mib = None
    try:  # nan and inf (or 1e400 spelled out) cannot become a whole number of MiB
        if isinstance(value, int | float):
            mib = int(value)
        elif m:
            mib = int(float(m.group(1)) * _MEM_MIB[m.group(2).lower()])
    except (ValueError, OverflowError):
        pass
    if mib is not None:
        return _at_most(mib)
    raise ValueError(f"{value!r} is not a memory size (e.g. 4096, 512m, 4g)")


def _at_most(mib: int) -> int:
    if mib > MAX_MIB:  # sent to vCenter in the clone's spec only when a run starts
        raise ValueError("a size of more than 64 TiB (more than vSphere makes)")
    return mib


MemoryMiB = Annotated[
    int,
    BeforeValidator(_memory_mib),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}],
            "description": "MiB, or a size such as 512m, 4g",
        }
    ),
]


class Reservations(Strict):
    """Guaranteed resources of each VM."""

    cpu_mhz: int | None = Field(None, ge=0, le=2**63 - 1,  # the API's long
                                description="CPU reservation in MHz")
    memory: MemoryMiB | Literal["all"] | None = Field(
        None, description="memory reservation (MiB, 4g …), or `all` to reserve all memory"
    )


class DataDisk(Strict):
    """Data disks added to every clone (removed with the VM)."""

    size: MemoryMiB = Field(description="capacity of each disk (MiB, or 100g, 1t …)")
    count: int = Field(1, ge=1, le=15, description="disks of this kind per VM")
    provisioning: Literal["thin", "lazy_zeroed", "eager_zeroed"] = Field(
        "thin", description="virtual disk provisioning"
    )
    controller: Literal["pvscsi", "lsilogic", "nvme"] = Field(
        "pvscsi", description="controller the disks go on (added when the VM has none)"
    )
    datastore: str | None = Field(None, description="datastore (default: the VM's)")
    storage_policy: str | None = Field(
        None, description="SPBM storage policy of the disks (its name in vCenter)"
    )


class VmSpec(Strict):
    """VMs of a group: cloned from a template, deployed from a library item, or existing."""

    template: str | None = Field(None, description="template (or VM) to clone from")
    library_item: str | None = Field(
        None, description="content library item (OVF or VM template) to deploy the VMs from, "
        "instead of cloning a template; needs `library`"
    )
    library: str | None = Field(
        None, description="content library (in the group's vCenter) holding `library_item`"
    )
    existing: list[GuestName] | None = Field(
        None, description="existing VMs to use as they are (never modified or deleted); "
        "their names become the guests' names, so letters, digits and _ . - only"
    )
    linked: bool = Field(False, description="linked clone, from the template's current snapshot")
    vcenter: str | None = Field(None, description="lab vCenter (default: the lab's only one)")
    host: str | None = Field(None, description="host to place the VMs on")
    cluster: str | None = Field(None, description="cluster to place the VMs in")
    resource_pool: str | None = Field(None, description="resource pool (name or inventory path)")
    datastore: str | None = Field(None, description="datastore (default: the template's)")
    folder: str | None = Field(None, description="VM folder (default: the datacenter's)")
    network: str | None = Field(
        None, description="port group of the first vNIC (default: the template's)"
    )
    spread: bool = Field(
        False, description="place VMs round-robin across the hosts of the cluster or host"
    )
    cpus: int | None = Field(None, ge=1, le=768, description="vCPUs")
    memory: MemoryMiB | None = Field(None, description="memory (MiB, or 512m, 4g …)")
    reservations: Reservations | None = Field(None, description="CPU and memory reservations")
    latency_sensitivity: Literal["low", "normal", "medium", "high"] | None = Field(
        None, description="latency sensitivity (high needs a full memory reservation)"
    )
    nic_type: Literal["vmxnet3", "e1000", "e1000e"] | None = Field(
        None, description="virtual NIC type (replaces the template's NICs)"
    )
    scsi_type: Literal["pvscsi", "lsilogic", "lsilogic-sas", "buslogic"] | None = Field(
        None, description="SCSI controller type (disks stay on their bus)"
    )
    ip_timeout: Duration = Field(
        300.0, gt=0, description="how long to wait for VMware Tools to report an IP"
    )
    keep: bool = Field(False, description="keep the VMs after the run; later runs reuse them")
    disks: list[DataDisk] = Field(
        default_factory=new_list, description="data disks added to every clone"
    )

    @model_validator(mode="after")
    def _source(self) -> VmSpec:
        self._library_source()
        if (self.template is None) == (self.existing is None) and self.library_item is None:
            raise ValueError("give either `template` (clone), `library_item` + `library` ("
                             "deploy from a content library) or `existing` (VM names)")
        if self.existing is not None:
            changes = [
                n
                for n in ("linked", "cpus", "memory", "reservations", "latency_sensitivity",
                          "nic_type", "scsi_type", "keep", "spread")
                if getattr(self, n) not in (None, False)
            ] + (["disks"] if self.disks else [])  # fmt: skip
            if changes:
                raise ValueError(
                    f"existing VMs are used as they are: remove {', '.join(changes)}"
                )
        if self.host and self.spread:
            raise ValueError("`spread` places VMs across a cluster's hosts: name no `host`")
        return self

    def _library_source(self) -> None:
        """``library_item`` + ``library`` instead of ``template`` or ``existing``
        (errors located at the field to change)."""
        if self.library_item is None and self.library is None:
            return
        if self.library_item is None:
            raise located([(("library",), "`library` goes with `library_item` (the item "
                            "to deploy the VMs from): add it, or remove `library`")])
        if self.library is None:
            raise located([(("library_item",), "`library_item` needs `library`: the "
                            "content library holding the item")])
        other = "template" if self.template is not None else (
            "existing" if self.existing is not None else None)
        if other is not None:
            raise located([(("library_item",), f"give either `{other}` or `library_item` "
                            "(deploy from a content library), not both")])
        if self.linked:
            raise located([(("linked",), "a linked clone needs a template's snapshot: VMs "
                            "deployed from a library item are full copies (remove `linked`)")])

    @property
    def source_text(self) -> str:
        """Where the group's VMs come from, for people (`vbench plan`)."""
        if self.library_item is not None:
            return (f"deployed from item {self.library_item!r} of content library "
                    f"{self.library!r}")
        if self.existing is not None:
            return f"existing VMs {', '.join(self.existing)}"
        return f"{'linked ' if self.linked else ''}clones of template {self.template!r}"
