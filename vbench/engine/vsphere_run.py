"""The vSphere side of one `vbench run`: preflight, provisioning, testbed, cleanup.

The engine calls, in order: :meth:`VSphereRun.preflight` (before anything is touched),
:meth:`provision` (after the run directory exists; returns the guests), :meth:`testbed`,
and — always, in a ``finally`` — :meth:`cleanup` and :meth:`close`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vbench.config.lab import Lab
from vbench.config.scenario import Scenario, VmSpec
from vbench.guest.labspec import vm_guest_spec
from vbench.guest.spec import GuestSpec
from vbench.vsphere.checks import Check, first_failure, vsphere_checks
from vbench.vsphere.cleanup import CleanupReport, cleanup_items
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.journal import Journal, pending
from vbench.vsphere.provision import ProvisionedVm, Provisioner
from vbench.vsphere.specs import plan_requests
from vbench.vsphere.tasks import Watcher
from vbench.vsphere.testbed import capture_testbed, merge_testbeds

Notice = Callable[[str], None]


class VSphereRun:
    def __init__(
        self,
        scenario: Scenario,
        lab: Lab,
        group_vcenters: Mapping[str, str],
        group_guests: Mapping[str, Sequence[str]],
        *,
        cancel: threading.Event | None = None,
        notice: Notice | None = None,
    ) -> None:
        self.scenario, self.lab = scenario, lab
        self.group_vcenters = dict(group_vcenters)
        self.group_guests = {g: tuple(n) for g, n in group_guests.items()}
        self.cancel = cancel or threading.Event()
        self.notice = notice or (lambda _m: None)
        self.parallel = scenario.settings.provision_parallel
        self.sessions = SessionPool.for_lab(lab, pool_size=self.parallel + 4, warn=self.notice)
        self.inventories: dict[str, Inventory] = {}
        self.checks: list[Check] = []
        self.provisioner: Provisioner | None = None
        self.journal: Journal | None = None
        self.run_id: str | None = None
        self.vms: list[ProvisionedVm] = []

    @property
    def active(self) -> bool:
        return bool(self.group_vcenters)

    def preflight(self) -> None:
        """Connect, check privileges, names and capacity; LabError on the first failure."""
        if not self.active:
            return
        counts = {g: len(n) for g, n in self.group_guests.items() if g in self.group_vcenters}
        self.checks, self.inventories = vsphere_checks(
            self.lab,
            self.sessions,
            self.scenario,
            self.group_vcenters,
            counts,
            all_vcenters=False,
        )
        error = first_failure(self.checks)
        if error is not None:
            raise error

    def provision(self, run_id: str, run_dir: Path) -> dict[str, GuestSpec]:
        """Create (or find) the VMs; guest name -> how to reach it over SSH."""
        if not self.active:
            return {}
        self.run_id = run_id
        self.journal = Journal.in_run_dir(run_dir)
        self.journal.open(run_id)
        specs: dict[str, VmSpec] = {}
        for g in self.group_vcenters:
            spec = self.scenario.topology[g].vm
            assert spec is not None
            specs[g] = spec
        requests = plan_requests(
            self.scenario.name, specs, self.group_guests, self.group_vcenters, run_id
        )
        self.provisioner = Provisioner(
            self.sessions,
            self.lab,
            self.journal,
            run_id,
            parallel=self.parallel,
            cancel=self.cancel,
            notice=self.notice,
        )
        self.vms = self.provisioner.provision(requests)
        return {vm.guest: vm_guest_spec(self.lab, vm.guest, vm.vm_name, vm.ip) for vm in self.vms}

    def testbed(self) -> dict[str, Any] | None:
        """The testbed of the run's VMs and the lab's hosts, per vCenter, merged."""
        if not self.active:
            return None
        parts = []
        for vc in dict.fromkeys(self.group_vcenters.values()):
            session = self.sessions.get(vc)
            refs = [v.ref for v in self.vms if v.vcenter == vc and v.ref is not None]
            inv = self.inventories.get(vc)
            hosts = []
            if inv is not None:
                wanted = {n for n, h in self.lab.hosts.items() if (h.vcenter or vc) == vc}
                hosts = [o.ref for o in inv.candidates("host") if o.name in wanted]
            parts.append(capture_testbed(session, refs, hosts))
        return merge_testbeds(parts)

    def cleanup(self) -> CleanupReport:
        """Destroy what this run created (journal order reversed); keeps `keep:` VMs."""
        report = CleanupReport()
        if self.journal is None or self.run_id is None:
            return report
        todo = pending(self.journal.read())
        for vc in dict.fromkeys(i.vcenter for i in todo):
            session = self.sessions.get(vc)
            watchers = self.provisioner.watchers() if self.provisioner else {}
            watcher = watchers.get(vc)
            own = watcher is None
            watcher = watcher or Watcher(session)
            try:
                report.merge(
                    cleanup_items(
                        session,
                        watcher,
                        self.journal,
                        self.run_id,
                        todo,
                        parallel=self.parallel,
                    )
                )
            finally:
                if own:
                    watcher.close()
        return report

    def close(self) -> None:
        if self.provisioner is not None:
            self.provisioner.close()
        self.sessions.close()
