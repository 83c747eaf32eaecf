"""Reading vCenter's inventory through the PropertyCollector, and finding objects by name.

Every read of many objects goes through :func:`collect`: one filter spec (a
ContainerView over a subtree, or an explicit list of objects) and
``RetrievePropertiesEx`` with paging (``ContinueRetrievePropertiesEx``) — never
pyVmomi's lazy per-object properties, which cost one round trip each.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vbench.errors import LabError
from vbench.lazy import lazy_module
from vbench.vsphere.connection import VSphereSession

if TYPE_CHECKING:
    from pyVmomi import vim, vmodl
else:
    vim = lazy_module("pyVmomi", "vim")
    vmodl = lazy_module("pyVmomi", "vmodl")

PC = lazy_module("pyVmomi", "vmodl.query.PropertyCollector")
PAGE_SIZE = 1000

PropsByType = Mapping[type, Sequence[str]]


def kind_of(ref: Any) -> str:
    """``vim.dvs.DistributedVirtualPortgroup`` -> ``DistributedVirtualPortgroup``."""
    return type(ref).__name__.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Obj:
    """One managed object and the properties read for it."""

    ref: Any
    props: Mapping[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return kind_of(self.ref)

    @property
    def moid(self) -> str:
        return str(self.ref._moId)

    @property
    def name(self) -> str:
        return str(self.props.get("name", self.moid))

    def get(self, path: str, default: Any = None) -> Any:
        value = self.props.get(path)
        return default if value is None else value


def _prop_specs(props: PropsByType) -> list[Any]:
    return [PC.PropertySpec(type=t, pathSet=list(paths)) for t, paths in props.items()]


def collect(session: VSphereSession, spec: Any, page_size: int = PAGE_SIZE) -> list[Obj]:
    """Run one filter spec, following the pages; a property the server could not read
    (missing, or not allowed) is left out of that object's ``props``."""

    def run() -> list[Obj]:
        pc = session.content.propertyCollector
        out: list[Obj] = []
        result = pc.RetrievePropertiesEx([spec], PC.RetrieveOptions(maxObjects=page_size))
        while result is not None:
            for oc in result.objects or ():
                out.append(Obj(oc.obj, {p.name: p.val for p in oc.propSet or ()}))
            if not result.token:
                break
            result = pc.ContinueRetrievePropertiesEx(result.token)
        return out

    return session.call(run)


def retrieve(
    session: VSphereSession,
    props: PropsByType,
    *,
    root: Any = None,
    page_size: int = PAGE_SIZE,
) -> list[Obj]:
    """Properties of every object of the given types under ``root`` (default: the whole
    inventory), through one ContainerView."""
    content = session.content

    def make_view() -> Any:
        return content.viewManager.CreateContainerView(
            root or content.rootFolder, list(props), True
        )

    view = session.call(make_view)
    try:
        traverse = PC.TraversalSpec(name="view", type=vim.view.ContainerView, path="view")
        spec = PC.FilterSpec(
            objectSet=[PC.ObjectSpec(obj=view, skip=True, selectSet=[traverse])],
            propSet=_prop_specs(props),
        )
        return collect(session, spec, page_size)
    finally:
        # The session may be gone; its views go with it.
        with contextlib.suppress(Exception):
            view.DestroyView()


def retrieve_refs(
    session: VSphereSession, refs: Iterable[Any], props: PropsByType, page_size: int = PAGE_SIZE
) -> list[Obj]:
    """Properties of the given objects, in one filter (order of ``refs`` kept). An object
    removed since its reference was read (a VM deleted by someone, or a host's VM list
    still naming one) is left out: vCenter refuses the whole filter for it, so the filter
    is made again without it."""
    unique = {r._moId + kind_of(r): r for r in refs if r is not None}
    while unique:
        spec = PC.FilterSpec(
            objectSet=[PC.ObjectSpec(obj=r, skip=False) for r in unique.values()],
            propSet=_prop_specs(props),
        )
        try:
            found = {o.moid + o.kind: o for o in collect(session, spec, page_size)}
        except vmodl.fault.ManagedObjectNotFound as exc:
            gone = getattr(exc, "obj", None)
            key = gone._moId + kind_of(gone) if gone is not None else None
            if key not in unique:
                raise
            del unique[key]
            continue
        return [found[k] for k in unique if k in found]
    return []


# --- the inventory, by name ------------------------------------------------------------

# By type name: the pyVmomi types are looked up when the inventory is read, so that
# importing this module does not import pyVmomi.
INVENTORY_PROPS: dict[str, tuple[str, ...]] = {
    "Datacenter": ("name", "parent", "vmFolder"),
    "Folder": ("name", "parent", "childType"),
    "ComputeResource": ("name", "parent", "resourcePool", "host"),
    "HostSystem": (
        "name", "parent", "runtime.connectionState", "runtime.inMaintenanceMode",
        "summary.hardware.memorySize", "summary.hardware.numCpuCores",
        "summary.hardware.cpuMhz", "summary.quickStats.overallMemoryUsage",
        "summary.quickStats.overallCpuUsage",
    ),
    "Datastore": ("name", "parent", "summary.freeSpace", "summary.capacity",
                    "summary.accessible", "summary.type"),
    "Network": ("name", "parent"),
    "ResourcePool": ("name", "parent", "owner"),
    "VirtualMachine": (
        "name", "parent", "config.template", "resourcePool", "runtime.host",
        "runtime.powerState", "customValue", "summary.storage.committed",
        "summary.config.memorySizeMB", "summary.config.numCpu", "datastore", "network",
        "guest.ipAddress",
    ),
}  # fmt: skip

# What a scenario calls each kind of object, and the types that answer to it.
KINDS: dict[str, tuple[str, ...]] = {
    "datacenter": ("Datacenter",),
    "cluster": ("ClusterComputeResource",),
    "compute": ("ComputeResource", "ClusterComputeResource"),
    "host": ("HostSystem",),
    "datastore": ("Datastore",),
    "network": ("Network", "DistributedVirtualPortgroup", "OpaqueNetwork"),
    "resource_pool": ("ResourcePool", "VirtualApp"),
    "folder": ("Folder",),
    "vm": ("VirtualMachine",),
    "template": ("VirtualMachine",),
}


class NotInInventory(LabError):
    """A named object does not exist (or is ambiguous); the message suggests names."""


class Inventory:
    """A snapshot of one vCenter's inventory: names, parents, capacities."""

    def __init__(self, vcenter: str, objects: Iterable[Obj]) -> None:
        self.vcenter = vcenter
        self.objects: dict[str, Obj] = {o.moid: o for o in objects}
        self._by_kind: dict[str, list[Obj]] = {}
        for o in self.objects.values():
            self._by_kind.setdefault(o.kind, []).append(o)
        self._paths: dict[str, str] = {}

    @classmethod
    def load(cls, session: VSphereSession) -> Inventory:
        props = {getattr(vim, kind): paths for kind, paths in INVENTORY_PROPS.items()}
        return cls(session.target.name, retrieve(session, props))

    def of_kind(self, *kinds: str) -> list[Obj]:
        return [o for k in kinds for o in self._by_kind.get(k, ())]

    def get(self, ref: Any) -> Obj | None:
        return self.objects.get(ref._moId) if ref is not None else None

    def parent(self, obj: Obj) -> Obj | None:
        return self.get(obj.get("parent"))

    def path(self, obj: Obj) -> str:
        """``DC0/host/DC0_C0/DC0_C0_H0``: names from the datacenter down."""
        cached = self._paths.get(obj.moid)
        if cached is not None:
            return cached
        names = []
        cur: Obj | None = obj
        seen = set()
        while cur is not None and cur.moid not in seen:
            seen.add(cur.moid)
            parent = self.parent(cur)
            if parent is None and cur.kind == "Folder":
                break  # the root folder ("Datacenters") is not part of paths
            names.append(cur.name)
            cur = parent
        path = "/".join(reversed(names))
        self._paths[obj.moid] = path
        return path

    def datacenter_of(self, obj: Obj) -> Obj | None:
        cur: Obj | None = obj
        while cur is not None and cur.kind != "Datacenter":
            cur = self.parent(cur)
        return cur

    def datacenter(self, name: str | None) -> Obj:
        dcs = self.of_kind("Datacenter")
        if name is not None:
            return self.find("datacenter", name)
        if len(dcs) == 1:
            return dcs[0]
        names = ", ".join(sorted(d.name for d in dcs)) or "none"
        raise NotInInventory(
            f"vcenter {self.vcenter}",
            f"{len(dcs)} datacenters ({names}): name one with `datacenter:` in the lab",
        )

    def candidates(self, kind: str, within: Obj | None = None) -> list[Obj]:
        objs = self.of_kind(*KINDS[kind])
        if kind == "template":
            objs = [o for o in objs if o.get("config.template")]
        elif kind == "vm":
            objs = [o for o in objs if not o.get("config.template")]
        if within is not None:
            objs = [o for o in objs if self._under(o, within)]
        return objs

    def _under(self, obj: Obj, ancestor: Obj) -> bool:
        cur: Obj | None = obj
        while cur is not None:
            if cur.moid == ancestor.moid:
                return True
            cur = self.parent(cur)
        return False

    def find(self, kind: str, name: str, within: Obj | None = None) -> Obj:
        """The one object of ``kind`` named ``name`` (or with that inventory path)."""
        objs = self.candidates(kind, within)
        hits = [o for o in objs if o.name == name]
        if not hits and "/" in name:
            hits = [o for o in objs if self.path(o) == name.strip("/")
                    or self.path(o).endswith("/" + name.strip("/"))]  # fmt: skip
        if len(hits) == 1:
            return hits[0]
        what = kind.replace("_", " ")
        if hits:
            paths = ", ".join(sorted(self.path(o) for o in hits)[:5])
            raise NotInInventory(
                f"vcenter {self.vcenter}",
                f"{len(hits)} {what}s are named {name!r} ({paths}): use the inventory path",
            )
        names = sorted({o.name for o in objs})
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        return self._missing(what, name, hint, shown)

    def _missing(self, what: str, name: str, hint: str, shown: str) -> Obj:
        raise NotInInventory(
            f"vcenter {self.vcenter}",
            f"no {what} named {name!r}{hint} (known: {shown or 'none'})",
        )
