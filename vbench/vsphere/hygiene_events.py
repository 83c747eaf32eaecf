"""Disturbances: vCenter events and tasks on the run's objects inside a steady window.

After a trial, :func:`read_disturbances` asks vCenter once for the window's events
(an EventHistoryCollector with a time filter) and tasks (a TaskHistoryCollector), not
each object in turn, and keeps those about the run's VMs, hosts and clusters: migrations
(vMotion, Storage vMotion, DRS), HA actions, host state changes (maintenance mode,
disconnection), alarms turning red or yellow, power and reconfiguration of the run's
VMs, another VM powered on on a run's host, snapshot operations, and any other task on
the run's objects (an operation that is an event and a task is said once:
:func:`said_once`). The run's own tasks (its journal's) are not disturbances; neither are
tasks of the run's own user when the workload itself works in vCenter. Times are
vCenter's, put back on the controller's clock by the offset measured before the run (the
``clock`` hygiene check).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pyVmomi import vim

from vbench.vsphere.connection import VSphereSession

PAGE = 200
# How far before a steady window tasks are asked for, to find those that started before it
# and ended inside it (a snapshot removal has no event of its own). Longer ones still
# running are found as tasks in progress; one that started earlier still and ended inside
# the window is not seen.
LOOKBACK = dt.timedelta(hours=1)
MIGRATIONS = {"VmMigratedEvent": "vMotion", "DrsVmMigratedEvent": "DRS vMotion",
              "VmRelocatedEvent": "relocation"}
HOST_EVENTS = {
    "EnteringMaintenanceModeEvent": "entering maintenance mode",
    "EnteredMaintenanceModeEvent": "entered maintenance mode",
    "ExitMaintenanceModeEvent": "left maintenance mode",
    "HostConnectionLostEvent": "connection lost", "HostDisconnectedEvent": "disconnected",
    "HostReconnectionFailedEvent": "reconnection failed", "HostShutdownEvent": "shut down",
    "HostConnectedEvent": "reconnected",
}
VM_EVENTS = {"VmPoweredOffEvent": "powered off", "VmResettingEvent": "reset",
             "VmSuspendedEvent": "suspended", "VmReconfiguredEvent": "reconfigured",
             "VmGuestRebootEvent": "guest rebooted"}
# The descriptionId words of the host tasks whose events HOST_EVENTS names, first match.
HOST_TASKS = (("entermaintenance", "entering maintenance mode"),
              ("exitmaintenance", "leaving maintenance mode"),
              ("maintenance", "maintenance mode"), ("reconnect", "reconnecting"),
              ("disconnect", "disconnecting"))
# The descriptionId words of the VM tasks whose events VM_EVENTS names.
VM_TASK_WORDS = ("poweroff", "reset", "suspend", "reconfig", "reboot")


@dataclass(frozen=True)
class Disturbance:
    at: float  # on the controller's clock (epoch seconds)
    kind: str  # migration | ha | host | alarm | vm | snapshot | task
    what: str  # "vMotion of guest1 to esx2"
    source: str  # the event type or the task's description id
    user: str | None = None
    about: str = ""  # the object it concerns, as shown

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _name(ref_arg: Any) -> str | None:
    """The name an event argument carries (VmEventArgument, HostEventArgument...)."""
    return str(ref_arg.name) if ref_arg is not None and getattr(ref_arg, "name", None) else None


def classify_event(kind: str, args: Mapping[str, str | None], alarm_to: str | None = None
                   ) -> tuple[str, str] | None:
    """(kind, what) of an event by its type name and named arguments (``vm``, ``host``,
    ``source_host``, ``alarm``), or None when it disturbs nothing. Pure."""
    vm, host = args.get("vm"), args.get("host")
    if kind in MIGRATIONS:
        return "migration", f"{MIGRATIONS[kind]} of {vm}{_moved(args)}"
    if kind.startswith("Das") or "Failover" in kind or kind in (
            "VmRestartedOnAlternateHostEvent", "VmDasBeingResetEvent"):
        return "ha", f"HA {kind.removesuffix('Event')} on {vm or host}"
    if kind in HOST_EVENTS:
        return "host", f"host {host} {HOST_EVENTS[kind]}"
    if kind == "AlarmStatusChangedEvent" and alarm_to in ("red", "yellow"):
        return "alarm", f"alarm {args.get('alarm')} turned {alarm_to} on {vm or host}"
    if kind in VM_EVENTS and vm:
        return "vm", f"{vm} {VM_EVENTS[kind]}"
    return None


def _moved(args: Mapping[str, str | None]) -> str:
    """" from esx1 to esx2", or " on esx1 (datastore ds1 to ds2)" when the host stayed
    (a Storage vMotion; vcsim also records the source host as the destination: it is
    never said to have moved a VM to the host it left)."""
    host, src = args.get("host"), args.get("source_host")
    ds, src_ds = args.get("ds"), args.get("source_ds")
    storage = f" (datastore {src_ds} to {ds})" if ds and src_ds and ds != src_ds else ""
    if host and src and host == src:
        return f" on {host}{storage}"
    return (f" from {src}" if src else "") + (f" to {host}" if host else "") + storage


def classify_task(description: str, entity: str) -> tuple[str, str]:
    """(kind, what) of a task on one of the run's objects. Pure."""
    low = description.lower()
    if "relocate" in low or "migrate" in low:
        return "migration", f"migration of {entity} ({description})"
    if "snapshot" in low or "consolidat" in low:
        return "snapshot", f"snapshot operation on {entity} ({description})"
    state = next((said for word, said in HOST_TASKS if word in low), None)
    if state is not None:  # as the event says it (vcsim logs only the task)
        return "host", f"host {entity} {state} (task {description})"
    if low.startswith("virtualmachine.") and any(w in low for w in VM_TASK_WORDS):
        # The task of a VM event (VM_EVENTS): the event says it, the task is the same.
        return "vm", f"task {description} on {entity}"
    return "task", f"task {description} on {entity}"


def said_once(events: Sequence[Disturbance], tasks: Sequence[Disturbance]
              ) -> list[Disturbance]:
    """The events, and the tasks no event already says: an operation is one event and
    one task (a relocation, a power-off, a reconfiguration, maintenance mode); each
    event stands for one task of its kind on its object. Pure."""
    unpaired = Counter((d.kind, d.about) for d in events)
    out = list(events)
    for t in tasks:
        key = (t.kind, t.about)
        if unpaired[key] > 0:
            unpaired[key] -= 1
            continue
        out.append(t)
    return out


def _read_pages(collector: Any, read: Callable[[Any], Any]) -> list[Any]:
    out: list[Any] = []
    try:
        while True:
            page = read(collector)
            if not page:
                return out
            out.extend(page)
    finally:
        collector.DestroyCollector()


def _events(session: VSphereSession, begin: dt.datetime, end: dt.datetime) -> list[Any]:
    spec = vim.event.EventFilterSpec(time=vim.event.EventFilterSpec.ByTime(
        beginTime=begin, endTime=end))
    manager = session.content.eventManager
    return session.call(lambda: _read_pages(manager.CreateCollectorForEvents(spec),
                                            lambda c: c.ReadNextEvents(PAGE)))


def _under_root(session: VSphereSession) -> Any:
    # Only tasks on inventory objects: a task of the FileManager or VirtualDiskManager
    # (which are no ManagedEntity) makes pyVmomi refuse the whole page it is on.
    return vim.TaskFilterSpec.ByEntity(entity=session.content.rootFolder, recursion="all")


def _tasks(session: VSphereSession, begin: dt.datetime, end: dt.datetime) -> list[Any]:
    # Asked by start time from LOOKBACK before the window (vcsim reads every time filter
    # as the queue time; a real vCenter, as the start time asked for here).
    spec = vim.TaskFilterSpec(entity=_under_root(session), time=vim.TaskFilterSpec.ByTime(
        timeType="startedTime", beginTime=begin - LOOKBACK, endTime=end))
    manager = session.content.taskManager
    return ran_into(session.call(lambda: _read_pages(manager.CreateCollectorForTasks(spec),
                                                     lambda c: c.ReadNextTasks(PAGE))), begin)


def ran_into(tasks: Sequence[Any], begin: dt.datetime) -> list[Any]:
    """The tasks that ran in the window starting at ``begin``: started in it, or started
    before it and not completed before it (still running, or ended inside it). Pure."""
    def inside(t: Any) -> bool:
        started, done = getattr(t, "startTime", None), getattr(t, "completeTime", None)
        if started is None:
            return False  # still queued: it has done nothing yet
        return started >= begin or done is None or done >= begin

    return [t for t in tasks if inside(t)]


def tasks_in_progress(session: VSphereSession) -> list[Any]:
    """Every queued or running task on an inventory object (TaskInfo), one collector."""
    spec = vim.TaskFilterSpec(entity=_under_root(session), state=["queued", "running"])
    manager = session.content.taskManager
    return session.call(lambda: _read_pages(manager.CreateCollectorForTasks(spec),
                                            lambda c: c.ReadNextTasks(PAGE)))


def started_before(running: Sequence[Any], begin: dt.datetime) -> list[Any]:
    """The tasks still running now that started before the window: they ran through
    it (a Storage vMotion started in the cool-down before), and the window's query by
    start time does not return them. Pure."""
    return [t for t in running if str(getattr(t, "state", "")) == "running"
            and getattr(t, "startTime", None) is not None and t.startTime < begin]


def _stamp(when: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(when, tz=dt.UTC)


def read_disturbances(
    session: VSphereSession, window: tuple[float, float], objects: Collection[str],
    *, offset: float = 0.0, own_tasks: Collection[str] = (), ignore_user: str | None = None,
    shown: Mapping[str, str] | None = None,
) -> list[Disturbance]:
    """What happened to ``objects`` (VM, host and cluster names) between ``window``'s
    start and end (controller clock; ``offset``: vCenter's clock minus it). ``shown``:
    the names to print for some objects (a run's VM by its guest's name)."""
    begin, end = _stamp(window[0] + offset), _stamp(window[1] + offset)
    shown = shown or {}
    events = [d for e in _events(session, begin, end)
              if (d := _from_event(e, objects, shown, offset, ignore_user)) is not None]
    tasks = [d for t in once([*_tasks(session, begin, end),
                              *started_before(tasks_in_progress(session), begin)])
             if (d := _from_task(t, objects, shown, offset, own_tasks, ignore_user, begin))
             is not None]
    return sorted(said_once(events, tasks), key=lambda d: d.at)


def once(tasks: Sequence[Any]) -> list[Any]:
    """Each task once (one still running is both in the window's query and in progress)."""
    seen: set[str] = set()
    out = []
    for t in tasks:
        key = str(getattr(t, "key", id(t)))
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _from_event(e: Any, objects: Collection[str], shown: Mapping[str, str], offset: float,
                ignore_user: str | None) -> Disturbance | None:
    user = str(e.userName) if getattr(e, "userName", None) else None
    if ignore_user is not None and user == ignore_user:
        return None
    args = {"vm": _name(getattr(e, "vm", None)), "host": _name(getattr(e, "host", None)),
            "source_host": _name(getattr(e, "sourceHost", None)),
            "cluster": _name(getattr(e, "computeResource", None)),
            "alarm": _name(getattr(e, "alarm", None)), "ds": _name(getattr(e, "ds", None)),
            "source_ds": _name(getattr(e, "sourceDatastore", None))}
    if not any(v in objects for v in (args["vm"], args["host"], args["cluster"]) if v):
        return None
    kind = type(e).__name__.rsplit(".", 1)[-1]
    if kind == "VmPoweredOnEvent" and args["vm"] not in objects and args["host"] in objects:
        # A neighbour booting on a run's host (esxtop has no column for a VM powered on
        # after it started): about that VM, so `disturbance.ignore` can name it.
        return Disturbance(e.createdTime.timestamp() - offset, "vm",
                           f"another VM {args['vm']} powered on on {args['host']}", kind, user,
                           str(args["vm"]))
    if kind in VM_EVENTS and args["vm"] not in objects:
        return None  # another VM's power-off or reconfiguration on a run's host: not ours
    named = {k: shown.get(v, v) if v else v for k, v in args.items()}
    got = classify_event(kind, named, str(getattr(e, "to", "") or "") or None)
    if got is None:
        return None
    about = named["vm"] or named["host"] or named["cluster"] or ""
    return Disturbance(e.createdTime.timestamp() - offset, got[0], got[1], kind, user, about)


def _from_task(t: Any, objects: Collection[str], shown: Mapping[str, str], offset: float,
               own: Collection[str], ignore_user: str | None, begin: dt.datetime
               ) -> Disturbance | None:
    entity = getattr(t, "entity", None)
    name = str(t.entityName) if getattr(t, "entityName", None) else None
    if entity is not None and name not in objects:
        name = str(entity._moId)  # vcsim names a task's entity by its moid
    if name not in objects or str(t.key) in own:
        return None
    user = getattr(getattr(t, "reason", None), "userName", None)
    user = str(user) if user else None
    if ignore_user is not None and user == ignore_user:
        return None
    about = shown.get(name, name)
    kind, what = classify_task(str(t.descriptionId), about)
    return Disturbance(t.startTime.timestamp() - offset, kind, what + _before(t, begin),
                       str(t.descriptionId), user, about)


def _before(t: Any, begin: dt.datetime) -> str:
    """How a task that started before the window reached into it (its time is its start,
    which the text then says is before the window)."""
    if t.startTime >= begin:
        return ""
    done = getattr(t, "completeTime", None)
    if done is None:
        return " (still running when the trial ended)"
    return f" (ended {(done - begin).total_seconds():.0f} s into the steady window)"


def disturbance_text(d: Disturbance, steady_start: float | None) -> str:
    """"vMotion of guest1 to esx2 at 12:03:04, 21 s into the steady window"."""
    clock = dt.datetime.fromtimestamp(d.at).strftime("%H:%M:%S")
    into = "" if steady_start is None else (
        f", {d.at - steady_start:.0f} s into the steady window" if d.at >= steady_start
        else f", {steady_start - d.at:.0f} s before the steady window")
    by = f" (by {d.user})" if d.user else ""
    return f"{d.what} at {clock}{into}{by}"
