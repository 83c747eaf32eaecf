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
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
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
    # The labels its samples carry, with the values the driver can produce (empty: not
    # known in advance); a QoS `where:` is checked against them.
    labels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # True: the figure exists only per label (no unlabelled aggregate), so a QoS on it
    # needs a `where:` naming one of its labels.
    per_label: bool = False

    @property
    def choice_map(self) -> Mapping[str, tuple[str, ...]]:
        return dict(self.choices)

    @property
    def label_map(self) -> Mapping[str, tuple[str, ...]]:
        return dict(self.labels)

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


def labelled(
    entries: Iterable[Metric], *, per_label: bool = False, **labels: Iterable[str]
) -> tuple[Metric, ...]:
    """``entries`` carrying ``labels`` (label -> the values the driver can produce; empty
    when not known in advance); ``per_label``: they exist only per label."""
    fixed = tuple((k, tuple(v)) for k, v in labels.items())
    return tuple(replace(m, labels=fixed, per_label=per_label) for m in entries)


def relabel(entries: Iterable[Metric], **values: Iterable[str]) -> tuple[Metric, ...]:
    """``entries`` with the values of the labels named in ``values`` set (the driver
    knows them from its parameters: the operations of a mix)."""
    known = {k: tuple(v) for k, v in values.items()}
    return tuple(replace(m, labels=tuple((k, known.get(k, v)) for k, v in m.labels))
                 for m in entries)  # fmt: skip


def merge_labels(entries: Iterable[Metric]) -> tuple[Metric, ...]:
    """Entries that differ only by their label values as one, the values the union (the
    catalogues of every point of a run: each point's mix may name other operations)."""
    out: dict[Metric, Metric] = {}
    for m in entries:
        key = replace(m, labels=())  # entries that differ only by their label values
        seen = out.get(key)
        if seen is None:
            out[key] = m
            continue
        a, b = seen.label_map, m.label_map
        # A label whose values one point does not know is not known for the run.
        union = tuple((k, tuple(dict.fromkeys((*a[k], *b[k]))) if a.get(k) and b.get(k)
                       else ()) for k in dict.fromkeys((*a, *b)))  # fmt: skip
        out[key] = replace(seen, labels=union)
    return tuple(out.values())


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

    @property
    def declares_labels(self) -> bool:
        """Whether the owner declares its labels: an entry without any then has none."""
        return any(m.labels for m in self.entries)


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


def closest(
    name: str, catalogues: Iterable[Catalogue], n: int = 1, *,
    where: Collection[str] | None = None,
) -> list[str]:
    """The closest known names (difflib), for a did-you-mean. ``where``: the labels the
    place that names it selects (``()``: none, as outside a QoS); then only names that
    validate there are proposed (a per-label figure needs a ``where:``, and the labels
    selected must be ones the figure carries)."""
    known = [x for c in catalogues for m in c.entries if where is None or fits(m, c, where)
             for x in m.names()]  # fmt: skip
    return difflib.get_close_matches(name, list(dict.fromkeys(known)), n=n, cutoff=0.6)


def fits(m: Metric, c: Catalogue, where: Collection[str]) -> bool:
    """Whether ``m`` of ``c`` can be selected by a ``where:`` on the labels ``where``."""
    if not where:
        return not m.per_label
    if m.labels:
        return set(where) <= set(m.label_map)
    return not c.declares_labels  # labels not declared: nothing refuses the where


def per_label_text(m: Metric) -> str:
    """``op`` / ``op or fault``: the labels a per-label figure is selected by."""
    return " or ".join(k for k, _ in m.labels) or "label"


def where_example(m: Metric) -> str:
    """``where: {op: [clone, power_on]}``: how a QoS selects a per-label figure."""
    k, values = m.labels[0] if m.labels else ("<label>", ())
    shown = ", ".join(values[:3]) + (", …" if len(values) > 3 else "") if values else "…"
    return f"where: {{{k}: [{shown}]}}"


def unknown_metric_message(
    name: str, catalogues: list[Catalogue], *, where: Collection[str] | None = None
) -> str:
    """``no metric read_lat_p99 in fio's catalogue; did you mean read_clat_p99?`` — the
    proposal validates where the name stands (``where``: see :func:`closest`); a closer
    figure that exists only per label is named with the ``where:`` it needs."""
    places = [c.named for c in catalogues] or ["any catalogue"]
    there = places[0] if len(places) == 1 else f"{', '.join(places[:-1])} or {places[-1]}"
    close = closest(name, catalogues, where=where)
    hint = f"; did you mean {close[0]}?" if close else ""
    if where is not None:
        near = closest(name, catalogues)
        found = look_up(near[0], catalogues).metric if near and near != close else None
        if found is not None and found.per_label:
            hint += (f" ({near[0]} exists only per {per_label_text(found)}: "
                     f"a QoS on it needs {where_example(found)})")
    return f"no metric {name} in {there}{hint}"


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
