"""The task watcher against vcsim: what has already finished settles from one read, what
is still running is awaited through the shared WaitForUpdatesEx filter, and a task
vCenter does not know fails at once instead of hanging."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from pyVmomi import vim

from tests.e2e.helpers import wait_for
from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.errors import LabError
from vbench.vsphere.connection import SessionPool, VSphereSession, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.tasks import Watcher, task_done, wait_future

Factory = Callable[..., VcsimServer]
SLOW_MS = 1500  # vcsim runs each reconfigure task this long (its task name: ReconfigVm)


@pytest.fixture
def session(vcsim_factory: Factory) -> Iterator[VSphereSession]:
    server = vcsim_factory(method_delay_ms=(("ReconfigVm", SLOW_MS),))
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    lab = Lab.model_validate({"version": 1, "name": "w", "vcenters": {"vc1": vc}})
    with SessionPool.for_lab(lab) as pool:
        yield pool.get("vc1")


def _vm(session: VSphereSession, name: str) -> vim.VirtualMachine:
    return Inventory.load(session).find("vm", name).ref


def test_a_finished_task_settles_from_one_read_without_the_filter(
    session: VSphereSession,
) -> None:
    vm = _vm(session, "DC0_H0_VM0")
    task = vm.PowerOffVM_Task()  # not delayed: wait until vCenter says it is done
    wait_for(lambda: task.info.state in ("success", "error"), 30, "the power-off task to end")
    with Watcher(session) as w:
        future = w.watch(task, task_done)
        assert future.done() and future.result() == ("success", None)
        assert w.pending() == 0


def test_running_tasks_are_awaited_together_through_the_filter(
    session: VSphereSession,
) -> None:
    vms = [_vm(session, n) for n in ("DC0_H0_VM0", "DC0_H0_VM1", "DC0_C0_RP0_VM0")]
    spec = vim.vm.ConfigSpec(annotation="watched")
    with Watcher(session) as w:
        t0 = time.monotonic()
        futures = [w.watch(vm.ReconfigVM_Task(spec=spec), task_done) for vm in vms]
        assert w.pending() == 3
        states = [wait_future(f, None, 30)[0] for f in futures]
        elapsed = time.monotonic() - t0
        assert states == ["success"] * 3 and w.pending() == 0
    # Awaited together: all three were in the one filter at once (pending == 3 above),
    # and none was settled before vCenter's own delay had passed. How much sooner than
    # three in a row is the machine's speed, not the watcher's: not asserted.
    assert elapsed >= SLOW_MS / 1000


def test_a_task_vcenter_does_not_know_fails_at_once(session: VSphereSession) -> None:
    with Watcher(session) as w:
        future = w.watch(vim.Task("task-999999", session.stub), task_done)
        with pytest.raises(LabError, match="task-999999 no longer exists"):
            wait_future(future, None, 5)


def test_a_task_watched_again_while_in_the_view_settles(session: VSphereSession) -> None:
    # Cleanup after Ctrl-C awaits a task the interrupted provisioning was already watching.
    vm = _vm(session, "DC0_H0_VM0")
    task = vm.ReconfigVM_Task(spec=vim.vm.ConfigSpec(annotation="twice"))
    with Watcher(session) as w:
        w.watch(task, task_done)  # abandoned, as by an interrupted wait
        # Until the watcher thread has put it in its view (white-box: that is the case).
        wait_for(lambda: task._moId in w._in_view, 30, "the task in the watcher's view")
        assert w.pending() == 1
        again = w.watch(task, task_done)
        assert wait_future(again, None, 10)[0] == "success" and w.pending() == 0


def test_closing_ends_the_wait_in_vcenter_at_once(
    vcsim_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run's last step after Ctrl-C closes its watchers: each was inside WaitForUpdatesEx,
    # which vCenter holds up to WAIT_SECONDS. Made 30 s here, so that waiting it out
    # (instead of CancelWaitForUpdates) cannot pass: the bound is that timer, not speed.
    monkeypatch.setattr("vbench.vsphere.tasks.WAIT_SECONDS", 30)
    server = vcsim_factory(method_delay_ms=(("ReconfigVm", 120_000),))
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    lab = Lab.model_validate({"version": 1, "name": "w", "vcenters": {"vc1": vc}})
    with SessionPool.for_lab(lab) as pool:
        session = pool.get("vc1")
        task = _vm(session, "DC0_H0_VM0").ReconfigVM_Task(spec=vim.vm.ConfigSpec(annotation="x"))
        w = Watcher(session)
        w.watch(task, task_done)
        # Its first answer read the task running; the next wait is the long one.
        wait_for(lambda: w.updates >= 1, 30, "the watcher's first update")
        t0 = time.monotonic()
        w.close()
        took = time.monotonic() - t0
        assert not w._thread.is_alive()
        assert took < 15, f"close took {took:.1f} s: it waited for vCenter's wait to end"
