"""A stored run, typed: what reports, exports and analyses read of a run's record.

The store keeps a run's resolved scenario, lab and environment as JSON documents, written
by whatever vbench version made the run. Reading them as nested dictionaries meant a
``.get(...) or {}`` at every step in every reader; :class:`StoredRun` reads them once,
tolerating what an older version left out (``None`` or empty, never a made-up value).

:meth:`StoredRun.load` reads a whole run once — its record, points, trials and samples —
so that a command hands the same :class:`StoredRun` to every analysis and output instead
of each one reading the store again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from vbench.results.store import RunRow, Store


def _map(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True)
class StoredFactor:
    name: str
    levels: tuple[str, ...]  # level labels, in order
    path: str  # the scenario path the factor sets


@dataclass(frozen=True)
class StoredGroup:
    name: str
    count: int
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class StoredScenario:
    """The resolved scenario a run stored (defaults filled, secrets as references)."""

    doc: Mapping[str, Any] = field(default_factory=dict)

    def _section(self, name: str) -> dict[str, Any]:
        return _map(self.doc.get(name))

    @property
    def name(self) -> str | None:
        return self.doc.get("name")

    @property
    def description(self) -> str:
        return str(self.doc.get("description") or "").strip()

    @property
    def driver(self) -> str | None:
        return self._section("workload").get("driver")

    @property
    def params(self) -> dict[str, Any]:
        return _map(self._section("workload").get("params"))

    @property
    def report(self) -> dict[str, Any]:
        return self._section("report")

    @property
    def title(self) -> str | None:
        return self.report.get("title")

    @property
    def headline(self) -> tuple[str, ...]:
        return tuple(str(m) for m in _list(self.report.get("headline")))

    @property
    def charts(self) -> list[dict[str, Any]]:
        return [_map(c) for c in _list(self.report.get("charts"))]

    @property
    def better(self) -> dict[str, str]:
        """Metric -> "higher" | "lower", as the scenario overrides the default."""
        raw = _map(self.report.get("better"))
        return {str(k): str(v) for k, v in raw.items() if v in ("higher", "lower")}

    @property
    def cv_threshold(self) -> float:
        value = _num(self._section("settings").get("cv_threshold"))
        return 0.05 if value is None else value

    @property
    def phases(self) -> dict[str, float | None]:
        ph = self._section("phases")
        return {k: _num(ph.get(k)) for k in ("warmup", "steady", "cooldown")}

    @property
    def auto_warmup_cap(self) -> float | None:
        """``phases.warmup: auto``: its cap (``phases`` then holds no warm-up); else None."""
        from vbench.config.warmup import auto_cap

        return auto_cap(self._section("phases"))

    @property
    def repeat(self) -> int | None:
        value = _num(self.doc.get("repeat"))
        return None if value is None else int(value)

    @property
    def regression(self) -> dict[str, Any]:
        return self._section("regression")

    @property
    def collector_kinds(self) -> list[str]:
        return [str(c.get("kind")) for c in map(_map, _list(self.doc.get("collectors")))
                if c.get("kind")]  # fmt: skip

    @property
    def factors(self) -> list[StoredFactor]:
        out = []
        for name, raw in self._section("factors").items():
            f = _map(raw)
            levels = tuple(str(_map(lv).get("label")) for lv in _list(f.get("levels")))
            out.append(StoredFactor(name, levels, str(f.get("path") or f"workload.params.{name}")))
        return out

    @property
    def topology(self) -> list[StoredGroup]:
        out = []
        for name, raw in self._section("topology").items():
            g = _map(raw)
            count = _num(g.get("count"))
            nodes = tuple(str(n) for n in _list(g.get("nodes")))
            out.append(StoredGroup(name, int(count) if count is not None else 1, nodes))
        return out


@dataclass(frozen=True)
class StoredGuest:
    name: str
    address: str | None
    kernel: str | None
    vcpus: Any
    cpu_model: str | None
    tools: dict[str, str]
    clock_offset_s: float | None
    clock_offset_measured: bool  # False: the run tried and could not measure it


@dataclass(frozen=True)
class StoredEnvironment:
    """Controller and guest facts recorded when the run started."""

    doc: Mapping[str, Any] = field(default_factory=dict)

    @property
    def controller(self) -> dict[str, Any]:
        return _map(self.doc.get("controller"))

    @property
    def command(self) -> str | None:
        return self.controller.get("command")

    @property
    def hostname(self) -> str | None:
        return self.controller.get("hostname")

    @property
    def guests(self) -> list[StoredGuest]:
        out = []
        for name, raw in _map(self.doc.get("guests")).items():
            g = _map(raw)
            off = _num(g.get("clock_offset_s"))
            out.append(
                StoredGuest(
                    name=name,
                    address=g.get("address"),
                    kernel=g.get("kernel"),
                    vcpus=g.get("vcpus"),
                    cpu_model=g.get("cpu_model"),
                    tools={str(k): str(v) for k, v in _map(g.get("tools")).items()},
                    clock_offset_s=off,
                    clock_offset_measured=not ("clock_offset_s" in g and off is None),
                )
            )
        return out


@dataclass(frozen=True)
class StoredRun:
    """One run as the store holds it, typed (see the module docstring)."""

    run_id: str
    scenario_name: str
    status: str
    started: float | None
    ended: float | None
    tags: tuple[str, ...]
    scenario: StoredScenario
    environment: StoredEnvironment
    lab_name: str | None
    lab_fingerprint: str | None
    vbench_version: str | None
    testbed: dict[str, Any] | None
    headline: tuple[str, ...]  # as stored with the run (schema 3), else the scenario's
    run_dir: str | None = None
    # Filled by :meth:`load` (empty when built from a record alone with :meth:`of`): the
    # record as a mapping, the store's row, and the run's points, trials and samples
    # (every sample, failed trials' included; the frame is None until loaded).
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    row: RunRow | None = field(default=None, compare=False, repr=False)
    points: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)
    trials: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)
    samples: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, store: Store, run_id: str) -> StoredRun:
        """The whole run (``run_id`` or a unique prefix of it), read from the store once."""
        row = store.get_run(run_id)
        record = dataclasses.asdict(row)
        return dataclasses.replace(
            cls.of(record),
            record=record,
            row=row,
            points=tuple(dataclasses.asdict(p) for p in store.points(row.run_id)),
            trials=tuple(dataclasses.asdict(t) for t in store.trials(row.run_id)),
            samples=store.samples_frame(row.run_id),
        )

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> StoredRun:
        """From a run record as a mapping (``dataclasses.asdict`` of a store row)."""
        scenario = StoredScenario(_map(run.get("scenario")))
        stored = tuple(str(m) for m in _list(run.get("headline")))
        return cls(
            run_id=str(run.get("run_id") or ""),
            scenario_name=str(run.get("scenario_name") or scenario.name or ""),
            status=str(run.get("status") or "unknown"),
            started=_num(run.get("started")),
            ended=_num(run.get("ended")),
            tags=tuple(str(t) for t in _list(run.get("tags"))),
            scenario=scenario,
            environment=StoredEnvironment(_map(run.get("environment"))),
            lab_name=_map(run.get("lab")).get("name"),
            lab_fingerprint=run.get("lab_fingerprint"),
            vbench_version=run.get("vbench_version"),
            testbed=_map(run.get("testbed")) or None,
            headline=stored or scenario.headline,
            run_dir=run.get("run_dir"),
        )

    @property
    def title(self) -> str:
        return self.scenario.title or self.scenario_name

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started
