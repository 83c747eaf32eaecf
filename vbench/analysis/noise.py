"""Lab noise measured, not assumed: the run-to-run spread of back-to-back runs of the
same scenario in one lab (`vbench run --aa`), per metric and point.

The noise of a series is the relative standard deviation (stdev / |mean|, n − 1) of its
run means: the night-to-night variation a change must exceed before it means anything.
Trial-to-trial spread inside one run is smaller (same VMs, same warm caches), which is why
a pairwise check on trials alone alerts on ordinary nights.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vbench.results.identity import identity_of
from vbench.results.store import RunRow, Store
from vbench.results.triage import Noise, point_key

MIN_RUNS = 3  # fewer runs give no spread worth storing


@dataclass(frozen=True)
class SeriesNoise:
    metric: str
    unit: str
    labels: Mapping[str, str]
    means: tuple[float, ...]  # one per run, in run order

    @property
    def cv(self) -> float | None:
        if len(self.means) < 2:
            return None
        mean = statistics.fmean(self.means)
        return statistics.stdev(self.means) / abs(mean) if mean else None


def run_means(store: Store, run_ids: Sequence[str]) -> list[SeriesNoise]:
    """Every unlabelled metric at every point: its mean over each run's ok trials."""
    frame = store.aggregate_frame(list(run_ids))
    ok = frame[(frame["status"] == "ok") & ~frame["labelled"]]
    points = {rid: {p.point: p.labels for p in rows}
              for rid, rows in store.points_of_runs(list(run_ids)).items()}
    per_trial = ok.groupby(["run_id", "point", "metric", "trial"])["value"].mean()
    per_run = per_trial.groupby(level=["run_id", "point", "metric"]).mean()
    units = dict(zip(ok["metric"], ok["unit"].fillna(""), strict=True))
    series: dict[tuple[str, str], dict[str, float]] = {}
    labels_of: dict[str, Mapping[str, str]] = {}
    for (rid, point, metric), value in per_run.items():
        labels = points.get(str(rid), {}).get(int(point), {})
        key = point_key(labels)
        labels_of[key] = labels
        if math.isfinite(value):
            series.setdefault((str(metric), key), {})[str(rid)] = float(value)
    return [SeriesNoise(metric, units.get(metric, ""), labels_of[key],
                        tuple(by_run[r] for r in run_ids if r in by_run))
            for (metric, key), by_run in sorted(series.items())]


def noise_rows(run: RunRow, run_ids: Sequence[str], found: Sequence[SeriesNoise]
               ) -> list[Noise]:
    """What the store keeps: series measured in every run, with a spread."""
    fp = identity_of({"lab": run.lab, "lab_fingerprint": run.lab_fingerprint}).lab_fingerprint
    now = time.time()
    return [Noise(fp, run.scenario_name, s.metric, point_key(s.labels), s.cv, len(s.means),
                  tuple(run_ids), now)
            for s in found if s.cv is not None and len(s.means) == len(run_ids)]
