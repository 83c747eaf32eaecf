"""Factor expansion: the cartesian product of factors, with zip groups and exclusions."""

from __future__ import annotations

import difflib
import itertools
import math
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vbench.config.labels import render_label, template_problems
from vbench.config.load import PathError, path_parts, set_path, validate_model
from vbench.config.scenario import Factor, Level, Scenario
from vbench.config.yamlsrc import Source
from vbench.errors import ConfigIssue, ConfigValidationError


@dataclass(frozen=True)
class PointSpec:
    """One factor combination: its labels and the overrides its levels imply."""

    index: int
    labels: Mapping[str, str]
    overrides: tuple[tuple[str, Any, tuple[str | int, ...]], ...] = ()  # (path, value, origin)
    profiles: tuple[str, ...] = ()
    scenario: Scenario | None = field(default=None, compare=False)
    source: Source | None = field(default=None, compare=False, repr=False)

    def name(self) -> str:
        template = self.scenario.label if self.scenario is not None else None
        if template:
            return render_label(template, self.labels)
        return ", ".join(f"{k}={v}" for k, v in self.labels.items()) or "(single point)"


def expand(scenario: Scenario, src: Source) -> list[PointSpec]:
    """All points of the scenario, each with its own validated scenario."""
    _check_zip_and_exclude(scenario, src)
    _check_topology_paths(scenario, src)
    if scenario.label is not None:
        searched = [scenario.search.factor] if scenario.search is not None else []
        problems = template_problems(scenario.label, scenario.factors, searched)
        if problems:
            raise ConfigValidationError([src.issue(("label",), p) for p in problems])
    axes = _axes(scenario)
    _check_size(scenario, src, axes)
    points: list[PointSpec] = []
    for combo in itertools.product(*axes):
        chosen: dict[str, tuple[int, Level]] = {}
        for axis in combo:
            chosen.update(axis)
        labels = {name: chosen[name][1].label for name in scenario.factors}
        if _excluded(labels, scenario.exclude):
            continue
        overrides, profiles = _overrides(scenario, chosen)
        spec = PointSpec(len(points), labels, tuple(overrides), tuple(profiles))
        points.append(_with_scenario(spec, scenario, src))
    if not points:
        raise ConfigValidationError(
            [src.issue(("exclude",), "every point is excluded (nothing left to run)")]
        )
    return points


def label_sets(scenario: Scenario) -> list[dict[str, str]]:
    """The factor labels of every point that is not excluded (no point is built: for
    checks that name points by their levels, as ``steady_state.at`` does)."""
    out = []
    for combo in itertools.product(*_axes(scenario)):
        labels = {name: level.label for axis in combo for name, (_i, level) in axis.items()}
        if not _excluded(labels, scenario.exclude):
            out.append({name: labels[name] for name in scenario.factors})
    return out


def _axes(scenario: Scenario) -> list[list[dict[str, tuple[int, Level]]]]:
    zipped = {name for group in scenario.zip for name in group}
    axes: list[list[dict[str, tuple[int, Level]]]] = []
    done: set[str] = set()
    for name, factor in scenario.factors.items():
        if name in done:
            continue
        group = next((g for g in scenario.zip if name in g), None) if name in zipped else None
        if group is None:
            axes.append([{name: (i, lv)} for i, lv in enumerate(factor.levels)])
            done.add(name)
            continue
        n = len(factor.levels)
        axes.append([{g: (i, scenario.factors[g].levels[i]) for g in group} for i in range(n)])
        done.update(group)
    return axes


def _check_size(
    scenario: Scenario, src: Source, axes: list[list[dict[str, tuple[int, Level]]]]
) -> None:
    """Refuse a matrix over ``settings.max_points`` before building any of it (seven
    factors of ten levels are ten million points: hours of memory and CPU, not a plan)."""
    count = math.prod(len(axis) for axis in axes)
    limit = scenario.settings.max_points
    if count > limit:
        sizes = " × ".join(str(len(axis)) for axis in axes)
        raise ConfigValidationError([src.issue(("factors",), (
            f"the factors make {count:,} points ({sizes}), more than settings.max_points "
            f"({limit:,}); use fewer levels, zip or a find-max search, or raise "
            "settings.max_points if you mean it"), key=True)])


def _check_zip_and_exclude(scenario: Scenario, src: Source) -> None:
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for gi, group in enumerate(scenario.zip):
        sizes = set()
        for fi, name in enumerate(group):
            if name not in scenario.factors:
                issues.append(src.issue(("zip", gi, fi), _no_factor(name, scenario)))
                continue
            if name in seen:
                issues.append(src.issue(("zip", gi, fi), f"factor {name!r} is in two zip groups"))
            seen.add(name)
            sizes.add(len(scenario.factors[name].levels))
        if len(sizes) > 1:
            issues.append(
                src.issue(("zip", gi), "zipped factors must have the same number of levels")
            )
    for ei, rule in enumerate(scenario.exclude):
        for name, level in rule.items():
            factor = scenario.factors.get(name)
            if factor is None:
                issues.append(
                    src.issue(("exclude", ei, name), _no_factor(name, scenario), key=True)
                )
            elif _label_of(level) not in factor.level_labels():
                issues.append(
                    src.issue(
                        ("exclude", ei, name),
                        f"{level!r} is not a level of {name} "
                        f"(expected one of: {', '.join(factor.level_labels())})",
                    )
                )
    if issues:
        raise ConfigValidationError(issues)


def _check_topology_paths(scenario: Scenario, src: Source) -> None:
    """A path into ``topology.<group>`` must name a group the scenario has: writing to
    a misspelt group would create a new one (a phantom group of one guest), and a
    scaling study would then not scale."""
    paths: list[tuple[str, tuple[str | int, ...], bool]] = []  # (path, origin, at a key)
    for name, factor in scenario.factors.items():
        if factor.path is not None:
            paths.append((factor.path, ("factors", name, "path"), False))
        for i, level in enumerate(factor.levels):
            paths += [(p, ("factors", name, "levels", i, "set", p), True) for p in level.set]
    if scenario.search is not None:
        if scenario.search.path is not None:
            paths.append((scenario.search.path, ("search", "path"), False))
        paths += [(p, ("search", "also", i), False) for i, p in enumerate(scenario.search.also)]
    issues = [
        src.issue(origin, problem, key=key)
        for path, origin, key in paths
        if (problem := _topology_path_problem(path, scenario)) is not None
    ]
    if issues:
        raise ConfigValidationError(issues)


def _topology_path_problem(path: str, scenario: Scenario) -> str | None:
    parts = path.split(".")
    if parts[0] != "topology" or len(parts) < 2 or parts[1] in scenario.topology:
        return None
    groups = list(scenario.topology)
    close = difflib.get_close_matches(parts[1], groups, n=1)
    hint = f"; did you mean {'.'.join(['topology', close[0], *parts[2:]])}?" if close else ""
    return (f"{path}: no group {parts[1]!r} in topology (groups: "
            f"{', '.join(groups) or 'none'}){hint}")


def _no_factor(name: str, scenario: Scenario) -> str:
    known = ", ".join(scenario.factors) or "none defined"
    return f"no factor named {name!r} (factors: {known})"


def _label_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _excluded(labels: Mapping[str, str], rules: list[dict[str, Any]]) -> bool:
    return any(all(labels.get(k) == _label_of(v) for k, v in rule.items()) for rule in rules)


def _overrides(
    scenario: Scenario, chosen: Mapping[str, tuple[int, Level]]
) -> tuple[list[tuple[str, Any, tuple[str | int, ...]]], list[str]]:
    out: list[tuple[str, Any, tuple[str | int, ...]]] = []
    profiles: list[str] = []
    for name, (i, level) in chosen.items():
        factor: Factor = scenario.factors[name]
        origin: tuple[str | int, ...] = ("factors", name, "levels", i)
        path = factor.path or f"workload.params.{name}"
        # A hook factor's value goes to its lab command (engine/hooks.py), not to a path.
        if level.value is not None and factor.hook is None:
            out.append((path, level.value, origin))
        for p, v in level.set.items():
            out.append((p, v, (*origin, "set", p)))
        if level.profile:
            profiles.append(level.profile)
    if scenario.profile and scenario.profile not in profiles:  # the levels' come first
        profiles.append(scenario.profile)
    return out, profiles


def _with_scenario(spec: PointSpec, scenario: Scenario, src: Source) -> PointSpec:
    if not spec.overrides:
        return PointSpec(spec.index, spec.labels, spec.overrides, spec.profiles, scenario, src)
    # The point's data shares everything with the scenario's but the mappings and lists
    # on the way to an overridden value (copied once each): no deep copy per point.
    data = dict(src.data)
    copied: set[int] = {id(data)}
    positions: dict[tuple[str | int, ...], tuple[int, int]] = {}
    made_by_set: dict[tuple[str | int, ...], str] = {}
    for path, value, origin in spec.overrides:
        parts = path_parts(path)
        if parts[0] in ("factors", "zip", "exclude", "version", "name"):
            raise ConfigValidationError(
                [src.issue(origin, f"a factor level cannot change {parts[0]}")]
            )
        _copy_path(data, parts, copied)
        try:
            set_path(data, parts, value)
        except PathError as exc:
            raise ConfigValidationError([src.issue(origin, exc.reason, key=True)]) from None
        where, line, col = src.locate(origin)
        if line is None and where != src.file:  # the level came from a --set: name it
            made_by_set[parts] = where
        else:
            positions[parts] = (line or 1, col or 1)
    point_src = Source(
        src.file, data, ChainMap(positions, src.values), ChainMap({}, src.keys),
        {**src.overridden, **made_by_set},
    )
    # Sections no override touches are handed over validated (pydantic takes a model
    # instance as it is), so a point re-checks what its levels change, and the
    # scenario's own cross-checks, not every factor level again.
    touched = {path.split(".")[0] for path, _value, _origin in spec.overrides}
    given = dict(data)
    for key in data:
        if key not in touched and key in Scenario.model_fields:
            given[key] = getattr(scenario, key)
    point_scenario = validate_model(Scenario, point_src, data=given)
    return PointSpec(
        spec.index, spec.labels, spec.overrides, spec.profiles, point_scenario, point_src
    )


def _copy_path(data: dict[str, Any], parts: tuple[str | int, ...], copied: set[int]) -> None:
    """Replace each container on ``parts`` (but the last) by a shallow copy of itself, so
    that setting the value leaves the scenario's data (shared by every point) alone."""
    node: Any = data
    for part in parts[:-1]:
        if isinstance(node, dict):
            child = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            child = node[part]
        else:
            return  # set_path names the problem
        if isinstance(child, dict | list) and id(child) not in copied:
            child = dict(child) if isinstance(child, dict) else list(child)
            copied.add(id(child))
            node[part] = child
        node = child
