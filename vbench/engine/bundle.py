"""Several workloads in one trial: the bundle the engine runs as one workload.

The engine's trial (engine/runner.py) calls prepare → run → collect → teardown on one
:class:`~vbench.workloads.base.Workload`; a scenario with ``workloads:`` gets a
:class:`Bundle` there, which calls each member driver's own step on every member at
once (a thread each), with a context of the member's own guests, raw folder and marks:

- prepare: every member together; run: every prepared member started at the same moment
  (a barrier), so warm-ups start together and the steady windows overlap; the trial's
  ``steady_start`` is marked when the last live member starts its steady phase and its
  ``steady_end`` when the first ends it (the window all of them share); each member's
  marks and tool window go to the run log (``workload_mark``, ``workload_window``).
- A member that fails (prepare, run or collect) is logged (``workload_failed``) and
  stored as ``<name>.ok = 0``; its figures are not kept (its raw files are), and the
  others run on and keep theirs. Only when every member fails does the trial fail.
- collect: each member's samples renamed ``<name>.<metric>`` and labelled with the tile;
  plus ``<name>.ok`` and, per tile, ``start_spread``: first to last steady-phase start,
  from the tools' own windows when every member of the tile reported one (the guests'
  clocks), else from the controller's marks.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from vbench.config.tiles import OK_METRIC, SPREAD_METRIC, TILE_LABEL, Instance
from vbench.errors import VbenchError
from vbench.guest.fanout import on_each
from vbench.results.records import Sample
from vbench.workloads.base import (
    Finding,
    Params,
    PlannedCommand,
    PlannedGuest,
    TrialContext,
    Workload,
)

SOURCE = "vbench"


@dataclass(frozen=True, eq=False)  # a member is itself (a key of the trial's state)
class Member:
    """One workload of one tile: its driver, validated parameters and role bindings."""

    instance: Instance
    driver: type[Workload]
    workload: Workload
    roles: Mapping[str, str]  # driver role -> scenario group (before the tile suffix)

    def key(self, role: str) -> str:
        """The role's name in the bundle's point (``web-2.target``)."""
        return f"{self.instance.name}.{role}"

    @property
    def params(self) -> Params:
        return self.workload.params


@dataclass(frozen=True)
class BundleParams:
    """What a bundle point runs (a dataclass standing where a driver has its Params)."""

    members: tuple[Member, ...]

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return {m.instance.name: {"driver": m.driver.name,
                                  "params": m.params.model_dump(**kwargs)}
                for m in self.members}

    def first_of_each(self) -> list[Member]:
        """One member per workload (the drivers' answers do not depend on the tile)."""
        seen: dict[str, Member] = {}
        for m in self.members:
            seen.setdefault(m.instance.workload, m)
        return list(seen.values())


def _findings(found: Sequence[Finding], workload: str) -> list[Finding]:
    root = f"workloads.{workload}.params"
    return [replace(f, root=root) if f.root == "workload.params" else f for f in found]


class Bundle(Workload):
    """The members of a ``workloads:`` scenario run as one workload (not a plugin)."""

    name: ClassVar[str] = "bundle"
    roles: ClassVar[tuple[str, ...]] = ()
    params: BundleParams  # type: ignore[assignment]

    def __init__(self, params: BundleParams) -> None:  # type: ignore[override]
        self.params = params
        self._trial: _TrialState | None = None

    # -- what the plan asks of a driver, member by member ----------------------------------
    @classmethod
    def headline_for(cls, params: Params) -> tuple[str, ...]:
        assert isinstance(params, BundleParams)
        return tuple(dict.fromkeys(
            f"{m.instance.workload}.{h}" for m in params.first_of_each()
            for h in m.driver.headline_for(m.params)))

    @classmethod
    def metric_catalogue(cls, params: Params) -> tuple[Any, ...] | None:
        from vbench.engine.bundle_catalogue import bundle_catalogue

        assert isinstance(params, BundleParams)
        return bundle_catalogue(params)

    @classmethod
    def findings(cls, params: Params) -> list[Finding]:
        assert isinstance(params, BundleParams)
        return [f for m in params.first_of_each()
                for f in _findings(m.driver.findings(m.params), m.instance.workload)]

    @classmethod
    def placement_findings(cls, params: Params, guests: Mapping[str, int]) -> list[Finding]:
        assert isinstance(params, BundleParams)
        return [f for m in params.first_of_each() for f in _findings(
            m.driver.placement_findings(m.params, _own(m, guests)), m.instance.workload)]

    @classmethod
    def guest_findings(cls, params: Params, guests: Mapping[str, Sequence[PlannedGuest]]
                       ) -> list[Finding]:
        assert isinstance(params, BundleParams)
        return [f for m in params.first_of_each() for f in _findings(
            m.driver.guest_findings(m.params, _own(m, guests)), m.instance.workload)]

    @classmethod
    def active_roles(cls, params: Params) -> tuple[str, ...]:
        assert isinstance(params, BundleParams)
        return tuple(m.key(r) for m in params.members for r in m.driver.active_roles(m.params)
                     if r in m.roles)

    @classmethod
    def lab_objects(cls, params: Params) -> tuple[Any, ...]:
        assert isinstance(params, BundleParams)
        return tuple(dict.fromkeys(o for m in params.first_of_each()
                                   for o in m.driver.lab_objects(m.params)))

    @classmethod
    def vcenters(cls, params: Params) -> tuple[str, ...]:
        assert isinstance(params, BundleParams)
        return tuple(dict.fromkeys(v for m in params.first_of_each()
                                   for v in m.driver.vcenters(m.params)))

    def tools(self) -> Mapping[str, tuple[str, ...]]:
        return {m.key(role): tools for m in self.params.members
                for role, tools in m.workload.tools().items()}

    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        return [replace(c, role=m.key(c.role)) for m in self.params.members
                for c in m.workload.planned_commands(warmup, steady)]

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        return max(m.workload.estimated_seconds(warmup, steady, cooldown)
                   for m in self.params.members)

    # -- one trial --------------------------------------------------------------------------
    def prepare(self, ctx: TrialContext) -> None:
        self._trial = state = _TrialState(ctx, self.params.members)
        state.each(state.members, lambda m, sub: m.workload.prepare(sub), "prepare")

    def run(self, ctx: TrialContext) -> None:
        state = self._state(ctx)
        ready = state.live()
        start = threading.Barrier(len(ready)) if ready else None

        def go(m: Member, sub: TrialContext) -> None:
            assert start is not None
            start.wait()  # every member's warm-up starts at the same moment
            m.workload.run(sub)

        state.each(ready, go, "run")
        if not state.live():
            raise VbenchError("every workload of the trial failed: " + state.failures())

    def collect(self, ctx: TrialContext) -> list[Sample]:
        state = self._state(ctx)
        state.each(state.live(), lambda m, sub: state.keep(m, m.workload.collect(sub)),
                   "collect")
        state.phases.shared_window([m.instance.name for m in state.live()])
        return state.samples()

    def teardown(self, ctx: TrialContext) -> None:
        """Every member's teardown at once. One that fails is logged (``workload_failed``,
        step teardown): the engine still kills every process of the trial's guests, and
        the others' figures stay; only when every member's fails does the trial fail."""
        state = self._state(ctx)
        failed = on_each(state.members, lambda m: m.workload.teardown(state.sub[m]))
        self._trial = None
        for m, exc in failed:
            ctx.log("workload_failed", level="error", workload=m.instance.name,
                    step="teardown", error=str(exc))
        if failed and len(failed) == len(state.members):
            raise VbenchError("teardown failed: " + "; ".join(
                f"{m.instance.name}: {exc}" for m, exc in failed))

    def _state(self, ctx: TrialContext) -> _TrialState:
        if self._trial is None or self._trial.ctx is not ctx:  # collect without a prepare
            self._trial = _TrialState(ctx, self.params.members)
        return self._trial


def _own(m: Member, by_key: Mapping[str, Any]) -> dict[str, Any]:
    """A bundle-wide role mapping cut down to one member's roles (keys without prefix)."""
    return {role: by_key[m.key(role)] for role in m.roles if m.key(role) in by_key}


class _TrialState:
    """One trial of a bundle: each member's context, marks, tool window and failure."""

    def __init__(self, ctx: TrialContext, members: Sequence[Member]) -> None:
        from vbench.engine.bundle_phases import SharedPhases

        self.ctx, self.members = ctx, list(members)
        self.failed: dict[Member, str] = {}
        self.kept: dict[Member, list[Sample]] = {}
        self.phases = SharedPhases(ctx, [m.instance.name for m in members])
        self.sub = {m: self._context(m) for m in members}

    def _context(self, m: Member) -> TrialContext:
        ctx, name = self.ctx, m.instance.name
        guests = _own(m, ctx.guests)
        groups = {g: ctx.groups.get(m.instance.group(g), ()) for g in set(m.roles.values())}

        def log(event: str, **fields: Any) -> None:
            ctx.log(event, **{"workload": name, **fields})

        return replace(
            ctx, guests=guests, groups=groups, raw_dir=ctx.raw_dir / name, log=log,
            mark=lambda mark: self.phases.mark(name, mark),
            workload_window=lambda s, e: self.phases.window(name, s, e),
        )

    def live(self) -> list[Member]:
        return [m for m in self.members if m not in self.failed]

    def failures(self) -> str:
        return "; ".join(f"{m.instance.name}: {why}" for m, why in self.failed.items())

    def each(self, members: Sequence[Member], step: Callable[[Member, TrialContext], None],
             what: str) -> None:
        """``step`` on every member at once; a member whose step raises is failed (logged)
        and the others go on. An interrupt of the whole trial is raised."""
        def call(m: Member) -> None:
            step(m, self.sub[m])

        for m, exc in on_each(members, call):
            if exc is None:
                continue
            if self.ctx.cancel.is_set():
                raise exc
            why = str(exc) if isinstance(exc, VbenchError) else f"{type(exc).__name__}: {exc}"
            self.failed[m] = f"{what}: {why}"
            self.phases.drop(m.instance.name)
            self.ctx.log("workload_failed", level="error", workload=m.instance.name,
                         step=what, error=why)

    def keep(self, m: Member, samples: list[Sample]) -> None:
        self.kept[m] = samples

    def samples(self) -> list[Sample]:
        out: list[Sample] = []
        for m in self.members:
            tile = m.instance.labels()
            ok = m not in self.failed and m in self.kept
            out.append(Sample(f"{m.instance.workload}.{OK_METRIC}", 1.0 if ok else 0.0, "",
                              SOURCE, None, tuple(tile.items())))
            if ok:
                out.extend(_renamed(s, m.instance) for s in self.kept[m])
        live = {m.instance.name: m.instance.tile for m in self.live()}
        for tile, seconds in self.phases.spreads(live).items():
            labels = () if tile is None else ((TILE_LABEL, str(tile)),)
            out.append(Sample(SPREAD_METRIC, seconds, "s", SOURCE, None, labels))
        means = [s for s in _tile_means(out) if s.metric != SPREAD_METRIC]
        if any(tile is not None for tile in live.values()):
            # The trial's own spread, over every workload of every tile: a mean of the
            # tiles' spreads would hide the worst tile and the tiles' offsets.
            whole = self.phases.spreads(dict.fromkeys(live)).get(None)
            if whole is not None:
                means.append(Sample(SPREAD_METRIC, whole, "s", SOURCE))
        return [*out, *means]


def _tile_means(samples: Sequence[Sample]) -> list[Sample]:
    """Each tile aggregate (no label but its tile) also as the mean over the tiles that
    have it, unlabelled: the figure a headline table shows (an average tile)."""
    by_metric: dict[str, list[Sample]] = {}
    for s in samples:
        if s.guest is None and len(s.labels) == 1 and s.labels[0][0] == TILE_LABEL:
            by_metric.setdefault(s.metric, []).append(s)
    out = []
    for metric, group in by_metric.items():
        values = [s.value for s in group if s.value is not None and math.isfinite(s.value)]
        if values:
            first = group[0]
            out.append(Sample(metric, math.fsum(values) / len(values), first.unit,
                              first.source))
    return out


def _renamed(s: Sample, instance: Instance) -> Sample:
    labels = tuple(kv for kv in s.labels if kv[0] != TILE_LABEL)
    return replace(s, metric=f"{instance.workload}.{s.metric}",
                   labels=(*labels, *instance.labels().items()))

