"""VMs that follow the points: a run creates only the clones a point adds to the one
before it and destroys the ones it drops.

A `vm:` group's count may change between points (a factor ``path:
topology.<group>.count``, or a find-max search over it). Its guests are numbered
(``web-1``, ``web-2``…) and a point with count N uses the first N, so two points that
differ only in the count share the VMs both use. Before a point's first trial (and
whenever a random order or a search moves to another point) the run compares the VMs
that exist with the ones the point uses: the missing ones are cloned (linked clones
from the template's snapshot when the group asks for them) and the surplus is destroyed.
Destroying, rather than keeping the surplus powered off, is deliberate: the point then
runs in exactly the inventory it names (no idle VM holding datastore space, vSAN
objects or a host's memory while a host figure is measured), and every clone a level
uses starts from the template, not from what an earlier level left on its disks.

The comparison is per *placement* (a group's own guests, or the guests a lab profile
places elsewhere, ``web-nfs-1``…): a point never destroys VMs of a placement it does
not use, so a matrix that alternates profiles keeps both sets, as before. VMs a
scenario names as ``existing`` and groups with ``keep: true`` are not scaled: they are
all provisioned before the first trial, as every group used to be.

Before the first point the run creates, per placement, the VMs every planned point of
that placement uses (their intersection), so nothing created up front is destroyed
again whatever the order. The rest of this module is pure: the difference between
points and the plan's count of clones (``vbench plan``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.config.profiles import VmPlacement
from vbench.errors import GuestError

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.engine.plan import Plan, PlannedPoint
    from vbench.engine.vsphere_run import VSphereRun
    from vbench.guest.pool import GuestPool


def scaled_units(placements: Sequence[VmPlacement]) -> dict[str, str]:
    """Guest name -> placement key, for the guests whose VMs the run creates and may
    destroy between points (not ``existing``, not ``keep``)."""
    return {
        g: p.key
        for p in placements
        if p.spec.existing is None and not p.spec.keep
        for g in p.guests
    }


def point_vm_guests(nodes: Mapping[str, Sequence[str]], units: Mapping[str, str]) -> list[str]:
    """The scaled guests a point uses, in group order."""
    return [n for names in nodes.values() for n in names if n in units]


@dataclass(frozen=True)
class VmChange:
    """What moving to a point does to the run's VMs (guest names)."""

    create: tuple[str, ...]
    destroy: tuple[str, ...]
    use: tuple[str, ...]


def vm_change(live: Collection[str], need: Sequence[str], units: Mapping[str, str]) -> VmChange:
    """Clone what ``need`` lacks; destroy what is live in the placements ``need`` uses
    but ``need`` does not name. Guests that are not scaled are left alone."""
    wanted = [n for n in dict.fromkeys(need) if n in units]
    keys = {units[n] for n in wanted}
    have = set(live)
    keep = set(wanted)
    return VmChange(
        create=tuple(n for n in wanted if n not in have),
        destroy=tuple(n for n in live if units.get(n) in keys and n not in keep),
        use=tuple(wanted),
    )


def up_front(points: Sequence[Sequence[str]], units: Mapping[str, str]) -> list[str]:
    """The scaled guests to create before the first point: per placement, the ones every
    planned point of that placement uses (so none of them is destroyed later)."""
    common: dict[str, set[str]] = {}
    for need in points:
        by_key: dict[str, set[str]] = {}
        for n in need:
            if n in units:
                by_key.setdefault(units[n], set()).add(n)
        for key, names in by_key.items():
            common[key] = common[key] & names if key in common else names
    return [n for n in units if n in common.get(units[n], ())]


@dataclass(frozen=True)
class PlannedVms:
    """The VM changes of a plan, point by point in the order they run."""

    order: str  # sequential | random | search
    changes: tuple[tuple[int, VmChange], ...]  # (point index, change) in run order
    seed: int | None = None

    @property
    def created(self) -> int:
        return sum(len(c.create) for _, c in self.changes)

    @property
    def destroyed(self) -> int:
        return sum(len(c.destroy) for _, c in self.changes)

    @property
    def from_scratch(self) -> int:
        """Clones if every point provisioned its own VMs."""
        return sum(len(c.use) for _, c in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "seed": self.seed,
            "created": self.created,
            "destroyed": self.destroyed,
            "steps": [
                {"point": i, "create": len(c.create), "destroy": len(c.destroy),
                 "in_use": len(c.use)}
                for i, c in self.changes
            ],
        }


def planned_vms(plan: Plan, units: Mapping[str, str]) -> PlannedVms | None:
    """The clones and removals each point makes, as the schedule will run them: the
    points in order (a random order only when ``settings.seed`` fixes it: each change
    of point is one step). None when the run scales no VM."""
    if not units or not plan.points:
        return None
    sc = plan.scenario
    order = "search" if sc.search is not None else sc.settings.order
    seq: list[PlannedPoint] = list(plan.points)
    if order == "random":
        if sc.settings.seed is None:
            return PlannedVms(order, ())
        steps = [(p, t) for p in plan.points for t in range(1, plan.repeat + 1)]
        random.Random(sc.settings.seed).shuffle(steps)  # as MatrixSchedule shuffles
        seq = [p for i, (p, _) in enumerate(steps) if i == 0 or steps[i - 1][0] is not p]
    live: list[str] = []
    out: list[tuple[int, VmChange]] = []
    for p in seq:
        change = vm_change(live, point_vm_guests(p.nodes, units), units)
        live = [n for n in live if n not in change.destroy] + list(change.create)
        out.append((p.index, change))
    return PlannedVms(order, tuple(out), sc.settings.seed if order == "random" else None)


def plan_units(plan: Plan, lab: Lab) -> dict[str, str]:
    """:func:`scaled_units` of a plan bound to ``lab`` (as the run will place its VMs)."""
    from vbench.config.profiles import vm_placements
    from vbench.config.resolve import vm_groups

    placements = vm_placements(plan.scenario.topology, lab, vm_groups(plan.scenario, lab),
                               plan.groups, [p.profiles for p in plan.points])
    return scaled_units(placements)


def plan_text(vms: PlannedVms) -> tuple[list[str], dict[int, str]]:
    """What `vbench plan` says of the VMs: lines for the run, a line per point."""
    if vms.order == "search":
        return [
            "VMs: a level clones the VMs it adds to the level before it and destroys the "
            "ones it drops (levels are chosen as the search runs)"
        ], {i: f"  VMs: {len(c.use)} at this start level" for i, c in vms.changes}
    if vms.order == "random" and not vms.changes:
        return ["VMs: the order is drawn when the run starts; each change of point clones "
                "the VMs the next point adds and destroys the ones it drops"], {}
    head = (f"VMs: {vms.created} cloned and {vms.destroyed} destroyed over the run, point by "
            f"point ({vms.from_scratch} clones if every point made its own)")
    if vms.order == "random":
        return [f"{head}; order random (seed {vms.seed}), {len(vms.changes)} changes of "
                "point"], {}
    return [head], {
        i: f"  VMs: {len(c.use)} in use; before it {len(c.create)} cloned, "
           f"{len(c.destroy)} destroyed"
        for i, c in vms.changes
    }


# --- at run time --------------------------------------------------------------------------


class VmScaling:
    """A point hook (see :mod:`vbench.engine.schedule`): before a point's trials, the
    run's VMs become the ones the point uses; the guests' connections follow."""

    def __init__(
        self,
        vsphere: VSphereRun,
        pool: GuestPool,
        *,
        check_guests: Callable[[list[str]], None],
        testbed: Callable[[dict[str, Any]], None],
        log: Callable[..., None],
        notice: Callable[[str], None] | None = None,
    ) -> None:
        self.vsphere, self.pool = vsphere, pool
        self.check_guests, self.write_testbed, self.log = check_guests, testbed, log
        self.notice = notice or (lambda _m: None)

    def enter(self, point: PlannedPoint) -> None:
        change = self.vsphere.change_for(point.nodes)
        for name in change.destroy:  # its connection goes before the VM does
            self.pool.discard(name)
        created = self.vsphere.apply(change)
        for spec in created:
            self.pool.add(spec)
        if created:
            # The new clones must answer and have the tools, as the first ones had to.
            names = [s.name for s in created]
            self.check_guests(names)
            self._check_tools(point, names)
        used = self.vsphere.record_point(point.index, change.use)
        self.log("point_vms", point=point.index, created=list(change.create),
                 destroyed=list(change.destroy), vms=used)
        if change.create or change.destroy:
            self.notice(f"point {point.index + 1}: {len(change.create)} VMs created, "
                        f"{len(change.destroy)} destroyed ({len(change.use)} in use)")
        testbed = self.vsphere.testbed(refresh=bool(created))
        if testbed is not None:
            self.write_testbed(testbed)

    def _check_tools(self, point: PlannedPoint, names: list[str]) -> None:
        """The tools the point's roles need, on its new guests (a search level's guests
        are not in the plan the run checked before its first trial)."""
        tools = point.workload.tools()
        needs = {n: tools.get(role, ()) for role, guests in point.guests.items()
                 for n in guests if n in names}

        def check(guest: Any) -> None:
            for tool in sorted(needs.get(guest.name, ())):
                if guest.which(tool) is None:
                    raise GuestError(
                        guest.name, f"{tool} not found in PATH (install the {tool} package)"
                    )

        self.pool.fan_out([n for n in names if needs.get(n)], check)

    def exit(self, point: PlannedPoint, error: BaseException | None) -> None:
        """Nothing: the next point decides what goes; the run's cleanup removes the rest."""


def vm_hooks(
    vsphere: VSphereRun,
    pool: GuestPool,
    *,
    check_guests: Callable[[list[str]], None],
    testbed: Callable[[dict[str, Any]], None],
    log: Callable[..., None],
    notice: Callable[[str], None] | None = None,
) -> list[VmScaling]:
    """The run's point hook for its VMs (none when it clones none it may scale); first
    in the list, so that a lab hook of a point finds the point's VMs in place."""
    if not vsphere.units:
        return []
    return [VmScaling(vsphere, pool, check_guests=check_guests, testbed=testbed, log=log,
                      notice=notice)]
