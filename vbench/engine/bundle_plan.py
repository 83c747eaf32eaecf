"""Planning a ``workloads:`` scenario: every point runs a :class:`Bundle` of its members
(each workload of each tile), with the bundle's roles ``<instance>.<role>`` bound to the
tile's groups (``web-2``). Called by engine/plan.py where a one-driver scenario plans
its driver's point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vbench.config.load import validate_model
from vbench.config.tiles import TILES_LABEL, Instance, instances, member_roles, tile_count
from vbench.engine.bundle import Bundle, BundleParams, Member
from vbench.errors import ConfigError, ConfigIssue, ConfigValidationError
from vbench.workloads.base import Params, Workload, get_driver

if TYPE_CHECKING:
    from vbench.config.matrix import PointSpec
    from vbench.config.scenario import Scenario
    from vbench.config.yamlsrc import Source
    from vbench.engine.plan import PlannedPoint


def tiled_groups(scenario: Scenario) -> set[str]:
    """The groups the workloads run on (replicated per tile); an unknown driver binds
    nothing here (the point's planning reports it)."""
    out: set[str] = set()
    for name, member in (scenario.workloads or {}).items():
        try:
            driver = get_driver(member.driver)
        except ConfigError:
            continue
        roles, _ = member_roles(name, member, driver.roles, driver.optional_roles,
                                scenario.topology)
        out.update(roles.values())
    return out


def _members(sc: Scenario, src: Source) -> tuple[list[Member], list[ConfigIssue]]:
    issues: list[ConfigIssue] = []
    built: dict[str, tuple[type[Workload], Params, dict[str, str]] | None] = {}
    members: list[Member] = []
    for inst in instances(sc):
        name = inst.workload
        if name not in built:
            built[name] = _member(sc, src, name, issues)
        found = built[name]
        if found is not None:
            driver, params, roles = found
            members.append(Member(inst, driver, driver(params), roles))
    return members, issues


def _member(sc: Scenario, src: Source, name: str, issues: list[ConfigIssue]
            ) -> tuple[type[Workload], Params, dict[str, str]] | None:
    assert sc.workloads is not None
    spec = sc.workloads[name]
    try:
        driver = get_driver(spec.driver)
    except ConfigError as exc:
        issues.append(src.issue(("workloads", name, "driver"), str(exc)))
        return None
    try:
        params = validate_model(driver.Params, src, ("workloads", name, "params"), spec.params)
    except ConfigValidationError as exc:
        issues.extend(exc.issues)
        return None
    roles, problems = member_roles(name, spec, driver.roles, driver.optional_roles,
                                   sc.topology)
    issues.extend(src.issue(path, text) for path, text in problems)
    issues.extend(_qos_issues(sc, src, name, driver, params))
    active = driver.active_roles(params)
    issues.extend(src.issue(("workloads", name, "roles"),
                            f"role {r!r} is used at this point but not bound to a group "
                            f"(add roles: {{{r}: GROUP}})")
                  for r in active if r not in roles and r not in driver.optional_roles)
    return driver, params, {r: g for r, g in roles.items() if r in active}


def _qos_issues(sc: Scenario, src: Source, name: str, driver: type[Workload],
                params: Params) -> list[ConfigIssue]:
    """A workload's criteria (or its `score`) naming a metric its driver does not make, or
    a unit its figure cannot be converted to: located errors before anything runs."""
    from vbench.analysis.catalogue import (
        Catalogue,
        look_up,
        unit_problem,
        unknown_metric_message,
    )

    assert sc.workloads is not None
    declared = driver.metric_catalogue(params)
    if declared is None:  # a plugin without a catalogue: names cannot be checked
        return []
    catalogues = [Catalogue(driver.name, declared)]
    out = []
    for i, c in enumerate(sc.workloads[name].qos):
        here = ("workloads", name, "qos", i)
        found = look_up(c.metric, catalogues)
        if found.metric is None:
            out.append(src.issue((*here, "metric"), unknown_metric_message(
                c.metric, catalogues, where=list(c.where))))
        elif c.unit is not None:
            problem = unit_problem(c.metric, found.metric.unit, c.unit)
            if problem is not None:
                out.append(src.issue((*here, "unit"), problem))
    score = sc.workloads[name].score  # a typo here left the run without a score, silently
    if score and look_up(score, catalogues).metric is None:
        out.append(src.issue(("workloads", name, "score"),
                             unknown_metric_message(score, catalogues)))
    return out


def _shared_guests(members: list[Member], groups: dict[str, tuple[str, ...]],
                   src: Source) -> list[ConfigIssue]:
    """Two instances of one driver on one guest would share its tool's files."""
    seen: dict[tuple[str, str], Instance] = {}
    out: list[ConfigIssue] = []
    for m in members:
        for g in set(m.roles.values()):
            for node in groups.get(m.instance.group(g), ()):
                other = seen.setdefault((m.driver.name, node), m.instance)
                if other != m.instance:
                    out.append(src.issue(
                        ("workloads", m.instance.workload),
                        f"{other.name} and {m.instance.name} both run {m.driver.name} on "
                        f"guest {node}: give each its own guests"))
    return out


def bundle_point(spec: PointSpec, groups: dict[str, tuple[str, ...]]) -> PlannedPoint:
    """The planned point of a ``workloads:`` scenario (raises ConfigValidationError)."""
    from vbench.engine.plan import PlannedPoint

    sc, src = spec.scenario, spec.source
    assert sc is not None and src is not None
    members, issues = _members(sc, src)
    issues += _shared_guests(members, groups, src)
    if issues:
        raise ConfigValidationError(list({str(i): i for i in issues}.values()))
    workload = Bundle(BundleParams(tuple(members)))
    ph = sc.phases
    labels = dict(spec.labels)
    tiles = tile_count(sc)
    if tiles is not None:  # the QoS of a tile past this point's count does not apply
        labels.setdefault(TILES_LABEL, str(tiles))
    roles = {m.key(r): m.instance.group(g) for m in members for r, g in m.roles.items()}
    return PlannedPoint(
        index=spec.index,
        labels=labels,
        profiles=spec.profiles,
        params=_params_json(workload),
        warmup=ph.warmup,
        steady=ph.steady,
        cooldown=ph.cooldown,
        roles=roles,
        guests={key: groups[g] for key, g in roles.items()},
        commands=tuple(workload.planned_commands(ph.warmup, ph.steady)),
        trial_seconds=workload.estimated_seconds(ph.warmup, ph.steady, ph.cooldown),
        workload=workload,
        title=spec.name(),
        nodes=dict(groups),
    )


def _params_json(workload: Bundle) -> dict[str, Any]:
    return workload.params.model_dump(mode="json", exclude_none=True)
