"""Consolidation bundles: several workloads in one trial (``workloads:``) and the bundle
replicated per tile (``tiles: {count: N}``) — the names and bindings every layer shares.

A workload ``web`` of tile 3 is the *instance* ``web-3``; its figures are stored as
``web.<metric>`` with the label ``tile: "3"``, and its groups are the scenario's groups
with the tile's suffix (``web-3``). Without ``tiles:`` an instance is the workload
itself, its groups are the scenario's, and its figures carry no tile label.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vbench.config.scenario import GroupSpec, MemberSpec, Scenario

WORKLOAD_NAME = r"^[A-Za-z][A-Za-z0-9_]*$"  # no '.' (metric prefix) and no '-' (tile)
TILE_LABEL = "tile"
TILES_LABEL = "tiles"  # the point label holding its tile count
OK_METRIC = "ok"  # <workload>.ok: 1 when the workload's trial ran to its end, else 0
SPREAD_METRIC = "start_spread"  # seconds from first to last steady start in a tile


@dataclass(frozen=True)
class Instance:
    """One workload of one tile (``tile`` None without ``tiles:``)."""

    workload: str
    tile: int | None

    @property
    def name(self) -> str:
        return self.workload if self.tile is None else f"{self.workload}-{self.tile}"

    def group(self, group: str) -> str:
        """The topology group this instance runs on, for the scenario's ``group``."""
        return group if self.tile is None else f"{group}-{self.tile}"

    def labels(self) -> dict[str, str]:
        return {} if self.tile is None else {TILE_LABEL: str(self.tile)}


def tile_count(scenario: Scenario) -> int | None:
    return scenario.tiles.count if scenario.tiles is not None else None


def instances(scenario: Scenario) -> Iterator[Instance]:
    """Every instance of the bundle, tile after tile."""
    tiles = tile_count(scenario)
    for tile in [None] if tiles is None else range(1, tiles + 1):
        for name in scenario.workloads or {}:
            yield Instance(name, tile)


def bundle_problems(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """What the model refuses about the workload forms (path, message)."""
    if scenario.workload is not None and scenario.workloads is not None:
        return [(("workloads",), "give `workload` (one driver) or `workloads` (several in "
                                 "one trial), not both")]
    if scenario.workload is None and not scenario.workloads:
        return [(("workload",), "a scenario needs `workload` (one driver) or `workloads` "
                                "(name -> driver, several in one trial)")]
    out: list[tuple[tuple[str | int, ...], str]] = []
    if scenario.tiles is not None and not scenario.workloads:
        out.append((("tiles",), "tiles replicate a `workloads:` bundle; this scenario has "
                                "one `workload`"))
    for name in scenario.workloads or {}:
        if not re.fullmatch(WORKLOAD_NAME, name):
            out.append((("workloads", name), f"workload name {name!r} must match "
                        f"{WORKLOAD_NAME} (it prefixes metrics: {name}.<metric>)"))
    if scenario.workloads:
        out += _default_paths(scenario)
    if scenario.tiles is not None:
        out += _tile_name_clashes(scenario) + _tiles_factor(scenario) + _tiled_sizes(scenario)
    return out


MAX_GROUP = 10_000  # GroupSpec.count's bound: what one group may hold


def _tiled_sizes(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """A group holds count × tiles guests at the largest point (10,000 × 1,000 tiles
    was 10^7 guest names built by plan): refused past what one group may hold. Every
    group is counted: one no workload runs on is not tiled, but is rare in a bundle."""
    tiles = _most_tiles(scenario)
    return [(("topology", g, "count"), f"{spec.count:,} guests × up to {tiles:,} tiles is "
             f"more than {MAX_GROUP:,} guests in one group")
            for g, spec in scenario.topology.items() if spec.count * tiles > MAX_GROUP]


def _most_tiles(scenario: Scenario) -> int:
    out = [tile_count(scenario) or 1]
    for factor in scenario.factors.values():
        if factor.path == "tiles.count":
            out += [int(lv.value) for lv in factor.levels if isinstance(lv.value, int)]
    search = scenario.search
    if search is not None and search.path == "tiles.count":
        out.append(int(search.max))
    return max(out)


def _tiles_factor(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """A point's label ``tiles`` is its tile count (the per-tile checks and the answer
    read it): a factor of that name must set ``tiles.count`` and be labelled with it."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    factor = scenario.factors.get(TILES_LABEL)
    search = scenario.search
    if search is not None and search.factor == TILES_LABEL and search.path != "tiles.count":
        out.append((("search", "factor"), "the factor `tiles` is the tile count: give it "
                    "path: tiles.count, or another name"))
    if factor is None:
        return out
    if factor.path != "tiles.count":
        return [*out, (("factors", TILES_LABEL), "the factor `tiles` is the tile count: give "
                       "it path: tiles.count, or another name")]
    for i, lv in enumerate(factor.levels):
        if lv.value is not None and lv.label != str(lv.value):
            out.append((("factors", TILES_LABEL, "levels", i, "label"), f"a level of `tiles` "
                        f"is labelled with its count: {lv.value}, not {lv.label!r}"))
    return out


def _tile_name_clashes(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """A group named like another's tile copy (``web-2`` beside ``web``): the two would
    be one group to the plan, provisioning and clean-up."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    for name in scenario.topology:
        m = re.fullmatch(r"(.+)-([0-9]+)", name)
        if m and m.group(1) in scenario.topology:
            out.append((("topology", name), f"with `tiles:` {name!r} names tile "
                        f"{int(m.group(2))} of group {m.group(1)!r} (its copies are "
                        f"{m.group(1)}-1 … {m.group(1)}-N): rename this group"))
    return out


def _default_paths(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """A factor or search without ``path`` writes to ``workload.params.<name>``, which a
    ``workloads:`` scenario has not: it must say which workload's parameter it sets."""
    first = next(iter(scenario.workloads or {}), "NAME")
    out: list[tuple[tuple[str | int, ...], str]] = []
    for name, f in scenario.factors.items():
        if f.path is None and f.hook is None and any(lv.value is not None for lv in f.levels):
            out.append((("factors", name), f"with `workloads:` a factor needs a path, e.g. "
                        f"path: workloads.{first}.params.{name} (or tiles.count)"))
    search = scenario.search
    if search is not None and search.path is None:
        out.append((("search", "factor"), f"with `workloads:` a search needs a path, e.g. "
                    f"path: workloads.{first}.params.{search.factor} (or tiles.count)"))
    return out


def member_roles(
    name: str, member: MemberSpec, driver_roles: Sequence[str], optional: Sequence[str],
    topology: Mapping[str, GroupSpec],
) -> tuple[dict[str, str], list[tuple[tuple[str | int, ...], str]]]:
    """Driver role -> group of one workload: its ``roles``, else the group named like the
    workload, a group named like the role, or the only group. (bindings, problems)"""
    here = ("workloads", name, "roles")
    out: dict[str, str] = {}
    problems: list[tuple[tuple[str | int, ...], str]] = []
    groups = ", ".join(topology) or "none"
    for role, group in member.roles.items():
        if role not in driver_roles:
            problems.append(((*here, role), f"driver {member.driver!r} has no role {role!r} "
                                            f"(roles: {', '.join(driver_roles)})"))
        elif group not in topology:
            problems.append(((*here, role), f"no topology group {group!r} (groups: {groups})"))
        else:
            out[role] = group
    for role in driver_roles:
        if role in out:
            continue
        fallback = [g for g in (name, role) if g in topology] or (
            list(topology) if len(topology) == 1 else [])
        if fallback:
            out[role] = fallback[0]
        elif role not in optional:
            problems.append((here, f"role {role!r} of workload {name!r} is not bound to a "
                                   f"group (add roles: {{{role}: GROUP}}; groups: {groups})"))
    return out, problems


def tiled_topology(scenario: Scenario, tiled: set[str]) -> dict[str, Any]:
    """The topology a lab binds for every tile at once: each tiled group (one a workload
    runs on) holds its count × tiles guests (split per tile by :func:`split_tiles`)."""
    tiles = tile_count(scenario) or 1
    return {g: spec.model_copy(update={"count": spec.count * tiles}) if g in tiled else spec
            for g, spec in scenario.topology.items()}


def split_tiles(scenario: Scenario, bound: Mapping[str, tuple[str, ...]], tiled: set[str]
                ) -> dict[str, tuple[str, ...]]:
    """Group -> guests bound over :func:`tiled_topology`, as tile groups (``web-2``)."""
    tiles = tile_count(scenario)
    if tiles is None:
        return dict(bound)
    out: dict[str, tuple[str, ...]] = {}
    for g, names in bound.items():
        if g not in tiled:
            out[g] = names
            continue
        per = scenario.topology[g].count
        for t in range(1, tiles + 1):
            out[f"{g}-{t}"] = tuple(names[(t - 1) * per: t * per])
    return out


def within_tiles(labels: Mapping[str, str], subject: Mapping[str, str]) -> bool:
    """Whether a check of ``subject`` applies at a point with ``labels``: a tile's check
    applies up to the point's tile count (a 2-tile point has no tile 3)."""
    tile, tiles = subject.get(TILE_LABEL), labels.get(TILES_LABEL)
    if tile is None or tiles is None:
        return True
    try:
        return int(tile) <= int(tiles)
    except ValueError:
        return True


def most_tiles(doc: Mapping[str, Any]) -> int:
    """The largest tile count a stored scenario may run: ``tiles.count``, the levels of a
    factor and the bounds of a search whose path is ``tiles.count``."""
    out = [int((doc.get("tiles") or {}).get("count") or 1)]
    for factor in (doc.get("factors") or {}).values():
        if isinstance(factor, Mapping) and factor.get("path") == "tiles.count":
            out += [int(float(lv.get("value"))) for lv in factor.get("levels") or []
                    if isinstance(lv, Mapping) and _number(lv.get("value"))]
    search = doc.get("search") or {}
    if search.get("path") == "tiles.count" and _number(search.get("max")):
        out.append(int(float(search["max"])))
    return max(out)


def _number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def untiled_groups(scenario: Scenario, groups: Mapping[str, tuple[str, ...]]
                   ) -> dict[str, tuple[str, ...]]:
    """Group -> guests with each tile's group (``web-2``) merged back into the scenario's
    (``web``): what provisioning, clean-up and the plan's group list read."""
    if scenario.tiles is None:
        return dict(groups)
    out: dict[str, tuple[str, ...]] = {}
    for g, names in groups.items():
        base = g.rsplit("-", 1)[0]
        if g in scenario.topology or base not in scenario.topology:
            base = g
        out[base] = tuple(dict.fromkeys((*out.get(base, ()), *names)))
    return out
