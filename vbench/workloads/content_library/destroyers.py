"""How cleanup removes what a Content Library trial created, kind by kind.

Registered at import (the workload package imports this module), so the run's own
cleanup and ``vbench cleanup RUN`` after ``kill -9`` both find them. Each destroyer
removes exactly the journaled object: by its id when the journal has it, else by the
name vbench gave it (``vb-<run id>-…``, which no object of anyone else carries) —
never anything else.

Kinds: ``cl_library`` (local or subscribed library), ``cl_item`` (an item, including
a captured VM-template item), ``cl_session`` (an update or download session),
``cl_vm`` (a VM deployed from an item: powered off, then destroyed).
"""

from __future__ import annotations

from vbench.vsphere import content_library as cl
from vbench.vsphere.content_library_vms import destroy_deployed
from vbench.vsphere.destroyers import DestroyRequest, register_destroyer

LIBRARY_KIND = "cl_library"
ITEM_KIND = "cl_item"
SESSION_KIND = "cl_session"
VM_DEPLOYED_KIND = "cl_vm"


def _rest(req: DestroyRequest) -> cl.RestSession:
    return cl.session_for(req.session.target)


def destroy_library(req: DestroyRequest) -> str:
    item = req.item
    subscribed = bool(item.data.get("subscribed"))
    with _rest(req) as s:
        ident = item.moid
        if not ident:
            if not item.name.startswith(f"vb-{req.run_id}-"):
                return "missing"  # not a name this run gave: never touch it
            ids = cl.find_libraries(s, item.name)
            if not ids:
                return "missing"
            ident = ids[0]
        try:
            cl.delete_library(s, ident, subscribed=subscribed)
        except cl.NotFound:
            return "missing"
    return "destroyed"


def destroy_item(req: DestroyRequest) -> str:
    item = req.item
    with _rest(req) as s:
        ident = item.moid
        if not ident:
            library = item.data.get("library_id")
            found = cl.find_item(s, str(library), item.name) if library else None
            if found is None:
                return "missing"
            ident = found
        try:
            cl.delete_item(s, ident)
        except cl.NotFound:
            return "missing"
    return "destroyed"


def destroy_session(req: DestroyRequest) -> str:
    from vbench.vsphere import content_library_transfer as tr

    item = req.item
    if not item.moid:
        return "missing"  # never created, or vCenter expires it after its timeout
    path = tr.UPDATE_SESSION if item.data.get("type") == "update" else tr.DOWNLOAD_SESSION
    with _rest(req) as s:
        try:
            s.call("DELETE", f"{path}/id:{item.moid}")
        except cl.NotFound:
            return "missing"
    return "destroyed"


register_destroyer(LIBRARY_KIND, destroy_library)
register_destroyer(ITEM_KIND, destroy_item)
register_destroyer(SESSION_KIND, destroy_session)
register_destroyer(VM_DEPLOYED_KIND, destroy_deployed)
