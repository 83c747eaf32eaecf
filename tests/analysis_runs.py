"""Small hand-made runs written into a real results store, for the analysis and report
tests: every figure is chosen by the test, so expected values can be computed by hand
(or independently with SciPy)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vbench.results.identity import lab_fingerprint, scenario_hash
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

T0 = 1_800_000_000.0
UNITS = {"ops": "ops/s", "lat": "ms", "iops": "IO/s", "cpu": "%"}

PointValues = Mapping[str, Sequence[float | None]]  # metric -> one value per trial


def scenario_doc(
    name: str = "demo",
    factors: Mapping[str, Sequence[str]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A stored (resolved) scenario as the engine writes it."""
    factors = factors or {}
    doc: dict[str, Any] = {
        "version": 1,
        "name": name,
        "description": "",
        "topology": {"clients": {"count": 1}},
        "workload": {"driver": "fio", "roles": {}, "params": {"rw": "randread"}},
        "factors": {
            f: {"levels": [{"label": lv, "value": lv, "set": {}} for lv in levels]}
            for f, levels in factors.items()
        },
        "zip": [],
        "exclude": [],
        "repeat": 3,
        "phases": {"warmup": 10.0, "steady": 60.0, "cooldown": 0.0},
        "collectors": [],
        "qos": [],
        "derived": [],
        "report": {"headline": ["ops"], "charts": []},
        "settings": {"max_parallel": 16, "cv_threshold": 0.05},
    }
    doc.update(extra)
    return doc


def add_run(
    store: Store,
    run_id: str,
    points: Sequence[tuple[Mapping[str, str], PointValues]],
    *,
    scenario: Mapping[str, Any] | None = None,
    started: float = T0,
    status: str = "ok",
    tags: Sequence[str] = (),
    testbed: Mapping[str, Any] | None = None,
    environment: Mapping[str, Any] | None = None,
    lab: Mapping[str, Any] | None = None,
    failed: Sequence[tuple[int, int]] = (),
    labelled: Sequence[tuple[int, int, str, Mapping[str, str], float]] = (),
    run_dir: str | None = None,
    overrides: Sequence[str] = (),
    metrics: list[dict[str, Any]] | None = None,
) -> str:
    """Write one run: ``points`` in order (index = position), each with per-trial values
    per metric (None = missing figure). ``failed`` (point, trial) pairs are recorded as
    failed trials; ``labelled`` adds (point, trial, metric, labels, value) samples;
    ``overrides`` are the run's --set arguments; ``metrics`` the catalogue the engine
    stores with a run (vbench/analysis/direction.py: to_stored)."""
    sc = dict(scenario or scenario_doc())
    lab_doc = dict(lab or {"name": "lab1"})
    store.create_run(RunInfo(
        run_id=run_id, scenario_name=sc["name"], started=started, tags=tuple(tags),
        scenario=sc, lab=lab_doc, lab_fingerprint=lab_fingerprint(lab_doc),
        scenario_hash=scenario_hash(sc),
        environment=dict(environment or {"controller": {"command": "vbench run demo.yaml"}}),
        run_dir=run_dir, overrides=tuple(overrides), metrics=metrics,
    ))
    store.add_points(run_id, [(i, dict(labels)) for i, (labels, _) in enumerate(points)])
    for p, (_labels, metrics) in enumerate(points):
        n = max((len(v) for v in metrics.values()), default=0)
        for t in range(n):
            start = started + 100 * (p * n + t)
            phases = PhaseTimes(start, start, start + 10, start + 70, start + 70, start + 71)
            samples = [
                Sample(m, vals[t], UNITS.get(m, "ops/s"), "fio")
                for m, vals in metrics.items()
                if t < len(vals)
            ]
            samples += [
                Sample(m, v, UNITS.get(m, "ops/s"), "fio", None, tuple(sorted(lab.items())))
                for (pp, tt, m, lab, v) in labelled
                if (pp, tt) == (p, t)
            ]
            bad = (p, t) in failed
            store.record_trial(run_id, TrialResult(
                p, t, "failed" if bad else "ok", phases, tuple(samples),
                "boom" if bad else None,
            ))
    store.finish_run(run_id, status, started + 3600)
    if testbed is not None:
        store.set_testbed(run_id, testbed)
    return run_id
