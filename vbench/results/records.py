"""Frozen records that flow from workloads and parsers into the store and reports.

A missing figure is ``None``, never 0.0: a reviewer must be able to tell
"the tool reported zero" from "the tool did not report it".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One figure of one trial.

    ``guest`` is the guest it was measured on, or ``None`` for a figure aggregated
    over the guests of the trial. ``labels`` carries finer identity (fio job name,
    direction, operation) so that two samples of one metric stay distinguishable.
    """

    metric: str
    value: float | None
    unit: str
    source: str
    guest: str | None = None
    labels: tuple[tuple[str, str], ...] = ()

    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class Window:
    """A time window in controller time (epoch seconds, float)."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class PhaseTimes:
    """Phase boundaries of one trial (epoch seconds, controller clock).

    ``steady_start``/``steady_end`` are the controller's marks (its wall window: it
    includes starting the tool and seeing it exit); ``workload_start``/``workload_end``
    the window the tool itself measured over (fio's runtime, redis-benchmark's elapsed
    time), in controller time, when the driver knows it.
    """

    prepare_start: float | None = None
    warmup_start: float | None = None
    steady_start: float | None = None
    steady_end: float | None = None
    cooldown_end: float | None = None
    teardown_end: float | None = None
    workload_start: float | None = None
    workload_end: float | None = None

    @property
    def steady(self) -> Window | None:
        """The measured window: the workload's own when known, else the controller's."""
        if self.workload_start is not None and self.workload_end is not None:
            return Window(self.workload_start, self.workload_end)
        return self.wall_steady

    @property
    def wall_steady(self) -> Window | None:
        """The controller's steady window (steady_start → steady_end marks)."""
        if self.steady_start is None or self.steady_end is None:
            return None
        return Window(self.steady_start, self.steady_end)

    def as_dict(self) -> dict[str, float | None]:
        return {
            "prepare_start": self.prepare_start,
            "warmup_start": self.warmup_start,
            "steady_start": self.steady_start,
            "steady_end": self.steady_end,
            "cooldown_end": self.cooldown_end,
            "teardown_end": self.teardown_end,
            "workload_start": self.workload_start,
            "workload_end": self.workload_end,
        }


@dataclass(frozen=True)
class TrialResult:
    """What one trial of one point produced."""

    point: int
    trial: int
    status: str  # "ok" | "failed" | "interrupted"
    phases: PhaseTimes
    samples: tuple[Sample, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class RunInfo:
    """The identity and context of a run, written when it starts."""

    run_id: str
    scenario_name: str
    started: float
    status: str = "running"
    tags: tuple[str, ...] = ()
    scenario: dict[str, Any] = field(default_factory=dict)  # resolved, secrets removed
    lab: dict[str, Any] = field(default_factory=dict)  # resolved, secrets removed
    lab_fingerprint: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    run_dir: str | None = None
    ended: float | None = None
    headline: tuple[str, ...] = ()  # metrics the report leads with (first: the headline)
    # What makes runs comparable (vbench.results.identity): the resolved scenario's hash
    # after --set, the scenario file's hash without them, and the --set arguments.
    scenario_hash: str | None = None
    base_scenario_hash: str | None = None
    overrides: tuple[str, ...] = ()
    # The metric catalogues (vbench/analysis/direction.py: to_stored); None: not known.
    metrics: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class ClockOffset:
    """Target clock minus controller clock (seconds) and the round trip it was read in."""

    offset: float
    rtt: float

    def to_controller(self, times: Any) -> Any:
        return times - self.offset
