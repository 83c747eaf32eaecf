"""Waiting on many vCenter tasks (and VM properties) at once, through one filter.

A :class:`Watcher` owns one PropertyCollector (``CreatePropertyCollector``) with one
filter over a ListView. Whatever is watched — tasks until they finish, VMs until
VMware Tools report an address — is read once (what already holds settles there) and
otherwise handed to a single thread, which adds it to the ListView between two calls of
``WaitForUpdatesEx`` and settles each waiter's future as its changes arrive. There is no
polling loop per task. An object handed over while a wait is in flight joins the view
when that wait returns: at the next change of anything watched, or after
``WAIT_SECONDS``. When the session expires, the watcher logs in again and rebuilds its
collector with everything still pending (a new filter reports current values, so
nothing is missed).
"""

from __future__ import annotations

import contextlib
import ipaddress
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vbench.errors import Interrupted, LabError
from vbench.lazy import lazy_module
from vbench.vsphere.connection import VSphereSession
from vbench.vsphere.faults import fault_text

if TYPE_CHECKING:
    from pyVmomi import vim, vmodl
else:
    vim = lazy_module("pyVmomi", "vim")
    vmodl = lazy_module("pyVmomi", "vmodl")

PC = lazy_module("pyVmomi", "vmodl.query.PropertyCollector")
TASK_PROPS = ("info.state", "info.error", "info.result")  # read once, when a watch starts
# What the shared filter reports of a task: its state only. vcsim recomputes a filter's
# every property for every change in its inventory, so the filter stays as lean as it
# can; a task's result or fault is read once it has finished.
FILTER_TASK_PROPS = ("info.state",)
READ_FIRST = "_read_first"  # marks values that hold every path of TASK_PROPS
UNREAD = object()  # a finished task's outcome not read yet
VM_PROPS = ("guest.ipAddress", "guest.net", "guest.toolsRunningStatus", "runtime.powerState")
WAIT_SECONDS = 1  # WaitForUpdatesEx returns at least this often, to notice a stop

Condition = Callable[[Mapping[str, Any]], tuple[bool, Any]]


class TaskFailed(LabError):
    """A vCenter task ended in error: names the object, the operation and the fault."""

    def __init__(self, target: str, operation: str, fault: Any) -> None:
        self.operation, self.fault = operation, fault
        super().__init__(target, f"{operation} failed: {fault_text(fault)}")


@dataclass
class _Watch:
    ref: Any
    condition: Condition
    future: Future[Any] = field(default_factory=Future)
    values: dict[str, Any] = field(default_factory=dict)


def task_done(values: Mapping[str, Any]) -> tuple[bool, Any]:
    """Settles with (state, result or fault); the outcome is UNREAD when only the state
    was reported (see :meth:`Watcher.task_outcome`)."""
    state = values.get("info.state")
    if state not in ("success", "error"):
        return False, None
    if READ_FIRST not in values:
        return True, (state, UNREAD)
    return True, (state, values.get("info.result" if state == "success" else "info.error"))


def guest_ipv4(values: Mapping[str, Any]) -> str | None:
    """The first usable IPv4 address VMware Tools report (not link-local or loopback)."""
    candidates = [values.get("guest.ipAddress")]
    for nic in values.get("guest.net") or ():
        candidates.extend(getattr(nic, "ipAddress", None) or ())
    for c in candidates:
        if not c:
            continue
        try:
            ip = ipaddress.ip_address(str(c))
        except ValueError:
            continue
        if ip.version == 4 and not (ip.is_link_local or ip.is_loopback or ip.is_unspecified):
            return str(ip)
    return None


def ip_known(values: Mapping[str, Any]) -> tuple[bool, Any]:
    ip = guest_ipv4(values)
    return (True, ip) if ip else (False, None)


class Watcher:
    """One PropertyCollector filter for everything a provisioning run waits on."""

    def __init__(self, session: VSphereSession) -> None:
        self.session = session
        self._lock = threading.RLock()
        self._watches: dict[str, _Watch] = {}  # moid -> watch
        self._adds: list[Any] = []  # watched, not yet in the view
        self._in_view: set[str] = set()  # moids the view holds
        self._dead: list[Any] = []  # settled, still in the view
        self._wake = threading.Event()  # a watch was added
        self._stop = threading.Event()
        self._pc: Any = None
        self._view: Any = None
        self._version = ""
        self._generation = 0
        self.rebuilds = 0
        self.updates = 0  # WaitForUpdatesEx answers that carried changes
        self.session.call(self._build)
        self._thread = threading.Thread(target=self._loop, name="vbench-watch", daemon=True)
        self._thread.start()

    # --- the collector ---------------------------------------------------------------
    def _build(self) -> None:
        content = self.session.content
        refs = [w.ref for w in self._watches.values()]
        self._in_view = {r._moId for r in refs}
        self._pc = content.propertyCollector.CreatePropertyCollector()
        self._view = content.viewManager.CreateListView(refs)
        traverse = PC.TraversalSpec(name="list", type=vim.view.ListView, path="view")
        spec = PC.FilterSpec(
            objectSet=[PC.ObjectSpec(obj=self._view, skip=True, selectSet=[traverse])],
            propSet=[
                PC.PropertySpec(type=vim.Task, pathSet=list(FILTER_TASK_PROPS)),
                PC.PropertySpec(type=vim.VirtualMachine, pathSet=list(VM_PROPS)),
            ],
        )
        self._pc.CreateFilter(spec, True)
        self._version = ""
        self._adds, self._dead = [], []  # a new view holds exactly what is watched
        self._generation += 1

    def _rebuild(self, seen_generation: int | None = None) -> None:
        with self._lock:
            if seen_generation is not None and seen_generation != self._generation:
                return  # another thread has rebuilt it already
            with contextlib.suppress(Exception):
                self.session.touch()  # logs in again when the session is gone
            self.session.call(self._build)
            self.rebuilds += 1

    # --- watching --------------------------------------------------------------------
    def watch(self, ref: Any, condition: Condition) -> Future[Any]:
        """A future settled with ``condition``'s value once it holds for ``ref``.

        The object's current values are read first, as a new filter's first update
        would report them: what already holds (a quick task that has finished, an
        address Tools already report) settles at once, without joining the shared
        filter. Only what is still pending is waited on."""
        w = _Watch(ref, condition)
        try:
            now = self._current(ref)
        except LabError as exc:
            w.future.set_exception(exc)
            return w.future
        except Exception:
            now = None  # the shared filter will report it
        if now is not None:
            finished, value = condition(now)
            if finished:
                w.future.set_result(value)
                return w.future
        with self._lock:
            self._watches[ref._moId] = w
            # Watched before (a task an interrupted wait left behind, now awaited by
            # cleanup): it is still in the view, so the filter will not report it anew.
            known = ref._moId in self._in_view
            leaving = [r for r in self._dead if r._moId == ref._moId]
            if leaving:  # settled before, not yet out of the view: keep it there
                self._dead = [r for r in self._dead if r._moId != ref._moId]
            elif not known:
                self._adds.append(ref)
        self._wake.set()
        if known:
            self._recheck(w)  # a change before it was registered went to the old watch
        if not self._thread.is_alive():
            # The watcher gave up (and failed its waiters): nobody would settle this one.
            self._fail_all(RuntimeError("the task watcher has stopped"))
        return w.future

    def _recheck(self, w: _Watch) -> None:
        with contextlib.suppress(Exception):
            finished, value = w.condition(self._current(w.ref))
            if finished:
                with self._lock:
                    if self._watches.get(w.ref._moId) is w:
                        del self._watches[w.ref._moId]
                        self._dead.append(w.ref)
                if not w.future.done():
                    w.future.set_result(value)

    def _current(self, ref: Any) -> dict[str, Any]:
        """``ref``'s watched properties now; raises LabError when vCenter has no such
        object (a task long expired): nothing would ever settle its watch."""
        paths = TASK_PROPS if isinstance(ref, vim.Task) else VM_PROPS
        spec = PC.FilterSpec(
            objectSet=[PC.ObjectSpec(obj=ref, skip=False)],
            propSet=[PC.PropertySpec(type=type(ref), pathSet=list(paths))],
        )
        pc = self.session.content.propertyCollector
        try:
            result = self.session.call(
                lambda: pc.RetrievePropertiesEx([spec], PC.RetrieveOptions())
            )
        except vmodl.fault.ManagedObjectNotFound:
            raise LabError(self.session.target.label, f"{ref._moId} no longer exists") from None
        if result is None or not result.objects:
            raise LabError(self.session.target.label, f"{ref._moId} no longer exists")
        values = {p.name: p.val for p in result.objects[0].propSet or ()}
        return {**values, READ_FIRST: True} if isinstance(ref, vim.Task) else values

    def _sync_view(self) -> bool:
        """Bring the view up to date with the watches; False when there is nothing to
        wait on (then it has waited a while for a watch to be added).

        Only this thread changes the view, and never while its wait is in flight:
        vcsim (v0.46) deadlocks when ModifyListView runs while WaitForUpdatesEx
        re-reads a filter over that view (each takes the other's lock)."""
        self._wake.clear()
        with self._lock:
            adds, self._adds = self._adds, []
            dead, self._dead = self._dead, []
            idle = not self._watches
            view = self._view
        if adds or dead:
            try:
                view.ModifyListView(add=adds or None, remove=dead or None)
            except Exception:
                with self._lock:  # tried again on the next round (or by a rebuild)
                    self._adds[:0], self._dead[:0] = adds, dead
                raise
            with self._lock:
                self._in_view.difference_update(r._moId for r in dead)
                self._in_view.update(r._moId for r in adds)
        if idle:
            self._wake.wait(WAIT_SECONDS)
            return False
        return True

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            generation = self._generation
            try:
                if not self._sync_view():
                    continue
                update = self._pc.WaitForUpdatesEx(
                    self._version, PC.WaitOptions(maxWaitSeconds=WAIT_SECONDS)
                )
                failures = 0
            except (vim.fault.NotAuthenticated, vmodl.fault.ManagedObjectNotFound):
                if not self._stop.is_set():
                    self._retry_rebuild(generation)
                continue
            except Exception as exc:
                if self._stop.is_set():
                    return
                failures += 1
                if failures >= 5:
                    self._fail_all(exc)
                    return
                time.sleep(0.2 * failures)
                continue
            if update is not None:
                self._version = update.version
                try:
                    self._apply(update)
                except Exception as exc:
                    # A watcher thread that died quietly would leave every waiter
                    # waiting forever: fail them all with the cause instead.
                    self._fail_all(exc)
                    return

    def _retry_rebuild(self, generation: int) -> None:
        try:
            self._rebuild(generation)
        except Exception as exc:
            self._fail_all(exc)
            self._stop.set()

    def _apply(self, update: Any) -> None:
        self.updates += 1
        done: list[tuple[_Watch, Any]] = []
        with self._lock:
            for fs in update.filterSet or ():
                for oc in fs.objectSet or ():
                    w = self._watches.get(oc.obj._moId)
                    if w is None:
                        continue
                    for change in oc.changeSet or ():
                        w.values[change.name] = change.val
                    finished, value = w.condition(w.values)
                    if finished:
                        done.append((w, value))
                        del self._watches[oc.obj._moId]
            # Out of the view before the next wait: a collector's work per update
            # grows with the view.
            self._dead.extend(w.ref for w, _ in done)
        for w, value in done:
            if not w.future.done():
                w.future.set_result(value)

    def _fail_all(self, exc: BaseException) -> None:
        with self._lock:
            watches, self._watches = list(self._watches.values()), {}
        err = LabError(self.session.target.label, f"waiting for tasks failed: {fault_text(exc)}")
        for w in watches:
            if not w.future.done():
                w.future.set_exception(err)

    def pending(self) -> int:
        """How many objects the shared filter is waiting on."""
        with self._lock:
            return len(self._watches)

    def forget(self, ref: Any) -> None:
        with self._lock:
            if self._watches.pop(ref._moId, None) is not None:
                self._dead.append(ref)

    # --- convenience -----------------------------------------------------------------
    def wait_task(
        self,
        task: Any,
        target: str,
        operation: str,
        cancel: threading.Event | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The task's result; TaskFailed names ``target``, ``operation`` and the fault."""
        state, value = self.task_outcome(task, cancel, timeout)
        if state == "error":
            raise TaskFailed(target, operation, value)
        return value

    def task_outcome(
        self, task: Any, cancel: threading.Event | None = None, timeout: float | None = None
    ) -> tuple[str, Any]:
        """("success", result) or ("error", fault) once ``task`` has finished."""
        state, value = wait_future(self.watch(task, task_done), cancel, timeout, task_ref=task)
        if value is UNREAD:
            path = "info.result" if state == "success" else "info.error"
            value = self._current(task).get(path)
        return state, value

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        # The thread may be in vCenter's WaitForUpdatesEx for up to WAIT_SECONDS: end that
        # wait now (it returns RequestCanceled) rather than let a Ctrl-C wait for it.
        with contextlib.suppress(Exception):
            self._pc.CancelWaitForUpdates()
        self._thread.join(WAIT_SECONDS + 5)
        with contextlib.suppress(Exception):
            self._view.DestroyView()
        with contextlib.suppress(Exception):
            self._pc.Destroy()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def wait_future(
    future: Future[Any],
    cancel: threading.Event | None,
    timeout: float | None,
    task_ref: Any = None,
) -> Any:
    """``future.result()``, giving up on ``cancel`` (Interrupted) or after ``timeout``
    (TimeoutError). A cancelled vCenter task is asked to cancel as well."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = 0.2
        if deadline is not None:
            step = max(0.0, min(step, deadline - time.monotonic()))
        try:
            return future.result(timeout=step)
        except FutureTimeout:
            pass
        if cancel is not None and cancel.is_set():
            if task_ref is not None:
                with contextlib.suppress(Exception):
                    task_ref.CancelTask()
            raise Interrupted("interrupted")
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError
