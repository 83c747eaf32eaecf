"""Metric catalogues: the metrics a workload driver or a collector produces, declared
next to the code that makes them, so that a scenario naming a metric (a QoS criterion,
a derived figure) can be checked before anything runs.

A catalogue entry is a name or a *pattern*: ``<direction>_clat_p99`` with the values
``<direction>`` may take (``read``, ``write`` …), or with none for a free part
(``<step>_time`` where the steps come from the scenario; ``<object>(<instance>)\\<counter>``
for counters named by the tool). Every entry carries the unit its samples are stored
in, or None when the unit varies (told by each sample), and its direction of
improvement (:data:`BETTER`): ``higher`` (throughput), ``lower`` (latency, errors) or
``none`` — a figure that is context, not a score (a load generator's CPU, a count of
instances, a mix share, a tool's counter). Nothing ranks a ``none`` metric: no "best"
point, no better/worse in compare, history or regression checks.

Tests hold each catalogue against the samples its driver or collector makes from real
outputs (tests/unit/test_metric_catalogues.py), so a catalogue cannot drift.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from vbench.analysis.figures import unit_family

_PLACEHOLDER = re.compile(r"<([a-z_]+)>")
Better = Literal["higher", "lower", "none"]
BETTER: tuple[str, ...] = get_args(Better)


@dataclass(frozen=True)
class Metric:
    """One metric, or a family of them named by a pattern."""

    pattern: str
    unit: str | None  # None: the unit varies from sample to sample
    better: Better  # direction of improvement; "none": never ranked
    # (placeholder, the values it takes); a placeholder without choices is free
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Driver parameters that cap it (fio's rate_iops caps its IOPS): where a run sets one,
    # the figure follows the setting and is not compared as performance.
    capped_by: tuple[str, ...] = ()

    @property
    def choice_map(self) -> Mapping[str, tuple[str, ...]]:
        return dict(self.choices)

    def regex(self) -> re.Pattern[str]:
        out, pos = [], 0
        for m in _PLACEHOLDER.finditer(self.pattern):
            out.append(re.escape(self.pattern[pos : m.start()]))
            values = self.choice_map.get(m.group(1))
            out.append(f"(?:{'|'.join(map(re.escape, values))})" if values else ".+?")
            pos = m.end()
        out.append(re.escape(self.pattern[pos:]))
        return re.compile("".join(out))

    def matches(self, name: str) -> bool:
        return self.regex().fullmatch(name) is not None

    def names(self) -> list[str]:
        """Every name the enumerated placeholders give (free ones stay ``<name>``)."""
        choices = self.choice_map
        keys = [k for k in dict.fromkeys(_PLACEHOLDER.findall(self.pattern)) if choices.get(k)]
        out = []
        for combo in itertools.product(*(choices[k] for k in keys)):
            name = self.pattern
            for k, v in zip(keys, combo, strict=True):
                name = name.replace(f"<{k}>", v)
            out.append(name)
        return out


def metric(
    pattern: str, unit: str | None, better: Better, *, capped_by: Iterable[str] = (),
    **choices: Iterable[str],
) -> Metric:
    """A catalogue entry: ``metric("<dir>_iops", "IO/s", "higher", dir=("read", "write"))``;
    ``capped_by``: the driver parameters that cap it (``("rate_iops",)``)."""
    if better not in BETTER:  # a typo would otherwise rank the metric the wrong way
        raise ValueError(f"metric {pattern}: better must be one of {', '.join(BETTER)}")
    return Metric(pattern, unit, better, tuple((k, tuple(v)) for k, v in choices.items()),
                  tuple(capped_by))


def same_unit(
    patterns: Iterable[str], unit: str | None, better: Better, *,
    capped_by: Iterable[str] = (), **choices: Iterable[str],
) -> list[Metric]:
    """Several entries of one unit and direction."""
    return [metric(p, unit, better, capped_by=capped_by, **choices) for p in patterns]


@dataclass(frozen=True)
class Catalogue:
    """What one driver or collector (``owner``) produces."""

    owner: str
    entries: tuple[Metric, ...]
    label: str = ""  # how messages name it (default: "<owner>'s catalogue")

    @property
    def named(self) -> str:
        return self.label or f"{self.owner}'s catalogue"

    def find(self, name: str) -> Metric | None:
        # Exact names first: a fixed name wins over a pattern that also matches it.
        for m in self.entries:
            if m.pattern == name:
                return m
        return next((m for m in self.entries if m.matches(name)), None)

    def names(self) -> list[str]:
        return list(dict.fromkeys(n for m in self.entries for n in m.names()))


@dataclass(frozen=True)
class Lookup:
    """A name looked up in several catalogues."""

    name: str
    owner: str | None  # the catalogue that has it (None: nowhere)
    metric: Metric | None


def look_up(name: str, catalogues: Iterable[Catalogue]) -> Lookup:
    for c in catalogues:
        found = c.find(name)
        if found is not None:
            return Lookup(name, c.owner, found)
    return Lookup(name, None, None)


def closest(name: str, catalogues: Iterable[Catalogue], n: int = 1) -> list[str]:
    """The closest known names (difflib), for a did-you-mean."""
    known = [x for c in catalogues for x in c.names()]
    return difflib.get_close_matches(name, known, n=n, cutoff=0.6)


def unknown_metric_message(name: str, catalogues: list[Catalogue]) -> str:
    """``no metric read_lat_p99 in fio's catalogue; did you mean read_clat_p99?``"""
    places = [c.named for c in catalogues] or ["any catalogue"]
    where = places[0] if len(places) == 1 else f"{', '.join(places[:-1])} or {places[-1]}"
    close = closest(name, catalogues)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"no metric {name} in {where}{hint}"


def unit_problem(name: str, stored: str | None, wanted: str) -> str | None:
    """Why a threshold in ``wanted`` cannot be compared with ``name`` stored in
    ``stored`` (None when it can, or when the stored unit is not known in advance)."""
    if stored is None or wanted == stored:
        return None
    if not stored:
        return f"{name} has no unit: leave `unit` out"
    family = unit_family(stored)
    if wanted in family:
        return None
    return (f"unit {wanted!r} does not fit {name} (stored in {stored}); accepted: "
            f"{', '.join(family)}")
