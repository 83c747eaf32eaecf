"""Tasks in a steady window, read from vcsim's task history: a snapshot task that started
before the window and ended inside it (no event of its own says it) is a disturbance of
the window; one that ended before the window is not; and the hygiene facts read around
a VM deleted since its reference was read."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.vsphere.connection import SessionPool, VSphereSession, server_thumbprint
from vbench.vsphere.hygiene_events import read_disturbances
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.tasks import Watcher

SNAPSHOT_MS = 1500  # vcsim runs each snapshot creation this long (its task name: CreateSnapshot)


@pytest.fixture
def session(vcsim_factory: Callable[..., VcsimServer]) -> Iterator[VSphereSession]:
    server = vcsim_factory(method_delay_ms=(("CreateSnapshot", SNAPSHOT_MS),))
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    lab = Lab.model_validate({"version": 1, "name": "t", "vcenters": {"vc1": vc}})
    with SessionPool.for_lab(lab) as pool:
        yield pool.get("vc1")


def test_a_task_started_before_the_window_and_ended_in_it_disturbs_it(
    session: VSphereSession,
) -> None:
    vm = Inventory.load(session).find("vm", "DC0_H0_VM0").ref
    with Watcher(session) as w:
        task = vm.CreateSnapshot_Task(name="s1", memory=False, quiesce=False)
        w.wait_task(task, "test", "snapshot")
    info = task.info
    started, done = info.startTime.timestamp(), info.completeTime.timestamp()
    assert done - started >= SNAPSHOT_MS / 1000 - 0.1, (started, done)
    objects = {"DC0_H0_VM0", str(vm._moId)}
    # The window opens while the task runs and closes after it ended: vcsim's clock is
    # this machine's, so no offset.
    window = (started + (done - started) / 2, done + 1.0)
    found = read_disturbances(session, window, objects, shown={str(vm._moId): "vm0"})
    snapshots = [d for d in found if d.kind == "snapshot"]
    assert len(snapshots) == 1, found
    (d,) = snapshots
    assert d.about == "vm0" and abs(d.at - started) < 0.01
    assert d.what.endswith(" s into the steady window)") and "(ended " in d.what, d.what
    # A window that opens after the task ended does not see it.
    later = read_disturbances(session, (done + 0.5, done + 2.0), objects)
    assert [d for d in later if d.kind == "snapshot"] == []


def test_a_vm_deleted_since_its_reference_was_read_is_left_out_of_the_read(
    session: VSphereSession,
) -> None:
    """A host's VM list read before a VM was destroyed (or vcsim's list still naming a VM
    that moved away and was destroyed): the properties of the others are read, the gone
    one is left out, instead of vCenter's ManagedObjectNotFound failing the whole read
    (a resumed run's preflight crashed on it)."""
    from pyVmomi import vim

    from vbench.vsphere.hygiene import read_facts
    from vbench.vsphere.inventory import retrieve_refs

    inv = Inventory.load(session)
    gone, kept = (inv.find("vm", n).ref for n in ("DC0_H0_VM0", "DC0_H0_VM1"))
    with Watcher(session) as w:
        w.wait_task(gone.PowerOffVM_Task(), "test", "power off")
        w.wait_task(gone.Destroy_Task(), "test", "destroy")
    got = retrieve_refs(session, [gone, kept], {vim.VirtualMachine: ("name",)})
    assert [o.name for o in got] == ["DC0_H0_VM1"]
    # The hygiene facts of the host, with the gone VM among "the run's VMs".
    host = inv.find("host", "DC0_H0")
    facts = read_facts(session, "vc1", [host], [gone, kept])
    assert facts.run_vms == ("DC0_H0_VM1",)
