"""Points of a find-max search: a combination of the other factors plus one level of
the searched factor, validated like any factor level (the level is written to
``search.path`` before the scenario is checked, so a level the driver or the lab
refuses is reported at the ``search`` key)."""

from __future__ import annotations

from vbench.config.findmax import SearchSpec
from vbench.config.levels import size_text
from vbench.config.matrix import PointSpec, _with_scenario
from vbench.config.scenario import Scenario
from vbench.config.yamlsrc import Source


def search_path(spec: SearchSpec) -> str:
    return spec.path or f"workload.params.{spec.factor}"


def level_value(spec: SearchSpec, level: float) -> int | float | str:
    """What a level writes to the searched parameter: a size as the driver takes it
    (``64k``) when the bounds were sizes, else the number."""
    if spec.sizes:
        return size_text(round(level))
    return int(level) if spec.integer else float(level)


def bound_text(spec: SearchSpec, value: float) -> str:
    """A bound or level for people: ``4k``/``1m`` for sizes, whole numbers whole."""
    if spec.sizes:
        return size_text(round(value))
    return str(int(value)) if spec.integer else f"{value:g}"


def level_label(spec: SearchSpec, level: float) -> str:
    return str(int(level)) if spec.integer else f"{level:g}"


def start_level(spec: SearchSpec) -> float:
    level = spec.start if spec.start is not None else spec.min
    return float(round(level)) if spec.integer else float(level)


def level_spec(
    scenario: Scenario, src: Source, base: PointSpec, level: float, index: int
) -> PointSpec:
    """``base`` (a combination of the other factors) at ``level`` of the search."""
    spec = scenario.search
    assert spec is not None
    labels = {**base.labels, spec.factor: level_label(spec, level)}
    value = level_value(spec, level)
    overrides = (
        *base.overrides,
        (search_path(spec), value, ("search",)),
        *((path, value, ("search", "also", i)) for i, path in enumerate(spec.also)),
    )
    return _with_scenario(PointSpec(index, labels, overrides, base.profiles), scenario, src)


def search_starts(scenario: Scenario, src: Source, bases: list[PointSpec]) -> list[PointSpec]:
    """The points a plan shows: each combination at the search's first level (or the
    combinations themselves when there is no search)."""
    spec = scenario.search
    if spec is None:
        return bases
    return [level_spec(scenario, src, b, start_level(spec), b.index) for b in bases]


def search_bounds(scenario: Scenario, src: Source, bases: list[PointSpec]) -> list[PointSpec]:
    """Each combination at ``min`` and ``max``: validated before the run, and their guests
    bound (a searched group size needs the largest)."""
    spec = scenario.search
    if spec is None:
        return []
    return [
        level_spec(scenario, src, b, level, b.index)
        for b in bases
        for level in (spec.min, spec.max)
    ]
