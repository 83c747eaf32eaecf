"""`vbench run --aa`: the same scenario run back to back in one lab (an A/A test), and
the run-to-run noise of every metric at every point stored with the lab fingerprint
(vbench/analysis/noise.py), where regression checks and change detection take it as
the floor of their minimum effect."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vbench.analysis.noise import MIN_RUNS, SeriesNoise, noise_rows, run_means
from vbench.config.aa import DEFAULT_AA_RUNS, AaSpec
from vbench.engine.finish import FinishOptions, RunResult, finish_run
from vbench.engine.runner import ProgressSink
from vbench.engine.session import RunRequest, RunSession, execute
from vbench.errors import ConfigError
from vbench.results.lease import kept_leases
from vbench.results.store import Store
from vbench.results.triage import set_noise

AA_TAG = "aa"


@dataclass(frozen=True)
class AaResult:
    runs: tuple[RunResult, ...]
    series: tuple[SeriesNoise, ...]  # () when too few runs completed
    stored: int  # noise rows kept in the store
    lab_fingerprint: str

    @property
    def exit_code(self) -> int:
        """The first run's exit code that is not 0, else 0."""
        return next((r.exit_code for r in self.runs if r.exit_code), 0)


def aa_count(flag: int | None, spec: AaSpec | None) -> int | None:
    """How many A/A runs: ``--aa N``; ``--aa`` alone (0) the scenario's ``aa.runs`` or
    its default; no flag: the scenario's ``aa:`` when it has one; None: no A/A test."""
    if flag is None:
        return spec.runs if spec is not None else None
    if flag == 0:
        return spec.runs if spec is not None else DEFAULT_AA_RUNS
    if flag < MIN_RUNS:
        raise ConfigError(f"--aa {flag}: an A/A test needs at least {MIN_RUNS} runs (a "
                          "spread judged from fewer is no measurement)")
    return flag


def run_aa(request: RunRequest, store: Store, results_dir: Path, count: int,
           options: FinishOptions, progress: Callable[[], ProgressSink],
           on_run: Callable[[RunResult], None] = lambda r: None) -> AaResult:
    """Run ``count`` runs back to back (tagged aa), stopping at the first that does
    not end ok, then measure and store the noise when at least MIN_RUNS completed."""
    req = dataclasses.replace(request, tags=(*request.tags, AA_TAG))
    done: list[RunResult] = []
    with kept_leases():  # back to back: no queued run gets the lab between two of them
        for _ in range(count):
            session = RunSession.load(req, store)
            outcome, rundir = execute(session, store, results_dir, progress=progress())
            done.append(finish_run(store, outcome, rundir, options))
            on_run(done[-1])
            if done[-1].status != "ok":
                break
    ids = [r.run_id for r in done if r.status == "ok"]
    row = store.get_run(done[-1].run_id)
    if len(ids) < MIN_RUNS or len(ids) < len(done):
        return AaResult(tuple(done), (), 0, row.lab_fingerprint or "")
    found = run_means(store, ids)
    rows = noise_rows(row, ids, found)
    set_noise(store, rows)
    fp = rows[0].lab_fingerprint if rows else row.lab_fingerprint or ""
    return AaResult(tuple(done), tuple(found), len(rows), fp)
