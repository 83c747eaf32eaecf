"""What a scenario asks of a lab's vCenters, checked by `validate --lab` and `plan --lab`
without connecting: every point of a driver working in vCenter has one (a profile's
`vcenter:`, the lab's only one or its `default_vcenter:`), and every vCenter the driver's
parameters name (``Workload.lab_objects``) is one of the lab's. Each mistake is located
in the scenario; the objects themselves are looked up by `lab check` and the run."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vbench.config.profiles import default_vcenter, point_vcenter
from vbench.config.resolve import vm_groups
from vbench.config.scenario import Scenario
from vbench.errors import ConfigError, ConfigIssue
from vbench.workloads.base import Workload

if TYPE_CHECKING:  # the lab's models are built only when a lab is loaded
    from vbench.config.lab import Lab


def lab_reference_issues(
    scenario: Scenario, src: Any, lab: Lab, lab_file: str, driver: type[Workload],
    points: Sequence[Any],
) -> list[ConfigIssue]:
    """The points with no vCenter and the unknown vCenters their parameters name."""
    issues: list[ConfigIssue] = []
    try:
        default = default_vcenter(lab, vm_groups(scenario, lab))
    except ConfigError:  # a `vm:` group without vCenter: bind_groups reports it
        default = None
    for point in points:
        if driver.needs_vcenter and point_vcenter(lab, point.profiles, default) is None:
            issues.append(src.issue(_choice_path(scenario, point.profiles),
                                    _no_vcenter(driver.name, point, lab, lab_file)))
        params = point.workload.params
        named = {o.vcenter: o.vcenter_path or o.path for o in driver.lab_objects(params)
                 if o.vcenter is not None}
        named.update({vc: "" for vc in driver.vcenters(params) if vc not in named})
        for vc, path in named.items():
            if vc not in lab.vcenters:  # located at the parameter when the driver says it
                where = tuple(int(p) if p.isdigit() else p for p in path.split(".") if p)
                issues.append(src.issue(("workload", "params", *where),
                                        _unknown_vcenter(vc, lab, lab_file)))
    return list({str(i): i for i in issues}.values())


def _choice_path(scenario: Scenario, profiles: Sequence[str]) -> tuple[Any, ...]:
    """Where the point's vCenter would be chosen: its first profile's factor level,
    else the driver (a point without profiles)."""
    for name, factor in scenario.factors.items():
        for i, level in enumerate(factor.levels):
            if profiles and level.profile == profiles[0]:
                return ("factors", name, "levels", i, "profile")
    return ("profile",) if profiles and profiles[0] == scenario.profile else ("workload", "driver")


def _no_vcenter(driver: str, point: Any, lab: Lab, lab_file: str) -> str:
    if not lab.vcenters:
        return (f"the {driver} driver works in vCenter and lab {lab_file} has none: add one "
                "under `vcenters:` (a simulated one: examples/labs/vcbench-sim.yaml)")
    which = f"point {point.title or point.index + 1}"
    if point.profiles:
        which += f" (profile {', '.join(point.profiles)}: no `vcenter:`)"
    return (f"the {driver} driver works in vCenter and {which} has none: lab {lab_file} has "
            f"{len(lab.vcenters)} vCenters ({', '.join(lab.vcenters)}) "
            "and no `default_vcenter:`; set one in the lab, or give the scenario (`profile:`) "
            "or the point's factor level a profile with `vcenter:` (docs/labs.md)")


def _unknown_vcenter(vcenter: str, lab: Lab, lab_file: str) -> str:
    close = difflib.get_close_matches(vcenter, list(lab.vcenters), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (f"no vCenter {vcenter!r} in lab {lab_file}{hint} "
            f"(vcenters: {', '.join(lab.vcenters) or 'none'})")


def unwatched_warnings(scenario: Scenario, lab: Lab, points: Sequence[Any]
                       ) -> list[tuple[str, str]]:
    """(path, message) when the lab gives the scenario's ``lab_hygiene:`` or
    ``disturbance:`` nothing to look at: a run on static nodes alone works in no vCenter
    (docs/lab-hygiene.md), so a check it requires would pass in silence."""
    try:
        in_vsphere = bool(vm_groups(scenario, lab)) or any(
            p.workload.needs_vcenter for p in points)
    except ConfigError:  # a group's vCenter in error: said by lab_reference_issues
        return []
    if in_vsphere:
        return []
    out = []
    if scenario.lab_hygiene is not None:
        out.append(("lab_hygiene", "not checked nor tuned: the run works in no vCenter "
                    "(no `vm:` group; its driver acts on none)"))
    d = scenario.disturbance
    if d is not None and d.watch and not any(c.kind == "esxtop" for c in scenario.collectors):
        out.append(("disturbance", "nothing watches the trials: the run works in no vCenter "
                    "and collects no esxtop"))
    return out
