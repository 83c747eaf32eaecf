"""Where deployed and captured VMs go (names -> managed object ids), and power-on.

Defaults come from the point's lab profile (cluster, resource pool, folder, datastore),
then from the datacenter: its VM folder and its first cluster's root resource pool.
"""

from __future__ import annotations

from typing import Any

from vbench.errors import LabError
from vbench.vsphere.content_library_deploy import Placement
from vbench.workloads.content_library.params import Target


def resolve_placement(res: Any, vcenter: str, target: Target) -> Placement:
    inv = res.inventory(vcenter)
    prof = res.placement if vcenter == res.vcenter else None

    def pick(attr: str) -> str | None:
        return getattr(target, attr) or (getattr(prof, attr) if prof is not None else None)

    dc = inv.datacenter(res.datacenter_of(vcenter))
    folder_name = pick("folder")
    folder = (
        inv.find("folder", folder_name, dc) if folder_name else inv.find("folder", f"{dc.name}/vm")
    )
    host = inv.find("host", target.host, dc).moid if target.host else None
    pool_name, cluster_name = pick("resource_pool"), pick("cluster")
    if pool_name:
        pool = inv.find("resource_pool", pool_name, dc)
    elif cluster_name or not host:
        clusters = inv.candidates("cluster", dc)
        if cluster_name:
            cluster = inv.find("cluster", cluster_name, dc)
        elif clusters:
            cluster = clusters[0]
        else:
            raise LabError(
                f"vcenter {vcenter}",
                f"datacenter {dc.name} has no cluster: name "
                "a host or resource pool in the step's `target:`",
            )
        pool = inv.find("resource_pool", f"{inv.path(cluster)}/Resources")
    else:
        host_obj = inv.find("host", target.host or "", dc)
        parent = inv.parent(host_obj)
        pool = inv.find("resource_pool", f"{inv.path(parent)}/Resources") if parent else None
    ds_name = pick("datastore")
    ds = inv.find("datastore", ds_name, dc).moid if ds_name else None
    return Placement(
        folder=folder.moid, resource_pool=pool.moid if pool else None, host=host, datastore=ds
    )


def power_on(res: Any, vcenter: str, moid: str, name: str) -> None:
    """One power-on task, awaited through the run's shared watcher."""
    from vbench.vsphere.content_library_vms import start_power_on

    task = start_power_on(res.session(vcenter), moid, name)
    res.wait_task(task, f"VM {name}", "power on", vcenter)
