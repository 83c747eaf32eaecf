"""A seeded store of nightly runs with one injected testbed change, for
bench/changepoints.py (1,000 runs × 30 metrics) and the tests of `vbench history
--changes`, `vbench ack` and the nightly check.

Every night is one run of scenario ``nightly`` in lab ``lab`` (one fingerprint), tagged
``nightly``, at 02:00 UTC; from night ``change_at`` on the figures are ``factor`` times
what they were and the testbed records another ESXi build — what an ESXi patch that
costs performance looks like in the store.

As a command it writes nights into a store and checks each as the nightly job's
`vbench run --check-regression last:3` does (the same functions: the check, then the
alert remembered), one line per night with the exit status the run would have had
(docs/nightly.md walks through it):

    .venv/bin/python -m bench.nightly_store --results DIR [--from 0] [--until 29]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

T0 = 1_793_498_400.0  # 2026-11-01 02:00 UTC
LAB = {"name": "lab", "local": {"addresses": ["127.0.0.2"]}}
BUILDS = ("8.0.3-24022510", "8.0.3-24280767")


@dataclass(frozen=True)
class Nights:
    nights: int = 30
    metrics: tuple[str, ...] = ("total_iops",)
    points: tuple[dict[str, str], ...] = ({"bs": "4k"},)
    trials: int = 3
    change_at: int | None = 15  # first night after the change (None: no change)
    factor: float = 0.7
    noise: float = 0.02  # night-to-night, relative
    seed: int = 7
    lab: dict[str, object] = field(default_factory=lambda: dict(LAB))

    def run_id(self, night: int) -> str:
        """As vbench names runs: start time (UTC) and a suffix (here the seed)."""
        day = datetime.fromtimestamp(T0 + night * 86400, tz=UTC)
        return f"{day:%Y%m%d-%H%M%S}-{self.seed:06x}"


def _testbed(build: str) -> dict[str, object]:
    return {"hosts": [{"name": "esx01", "esxi_version": "8.0.3", "esxi_build": build}]}


def add_night(store: Store, n: Nights, night: int, rng: random.Random | None = None,
              scenario_name: str = "nightly") -> str:
    """Store night ``night`` of ``n`` (its figures drawn from ``rng``, by default one
    seeded by the night: any range of nights reproduces alone); returns its run id."""
    rng = rng or random.Random(n.seed * 100_000 + night)
    run_id = n.run_id(night)
    start = T0 + night * 86400
    changed = n.change_at is not None and night >= n.change_at
    scenario = {"version": 1, "name": scenario_name,
                "report": {"headline": list(n.metrics)}, "factors": {"bs": {}}}
    store.create_run(RunInfo(run_id, scenario_name, start, tags=("nightly",),
                             scenario=scenario, lab=n.lab))
    store.set_testbed(run_id, _testbed(BUILDS[changed]))
    store.add_points(run_id, list(enumerate(n.points)))
    level = (n.factor if changed else 1.0) * (1 + rng.gauss(0, n.noise))
    ph = PhaseTimes(start, start, start + 1, start + 61, start + 62, start + 63)
    for p in range(len(n.points)):
        for t in range(n.trials):
            samples = tuple(Sample(m, 1000.0 * (1 + i / 100) * level * (1 + rng.gauss(0, 0.005)),
                                   "IO/s", "fio") for i, m in enumerate(n.metrics))
            store.record_trial(run_id, TrialResult(p, t, "ok", ph, samples))
    store.finish_run(run_id, "ok", start + 120)
    return run_id


def build(root: Path, n: Nights, url: str | None = None) -> list[str]:
    """A store at ``url`` (default: SQLite in ``root``) with the nights of ``n``."""
    rng = random.Random(n.seed)
    with Store.open(url or f"sqlite:///{root}/vbench.db", root) as store:
        return [add_night(store, n, night, rng) for night in range(n.nights)]


def check_night(store: Store, run_id: str, baseline: str = "last:3") -> tuple[int, str]:
    """What `vbench run --check-regression BASELINE` decides at the end of the run:
    (exit status, the check's verdict line)."""
    from vbench.engine.finish import remember_alerts
    from vbench.report.build import check_regression_of, report_data_of
    from vbench.results.stored import StoredRun

    data = report_data_of(StoredRun.load(store, run_id))
    reg = check_regression_of(store, data.stored, data.analyzed().figures, baseline)
    remember_alerts(store, data, reg)
    return (1 if reg.regressed else 0), reg.verdict()


def main() -> None:
    ap = argparse.ArgumentParser(description="A seeded month of nightly runs, each checked")
    ap.add_argument("--results", type=Path, required=True, help="the store's folder")
    ap.add_argument("--from", dest="first", type=int, default=0)
    ap.add_argument("--until", type=int, default=29)
    args = ap.parse_args()
    n = Nights()
    args.results.mkdir(parents=True, exist_ok=True)
    with Store.open(None, args.results) as store:
        for night in range(args.first, args.until + 1):
            run_id = add_night(store, n, night)
            status, verdict = check_night(store, run_id)
            print(f"{run_id}: exit {status}: {verdict}")


if __name__ == "__main__":
    main()
