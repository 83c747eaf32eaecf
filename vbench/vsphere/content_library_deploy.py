"""Deploying VMs from library items, and capturing a VM into a library.

* OVF item: ``POST /rest/com/vmware/vcenter/ovf/library-item/id:{item}?~action=deploy``
  with ``target`` (resource pool, optional host and folder) and ``deployment_spec``
  (name, default datastore, accept_all_EULA). The answer says ``succeeded`` and names
  the VM in ``resource_id``; a failed deploy lists its errors.
* VM-template item: ``POST /rest/vcenter/vm-template/library-items/{item}?action=deploy``
  with ``spec`` (name, placement: folder + resource pool / host / cluster, disk storage,
  ``powered_on``). The answer is the VM's id.
* Capture: ``POST /rest/vcenter/vm-template/library-items`` (a VM into a VM-template
  item) or ``POST /rest/com/vmware/vcenter/ovf/library-item`` (a VM into an OVF item).

Powering on is done through the VIM API (one power-on task for both item kinds) so the
figure means the same for OVF and template items; the ``powered_on`` flag of the
template deploy is sent as well for a real vCenter, which vcsim v0.46 ignores.
Placement always names a VM folder: vcsim v0.46 dereferences it unconditionally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vbench.vsphere.content_library import ContentLibraryError, RestSession

OVF_ITEM = "/rest/com/vmware/vcenter/ovf/library-item"
VMTX_ITEMS = "/rest/vcenter/vm-template/library-items"


@dataclass(frozen=True)
class Placement:
    """Where a deployed VM goes, by managed object id (``resgroup-9``, ``host-21``…)."""

    folder: str
    resource_pool: str | None = None
    host: str | None = None
    cluster: str | None = None
    datastore: str | None = None

    def vmtx(self) -> dict[str, str]:
        spec = {"folder": self.folder}
        for key in ("resource_pool", "host", "cluster"):
            value = getattr(self, key)
            if value:
                spec[key] = value
        return spec


def _ovf_errors(result: Any) -> str:
    texts: list[str] = []
    for e in ((result or {}).get("error") or {}).get("errors") or []:
        msg = (e.get("message") or {}).get("default_message")
        if not msg:
            msgs = (e.get("error") or {}).get("messages") or []
            msg = "; ".join(str(m.get("default_message", m)) for m in msgs)
        if msg:
            texts.append(msg)
    return "; ".join(texts) or "no reason given"


def deploy_ovf(s: RestSession, item_id: str, name: str, where: Placement) -> str:
    """Deploy an OVF item; returns the new VM's managed object id."""
    if not where.resource_pool:
        raise ContentLibraryError(s.label, f"deploy {name!r}: an OVF deploy needs a resource pool")
    target = {"resource_pool_id": where.resource_pool, "folder_id": where.folder}
    if where.host:
        target["host_id"] = where.host
    spec: dict[str, Any] = {"name": name, "accept_all_EULA": True}
    if where.datastore:
        spec["default_datastore_id"] = where.datastore
    result = s.call(
        "POST", f"{OVF_ITEM}/id:{item_id}", action="deploy",
        body={"target": target, "deployment_spec": spec}, what=f"deploy {name!r}",
    )  # fmt: skip
    if not (result or {}).get("succeeded"):
        raise ContentLibraryError(s.label, f"deploy {name!r}: {_ovf_errors(result)}")
    return str(result["resource_id"]["id"])


def deploy_template(
    s: RestSession, item_id: str, name: str, where: Placement, *, powered_on: bool = False
) -> str:
    """Deploy a VM-template item; returns the new VM's managed object id."""
    spec: dict[str, Any] = {"name": name, "placement": where.vmtx(), "powered_on": powered_on}
    if where.datastore:
        spec["disk_storage"] = {"datastore": where.datastore}
        spec["vm_home_storage"] = {"datastore": where.datastore}
    v = s.call(
        "POST", f"{VMTX_ITEMS}/{item_id}", params={"action": "deploy"}, body={"spec": spec},
        what=f"deploy {name!r}",
    )  # fmt: skip
    return str(v)


def capture_template(
    s: RestSession, vm_id: str, library_id: str, name: str, where: Placement
) -> str:
    """Clone a VM into a VM-template item of a (local) library; returns the item id."""
    spec: dict[str, Any] = {
        "source_vm": vm_id, "name": name, "library": library_id, "placement": where.vmtx(),
    }  # fmt: skip
    if where.datastore:
        spec["vm_home_storage"] = {"datastore": where.datastore}
        spec["disk_storage"] = {"datastore": where.datastore}
    return str(s.call("POST", VMTX_ITEMS, body={"spec": spec}, what=f"capture {name!r}"))


def capture_ovf(s: RestSession, vm_id: str, library_id: str, name: str) -> str:
    """Export a VM into a new OVF item of a library; returns the item id."""
    body = {
        "source": {"type": "VirtualMachine", "id": vm_id},
        "target": {"library_id": library_id},
        "create_spec": {"name": name},
    }
    result = s.call("POST", OVF_ITEM, body=body, what=f"capture {name!r}")
    if not (result or {}).get("succeeded"):
        raise ContentLibraryError(s.label, f"capture {name!r}: {_ovf_errors(result)}")
    return str(result["ovf_library_item_id"])
