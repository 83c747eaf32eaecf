"""The lab hygiene rules: facts read from vCenter -> findings ``ok``, ``warn`` or ``fail``.

Pure code (no pyVmomi): vbench/vsphere/hygiene.py reads the facts, the scenario's
``lab_hygiene:`` (vbench/config/hygiene.py) gives each check its severity, and
:func:`judge` applies one rule per check. A check whose rule holds is ``ok``; one that
breaks it takes the check's severity (``fail``/``warn``); a waived check (``ignore``) is
still recorded, ``ok`` and said to be waived, so a reader sees what the lab was like.
docs/lab-hygiene.md explains each rule and why it matters for a measurement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from vbench.config.hygiene import POLICY_NAMES, LabHygiene

Level = Literal["ok", "warn", "fail"]
CHECKS = ("host_state", "drs", "power_policy", "ha", "alarms", "other_vms", "storage_tasks",
          "clock")
# DRS behaviours that never move a VM on their own (partially automated: placement only).
STILL_DRS = ("manual", "partiallyAutomated", "disabled")
# Tasks that load a datastore or a host's storage path while they run.
STORAGE_TASK = re.compile(r"snapshot|consolidat|relocate|vsan|resync|datastore|disk|storage",
                          re.IGNORECASE)


@dataclass(frozen=True)
class HostFacts:
    name: str
    cluster: str | None = None
    connection: str | None = None  # connected | disconnected | notResponding
    maintenance: bool | None = None
    power_policy: str | None = None  # vSphere's short name: static, dynamic, low, custom
    clock_offset: float | None = None  # host clock minus vCenter's, seconds (None: unknown)
    alarms: tuple[str, ...] = ()  # "red: Host CPU usage"


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    drs_enabled: bool | None = None
    drs_behavior: str | None = None  # the cluster's default; unset means fullyAutomated
    vm_overrides: Mapping[str, str] = field(default_factory=dict)  # VM -> behaviour/disabled
    rules: tuple[str, ...] = ()  # DRS rules naming a run's VM: "affinity keep-together"
    ha_enabled: bool | None = None
    admission_control: bool | None = None
    alarms: tuple[str, ...] = ()


@dataclass(frozen=True)
class OtherVm:
    name: str
    host: str
    cpu_mhz: int | None = None  # quickStats.overallCpuUsage (the last 20 s sample)
    memory_mib: int | None = None  # quickStats.guestMemoryUsage (active memory)


@dataclass(frozen=True)
class LabTask:
    what: str  # the task's description id, e.g. VirtualMachine.removeAllSnapshots
    entity: str
    state: str
    user: str | None = None


@dataclass(frozen=True)
class LabFacts:
    """What one vCenter says of the run's hosts, their clusters and VMs."""

    vcenter: str
    hosts: tuple[HostFacts, ...] = ()
    clusters: tuple[ClusterFacts, ...] = ()
    run_vms: tuple[str, ...] = ()  # the run's VMs known so far (none before provisioning)
    other_vms: tuple[OtherVm, ...] = ()
    tasks: tuple[LabTask, ...] = ()  # tasks in progress on the run's objects
    vm_alarms: tuple[str, ...] = ()  # "guest1 red: VM CPU usage"
    vcenter_offset: float | None = None  # vCenter clock minus the controller's, seconds


@dataclass(frozen=True)
class Finding:
    check: str
    target: str
    level: Level
    state: str  # short and stable (compared between runs): "balanced", "fullyAutomated"
    detail: str
    vcenter: str = ""  # the vCenter that said it ("" for the guests' clocks)

    @property
    def id(self) -> str:
        return f"{self.check} {self.target}"

    @property
    def where(self) -> str:
        """The target with its vCenter: "host esx1 (vcenter vc1)"."""
        return f"{self.target} (vcenter {self.vcenter})" if self.vcenter and \
            not self.target.startswith("vcenter ") else self.target

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, **asdict(self)}


def finding_from_json(doc: Mapping[str, Any]) -> Finding:
    return Finding(str(doc.get("check")), str(doc.get("target")),
                   doc.get("level") if doc.get("level") in ("ok", "warn", "fail") else "warn",
                   str(doc.get("state") or ""), str(doc.get("detail") or ""),
                   str(doc.get("vcenter") or ""))


def _judged(spec: LabHygiene, check: str, target: str, met: bool, state: str,
            detail: str) -> Finding:
    severity = spec.severity(check)
    if met:
        return Finding(check, target, "ok", state, detail)
    if severity == "ignore":
        return Finding(check, target, "ok", state, f"{detail} (waived: lab_hygiene.{check}: "
                       "ignore)")
    return Finding(check, target, severity, state, detail)


def policy_name(short: str | None) -> str | None:
    return POLICY_NAMES.get(short, short) if short else None


# --- one rule per check -----------------------------------------------------------------


def host_state(spec: LabHygiene, h: HostFacts) -> Finding:
    """A host in maintenance mode or not connected cannot run (or keep) a run's VMs."""
    bad = []
    if h.maintenance:
        bad.append("in maintenance mode")
    if h.connection not in (None, "connected"):
        bad.append(h.connection)
    state = ", ".join(bad) or "connected"
    return _judged(spec, "host_state", f"host {h.name}", not bad, state, f"host {h.name} "
                   + (" and ".join(bad) if bad else "connected, not in maintenance mode"))


def drs(spec: LabHygiene, c: ClusterFacts, run_vms: Sequence[str]) -> Finding:
    """DRS may move a VM only when it is on and fully automated for that VM."""
    target = f"cluster {c.name}"
    behavior = c.drs_behavior or "fullyAutomated"
    rules = f"; DRS rules naming the run's VMs: {', '.join(c.rules)}" if c.rules else ""
    if c.drs_enabled is False:
        return _judged(spec, "drs", target, True, "off", f"DRS off on {c.name}{rules}")
    if behavior in STILL_DRS:
        return _judged(spec, "drs", target, True, behavior,
                       f"DRS {behavior} on {c.name}: it does not migrate VMs{rules}")
    movable = [v for v in run_vms if c.vm_overrides.get(v) not in STILL_DRS]
    if run_vms and not movable:
        return _judged(spec, "drs", target, True, f"{behavior}, overridden",
                       f"DRS {behavior} on {c.name}, overridden to manual for the run's "
                       f"{len(run_vms)} VMs{rules}")
    who = ", ".join(movable) if movable else "the run's VMs"
    return _judged(spec, "drs", target, False, behavior,
                   f"DRS {behavior} on {c.name}: it may migrate {who} during a trial "
                   "(`lab_hygiene: {tune: true}` overrides it to manual for them for the "
                   f"run){rules}")


def power_policy(spec: LabHygiene, h: HostFacts) -> Finding:
    """The host's power policy decides its CPU frequency and C-states under load."""
    name = policy_name(h.power_policy)
    wanted = spec.wanted_policy
    if name is None:
        return _judged(spec, "power_policy", f"host {h.name}", False, "unknown",
                       f"host {h.name}: power policy not reported by vCenter (wanted {wanted})")
    return _judged(spec, "power_policy", f"host {h.name}", name == wanted, name,
                   f"host {h.name}: power policy {name}" + ("" if name == wanted
                                                            else f" (wanted {wanted})"))


def ha(spec: LabHygiene, c: ClusterFacts) -> Finding:
    """HA may restart, reset or fence VMs; admission control reserves capacity."""
    on = bool(c.ha_enabled)
    ac = " with admission control" if c.admission_control else ""
    state = ("on" + (", admission control" if c.admission_control else "")) if on else (
        "off" if c.ha_enabled is False else "not reported")
    detail = f"HA {'on' + ac if on else state} on {c.name}"
    return _judged(spec, "ha", f"cluster {c.name}", not on, state, detail)


def alarms(spec: LabHygiene, target: str, raised: Sequence[str]) -> Finding:
    """A raised alarm is a lab that is not in its usual state."""
    state = f"{len(raised)} raised" if raised else "none"
    detail = f"{target}: alarms " + ("; ".join(raised) if raised else "none raised")
    return _judged(spec, "alarms", target, not raised, state, detail)


def other_vms(spec: LabHygiene, hosts: Sequence[str], vms: Sequence[OtherVm]) -> Finding:
    """Other powered-on VMs share the run's hosts' CPUs, memory and paths."""
    target = "hosts " + ", ".join(hosts)
    if not vms:
        return _judged(spec, "other_vms", target, True, "none",
                       "no other powered-on VM on the run's hosts")

    def use(v: OtherVm) -> str:
        cpu = f"{v.cpu_mhz} MHz" if v.cpu_mhz is not None else "CPU not reported"
        mem = f"{v.memory_mib} MiB active" if v.memory_mib is not None else "memory not reported"
        return f"{v.name} on {v.host} ({cpu}, {mem})"

    shown = "; ".join(use(v) for v in vms[:8]) + (f"; and {len(vms) - 8} more"
                                                    if len(vms) > 8 else "")
    return _judged(spec, "other_vms", target, False, f"{len(vms)} powered on",
                   f"{len(vms)} other powered-on VMs on the run's hosts: {shown}")


def storage_tasks(spec: LabHygiene, vcenter: str, tasks: Sequence[LabTask]) -> Finding:
    """Resyncs, snapshot removals and Storage vMotions load the storage under the run."""
    busy = [t for t in tasks if STORAGE_TASK.search(t.what) and t.state in ("queued",
                                                                             "running")]
    if not busy:
        return _judged(spec, "storage_tasks", f"vcenter {vcenter}", True, "none",
                       "no storage task in progress on the run's objects")
    text = "; ".join(f"{t.what} on {t.entity} ({t.state}"
                     + (f", by {t.user})" if t.user else ")") for t in busy[:8])
    return _judged(spec, "storage_tasks", f"vcenter {vcenter}", False,
                   f"{len(busy)} in progress", f"{len(busy)} storage tasks in progress: {text}")


def clock(spec: LabHygiene, facts: LabFacts) -> Finding:
    """Events are placed in a trial's window by these clocks: they must agree."""
    skew = spec.clock_skew
    parts, over, unknown = [], [], []
    if facts.vcenter_offset is None:
        unknown.append("vCenter")
    else:
        parts.append(f"vCenter {facts.vcenter_offset:+.2f} s from the controller")
        if abs(facts.vcenter_offset) > skew:
            over.append("vCenter")
    for h in facts.hosts:
        if h.clock_offset is None:
            unknown.append(h.name)
        else:
            parts.append(f"{h.name} {h.clock_offset:+.2f} s from vCenter")
            if abs(h.clock_offset) > skew:
                over.append(h.name)
    if unknown:
        parts.append("not reported: " + ", ".join(unknown))
    state = f"over {skew:g} s" if over else ("agree" if facts.vcenter_offset is not None
                                             else "unknown")
    detail = "; ".join(parts) + (f" (more than {skew:g} s: {', '.join(over)})" if over else "")
    return _judged(spec, "clock", f"vcenter {facts.vcenter}", not over and
                   facts.vcenter_offset is not None, state, detail)


def guest_clocks(spec: LabHygiene, offsets: Mapping[str, float | None]) -> Finding:
    """The guests' clocks against the controller's (measured over SSH when the run
    records its environment): a guest's figures are timed by its own clock."""
    skew = spec.clock_skew
    over = [g for g, o in offsets.items() if o is not None and abs(o) > skew]
    unknown = [g for g, o in offsets.items() if o is None]
    parts = [f"{g} {o:+.3f} s" for g, o in offsets.items() if o is not None]
    if unknown:
        parts.append("not measured: " + ", ".join(unknown))
    detail = "guest clocks from the controller's: " + "; ".join(parts) + (
        f" (more than {skew:g} s: {', '.join(over)})" if over else "")
    state = f"over {skew:g} s" if over else ("unknown" if unknown else "agree")
    return _judged(spec, "clock", "guests", not over and not unknown, state, detail)


def judge(facts: LabFacts, spec: LabHygiene) -> tuple[Finding, ...]:
    """Every finding of one vCenter, in the order of :data:`CHECKS`."""
    out = [host_state(spec, h) for h in facts.hosts]
    out += [drs(spec, c, facts.run_vms) for c in facts.clusters]
    out += [power_policy(spec, h) for h in facts.hosts]
    out += [ha(spec, c) for c in facts.clusters]
    out += [alarms(spec, f"host {h.name}", h.alarms) for h in facts.hosts]
    out += [alarms(spec, f"cluster {c.name}", c.alarms) for c in facts.clusters]
    if facts.vm_alarms:
        out.append(alarms(spec, "the run's VMs", facts.vm_alarms))
    if facts.hosts:
        out.append(other_vms(spec, [h.name for h in facts.hosts], facts.other_vms))
    out.append(storage_tasks(spec, facts.vcenter, facts.tasks))
    out.append(clock(spec, facts))
    return tuple(replace(f, vcenter=facts.vcenter) for f in out)


def failures(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.level == "fail"]
