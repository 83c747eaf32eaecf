"""Clean-up of a VM powered on after its power state was read (a power-on the killed run
had on the wire, which no journal knew of, ended in between): vcsim refuses to destroy a
powered-on VM (InvalidPowerState), so the clean-up powers it off and destroys it then,
instead of leaving it behind with an error (seen in a clean-clone run: vcbench's kill -9
test, 'destroy failed: InvalidPowerState: the VM is poweredOn')."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.vcsim import VcsimServer
from vbench.config.lab import Lab
from vbench.vsphere import cleanup
from vbench.vsphere.connection import SessionPool, VSphereSession, server_thumbprint
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.tasks import Watcher


@pytest.fixture
def session(vcsim_factory: Callable[..., VcsimServer]) -> Iterator[VSphereSession]:
    server = vcsim_factory()
    vc = server.lab_vcenter(thumbprint=server_thumbprint(server.host, server.port))
    lab = Lab.model_validate({"version": 1, "name": "c", "vcenters": {"vc1": vc}})
    with SessionPool.for_lab(lab) as pool:
        yield pool.get("vc1")


def test_a_vm_powered_on_after_it_was_read_is_powered_off_and_destroyed(
    session: VSphereSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    vm = Inventory.load(session).find("vm", "DC0_H0_VM0")
    assert str(vm.ref.runtime.powerState) == "poweredOn"
    # The state as read before the power-on landed: off, so no power-off is asked for.
    monkeypatch.setattr(cleanup, "_settle", lambda *_a: "poweredOff")
    with Watcher(session) as w:
        errors = cleanup.remove_vms(session, w, [vm])
    assert errors == [None]
    names = [o.name for o in Inventory.load(session).candidates("vm")]
    assert names and "DC0_H0_VM0" not in names
