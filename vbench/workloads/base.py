"""The workload driver interface and its registry.

A driver is one package under ``vbench/workloads/`` (or a module named by a
``vbench.workloads`` entry point) holding one :class:`Workload` subclass registered
with :func:`register`; the registry finds it by discovery (:mod:`vbench.plugins`).
The engine calls, for every trial:

    prepare → run (warm-up + steady state) → [cool-down] → collect → teardown

A driver names the *roles* it needs (fio: ``target``; redis: ``servers``,
``proxies``, ``clients``); the scenario binds each role to a topology group.
Parameters are validated by the driver's own pydantic model, so a mistake in
``workload.params`` is located in the scenario file like any other.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import ConfigDict

from vbench.config.types import Strict
from vbench.plugins import Registry

if TYPE_CHECKING:
    from vbench.analysis.catalogue import Metric
    from vbench.analysis.verdict import Answer
    from vbench.analysis.verdict_build import AnswerInputs
    from vbench.guest.ssh import Guest
    from vbench.results.records import Sample
    from vbench.vsphere.resources import VSphereResources


class Params(Strict):
    """Base of every driver's parameter model: unknown keys are refused, with the
    closest known key suggested, like everywhere else in a scenario."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


@dataclass(frozen=True)
class Finding:
    """A pitfall found in a driver's parameters (``level`` is "error" or "warning")."""

    level: str
    path: str  # dotted path below ``root``
    message: str
    root: str = "workload.params"  # "" for a path from the scenario's top (factors.x…)
    # file:line:col where the scenario says it (set by the plan, as for errors); "" unknown
    at: str = ""

    @property
    def where(self) -> str:
        """The full dotted path in the scenario."""
        return f"{self.root}.{self.path}" if self.root else self.path


@dataclass(frozen=True)
class LabObject:
    """A vCenter object a driver's parameters name: checked to exist before the run
    creates anything (``vbench lab check --scenario``, the run's preflight), with the
    did-you-mean the run would give, and its vCenter checked against the lab's by
    ``validate --lab`` and ``plan --lab``."""

    # vm | template | datastore | network | folder | resource_pool | host | cluster
    # (inventory kinds), library, library_item, storage_policy
    kind: str
    name: str
    path: str  # dotted path below workload.params where the scenario names it
    vcenter: str | None = None  # a vCenter of the lab; None: the point's
    library: str | None = None  # library_item: the (existing) library holding it
    # The vCenter came from the lab, not the parameters (e.g. a step's default):
    # ``vcenter_path`` is where the scenario names it (for validate's location).
    vcenter_path: str | None = None


@dataclass(frozen=True)
class PlannedCommand:
    """A command a step will run, as shown by ``vbench plan``."""

    role: str
    step: str  # prepare | warm-up (an automatic one) | run | collect | teardown
    argv: tuple[str, ...]
    files: tuple[str, ...] = ()  # names of files pushed to the guest first
    background: bool = False


@dataclass(frozen=True)
class PlannedGuest:
    """A guest of a planned point as the lab provides it (known with a lab only)."""

    name: str
    kind: str  # "clone" (vbench makes it) | "existing VM" | "lab node"
    group: str
    data_disks: int | None  # data disks known to vbench (vm.disks, a node's disks)


def _no_window(start: float, end: float) -> None:
    """A context that records no workload window (tests, tools)."""


@dataclass
class TrialContext:
    """Everything a driver may use during one trial.

    ``groups``: topology group -> the trial's guest names in it (role bindings applied).
    ``vsphere``: the run's vCenter resources for this point — its profile's vCenter
    session(s), inventory, the shared task watcher, and creating objects that are
    journaled first and removed at the end of the run whatever happens (see
    :mod:`vbench.vsphere.resources`); ``None`` when the run reaches no vCenter. A driver
    that acts on vCenter without `vm:` groups sets ``needs_vcenter = True``.
    ``workload_window(start, end)``: the steady window as the tool itself measured it
    (controller epoch seconds, read from its output: fio's runtime, redis-benchmark's
    elapsed time). Samples carry it and the report judges the window by it; the
    controller's marks (which include starting the tool and seeing it exit) stay beside
    it as overhead. A driver whose tool reports no time of its own does not call it.
    """

    run_id: str
    point: int
    trial: int
    labels: Mapping[str, str]
    warmup: float  # seconds
    steady: float  # seconds
    cooldown: float  # seconds
    guests: Mapping[str, Sequence[Guest]]  # role -> guests
    raw_dir: Path  # local directory for this trial's raw outputs
    cancel: threading.Event
    mark: Callable[[str], None]  # mark("warmup_start" | "steady_start" | "steady_end")
    log: Callable[..., None]  # log(event, **fields) to the run's JSON-lines log
    max_parallel: int = 16
    groups: Mapping[str, Sequence[str]] = field(default_factory=dict)
    vsphere: VSphereResources | None = None
    workload_window: Callable[[float, float], None] = _no_window
    # phases.warmup: auto: ``warmup`` is its cap; a driver with ``auto_warmup`` ends it
    # as soon as vbench.analysis.warmup.warmup_end says so (fio).
    auto_warmup: bool = False

    def all_guests(self) -> list[Guest]:
        seen: dict[str, Guest] = {}
        for group in self.guests.values():
            for g in group:
                seen.setdefault(g.name, g)
        return list(seen.values())

    def raw_path(self, guest: str, name: str) -> Path:
        """Where to keep a raw tool output of one guest (created on demand)."""
        d = self.raw_dir / guest
        d.mkdir(parents=True, exist_ok=True)
        return d / name


class Workload(ABC):
    """One workload driver. Instances hold validated parameters for one point."""

    name: ClassVar[str]
    Params: ClassVar[type[Params]]
    roles: ClassVar[tuple[str, ...]] = ("target",)
    # Roles a scenario may leave unbound (e.g. a proxy tier that can be switched off);
    # active_roles() says which roles given parameters actually use.
    optional_roles: ClassVar[tuple[str, ...]] = ()
    # Commands that must exist in the guests of each role (checked before a run).
    required_tools: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # Metrics a report leads with, in order (first is the headline figure).
    headline_metrics: ClassVar[tuple[str, ...]] = ()
    @classmethod
    def headline_for(cls, params: Params) -> tuple[str, ...]:
        """The headline metrics a point with these parameters can produce (default: all
        of :attr:`headline_metrics`): a driver leaves out what the point cannot make, so
        that no headline is "no data" by construction (a read-only job's write figures)."""
        return cls.headline_metrics

    # The pages that document the driver's parameters for its users, checked against
    # ``Params`` (vbench.testing.driver_doc_problems): paths in the project for a built-in
    # (drivers/<name>/README.md, docs/<name>.md), in the distribution's top-level package
    # for a driver shipped on its own.
    docs: ClassVar[tuple[str, ...]] = ()
    # The driver acts on vCenter itself (ctx.vsphere): the run opens the vCenter of each
    # point's lab profile even when no `vm:` group is provisioned.
    needs_vcenter: ClassVar[bool] = False
    # Takes phases.warmup: auto (TrialContext.auto_warmup): reads its own throughput
    # while it runs and ends the warm-up when vbench.analysis.warmup.warmup_end says so.
    auto_warmup: ClassVar[bool] = False
    # The metrics the driver makes (vbench/analysis/catalogue.py): a QoS criterion or a
    # derived figure naming another is refused before the run, with the closest names.
    # None: not declared, so names are not checked.
    metrics: ClassVar[tuple[Metric, ...] | None] = None

    def __init__(self, params: Params) -> None:
        self.params = params

    @classmethod
    def findings(cls, params: Params) -> list[Finding]:
        """Pitfalls beyond what the model itself rejects (errors stop the run)."""
        return []

    @classmethod
    def metric_catalogue(cls, params: Params) -> tuple[Metric, ...] | None:
        """The metrics these parameters make (default: ``metrics``; a driver whose names
        follow its parameters, such as one per operation of a mix, overrides this)."""
        return cls.metrics

    @classmethod
    def vcenters(cls, params: Params) -> tuple[str, ...]:
        """vCenters of the lab these parameters act on besides each point's own (a
        subscriber in a second vCenter): the run checks and records them too (default:
        none)."""
        return ()

    @classmethod
    def lab_objects(cls, params: Params) -> tuple[LabObject, ...]:
        """The vCenter objects these parameters name (a template to clone, a datastore,
        an existing library…): each is checked in its vCenter before anything is created,
        so a wrong name is refused by preflight, not by every trial in turn (default:
        none)."""
        return ()

    @classmethod
    def active_roles(cls, params: Params) -> tuple[str, ...]:
        """The roles these parameters use (default: all); the others get no guests."""
        return cls.roles

    @classmethod
    def factor_findings(cls, params: Params, varied: Mapping[str, str]) -> list[Finding]:
        """Factors that cannot change anything with these parameters (an ``iodepth``
        factor with a synchronous fio engine): warnings at the factor (``root=""``,
        ``path="factors.<name>"``). ``varied``: dotted parameter path below
        workload.params -> the factor whose levels set it (default: none)."""
        return []

    @classmethod
    def placement_findings(cls, params: Params, guests: Mapping[str, int]) -> list[Finding]:
        """Pitfalls that depend on the number of guests per role (checked by the plan)."""
        return []

    @classmethod
    def guest_findings(
        cls, params: Params, guests: Mapping[str, Sequence[PlannedGuest]]
    ) -> list[Finding]:
        """Pitfalls that depend on what the lab's guests are (role -> its guests; checked
        by the plan when a lab is given)."""
        return []

    @classmethod
    def answer(cls, inputs: AnswerInputs) -> tuple[Answer, ...]:
        """The study's answer this driver reads from a stored run (vcbench: ops/s against
        Little's law; DVD Store: OPM against native …): :class:`Answer` s built with the
        helpers of ``inputs`` (``inputs.figure(point, metric)`` gives unit, n, CI, window
        and the simulated-lab flag). Default: none, so the schedule's answer or the
        headline figures at the best point lead. Called on a stored run, never during a
        trial (see vbench/analysis/verdict_build.py)."""
        return ()

    def tools(self) -> Mapping[str, tuple[str, ...]]:
        """Role -> commands these parameters need in its guests (default: required_tools)."""
        return self.required_tools

    @abstractmethod
    def planned_commands(self, warmup: float, steady: float) -> list[PlannedCommand]:
        """The commands a trial will run, for ``vbench plan``."""

    def planned_auto_warmup(self, cap: float) -> list[PlannedCommand]:
        """The commands of an automatic warm-up of at most ``cap`` seconds (``auto_warmup``
        drivers), shown by ``vbench plan`` before the trial's run."""
        return []

    def estimated_seconds(self, warmup: float, steady: float, cooldown: float) -> float:
        """Wall time of one trial, for the plan's estimate."""
        return warmup + steady + cooldown

    def prepare(self, ctx: TrialContext) -> None:  # noqa: B027 - optional hook
        """Push files and set the guests up; not part of the measured window."""

    @abstractmethod
    def run(self, ctx: TrialContext) -> None:
        """Run warm-up and steady state, calling ``ctx.mark`` at the boundaries."""

    @abstractmethod
    def collect(self, ctx: TrialContext) -> list[Sample]:
        """Fetch raw outputs into ``ctx.raw_dir`` and turn them into samples."""

    def teardown(self, ctx: TrialContext) -> None:  # noqa: B027 - optional hook
        """Stop what the trial started and remove what it created in the guests."""


REGISTRY: Registry[type[Workload]] = Registry(
    "vbench.workloads", "workload driver", lambda cls: cls.name
)


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator: make a driver available under ``cls.name`` (the package it lives
    in is found by discovery: see :mod:`vbench.plugins`)."""
    return REGISTRY.register(cls)


def get_driver(name: str) -> type[Workload]:
    return REGISTRY.get(name)


def driver_names() -> list[str]:
    return REGISTRY.names()
