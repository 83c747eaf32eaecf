"""VMs that follow the points, against the vCenter simulator: a count that changes
between points clones only the VMs it adds (linked clones from the source's snapshot)
and destroys only the ones it drops; vCenter's own events count the clones and the
removals; the end of the run (or Ctrl-C in the middle of a point's clones) leaves no VM."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyVmomi import vim

from tests.integration.test_vsphere_provision import RUN_ID, make_lab
from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.config.scenario import Scenario
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import Interrupted
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.tasks import Watcher

GOLDEN = "golden-linux"  # a VM with a snapshot: the source of linked clones
PREFIX = f"vb-{RUN_ID}-"


def _scenario(count: int) -> Scenario:
    return Scenario.model_validate({
        "version": 1,
        "name": "scale",
        "topology": {"web": {"count": count, "vm": {
            "template": GOLDEN, "linked": True, "cluster": "DC0_C0", "ip_timeout": "20s"}}},
        "workload": {"driver": "fio", "params": {}},
        "phases": {"steady": 1},
    })


def _guests(n: int) -> list[str]:
    return [f"web-{i + 1}" for i in range(n)]


def _run(lab: Lab, points: list[int], **kw: object) -> VSphereRun:
    """A run whose planned points use the first N web guests for each N of ``points``."""
    top = max(points)
    return VSphereRun(_scenario(top), lab, {"web": "vc1"}, {"web": _guests(top)},
                      point_guests=[_guests(n) for n in points], **kw)  # type: ignore[arg-type]


def _events(lab: Lab, kind: type) -> list[str]:
    """The names of this run's VMs in vCenter's events of ``kind`` (its own record of
    every clone and removal, not vbench's)."""
    with SessionPool.for_lab(lab) as pool:
        em = pool.get("vc1").content.eventManager
        found = em.QueryEvents(vim.event.EventFilterSpec(eventTypeId=[kind._wsdlName]))
    names = [e.vm.name for e in found if e.vm is not None]
    return sorted(n for n in names if n.startswith(PREFIX))


def _ours(lab: Lab) -> set[str]:
    with SessionPool.for_lab(lab) as pool:
        vms = Inventory.load(pool.get("vc1")).candidates("vm")
    return {o.name.removeprefix(PREFIX) for o in vms if o.name.startswith(PREFIX)}


@pytest.fixture
def lab(request: pytest.FixtureRequest, vcsim_factory: Callable[..., VcsimServer]) -> Lab:
    """A simulator with a golden VM; clones take 150 ms (a test may ask for longer)."""
    clone_ms = getattr(request, "param", 150)
    server = vcsim_factory(method_delay_ms=(("CloneVM_Task", clone_ms),))
    lab = make_lab(server)
    with SessionPool.for_lab(lab) as pool:
        session = pool.get("vc1")
        src = Inventory.load(session).find("vm", "DC0_C0_RP0_VM0")
        spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(pool=src.get("resourcePool")))
        with Watcher(session) as w:
            vm = w.wait_task(src.ref.CloneVM_Task(folder=src.get("parent"), name=GOLDEN,
                                                  spec=spec), "setup", "clone")
            w.wait_task(vm.CreateSnapshot_Task(name="base", memory=False, quiesce=False),
                        "setup", "snapshot")
    return lab


def _move(run: VSphereRun, n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    change = run.change_for({"web": _guests(n)})
    run.apply(change)
    return change.create, change.destroy


def test_a_count_that_changes_clones_and_destroys_only_the_difference(
    lab: Lab, tmp_path: Path
) -> None:
    run = _run(lab, [1, 2, 4])
    try:
        run.preflight()
        first = run.provision(RUN_ID, tmp_path)
        assert list(first) == ["web-1"]  # up front: what every point uses
        assert _move(run, 1) == ((), ())
        assert _move(run, 2) == (("web-2",), ())
        assert _move(run, 4) == (("web-3", "web-4"), ())
        # Four VMs for counts 1, 2 and 4 (not 1 + 2 + 4 = 7), as vCenter counted them.
        assert len(_events(lab, vim.event.VmClonedEvent)) == 4
        assert _ours(lab) == {"web-1", "web-2", "web-3", "web-4"}
        run.testbed()  # as a run captures it after a point's clones
        ip_of_3 = next(v.ip for v in run.vms if v.guest == "web-3")
        # 4 -> 2 -> 3: two removed, one cloned again (its pool address back).
        assert _move(run, 2) == ((), ("web-3", "web-4"))
        assert _events(lab, vim.event.VmRemovedEvent) == [f"{PREFIX}web-3", f"{PREFIX}web-4"]
        assert _ours(lab) == {"web-1", "web-2"}
        assert _move(run, 3) == (("web-3",), ())
        assert len(_events(lab, vim.event.VmClonedEvent)) == 5
        assert next(v.ip for v in run.vms if v.guest == "web-3") == ip_of_3
        used = run.record_point(5, ["web-1", "web-2", "web-3"])
        assert [u["name"] for u in used] == [f"{PREFIX}web-{i}" for i in (1, 2, 3)]
        testbed = run.testbed()
        assert testbed is not None and testbed["point_vms"]["5"] == used
        # web-4 is destroyed, yet the testbed still lists it: a point ran on it.
        assert {v["name"] for v in testbed["vms"]} == {f"{PREFIX}web-{i}" for i in (1, 2, 3, 4)}
    finally:
        report = run.cleanup()
        run.close()
    assert len(report.destroyed) == 3 and not report.errors
    assert _ours(lab) == set()


# Clone calls take 1 s: Ctrl-C lands while the point's clones are under way, however slow
# the machine is at noticing the journal entry.
@pytest.mark.parametrize("lab", [1000], indirect=True)
def test_ctrl_c_while_a_point_clones_leaves_nothing(lab: Lab, tmp_path: Path) -> None:
    cancel = threading.Event()
    run = _run(lab, [1, 4], cancel=cancel)
    try:
        run.preflight()
        run.provision(RUN_ID, tmp_path)
        # The up-front clone's intent is journaled; the next intent is a clone the second
        # point asks for: its call is on the wire (1 s) when the user presses Ctrl-C.
        journal = tmp_path / "vsphere-journal.jsonl"
        before = journal.read_text().count('"event": "intent"')
        trigger = when_journaled_count(journal, "intent", before + 1, cancel.set)
        with pytest.raises(Interrupted):
            _move(run, 4)
        trigger.join(30)
    finally:
        report = run.cleanup()
        run.close()
    assert not report.errors, report.errors
    # The up-front VM and every clone whose call went out (at least the one seen).
    assert 2 <= len(report.destroyed) <= 4
    assert _ours(lab) == set()


def when_journaled_count(
    journal: Path, event: str, count: int, action: Callable[[], None]
) -> threading.Thread:
    """Do ``action`` once the journal holds ``count`` entries of ``event``."""
    from tests.e2e.helpers import wait_for

    def go() -> None:
        wait_for(lambda: journal.read_text().count(f'"event": "{event}"') >= count, 60,
                 f"{count} {event} entries in the journal")
        action()

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t

