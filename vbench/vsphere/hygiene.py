"""Reading the lab's hygiene facts from one vCenter (the rules: hygiene_rules.py).

:func:`read_facts` takes the run's hosts and VMs and reads, in a few PropertyCollector
calls: the hosts (state, power policy, alarms, their VMs and datastores), their clusters
(DRS, its VM overrides and rules, HA), every VM on those hosts (power state, quickStats,
alarms), the names of raised alarms, and the tasks in progress (``recentTask``) on any of
those objects. Clocks: vCenter's (``CurrentTime``) against the controller's, and each
host's (``QueryDateTime``) against vCenter's — a host whose date-time system does not
answer (vcsim) has an unknown clock, never a made-up one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyVmomi import vim

from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.hygiene_events import tasks_in_progress
from vbench.vsphere.hygiene_rules import (
    ClusterFacts,
    HostFacts,
    LabFacts,
    LabTask,
    OtherVm,
)
from vbench.vsphere.inventory import Inventory, Obj, retrieve_refs

HOST_PROPS = ("name", "parent", "runtime.connectionState", "runtime.inMaintenanceMode",
              "config.powerSystemInfo", "triggeredAlarmState", "vm", "datastore")
CLUSTER_PROPS = ("name", "configurationEx", "triggeredAlarmState")
VM_PROPS = ("name", "runtime.powerState", "runtime.host", "config.template",
            "summary.quickStats.overallCpuUsage", "summary.quickStats.guestMemoryUsage",
            "triggeredAlarmState")


def run_hosts(inv: Inventory, hosts: Iterable[str], clusters: Iterable[str]) -> list[Obj]:
    """The hosts a run uses: those named, and every host of the clusters named; every
    host of the vCenter when nothing is named (the run may then land anywhere)."""
    wanted, in_clusters = set(hosts), set(clusters)
    out = []
    for h in inv.candidates("host"):
        parent = inv.parent(h)
        if h.name in wanted or (parent is not None and parent.name in in_clusters
                                and parent.kind == "ClusterComputeResource"):
            out.append(h)
    return out if (wanted or in_clusters) else inv.candidates("host")


def _alarm_names(session: VSphereSession, states: Iterable[Any]) -> dict[str, str]:
    refs = [s.alarm for s in states if getattr(s, "alarm", None) is not None]
    return {o.moid: str(o.get("info.name") or o.moid)
            for o in retrieve_refs(session, refs, {vim.alarm.Alarm: ("info.name",)})}


def _raised(states: Sequence[Any] | None, names: Mapping[str, str]) -> tuple[str, ...]:
    """``red: Host CPU usage`` for each red or yellow alarm state."""
    out = []
    for s in states or ():
        status = str(getattr(s, "overallStatus", "") or "")
        if status in ("red", "yellow"):
            alarm = getattr(s, "alarm", None)
            name = names.get(str(alarm._moId), str(alarm._moId)) if alarm is not None else "?"
            out.append(f"{status}: {name}")
    return tuple(out)


def _cluster(o: Obj, vm_names: Mapping[str, str], run: set[str],
             alarm_names: Mapping[str, str]) -> ClusterFacts:
    cfg = o.get("configurationEx")
    drs = getattr(cfg, "drsConfig", None)
    das = getattr(cfg, "dasConfig", None)
    overrides = {}
    for ov in getattr(cfg, "drsVmConfig", None) or ():
        name = vm_names.get(str(ov.key._moId), str(ov.key._moId))
        overrides[name] = "disabled" if ov.enabled is False else str(ov.behavior or "")
    rules = []
    for r in getattr(cfg, "rule", None) or ():
        named = {vm_names.get(str(v._moId)) for v in getattr(r, "vm", None) or ()}
        if named & run:
            rules.append(f"{type(r).__name__.rsplit('.', 1)[-1]} {r.name}")
    return ClusterFacts(
        name=o.name, drs_enabled=getattr(drs, "enabled", None),
        drs_behavior=str(drs.defaultVmBehavior) if getattr(drs, "defaultVmBehavior", None)
        else None,
        vm_overrides=overrides, rules=tuple(rules), ha_enabled=getattr(das, "enabled", None),
        admission_control=getattr(das, "admissionControlEnabled", None),
        alarms=_raised(o.get("triggeredAlarmState"), alarm_names))


def _host_clock(session: VSphereSession, host: Any, offset: float | None) -> float | None:
    """Host clock minus vCenter's (None when the host's date-time system does not
    answer, or vCenter's clock is unknown); ``offset``: vCenter's minus the controller's."""
    if offset is None:
        return None
    try:
        dts = host.configManager.dateTimeSystem
        sent = time.time()
        when = session.call(lambda: dts.QueryDateTime())
        back = time.time()
    except Exception:  # vcsim, or a host without the privilege: unknown, and said so
        return None
    return float(when.timestamp() - ((sent + back) / 2 + offset))


def vcenter_offset(session: VSphereSession) -> float | None:
    """vCenter's clock minus the controller's, in seconds (None when it does not answer)."""
    try:
        sent = time.time()
        now = session.call(lambda: session.si.CurrentTime()).timestamp()
        back = time.time()
    except Exception:  # unknown, and the clock finding says so
        return None
    return float(now - (sent + back) / 2)


def read_facts(session: VSphereSession, vcenter: str, hosts: Sequence[Obj],
               run_vms: Iterable[Any] = ()) -> LabFacts:
    """The hygiene facts of ``hosts`` and the run's VMs (references) in one vCenter."""
    offset = vcenter_offset(session)
    host_objs = retrieve_refs(session, [h.ref for h in hosts], {vim.HostSystem: HOST_PROPS})
    vm_refs = [v for h in host_objs for v in h.get("vm", ())]
    run_refs = list(run_vms)
    vm_objs = retrieve_refs(session, [*vm_refs, *run_refs], {vim.VirtualMachine: VM_PROPS})
    clusters = [c for c in dict.fromkeys(h.get("parent") for h in host_objs)
                if isinstance(c, vim.ClusterComputeResource)]
    cluster_objs = retrieve_refs(session, clusters, {vim.ClusterComputeResource: CLUSTER_PROPS})
    states = [s for o in (*host_objs, *vm_objs, *cluster_objs)
              for s in o.get("triggeredAlarmState", ())]
    alarm_names = _alarm_names(session, states)
    vm_names = {o.moid: o.name for o in vm_objs}
    run_ids = {str(r._moId) for r in run_refs}
    run_names = {vm_names[i] for i in run_ids if i in vm_names}
    host_names = {h.moid: h.name for h in host_objs}
    cluster_of = {h.moid: h.get("parent").name for h in host_objs
                  if isinstance(h.get("parent"), vim.ClusterComputeResource)}
    return LabFacts(
        vcenter=vcenter,
        hosts=tuple(_host(session, h, cluster_of.get(h.moid), alarm_names, offset)
                    for h in host_objs),
        clusters=tuple(_cluster(c, vm_names, run_names, alarm_names) for c in cluster_objs),
        run_vms=tuple(sorted(run_names)),
        other_vms=tuple(_others(vm_objs, run_ids, host_names)),
        tasks=tuple(_tasks(session, {*host_names, *vm_names,
                                     *(str(d._moId) for h in host_objs
                                       for d in h.get("datastore", ()))})),
        vm_alarms=tuple(f"{o.name} {a}" for o in vm_objs if o.moid in run_ids
                        for a in _raised(o.get("triggeredAlarmState"), alarm_names)),
        vcenter_offset=offset,
    )


def _host(session: VSphereSession, h: Obj, cluster: str | None,
          alarm_names: Mapping[str, str], offset: float | None) -> HostFacts:
    policy = getattr(h.get("config.powerSystemInfo"), "currentPolicy", None)
    return HostFacts(
        name=h.name, cluster=cluster,
        connection=str(h.get("runtime.connectionState") or "") or None,
        maintenance=h.get("runtime.inMaintenanceMode"),
        power_policy=str(policy.shortName) if getattr(policy, "shortName", None) else None,
        clock_offset=_host_clock(session, h.ref, offset),
        alarms=_raised(h.get("triggeredAlarmState"), alarm_names),
    )


def _others(vm_objs: Sequence[Obj], run_ids: set[str],
            host_names: Mapping[str, str]) -> list[OtherVm]:
    out = []
    for o in vm_objs:
        host = o.get("runtime.host")
        if (o.moid in run_ids or o.get("config.template") or host is None
                or str(o.get("runtime.powerState")) != "poweredOn"):
            continue
        if str(host._moId) not in host_names:
            continue
        out.append(OtherVm(o.name, host_names[str(host._moId)],
                           o.props.get("summary.quickStats.overallCpuUsage"),
                           o.props.get("summary.quickStats.guestMemoryUsage")))
    return out


def _tasks(session: VSphereSession, moids: set[str]) -> list[LabTask]:
    """Tasks in progress on one of ``moids``."""
    out = []
    for info in tasks_in_progress(session):
        entity = getattr(info, "entity", None)
        if entity is None or str(entity._moId) not in moids:
            continue
        user = None
        with contextlib.suppress(AttributeError):
            user = info.reason.userName
        out.append(LabTask(str(info.descriptionId), str(info.entityName or entity._moId),
                           str(info.state), user))
    return out
