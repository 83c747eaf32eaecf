"""What a vCenter throughput run needs around its operations: many sessions, the place
its VMs live, and the pool of VMs it leases to them.

* :func:`open_sessions` — ``n`` sessions to one vCenter, each its own login on its own
  connection (as ``n`` separate clients would be), opened a few at a time; each keeps
  itself alive and logs in again when vCenter drops it (see
  :class:`~vbench.vsphere.connection.VSphereSession`).
* :func:`resolve_site` — resource pool, folder, the hosts of one cluster and the
  datastores, by name or the datacenter's first.
* :func:`create_pool` — clones of a template, one per session, journaled and marked
  like every VM vbench creates; :func:`existing_pool` — VMs the scenario names.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyVmomi import vim

from vbench.errors import Interrupted, LabError
from vbench.vsphere.connection import VCenterTarget, VSphereSession, connect
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.journal import Journal
from vbench.vsphere.operations import Site, VmState, mark, read_vm_states
from vbench.vsphere.tasks import Watcher

Warn = Callable[[str], None]


def open_sessions(
    target: VCenterTarget, n: int, *, parallel: int = 16, warn: Warn | None = None
) -> list[VSphereSession]:
    """``n`` logged-in sessions; all are closed again when one login fails."""
    opened: list[VSphereSession] = []
    lock = threading.Lock()

    def one(_i: int) -> VSphereSession:
        s = connect(target, pool_size=1, warn=None)
        with lock:
            opened.append(s)
        return s

    if warn is not None and target.insecure:
        warn(f"{target.label}: TLS certificate verification is off (insecure: true)")
    try:
        with ThreadPoolExecutor(max(1, min(parallel, n)), thread_name_prefix="vbench-login") as ex:
            return list(ex.map(one, range(n)))
    except BaseException:
        close_sessions(opened)
        raise


def close_sessions(sessions: Sequence[VSphereSession]) -> None:
    with ThreadPoolExecutor(8, thread_name_prefix="vbench-logout") as ex:
        list(ex.map(lambda s: s.close(), sessions))


def resolve_site(
    inv: Inventory,
    vcenter: str,
    datacenter: str | None,
    cluster: str | None = None,
    datastores: Sequence[str] = (),
) -> Site:
    """Where the run's VMs live: a cluster's root resource pool (the named cluster or the
    datacenter's first), its connected hosts, the datacenter's VM folder, and the named
    datastores (default: every accessible one of the datacenter)."""
    dc = inv.datacenter(datacenter)
    if cluster:
        compute = inv.find("cluster", cluster, dc)
    else:
        clusters = sorted(inv.candidates("cluster", dc), key=lambda o: o.name)
        if not clusters:
            raise LabError(f"vcenter {vcenter}", "has no cluster to run VM operations in")
        compute = clusters[0]
    pool = inv.get(compute.get("resourcePool"))
    if pool is None:
        raise LabError(f"cluster {compute.name}", "has no resource pool")
    hosts = tuple(
        h.ref
        for h in (inv.get(r) for r in compute.get("host", ()))
        if h is not None
        and h.get("runtime.connectionState") == "connected"
        and not h.get("runtime.inMaintenanceMode")
    )
    if datastores:
        ds = [inv.find("datastore", name, dc) for name in datastores]
    else:
        ds = sorted(
            (d for d in inv.candidates("datastore", dc) if d.get("summary.accessible", True)),
            key=lambda o: o.name,
        )
    if not ds:
        raise LabError(f"vcenter {vcenter}", "has no accessible datastore")
    return Site(
        vcenter, pool.ref, dc.get("vmFolder"), hosts, tuple((d.name, d.ref) for d in ds)
    )


def create_pool(
    session: VSphereSession,
    watcher: Watcher,
    site: Site,
    journal: Journal,
    run_id: str,
    template: Any,
    template_name: str,
    names: Sequence[str],
    *,
    parallel: int = 8,
    cancel: threading.Event | None = None,
) -> list[VmState]:
    """Clone ``template`` once per name (powered off, marked, journaled), at most
    ``parallel`` at a time, spread over the site's hosts; raises the first failure."""
    cancel = cancel or threading.Event()

    def one(item: tuple[int, str]) -> Any:
        i, name = item
        if cancel.is_set():
            raise Interrupted("interrupted while creating the VM pool")
        location = vim.vm.RelocateSpec(pool=site.pool)
        if site.hosts:
            location.host = site.hosts[i % len(site.hosts)]
        spec = vim.vm.CloneSpec(
            location=location,
            powerOn=False,
            template=False,
            config=vim.vm.ConfigSpec(extraConfig=mark(run_id), numCPUs=1, memoryMB=256),
        )
        journal.write(
            "intent", vcenter=site.vcenter, name=name, action="clone", source=template_name
        )
        task = session.call(
            lambda: template.CloneVM_Task(folder=site.folder, name=name, spec=spec)
        )
        journal.write("started", vcenter=site.vcenter, name=name, task=task._moId)
        try:
            vm = watcher.wait_task(task, f"VM {name}", "clone", cancel)
        except LabError as exc:
            journal.write("failed", vcenter=site.vcenter, name=name, error=str(exc))
            raise
        journal.write("created", vcenter=site.vcenter, name=name, moid=vm._moId)
        return vm

    with ThreadPoolExecutor(max(1, parallel), thread_name_prefix="vbench-pool") as ex:
        refs = list(ex.map(one, enumerate(names)))
    return read_vm_states(session, refs)


def existing_pool(session: VSphereSession, inv: Inventory, datacenter: str | None,
                  names: Sequence[str]) -> list[VmState]:
    """The VMs a scenario names (vbench changes them only because they are named)."""
    dc = inv.datacenter(datacenter)
    refs = [inv.find("vm", n, dc).ref for n in names]
    return read_vm_states(session, refs)


def find_template(inv: Inventory, datacenter: str | None, name: str) -> Any:
    dc = inv.datacenter(datacenter)
    return inv.find("vm", name, dc).ref


def vcenter_facts(session: VSphereSession) -> dict[str, Any]:
    """What a vCenter throughput figure depends on besides load: version and build,
    statistics level (of the shortest enabled interval) and installed extensions."""
    from vbench.vsphere.testbed import shape_vcenter

    content = session.content
    perf = content.perfManager
    intervals = session.call(lambda: perf.historicalInterval) if perf is not None else None
    facts = shape_vcenter(session.target.name, content.about, intervals)
    ext = content.extensionManager
    extensions = session.call(lambda: ext.extensionList) if ext is not None else None
    facts["extensions"] = sorted(
        f"{e.key} {getattr(e, 'version', '') or ''}".strip() for e in extensions or ()
    )
    return facts
