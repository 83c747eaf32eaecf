"""The vSphere side of one `vbench run`: preflight, provisioning, testbed, cleanup.

The engine calls, in order: :meth:`VSphereRun.preflight` (before anything is touched),
:meth:`provision` (after the run directory exists; opens the journal and returns the
guests), :meth:`testbed`, :meth:`resources` for each point's trials, and — always, in a
``finally`` — :meth:`cleanup` and :meth:`close`. Between points, :meth:`change_for` and
:meth:`apply` clone the VMs a point adds and destroy the ones it drops
(:mod:`vbench.engine.vm_scaling`); :meth:`provision` creates only the VMs every planned
point uses.

The run is *active* when a `vm:` group is provisioned or when a driver acting on vCenter
(``Workload.needs_vcenter``) runs: then the vCenters its points' profiles select are
checked, logged in to once (one :class:`SessionPool`), watched through one shared
:class:`Watcher` each, and everything created — by provisioning or by a workload
through its resources — is journaled and removed at the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from vbench.config.lab import Lab
from vbench.config.profiles import VmPlacement, default_vcenter, vm_placements
from vbench.config.scenario import Scenario
from vbench.engine.vm_scaling import VmChange, point_vm_guests, scaled_units, up_front, vm_change
from vbench.errors import ConfigError, LabError
from vbench.guest.labspec import vm_guest_spec
from vbench.guest.spec import GuestSpec
from vbench.vsphere.checks import Check, check_named, first_failure, vsphere_checks
from vbench.vsphere.cleanup import CleanupReport, cleanup_journal
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.journal import VM_KIND, IndexedJournal, pending
from vbench.vsphere.provision import ProvisionedVm, Provisioner
from vbench.vsphere.resources import (
    RunResources,
    VSphereResources,
    point_placement,
)
from vbench.vsphere.run_sessions import journal_logins
from vbench.vsphere.specs import VmRequest, plan_requests
from vbench.vsphere.tasks import Watcher
from vbench.vsphere.testbed import capture_testbed, merge_testbeds
from vbench.workloads.base import LabObject

Notice = Callable[[str], None]
# A point's lab profiles and the vCenter objects its driver's parameters name.
PointObjects = tuple[Sequence[str], Sequence[LabObject]]


def objects_by_vcenter(
    lab: Lab, points: Sequence[PointObjects], default: str | None
) -> dict[tuple[str, str | None], dict[tuple[str, str, str | None], None]]:
    """(vCenter, datacenter) -> the (kind, name, library) named there, once each. An
    object without a vCenter of its own is in its point's (profile, else ``default``);
    one whose vCenter is unknown is left to the checks that report that."""
    out: dict[tuple[str, str | None], dict[tuple[str, str, str | None], None]] = {}
    for profiles, objects in points:
        placement = point_placement(lab, profiles, default)
        for o in objects:
            vc = o.vcenter or (placement.vcenter if placement is not None else None)
            if vc is None or vc not in lab.vcenters:
                continue
            own = placement.datacenter if placement and vc == placement.vcenter else None
            dc = own or lab.vcenters[vc].datacenter
            out.setdefault((vc, dc), {})[(o.kind, o.name, o.library)] = None
    return out


def workload_checks(
    lab: Lab, sessions: SessionPool, driver: str, points: Sequence[PointObjects],
    default: str | None, inventories: dict[str, Inventory],
) -> list[Check]:
    """Every vCenter object the workload's parameters name, in its vCenter, before the
    run creates anything (``inventories``: read once per vCenter, filled on the way)."""
    out: list[Check] = []
    for (vc, dc), named in objects_by_vcenter(lab, points, default).items():
        target = f"workload {driver} (vcenter {vc})"
        try:
            session = sessions.get(vc)
            inv = inventories.get(vc) or Inventory.load(session)
        except LabError as exc:
            out.append(Check(target, "connect", False, exc.cause))
            continue
        inventories[vc] = inv
        out.extend(check_named(session, inv, dc, target, list(named)))
    return out


def placement_checks(
    lab: Lab,
    sessions: SessionPool,
    scenario: Scenario,
    placements: Sequence[VmPlacement],
    *,
    all_vcenters: bool,
    extra_vcenters: Sequence[str] = (),
) -> tuple[list[Check], dict[str, Inventory]]:
    """The vSphere checks of every placement, each as a group of its own ("group
    web@nfs": the guests a lab profile places elsewhere)."""
    topology = {p.key: scenario.topology[p.group].model_copy(update={"vm": p.spec})
                for p in placements}
    return vsphere_checks(
        lab,
        sessions,
        scenario.model_copy(update={"topology": topology}),
        {p.key: p.vcenter for p in placements},
        {p.key: len(p.guests) for p in placements},
        all_vcenters=all_vcenters,
        extra_vcenters=extra_vcenters,
        datacenters={p.key: p.datacenter for p in placements if p.datacenter},
    )


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
        workload_profiles: Sequence[Sequence[str]] = (),
        workload_extra: Sequence[str] = (),
        point_profiles: Sequence[Sequence[str]] = (),
        point_guests: Sequence[Collection[str]] = (),
        point_objects: Sequence[PointObjects] = (),
    ) -> None:
        self.scenario, self.lab = scenario, lab
        # What each point's driver parameters name in vCenter: checked by preflight.
        self.point_objects = list(point_objects)
        self.group_vcenters = dict(group_vcenters)
        # vCenters a driver with needs_vcenter works in (its points' profiles select them).
        # Plus those the driver's parameters name (a subscriber's): checked and recorded.
        self.workload_vcenters = tuple(
            dict.fromkeys([*(self._vcenter_of(p) for p in workload_profiles), *workload_extra])
        )
        self.group_guests = {g: tuple(n) for g, n in group_guests.items()}
        # `vm:` groups split by placement: a lab profile may place a point's guests
        # in another vCenter, datacenter, cluster, datastore or network.
        self.placements = vm_placements(
            scenario.topology, lab, self.group_vcenters, self.group_guests, point_profiles
        )
        # The guests each planned point uses: without them every VM is made up front.
        self.point_guests = [tuple(g) for g in point_guests]
        self.units = scaled_units(self.placements) if self.point_guests else {}
        self._requests: dict[str, VmRequest] = {}
        self._vm_rows: dict[str, dict[str, Any]] = {}  # testbed rows of every VM, by name
        self._testbed: dict[str, Any] | None = None
        # What the run adds to its testbed (engine/hygiene.py: findings, disturbances).
        self.extra_testbed: dict[str, Any] = {}
        self.point_vms: dict[str, list[dict[str, str]]] = {}
        self.cancel = cancel or threading.Event()
        self.notice = notice or (lambda _m: None)
        self.parallel = scenario.settings.provision_parallel
        self.sessions = SessionPool.for_lab(lab, pool_size=self.parallel + 4, warn=self.notice)
        self.inventories: dict[str, Inventory] = {}
        self.checks: list[Check] = []
        self.provisioner: Provisioner | None = None
        self.journal: IndexedJournal | None = None
        self.run_id: str | None = None
        self.vms: list[ProvisionedVm] = []
        self.run_resources: RunResources | None = None
        self._watchers: dict[str, Watcher] = {}
        self._watch_lock = threading.Lock()

    @property
    def active(self) -> bool:
        return bool(self.group_vcenters or self.workload_vcenters)

    @property
    def vcenters(self) -> list[str]:
        """Every vCenter this run works in, groups' first."""
        placed = [p.vcenter for p in self.placements]
        return list(dict.fromkeys([*placed, *self.workload_vcenters]))

    def watcher(self, vcenter: str) -> Watcher:
        """The run's one task watcher of ``vcenter`` (shared by provisioning, workloads
        and cleanup)."""
        with self._watch_lock:
            w = self._watchers.get(vcenter)
            if w is None:
                w = self._watchers[vcenter] = Watcher(self.sessions.get(vcenter))
            return w

    def preflight(self) -> None:
        """Connect, check privileges, names and capacity; LabError on the first failure."""
        if not self.active:
            return
        self.checks, self.inventories = placement_checks(
            self.lab,
            self.sessions,
            self.scenario,
            self.placements,
            all_vcenters=False,
            extra_vcenters=self.workload_vcenters,
        )
        self.checks += workload_checks(
            self.lab, self.sessions,
            self.scenario.workload.driver if self.scenario.workload else "bundle",
            self.point_objects,
            self._default_vcenter(), self.inventories,
        )
        for c in self.checks:  # passed, but not proven: the user hears it
            if c.ok and c.level == "warning":
                self.notice(f"{c.target} {c.check}: {c.detail}")
        error = first_failure(self.checks)
        if error is not None:
            raise error

    def provision(self, run_id: str, run_dir: Path) -> dict[str, GuestSpec]:
        """Create (or find) the VMs; guest name -> how to reach it over SSH."""
        if not self.active:
            return {}
        self.run_id = run_id
        journal = self.journal = IndexedJournal.in_run_dir(run_dir)
        journal.open(run_id)
        # Every login (the preflight's, later ones): `vbench cleanup RUN` ends the
        # sessions of a killed run from what the journal says of them.
        self.sessions.watch_logins(journal_logins(journal))
        self.run_resources = RunResources(
            self.lab, self.sessions, self.watcher, journal, run_id, self.cancel
        )
        self._remove_leftovers()
        if not self.placements:
            return {}
        requests = [
            replace(r, datacenter=p.datacenter)
            for p in self.placements
            for r in plan_requests(
                self.scenario.name, {p.key: p.spec}, {p.key: p.guests}, {p.key: p.vcenter},
                run_id,
            )
        ]
        self.provisioner = Provisioner(
            self.sessions,
            self.lab,
            self.journal,
            run_id,
            parallel=self.parallel,
            cancel=self.cancel,
            notice=self.notice,
            watcher_for=self.watcher,
        )
        # Every guest's placement and pool address is fixed now (the n-th guest always
        # gets the n-th address), also for clones made later between points.
        self.provisioner.prepare(requests)
        self._requests = {r.guest: r for r in requests}
        first = set(up_front(self.point_guests, self.units))
        self.vms = self.provisioner.provision(
            [r for r in requests if r.guest not in self.units or r.guest in first]
        )
        return {vm.guest: self._guest_spec(vm) for vm in self.vms}

    def _remove_leftovers(self) -> None:
        """A resumed run whose earlier session was killed (kill -9, no `vbench cleanup`)
        finds that session's VMs still in vCenter under the names it clones again: they
        are removed first, as `vbench cleanup` would, and the run starts from a clean lab."""
        assert self.journal is not None and self.run_id is not None
        left = pending(self.journal.read())
        if not left:
            return
        self.notice(f"removing {len(left)} vSphere objects an earlier session of run "
                    f"{self.run_id} left")
        report = cleanup_journal(self.sessions.get, self.watcher, self.journal, self.run_id,
                                 left, parallel=self.parallel)
        if report.errors or report.skipped:
            raise LabError("vSphere", "removing what an earlier session of the run left: "
                           + "; ".join(report.errors + report.skipped)
                           + f" (finish with `vbench cleanup {self.run_id}`)")

    def _guest_spec(self, vm: ProvisionedVm) -> GuestSpec:
        spec = vm_guest_spec(self.lab, vm.guest, vm.vm_name, vm.ip)
        # The uuids of the data disks its clone got: fio's `filename: disk:N` finds them.
        uuids = self.provisioner.disk_uuids.get(vm.vm_name) if self.provisioner else None
        return replace(spec, data_disks=uuids) if uuids else spec

    # --- VMs that follow the points -------------------------------------------------------
    def change_for(self, nodes: Mapping[str, Sequence[str]]) -> VmChange:
        """What moving to a point with these groups' guests does to the run's VMs."""
        live = [v.guest for v in self.vms]
        return vm_change(live, point_vm_guests(nodes, self.units), self.units)

    def apply(self, change: VmChange) -> list[GuestSpec]:
        """Destroy the surplus, then clone what is missing (the journal holds both, so a
        run cut short leaves nothing `vbench cleanup` cannot find); the new guests."""
        if change.destroy:
            self._destroy(change.destroy)
        if not change.create:
            return []
        assert self.provisioner is not None
        created = self.provisioner.provision([self._requests[g] for g in change.create])
        self.vms = [*self.vms, *created]
        return [self._guest_spec(vm) for vm in created]

    def _destroy(self, guests: Sequence[str]) -> None:
        assert self.journal is not None and self.run_id is not None
        gone = [v for v in self.vms if v.guest in set(guests)]
        items = [i for v in gone
                 if (i := self.journal.item(v.vcenter, VM_KIND, v.vm_name)) is not None]
        report = cleanup_journal(self.sessions.get, self.watcher, self.journal, self.run_id,
                                 items, parallel=self.parallel)
        # Off the list first: whatever failed is still in the journal for the final cleanup.
        self.vms = [v for v in self.vms if v not in gone]
        if report.errors or report.skipped:
            raise LabError("vSphere", "removing VMs a point no longer uses: "
                           + "; ".join(report.errors + report.skipped))

    def record_point(self, point: int, guests: Sequence[str]) -> list[dict[str, str]]:
        """Remember which VMs a point ran on (each incarnation by its moid: a VM destroyed
        and cloned again under its name is another VM); recorded in the testbed."""
        wanted = set(guests)
        used = [{"guest": v.guest, "name": v.vm_name, "moid": v.moid}
                for v in self.vms if v.guest in wanted]
        seen = self.point_vms.setdefault(str(point), [])
        seen.extend(u for u in used if u not in seen)
        return used

    def testbed(self, refresh: bool = True) -> dict[str, Any] | None:
        """The testbed of the run's VMs and the lab's hosts, per vCenter, merged; every VM
        the run has used so far is listed (once per name), and ``point_vms`` tells which
        VMs each point ran on. ``refresh=False``: no vCenter call, the last capture."""
        if not self.active:
            return None
        if refresh or self._testbed is None:
            self._testbed = self._capture()
        if self._testbed is None:
            return None
        out = dict(self._testbed)
        if self.point_vms:
            out["point_vms"] = {k: list(v) for k, v in self.point_vms.items()}
        out.update(self.extra_testbed)
        return out

    def _capture(self) -> dict[str, Any] | None:
        parts = []
        for vc in self.vcenters:
            session = self.sessions.get(vc)
            refs = [v.ref for v in self.vms if v.vcenter == vc and v.ref is not None]
            inv = self.inventories.get(vc)
            if inv is None and self.run_resources is not None:
                inv = self.run_resources.inventory(vc)
            hosts = []
            if inv is not None:
                wanted = {n for n, h in self.lab.hosts.items() if (h.vcenter or vc) == vc}
                hosts = [o.ref for o in inv.candidates("host") if o.name in wanted]
            policies = [d.storage_policy for p in self.placements if p.vcenter == vc
                        for d in p.spec.disks if d.storage_policy]  # fmt: skip
            parts.append(capture_testbed(session, refs, hosts, policies=policies))
        merged = merge_testbeds(parts)
        if merged is not None and "vms" in merged:
            # VMs destroyed since an earlier capture stay listed: a point ran on them.
            for row in merged["vms"]:
                self._vm_rows[str(row.get("name"))] = row
            merged["vms"] = list(self._vm_rows.values())
        return merged

    def resources(self, profiles: Sequence[str] = ()) -> VSphereResources | None:
        """What a point's trials may use of vCenter (None when the run reaches none)."""
        if self.run_resources is None:
            return None
        placement = point_placement(self.lab, profiles, self._default_vcenter())
        if placement is None:
            return None
        return self.run_resources.for_point(placement)

    def _default_vcenter(self) -> str | None:
        return default_vcenter(self.lab, self.group_vcenters)

    def _vcenter_of(self, profiles: Sequence[str]) -> str:
        placement = point_placement(self.lab, profiles, self._default_vcenter())
        if placement is None:
            known = ", ".join(self.lab.vcenters) or "none"
            raise ConfigError(
                f"the driver works in vCenter but no vCenter is chosen for a point with "
                f"profiles [{', '.join(profiles)}] (lab vcenters: {known}): give the lab a "
                "`default_vcenter:` or the point a profile with `vcenter:` (docs/labs.md)"
            )
        return placement.vcenter

    def cleanup(self) -> CleanupReport:
        """Destroy what this run created (journal order reversed); keeps `keep:` VMs."""
        if self.journal is None or self.run_id is None:
            return CleanupReport()
        todo = pending(self.journal.read())
        return cleanup_journal(
            self.sessions.get,
            self.watcher,
            self.journal,
            self.run_id,
            todo,
            parallel=self.parallel,
        )

    def close(self) -> None:
        if self.provisioner is not None:
            self.provisioner.close()
        with self._watch_lock:
            watchers, self._watchers = list(self._watchers.values()), {}
        for w in watchers:
            w.close()
        self.sessions.close()
