"""The plan: every point × trial, its phases, guests and commands, before anything runs."""

from __future__ import annotations

import functools
import math
import shlex
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from vbench.collectors.checks import collector_issues, watch_window_warnings
from vbench.config.hookspec import shell_hook_warnings
from vbench.config.load import Loaded, validate_model
from vbench.config.matrix import PointSpec, expand
from vbench.config.profiles import apply_to_groups, profile_labels
from vbench.config.repeat import first_trials
from vbench.config.resolve import bind_groups, bind_roles, vm_groups
from vbench.config.scenario import Scenario
from vbench.config.search import search_bounds, search_starts
from vbench.config.tiles import untiled_groups
from vbench.config.yamlsrc import Source
from vbench.engine.lab_refs import lab_reference_issues, unwatched_warnings
from vbench.engine.metric_check import metric_issues, run_catalogues
from vbench.errors import ConfigError, ConfigIssue, ConfigValidationError
from vbench.workloads.base import Finding, PlannedCommand, PlannedGuest, Workload, get_driver

if TYPE_CHECKING:  # the lab's models are built only when a lab is loaded
    from collections.abc import Iterable, Sequence

    from vbench.config.lab import Lab


@dataclass(frozen=True)
class PlannedPoint:
    index: int
    labels: dict[str, str]
    profiles: tuple[str, ...]
    params: dict[str, Any]
    warmup: float
    steady: float
    cooldown: float
    roles: dict[str, str]  # driver role -> group
    guests: dict[str, tuple[str, ...]]  # role -> node names (or group placeholders)
    commands: tuple[PlannedCommand, ...]
    trial_seconds: float
    workload: Workload = field(compare=False, repr=False)
    title: str = ""  # the scenario's label template rendered, else factor=level pairs
    # Every topology group's guests at this point (a group no role uses included): the
    # `vm:` guests it needs, so a run creates and destroys only what changes between points.
    nodes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # phases.warmup: auto — ``warmup`` is then its cap, and the driver's detector ends it.
    auto_warmup: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "point": self.index,
            "labels": self.labels,
            "title": self.title,
            "profiles": list(self.profiles),
            "params": self.params,
            "phases": {"warmup": self.warmup, "steady": self.steady, "cooldown": self.cooldown},
            "roles": self.roles,
            "guests": {r: list(g) for r, g in self.guests.items()},
            "commands": [
                {
                    "role": c.role,
                    "step": c.step,
                    "command": shlex.join(c.argv),
                    "files": list(c.files),
                    "background": c.background,
                }
                for c in self.commands
            ],
            "trial_seconds": self.trial_seconds,
        }


@dataclass(frozen=True)
class Plan:
    scenario: Scenario
    driver: str
    repeat: int
    points: tuple[PlannedPoint, ...]
    groups: dict[str, tuple[str, ...]]
    findings: tuple[Finding, ...]
    bound_to_lab: bool
    # What a trial costs beside its phases (prepare, collect, teardown, the tool's own
    # start and stop), and what the run costs before its first trial (connecting,
    # provisioning VMs) and after its last (cleanup, destroying VMs): guesses until
    # engine/estimate.py learns them from stored runs of the scenario.
    overhead_per_trial: float = 3.0
    setup_seconds: float = 0.0
    finish_seconds: float = 0.0
    estimate_basis: str = ""  # where the overheads come from, for people
    # An adaptive repeat (repeat: {min, max, target}): `repeat` is its min, this its max;
    # None for a fixed count.
    repeat_max: int | None = None

    @property
    def n_trials(self) -> int:
        return len(self.points) * self.repeat

    @property
    def most_per_point(self) -> int:
        """The most trials one point may take (an adaptive repeat's max)."""
        return self.repeat_max or self.repeat

    @property
    def trials_span(self) -> tuple[int, int]:
        """The fewest and most trials the run may take (equal for a fixed repeat); the
        most within the scenario's ``budget`` (the minimum always runs): its trials, and
        the trials that start before its time is spent (the last one may overrun it)."""
        most = len(self.points) * self.most_per_point
        budget = self.scenario.budget
        if budget is not None and budget.trials is not None:
            most = max(self.n_trials, min(most, budget.trials))
        if budget is not None and budget.time is not None and self.trials_seconds > 0:
            per_trial = self.trials_seconds / max(1, self.n_trials)
            most = max(self.n_trials, min(most, math.ceil(budget.time / per_trial)))
        return self.n_trials, most

    @property
    def seconds_span(self) -> tuple[float, float]:
        """The whole run's estimate with the fewest, and the most, trials (the most
        trials as :attr:`trials_span` counts them, so the two agree)."""
        fixed = self.setup_seconds + self.finish_seconds
        trials = self.trials_seconds * self.trials_span[1] / max(1, self.n_trials)
        return self.estimated_seconds, fixed + trials

    @property
    def trials_seconds(self) -> float:
        """The trials alone, each with its overhead."""
        return sum((p.trial_seconds + self.overhead_per_trial) * self.repeat for p in self.points)

    @property
    def estimated_seconds(self) -> float:
        """The whole run: set-up, every trial with its prepare and teardown, clean-up."""
        return self.setup_seconds + self.trials_seconds + self.finish_seconds

    def node_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for names in self.groups.values():
            for n in names:
                seen.setdefault(n, None)
        return list(seen)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "driver": self.driver,
            "repeat": self.repeat,
            **({"repeat_max": self.repeat_max, "trials_max": self.trials_span[1],
                "estimated_seconds_max": round(self.seconds_span[1], 1)}
               if self.repeat_max else {}),
            "points": [p.to_json() for p in self.points],
            "trials": self.n_trials,
            "groups": {g: list(n) for g, n in self.groups.items()},
            "bound_to_lab": self.bound_to_lab,
            "findings": [
                {"level": f.level, "path": f.where, "message": f.message}
                for f in self.findings
            ],
            "estimated_seconds": round(self.estimated_seconds, 1),
            "estimate": {
                "setup_seconds": round(self.setup_seconds, 1),
                "overhead_per_trial_seconds": round(self.overhead_per_trial, 1),
                "finish_seconds": round(self.finish_seconds, 1),
                "basis": self.estimate_basis,
            },
            "collectors": [
                c.model_dump(mode="json", exclude_none=True) for c in self.scenario.collectors
            ],
        }


def _driver_findings(
    driver_cls: type[Workload],
    spec: PointSpec,
    point: PlannedPoint,
    point_groups: dict[str, tuple[str, ...]],
    lab: Loaded[Lab] | None,
) -> tuple[list[Finding], list[Finding]]:
    """What the driver says of a point's parameters, its placement and (with a lab) its
    guests: (the errors, the rest)."""
    sizes = {role: len(names) for role, names in point.guests.items()}
    lab_guests = _lab_guests(spec, lab, point_groups, point.guests) if lab else {}
    found = [
        *driver_cls.findings(point.workload.params),
        *driver_cls.placement_findings(point.workload.params, sizes),
        *(driver_cls.guest_findings(point.workload.params, lab_guests) if lab else ()),
    ]
    # What a factor cannot change is said, never refused: the run is still valid.
    found += [replace(f, level="warning")
              for f in driver_cls.factor_findings(point.workload.params, _varied(spec))]
    return [f for f in found if f.level == "error"], [f for f in found if f.level != "error"]


def _varied(spec: PointSpec) -> dict[str, str]:
    """Parameter path below workload.params -> the factor (of several levels) setting it."""
    factors = spec.scenario.factors if spec.scenario is not None else {}
    out: dict[str, str] = {}
    for path, _value, origin in spec.overrides:
        name = str(origin[1]) if len(origin) > 1 and origin[0] == "factors" else ""
        if path.startswith("workload.params.") and name in factors \
                and len(factors[name].levels) > 1:
            out[path.removeprefix("workload.params.")] = name
    return out


def build_plan(loaded: Loaded[Scenario], lab: Loaded[Lab] | None = None) -> Plan:
    """Expand and validate everything a run needs; raises ConfigValidationError."""
    scenario, src = loaded.model, loaded.source
    driver_cls = get_driver_located(scenario, src)
    roles = bind_roles(scenario, driver_cls.roles, src, driver_cls.optional_roles)
    if lab is not None:
        _check_profiles(scenario, lab.model, src, lab.source.file)
    groups: dict[str, tuple[str, ...]] = {}
    points: list[PlannedPoint] = []
    findings: dict[tuple[str, str, str], Finding] = {}
    issues: list[ConfigIssue] = []
    said: set[str] = set()
    unbuilt = False  # a point whose parameters are invalid: its metric names are unknown
    bases = expand(scenario, src)
    for spec in search_starts(scenario, src, bases):  # a search: its first level
        try:
            # A factor may change a group's size, so every point binds its own guests.
            point_groups = _groups(spec, lab)
            planned = _plan_point(spec, driver_cls, roles, point_groups)
            point = with_profile_labels(planned, spec, lab)
            for g, names in untiled_groups(scenario, point_groups).items():
                merged = dict.fromkeys((*groups.get(g, ()), *names))
                groups[g] = tuple(merged)
        except ConfigValidationError as exc:
            _add_once(issues, said, exc.issues)
            unbuilt = True
            continue
        errors, found = _driver_findings(driver_cls, spec, point, point_groups, lab)
        issues.extend((spec.source or src).issue((*_keys(f.root), *_keys(f.path)),
                                                 f.message) for f in errors)
        findings.update(((f.level, f.path, f.message), _located(f, spec.source or src))
                        for f in found)
        points.append(point)
    findings.update(_budget_finding(scenario, len(points), src))
    for path, message in _warned(scenario, points, lab):
        findings[("warning", path, message)] = _located(
            Finding("warning", path, message, root=""), src)
    for spec in search_bounds(scenario, src, bases):
        _add_once(issues, said, _search_bound(spec, driver_cls, roles, lab, groups))
    issues.extend(src.issue(path, msg) for path, msg in analysis_issues(scenario))
    if not unbuilt:  # else every name would look unknown beside the real mistake
        catalogues = run_catalogues(scenario, driver_cls, (p.workload.params for p in points))
        issues.extend(metric_issues(scenario, src, catalogues))
    issues.extend(collector_issues(scenario, src, lab.model if lab is not None else None))
    if lab is not None:
        issues.extend(lab_reference_issues(scenario, src, lab.model, lab.source.file,
                                           driver_cls, points))
    if issues:
        unique = {str(i): i for i in issues}
        raise ConfigValidationError(list(unique.values()))
    return Plan(
        scenario=scenario,
        driver=driver_cls.name,
        **_trials_per_point(scenario),
        points=tuple(points),
        groups=groups,
        findings=tuple(findings.values()),
        bound_to_lab=lab is not None,
    )


def _warned(scenario: Scenario, points: Sequence[PlannedPoint], lab: Loaded[Lab] | None
            ) -> list[tuple[str, str]]:
    """(path, message) warned: a hook handing a level's value to a shell; an esxtop
    interval too long; a lab_hygiene: or disturbance: the lab gives nothing to look at."""
    return [*shell_hook_warnings(scenario.factors),
            *watch_window_warnings(scenario, (p.steady for p in points)),
            *(unwatched_warnings(scenario, lab.model, points) if lab else ())]


def _located(f: Finding, src: Source) -> Finding:
    """``f`` with the file:line:col of its path, as an error there would print."""
    file, line, col = src.locate((*_keys(f.root), *_keys(f.path)) if f.root else _keys(f.path))
    return replace(f, at=f"{file}:{line}:{col or 1}" if line is not None else file)


def _budget_finding(scenario: Scenario, points: int, src: Source
                    ) -> dict[tuple[str, str, str], Finding]:
    text = budget_warning(scenario, points)
    if text is None:
        return {}
    return {("warning", "budget.trials", text):
            _located(Finding("warning", "budget.trials", text, root=""), src)}


def budget_warning(scenario: Scenario, points: int) -> str | None:
    """A ``budget: {trials}`` the minimum alone spends: no trial will be added."""
    budget, repeat = scenario.budget, scenario.repeat
    if budget is None or budget.trials is None or isinstance(repeat, int):
        return None
    floor = repeat.min * points
    if budget.trials >= floor:
        return None
    return (f"budget.trials {budget.trials} is below the minimum's {floor} trials "
            f"({points} points × min {repeat.min}): the minimum still runs, and no trial "
            "is added for the confidence target")


def _keys(path: str) -> tuple[str | int, ...]:
    """A finding's dotted path as keys of the scenario (``steps.3.item``: list index 3)."""
    return tuple(int(k) if k.isdigit() else k for k in path.split("."))


def analysis_issues(scenario: Scenario) -> list[tuple[tuple[Any, ...], str]]:
    """Mistakes in derived figures and QoS criteria, found before anything runs."""
    from vbench.analysis.derived import check_derived
    from vbench.analysis.qos import check_qos

    out = [*check_derived(scenario), *check_qos(scenario)]
    if scenario.search is not None:  # the find-max modules for a search only
        from vbench.analysis.findmax_qos import check_search

        out += check_search(scenario)
    return out


def _search_bound(
    spec: PointSpec,
    driver_cls: type[Workload],
    roles: dict[str, str],
    lab: Loaded[Lab] | None,
    groups: dict[str, tuple[str, ...]],
) -> list[ConfigIssue]:
    """A search's min or max level: checked like a point, its guests bound (the largest
    group size of a search needs the most guests)."""
    try:
        point_groups = _groups(spec, lab)
        _plan_point(spec, driver_cls, roles, point_groups)
    except ConfigValidationError as exc:
        return list(exc.issues)
    for g, names in untiled_groups(spec.scenario, point_groups).items():
        groups[g] = tuple(dict.fromkeys((*groups.get(g, ()), *names)))
    return []


def _groups(spec: PointSpec, lab: Loaded[Lab] | None) -> dict[str, tuple[str, ...]]:
    sc = spec.scenario
    assert sc is not None
    if sc.tiles is None:
        return _bound(sc, spec, lab)
    # Tiles: each group a workload runs on is bound once for every tile, then split.
    from vbench.config.tiles import split_tiles, tiled_topology
    from vbench.engine.bundle_plan import tiled_groups

    tiled = tiled_groups(sc)
    wide = sc.model_copy(update={"topology": tiled_topology(sc, tiled)})
    try:
        bound = _bound(wide, spec, lab)
    except ConfigValidationError as exc:
        for issue in exc.issues:  # "needs 4 guests": say where the 4 come from
            group = issue.path.split(".")[1] if issue.path.startswith("topology.") else ""
            if group in tiled and issue.path.endswith(".count") and sc.tiles is not None:
                issue.message += (f" ({sc.topology[group].count} per tile × "
                                  f"{sc.tiles.count} tiles)")
        raise
    return split_tiles(sc, bound, tiled)


def _bound(sc: Scenario, spec: PointSpec, lab: Loaded[Lab] | None
           ) -> dict[str, tuple[str, ...]]:
    src = spec.source
    assert src is not None
    if lab is not None:
        groups = bind_groups(sc, lab.model, src, lab.source.file)
        # The point's lab profiles place `vm:` groups elsewhere or swap nodes.
        return apply_to_groups(groups, sc.topology, lab.model, spec.profiles,
                               _vcenters_or_none(sc, lab.model))
    return {name: _placeholders(name, g.count) for name, g in sc.topology.items()}


@functools.lru_cache(maxsize=16)  # a few groups: the cache holds little after
def _placeholders(group: str, count: int) -> tuple[str, ...]:
    # One tuple for every point of the plan: 10,000 guests × 1,000 points made anew
    # per point held 1.5 GB.
    return tuple(f"{group}[{i + 1}]" for i in range(count))


def _lab_guests(
    spec: PointSpec, lab: Loaded[Lab], groups: dict[str, tuple[str, ...]],
    roles: dict[str, tuple[str, ...]],
) -> dict[str, list[PlannedGuest]]:
    """Role -> what each of its guests is in this lab: a clone with its data disks, an
    existing VM, or a lab node with the data disks it lists."""
    sc = spec.scenario
    assert sc is not None
    provisioned = _vcenters_or_none(sc, lab.model)
    known: dict[str, PlannedGuest] = {}
    for g, names in groups.items():
        base = g if g in sc.topology else g.rsplit("-", 1)[0]  # a tile's group (web-2)
        vm = sc.topology[base].vm if base in sc.topology else None
        for n in names:
            if vm is not None and base in provisioned:
                disks = sum(d.count for d in vm.disks) if vm.existing is None else None
                kind = "clone" if vm.existing is None else "existing VM"
            else:
                node = lab.model.nodes.get(n)
                disks, kind = (len(node.disks) if node else 0) or None, "lab node"
            known[n] = PlannedGuest(n, kind, g, disks)
    return {role: [known[n] for n in names if n in known] for role, names in roles.items()}


def with_profile_labels(point: PlannedPoint, spec: PointSpec,
                        lab: Loaded[Lab] | None) -> PlannedPoint:
    """The point labelled with its lab profile (and the profile's labels): the run records
    them with the point. Every point gets them, a find-max level created mid-run too."""
    if lab is None or not spec.profiles:
        return point
    extra = profile_labels(lab.model, spec.profiles)
    labels = {**point.labels, **{k: v for k, v in extra.items() if k not in point.labels}}
    return replace(point, labels=labels)


def _vcenters_or_none(sc: Scenario, lab: Lab) -> dict[str, str]:
    try:
        return vm_groups(sc, lab)
    except ConfigError:  # several vCenters and none named: bind_groups reports it
        return {}


def get_driver_located(scenario: Scenario, src: Any) -> type[Workload]:
    from vbench.errors import ConfigError

    if scenario.workload is None:  # several workloads in one trial
        from vbench.engine.bundle import Bundle

        return Bundle
    try:
        return get_driver(scenario.workload.driver)
    except ConfigError as exc:
        raise ConfigValidationError([src.issue(("workload", "driver"), str(exc))]) from None


def _add_once(issues: list[ConfigIssue], said: set[str], new: Iterable[ConfigIssue]) -> None:
    """Each issue once (every point of a factor may repeat its base's): a set of those
    said, not a search of the list (1,000 points x 1,000 issues took 11 s)."""
    for i in new:
        if (text := str(i)) not in said:
            said.add(text)
            issues.append(i)


def _plan_point(
    spec: PointSpec,
    driver_cls: type[Workload],
    roles: dict[str, str],
    groups: dict[str, tuple[str, ...]],
) -> PlannedPoint:
    sc = spec.scenario
    assert sc is not None and spec.source is not None
    _check_auto_warmup(spec, None if sc.workload is None else driver_cls)
    if sc.workload is None:
        from vbench.engine.bundle_plan import bundle_point

        return bundle_point(spec, groups)
    params = validate_model(
        driver_cls.Params, spec.source, ("workload", "params"), sc.workload.params
    )
    workload = driver_cls(params)
    # Roles the parameters switch off (e.g. no proxy tier) get no guests at this point.
    active = driver_cls.active_roles(params)
    unbound = [r for r in active if r not in roles]
    if unbound:
        raise ConfigValidationError([
            spec.source.issue(
                ("workload", "roles"),
                f"role {r!r} is used at this point but not bound to a group "
                f"(add roles: {{{r}: GROUP}})",
            )
            for r in unbound
        ])
    ph = sc.phases
    warmup = ph.planned_warmup  # an automatic warm-up is planned at its cap
    commands = tuple(workload.planned_commands(warmup, ph.steady))
    if ph.auto_warmup:  # the warm-up the detector ends runs before the trial's run
        at = next((i for i, c in enumerate(commands) if c.step == "run"), len(commands))
        commands = (*commands[:at], *workload.planned_auto_warmup(warmup), *commands[at:])
    return PlannedPoint(
        index=spec.index,
        labels=dict(spec.labels),
        profiles=spec.profiles,
        params=params.model_dump(mode="json", exclude_none=True),
        warmup=warmup,
        steady=ph.steady,
        cooldown=ph.cooldown,
        roles=roles,
        guests={role: groups[group] for role, group in roles.items() if role in active},
        commands=commands,
        trial_seconds=workload.estimated_seconds(warmup, ph.steady, ph.cooldown),
        workload=workload,
        title=spec.name(),
        nodes=dict(groups),
        auto_warmup=ph.auto_warmup,
    )


def _check_auto_warmup(spec: PointSpec, driver_cls: type[Workload] | None) -> None:
    """``phases.warmup: auto`` needs a driver that reads its own throughput while it
    runs (``Workload.auto_warmup``); ``None``: several workloads in one trial."""
    sc = spec.scenario
    assert sc is not None and spec.source is not None
    if not sc.phases.auto_warmup:
        return
    if driver_cls is not None and driver_cls.auto_warmup:
        _check_warmup_cap(spec)
        return
    who = ("several workloads in one trial" if driver_cls is None
           else f"the {sc.workload.driver if sc.workload else '?'} driver")
    raise ConfigValidationError([spec.source.issue(
        ("phases", "warmup"),
        f"auto needs a driver that reads its own throughput while it runs (fio); "
        f"{who} cannot end its warm-up early: give a duration")])


def _check_warmup_cap(spec: PointSpec) -> None:
    """A cap too short for the detector's fewest observations would end every warm-up
    at the cap, the detector never heard."""
    from vbench.analysis.warmup import BATCH, SETTLED_BATCHES, shortest_auto_warmup

    sc = spec.scenario
    assert sc is not None and spec.source is not None
    cap, least = sc.phases.planned_warmup, shortest_auto_warmup()
    if cap < least:
        raise ConfigValidationError([spec.source.issue(
            ("phases", "warmup_cap"),
            f"{cap:g} s is too short for warmup: auto: the detector ends a warm-up on "
            f"{SETTLED_BATCHES * BATCH} observations at the earliest ({least:g} s at the "
            f"finest interval); give at least {least:g}s, or a fixed warm-up")])


def _check_profiles(scenario: Scenario, lab: Lab, src: Any, lab_file: str) -> None:
    issues = []
    if scenario.profile and scenario.profile not in lab.profiles:
        known = ", ".join(lab.profiles) or "none"
        issues.append(src.issue(("profile",), f"no profile {scenario.profile!r} in lab "
                                f"{lab_file} (profiles: {known})"))
    for name, factor in scenario.factors.items():
        for i, level in enumerate(factor.levels):
            if level.profile and level.profile not in lab.profiles:
                known = ", ".join(lab.profiles) or "none"
                issues.append(
                    src.issue(
                        ("factors", name, "levels", i, "profile"),
                        f"no profile {level.profile!r} in lab {lab_file} (profiles: {known})",
                    )
                )
    if issues:
        raise ConfigValidationError(issues)


def _trials_per_point(scenario: Scenario) -> dict[str, Any]:
    """``repeat`` and ``repeat_max`` of the plan: a fixed count; an adaptive repeat's min
    and max; a steady-state study's window and cap of rounds (vbench/engine/steady.py)."""
    ss = scenario.steady_state
    if ss is not None:
        return {"repeat": ss.window, "repeat_max": ss.max_rounds}
    return {"repeat": first_trials(scenario.repeat),
            "repeat_max": None if isinstance(scenario.repeat, int) else scenario.repeat.max}
