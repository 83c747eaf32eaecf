"""Everything computed from one stored run: its figures, derived figures and QoS verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.analysis.derived import DerivedResult, compute_derived, parse_specs
from vbench.analysis.direction import directions_of
from vbench.analysis.figures import RunFigures, build_figures
from vbench.analysis.qos import QosResult, evaluate_qos, parse_criteria
from vbench.analysis.stats import DEFAULT_CV_THRESHOLD
from vbench.lazy import lazy_module
from vbench.results.store import Store
from vbench.results.stored import StoredRun, StoredScenario

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")


@dataclass(frozen=True)
class RunAnalysis:
    figures: RunFigures  # measured and point-level derived figures
    derived: DerivedResult
    qos: QosResult
    problems: tuple[str, ...]  # derived/QoS declarations that could not be honoured


def cv_threshold_of(scenario: Mapping[str, Any]) -> float:
    value = (scenario.get("settings") or {}).get("cv_threshold")
    return float(value) if isinstance(value, int | float) and value > 0 else DEFAULT_CV_THRESHOLD


def better_overrides(scenario: Mapping[str, Any]) -> dict[str, str]:
    return StoredScenario(scenario).better


def analyze(
    run: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    trials: Sequence[Mapping[str, Any]],
    samples: pd.DataFrame,
) -> RunAnalysis:
    scenario = run.get("scenario") or {}
    figures = build_figures(run, points, trials, samples)
    specs, problems = parse_specs(scenario)
    derived = compute_derived(
        figures,
        specs,
        cv_threshold=cv_threshold_of(scenario),
        better_overrides=directions_of(run),  # the run's catalogue, report.better on top
    )
    criteria, qos_problems = parse_criteria(scenario)
    qos = evaluate_qos(derived.extended, criteria)
    all_problems = [*problems, *derived.problems, *qos_problems, *qos.problems]
    return RunAnalysis(derived.extended, derived, qos, tuple(dict.fromkeys(all_problems)))


def analysis_of(run: StoredRun) -> RunAnalysis:
    """The analysis of a run already read with :meth:`StoredRun.load`."""
    samples = run.samples if run.samples is not None else pd.DataFrame()
    return analyze(run.record, run.points, run.trials, samples)


def load_analysis(store: Store, run_id: str) -> RunAnalysis:
    """Read the run and analyse it (a command that also reports the run should load a
    :class:`StoredRun` once and use :func:`analysis_of`)."""
    return analysis_of(StoredRun.load(store, run_id))


def load_figures(store: Store, run_id: str) -> RunFigures:
    """A run's figures with its point-level derived figures."""
    return load_analysis(store, run_id).figures
