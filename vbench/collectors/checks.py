"""Checks of a scenario's ``collectors:`` before anything runs (kinds, options, targets)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import ValidationError

from vbench.errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.config.scenario import Scenario
    from vbench.config.yamlsrc import Source


def collector_issues(scenario: Scenario, src: Source, lab: Lab | None) -> list[ConfigIssue]:
    """Every located mistake in ``collectors:`` (unknown kind, bad option, unknown counter
    pattern or set, a target the lab or topology does not have, duplicate names)."""
    if not scenario.collectors:  # the collectors' registry is imported for those who have some
        return []
    from vbench.collectors.base import get_collector
    from vbench.config.load import issues_from

    issues: list[ConfigIssue] = []
    seen: dict[str, int] = {}
    for i, spec in enumerate(scenario.collectors):
        here = ("collectors", i)
        name = spec.name or spec.kind
        if name in seen:
            msg = f"a second collector named {name!r} (see collectors[{seen[name]}]): add `name`"
            issues.append(src.issue((*here, "name"), msg))
        seen.setdefault(name, i)
        try:
            cls = get_collector(spec.kind)
        except ConfigError as exc:
            issues.append(src.issue((*here, "kind"), str(exc)))
            continue
        try:
            options = cls.Options.model_validate(spec.options)
        except ValidationError as exc:
            issues.extend(issues_from(exc, src, (*here, "options")))
            continue
        for msg in cls.check(options, spec.interval):
            where = "interval" if "interval" in msg or "every" in msg else "options"
            issues.append(src.issue((*here, where), msg))
        for j, msg in cls.target_problems(spec, scenario, lab):
            issues.append(src.issue((*here, "targets", j) if j is not None else here, msg))
    return issues


def watch_window_warnings(scenario: Scenario, steady: Iterable[float]
                          ) -> list[tuple[str, str]]:
    """(path, message) for each esxtop collector whose interval is too long for the
    shortest steady window (``steady``: each point's, in seconds) to hold a whole sample:
    the busy VMs of such a trial could not be watched, which the run would only say
    after it (docs/lab-hygiene.md). A window of twice the interval holds one."""
    if scenario.disturbance is not None and not scenario.disturbance.watch:
        return []
    shortest = min(steady, default=None)
    if shortest is None:
        return []
    return [(f"collectors.{i}.interval",
             f"esxtop every {spec.interval:g} s: the shortest steady window ({shortest:g} s) "
             "may hold no whole sample, and busy VMs that are not the run's would not be "
             f"watched in it (said 'not watched'); a steady window of {2 * spec.interval:g} s "
             "or more holds one")
            for i, spec in enumerate(scenario.collectors)
            if spec.kind == "esxtop" and 0 < shortest < 2 * spec.interval]


def near(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word, names, n=3)
    return f" (closest: {', '.join(close)})" if close else f" (known: {', '.join(names) or 'none'})"
