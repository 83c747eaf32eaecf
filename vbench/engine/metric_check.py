"""Metric names and units of a scenario checked against what the run will produce.

The metrics a run stores come from the workload driver, the collectors the scenario
lists (and the figures derived from them) and the scenario's own derived figures; each
declares a catalogue (vbench/analysis/catalogue.py). A QoS criterion, a derived figure,
a regression metric or a report chart that names a metric none of them makes would only
show up after the whole run as "no data"; here it is a located error with the closest
names, before anything runs. So is a QoS threshold in a unit the metric's value cannot
be converted to (``unit: msec`` for a figure in ms).

This lives in the engine because it needs the drivers and collectors (config is below
both, see docs/design.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from vbench.analysis import expr as ex
from vbench.analysis.catalogue import (
    Catalogue,
    Metric,
    look_up,
    merge_labels,
    metric,
    per_label_text,
    unit_problem,
    unknown_metric_message,
    where_example,
)
from vbench.analysis.direction import to_stored
from vbench.config.matrix import label_sets
from vbench.config.scenario import QosCriterion, Scenario
from vbench.config.yamlsrc import Source
from vbench.errors import ConfigError, ConfigIssue
from vbench.workloads.base import Params, Workload

PathT = tuple[str | int, ...]


def run_catalogues(
    scenario: Scenario, driver: type[Workload], params: Iterable[Params]
) -> list[Catalogue] | None:
    """What a run of ``scenario`` can store, one catalogue per producer; None when a
    producer declares none (a plugin without a catalogue: names cannot be checked)."""
    entries: dict[Metric, None] = {}
    for p in params:  # a factor may change the parameters, and with them the names
        declared = driver.metric_catalogue(p)
        if declared is None:
            return None
        entries.update(dict.fromkeys(declared))
    out = [Catalogue(driver.name, merge_labels(entries))]
    for spec, cls, options in _collectors(scenario):
        declared = cls.metric_catalogue(options)
        if declared is None:
            return None
        out.append(Catalogue(spec.name or spec.kind, declared))
    if scenario.collectors:
        from vbench.collectors.derived import METRICS as COLLECTOR_DERIVED

        out.append(Catalogue("derived", COLLECTOR_DERIVED, "the collectors' derived figures"))
    if scenario.derived:
        out.append(Catalogue("scenario", tuple(metric(d.name, d.unit, d.better or "none")
                                               for d in scenario.derived),
                             "the scenario's derived figures"))
    return out


def stored_catalogue(
    scenario: Scenario, driver: type[Workload], params: Iterable[Params]
) -> list[dict[str, Any]]:
    """What the run stores of its producers' catalogues (``runs.metrics``): every
    declared entry with its unit and direction. A producer without a catalogue adds
    nothing, so its metrics are never ranked (vbench/analysis/direction.py)."""
    entries: dict[Metric, None] = {}
    for p in params:
        entries.update(dict.fromkeys(driver.metric_catalogue(p) or ()))
    for _spec, cls, options in _collectors(scenario):
        try:
            declared = cls.metric_catalogue(options)
        except (ConfigError, ValueError):
            continue
        entries.update(dict.fromkeys(declared or ()))
    if scenario.collectors:
        from vbench.collectors.derived import METRICS as COLLECTOR_DERIVED

        entries.update(dict.fromkeys(COLLECTOR_DERIVED))
    return to_stored(entries)


def _collectors(scenario: Scenario) -> Iterator[tuple[Any, Any, Any]]:
    """(spec, collector class, options) of each collector whose kind and options are
    valid (the collector checks report the others, located). The collectors' registry is
    imported only for a scenario that has some."""
    if not scenario.collectors:
        return
    from vbench.collectors.base import get_collector

    for spec in scenario.collectors:
        try:
            cls = get_collector(spec.kind)
            options = cls.Options.model_validate(spec.options)
        except (ConfigError, ValueError):
            continue
        yield spec, cls, options


def metric_issues(
    scenario: Scenario, src: Source, catalogues: Sequence[Catalogue] | None
) -> list[ConfigIssue]:
    """Every metric name the scenario uses that the run cannot produce, every QoS
    unit that does not fit its metric, and a ``steady_state.at`` no point has."""
    out: list[ConfigIssue] = []
    if scenario.steady_state is not None and scenario.steady_state.at:
        from vbench.analysis.steady_state import at_issues

        out += [src.issue(("steady_state", *path), text) for path, text in
                at_issues(scenario.steady_state.at, label_sets(scenario))]
    if catalogues is None:
        return out
    for name, path in _names(scenario):
        found = look_up(name, catalogues)
        if found.metric is None:
            # Proposed: only names the labels selected there (a QoS's `where:`) fit.
            where = list(scenario.qos[int(path[1])].where) if path[0] == "qos" else []
            out.append(src.issue(path, unknown_metric_message(name, list(catalogues),
                                                              where=where)))
        elif found.metric.per_label and path[0] != "qos":
            # Derived figures, regression checks and the report's headline and charts
            # read the unlabelled figure of a point: a per-label one has none (so do the
            # steady-state rounds and an adaptive repeat's target).
            out.append(src.issue(path, f"{name} exists only per "
                                       f"{per_label_text(found.metric)}: only a QoS "
                                       f"criterion can select it ({where_example(found.metric)})"))
    for i, c in enumerate(scenario.qos):
        found = look_up(c.metric, catalogues)
        if found.metric is None:
            continue
        owner = next(x for x in catalogues if x.owner == found.owner)
        out += [src.issue(path, text)
                for path, text in _where_issues(i, c, found.metric, owner.declares_labels)]
        if c.unit is None:
            continue
        problem = unit_problem(c.metric, found.metric.unit, c.unit)
        if problem is not None:
            out.append(src.issue(("qos", i, "unit"), problem))
    return out


def _where_issues(
    i: int, c: QosCriterion, m: Metric, declared: bool
) -> list[tuple[PathT, str]]:
    """A QoS ``where:`` held against the labels the metric's catalogue entry declares:
    required when the figure exists only per label, label names and values known.
    ``declared``: its catalogue declares labels, so an entry without any has none."""
    if m.per_label and not c.where:
        return [(("qos", i, "metric"),
                 f"{c.metric} exists only per {per_label_text(m)}: add {where_example(m)}")]
    if not m.labels:
        if declared and c.where:  # the figure has no labels: the where selects nothing
            return [(("qos", i, "where"), f"{c.metric} carries no label: leave `where` out "
                                          "(its figure is the whole point's)")]
        return []  # labels not declared: nothing to hold the `where:` against
    out: list[tuple[PathT, str]] = []
    known = m.label_map
    for key, value in c.where.items():
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            out.append((("qos", i, "where", key),
                        f"{c.metric} has no label {key!r} (its labels: "
                        f"{', '.join(known)}){hint}"))
            continue
        values = [value] if isinstance(value, str) else value
        for j, v in enumerate(values):
            if known[key] and v not in known[key]:
                path: PathT = ("qos", i, "where", key) + ((j,) if isinstance(value, list) else ())
                out.append((path, _unknown_value(c.metric, key, v, known[key])))
    return out


def _unknown_value(name: str, key: str, value: str, values: Sequence[str]) -> str:
    close = difflib.get_close_matches(value, list(values), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"no {name} with {key}={value}: this run makes it for {key} "
            f"{', '.join(values)}{hint}")


def _names(scenario: Scenario) -> list[tuple[str, PathT]]:
    """(metric name, where the scenario names it)."""
    out: list[tuple[str, PathT]] = [
        (c.metric, ("qos", i, "metric")) for i, c in enumerate(scenario.qos)
    ]
    for i, d in enumerate(scenario.derived):
        if d.metric:
            out.append((d.metric, ("derived", i, "metric")))
        out += [(m, ("derived", i, "metrics", j)) for j, m in enumerate(d.metrics)]
        out += [(m, ("derived", i, "expr")) for m in sorted(_expr_names(d.expr))]
    out += [(m, ("regression", "metrics", j)) for j, m in enumerate(scenario.regression.metrics)]
    if scenario.steady_state is not None:
        out.append((scenario.steady_state.metric, ("steady_state", "metric")))
    if not isinstance(scenario.repeat, int):  # an adaptive repeat's target metrics
        out += [(m, ("repeat", "metrics", j)) for j, m in enumerate(scenario.repeat.metrics)]
    out += [(m, ("report", "headline", j)) for j, m in enumerate(scenario.report.headline)]
    for j, chart in enumerate(scenario.report.charts):
        out.append((chart.metric, ("report", "charts", j, "metric")))
        x_metric: Any = getattr(chart, "x_metric", None)
        if x_metric:
            out.append((x_metric, ("report", "charts", j, "x_metric")))
    return out


def _expr_names(text: str | None) -> set[str]:
    if not text:
        return set()
    try:
        return ex.names(ex.parse(text))
    except ex.ExprError:
        return set()  # check_derived reports the syntax error
