"""Which way is better for each metric of a stored run: the one place to ask before
ranking anything (a report's "best" point, history, compare, regression, a search's
"best").

Every catalogue entry declares its direction (:data:`vbench.analysis.catalogue.BETTER`).
The engine stores the catalogues of a run with it (``runs.metrics``, schema 5), so that
a report of the run needs no driver code. :class:`Directions` answers, in this order:

1. the scenario's ``report.better`` (the reader's word wins);
2. a scenario derived figure's ``better``, else the direction of the metric it is built
   on (normalize, speedup, geomean);
3. the catalogue stored with the run;
4. for a run stored before catalogues declared directions (no ``metrics`` stored): the
   old guess from the name and unit (time units and latency-like names lower, the rest
   higher), so that an existing history keeps its order.

A metric in none of these, in a run that stored its catalogue, has direction ``none``:
it is shown, never ranked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from vbench.analysis.catalogue import BETTER, Better, Catalogue, Metric
from vbench.analysis.figures import DirectionSource, guess_better

HIGHER, LOWER, NONE = "higher", "lower", "none"
__all__ = ["DirectionSource", "Directions", "directions_of", "directions_with"]
_INHERITING = ("normalize", "speedup", "geomean")  # derived kinds that keep their source's way


def to_stored(entries: Iterable[Metric]) -> list[dict[str, Any]]:
    """Catalogue entries as JSON for ``runs.metrics``."""
    return [{"pattern": m.pattern, "unit": m.unit, "better": m.better,
             "choices": {k: list(v) for k, v in m.choices},
             **({"capped_by": list(m.capped_by)} if m.capped_by else {})}
            for m in entries]  # fmt: skip


def from_stored(raw: Any) -> tuple[Metric, ...] | None:
    """``runs.metrics`` read back; None when the run stored none (older runs)."""
    if not isinstance(raw, list):
        return None
    out = []
    for e in raw:
        if not isinstance(e, Mapping) or e.get("better") not in BETTER:
            continue
        choices = e.get("choices") if isinstance(e.get("choices"), Mapping) else {}
        caps = e.get("capped_by") if isinstance(e.get("capped_by"), list) else []
        out.append(Metric(str(e.get("pattern")), e.get("unit"), e["better"],
                          tuple((str(k), tuple(map(str, v))) for k, v in choices.items()),
                          tuple(map(str, caps))))
    return tuple(out)


@dataclass(frozen=True)
class Directions(Mapping[str, str]):
    """The direction of improvement of every metric of one run (see the module doc).

    Also a read-only mapping (metric -> direction, any metric answered) so that it goes
    wherever a ``report.better`` mapping went (``better_overrides=``)."""

    declared: Catalogue | None = None  # None: the run stored no catalogue (older runs)
    overrides: Mapping[str, str] = field(default_factory=dict)  # report.better, derived
    derived_from: Mapping[str, str] = field(default_factory=dict)  # derived -> source

    def of(self, metric: str, unit: str = "") -> Better:
        """``higher``, ``lower`` or ``none`` (never ranked)."""
        seen: set[str] = set()
        while metric not in seen:
            seen.add(metric)
            if self.overrides.get(metric) in BETTER:
                return self.overrides[metric]  # type: ignore[return-value]
            if metric not in self.derived_from:
                break
            metric, unit = self.derived_from[metric], ""
        if self.declared is None:
            return guess_better(metric, unit)
        found = self.declared.find(metric)
        return found.better if found is not None else NONE

    def capped_by(self, metric: str) -> tuple[str, ...]:
        """The driver parameters its catalogue says cap ``metric`` (none: not known)."""
        found = self.declared.find(metric) if self.declared is not None else None
        return found.capped_by if found is not None else ()

    def ranks(self, metric: str, unit: str = "") -> bool:
        """Whether ``metric`` may be ranked (a best point, better/worse)."""
        return self.of(metric, unit) != NONE

    def __getitem__(self, metric: str) -> str:
        return self.of(metric)

    def __contains__(self, metric: object) -> bool:
        return isinstance(metric, str)  # every metric has an answer, "none" included

    def __iter__(self) -> Iterator[str]:
        return iter(self.overrides)

    def __len__(self) -> int:
        return len(self.overrides)


def way_text(direction: str) -> str:
    """``higher is better``, ``lower is better`` or ``not ranked`` (for a reader)."""
    return f"{direction} is better" if direction in (HIGHER, LOWER) else "not ranked"


def scenario_directions(scenario: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(``report.better`` and derived figures' ``better``, derived figure -> source)."""
    report = scenario.get("report") if isinstance(scenario.get("report"), Mapping) else {}
    raw = report.get("better") if isinstance(report.get("better"), Mapping) else {}
    overrides = {str(k): str(v) for k, v in raw.items() if v in BETTER}
    sources: dict[str, str] = {}
    for d in scenario.get("derived") or ():
        if not isinstance(d, Mapping) or not d.get("name"):
            continue
        name = str(d["name"])
        if d.get("better") in BETTER:
            overrides.setdefault(name, str(d["better"]))
        elif d.get("kind") in _INHERITING:
            source = d.get("metric") or next(iter(d.get("metrics") or ()), None)
            if source:
                sources[name] = str(source)
    return overrides, sources


def directions_with(run: Mapping[str, Any] | Any, given: Any = None) -> Directions:
    """:func:`directions_of` ``run``, with ``given`` on top: a ``Directions`` replaces
    them, a mapping (``report.better``-like) overrides single metrics."""
    if isinstance(given, Directions):
        return given
    d = directions_of(run)
    if isinstance(given, Mapping) and given:
        extra = {str(k): str(v) for k, v in given.items() if v in BETTER}
        return dataclasses.replace(d, overrides={**d.overrides, **extra})
    return d


def directions_of(run: Mapping[str, Any] | Any) -> Directions:
    """The directions of a stored run: a run record as a mapping
    (``dataclasses.asdict`` of a store row, ``RunFigures.run``) or a ``StoredRun``."""
    if not isinstance(run, Mapping):  # a StoredRun: its record as the store read it
        record = getattr(run, "record", None)
        run = record if record else {"scenario": getattr(run.scenario, "doc", {})}
    scenario, raw = run.get("scenario") or {}, run.get("metrics")
    overrides, sources = scenario_directions(scenario if isinstance(scenario, Mapping) else {})
    entries = from_stored(raw)
    declared = None if entries is None else Catalogue("run", entries, "the run's catalogue")
    return Directions(declared, overrides, sources)
