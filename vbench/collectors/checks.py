"""Checks of a scenario's ``collectors:`` before anything runs (kinds, options, targets)."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from pydantic import ValidationError

from vbench.collectors.base import get_collector
from vbench.errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from vbench.config.lab import Lab
    from vbench.config.scenario import CollectorSpec, Scenario
    from vbench.config.yamlsrc import Source


def collector_issues(scenario: Scenario, src: Source, lab: Lab | None) -> list[ConfigIssue]:
    """Every located mistake in ``collectors:`` (unknown kind, bad option, unknown counter
    pattern or set, a target the lab or topology does not have, duplicate names)."""
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
        for j, msg in target_problems(spec, scenario, lab):
            issues.append(src.issue((*here, "targets", j) if j is not None else here, msg))
    return issues


def target_problems(
    spec: CollectorSpec, scenario: Scenario, lab: Lab | None
) -> list[tuple[int | None, str]]:
    out: list[tuple[int | None, str]] = []
    if spec.kind == "esxtop" and lab is not None:
        hosts = list(lab.hosts)
        if not spec.targets and not hosts:
            out.append((None, "esxtop needs ESXi hosts: the lab has no `hosts:`"))
        for j, t in enumerate(spec.targets):
            if t not in lab.hosts:
                out.append((j, f"no ESXi host {t!r} in the lab's `hosts:`{_near(t, hosts)}"))
    elif spec.kind == "vcenter_perf":
        if lab is not None and not lab.vcenters:
            out.append((None, "vcenter_perf needs a vCenter: the lab has no `vcenters:`"))
        kinds = ("host", "vm", "datastore", "cluster")
        for j, t in enumerate(spec.targets):
            kind, sep, name = t.partition(":")
            if sep and (kind not in kinds or not name):
                out.append((j, f"{t!r}: targets are {'|'.join(kinds)}:NAME (or a VM name)"))
    elif spec.kind == "guest_sysstat":
        groups = set(scenario.topology)
        nodes = set(lab.nodes) if lab is not None else set()
        for group in scenario.topology.values():
            nodes.update(group.nodes or ())
        for j, t in enumerate(spec.targets):
            if t not in groups and (lab is None or t not in nodes):
                if lab is None and t not in groups:
                    continue  # a guest name can only be checked against a lab
                known = sorted(groups | nodes)
                out.append((j, f"{t!r} is neither a topology group nor a guest{_near(t, known)}"))
    return out


def _near(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word, names, n=3)
    return f" (closest: {', '.join(close)})" if close else f" (known: {', '.join(names) or 'none'})"
