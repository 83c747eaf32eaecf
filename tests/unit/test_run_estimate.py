"""The run estimate includes each trial's prepare and teardown and the run's set-up and
clean-up, learned from the last stored runs of the same scenario (a real SQLite store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_lab, load_scenario
from vbench.engine.estimate import GUESS_FINISH, GUESS_SETUP, history_estimate, learn
from vbench.engine.plan import Plan, build_plan
from vbench.results.records import PhaseTimes, RunInfo, TrialResult
from vbench.results.store import Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plan() -> Plan:
    # Quick start: 2 points × 3 trials of warm-up 1 s + steady 3 s + cool-down 1 s.
    return build_plan(load_scenario(ROOT / "examples" / "quickstart.yaml"),
                      load_lab(ROOT / "examples" / "labs" / "local.yaml"))


def _store_run(store: Store, run_id: str, *, lab: str, setup: float, trial: float,
               finish: float, status: str = "ok") -> None:
    """A finished quick-start run: ``setup`` s to its first trial, trials of ``trial`` s
    each (back to back), ``finish`` s after the last."""
    t0 = 1_000_000.0 + 1000 * len(store.list_runs())
    store.create_run(RunInfo(run_id=run_id, scenario_name="quickstart", started=t0,
                             scenario={"name": "quickstart",
                                       "phases": {"warmup": 1, "steady": 3, "cooldown": 1}},
                             lab={"name": lab}))
    store.add_points(run_id, [(0, {"bs": "4k"}), (1, {"bs": "64k"})])
    t = t0 + setup
    for point in (0, 1):
        for n in (1, 2, 3):
            phases = PhaseTimes(prepare_start=t, warmup_start=t + 1, steady_start=t + 2,
                                steady_end=t + 5, cooldown_end=t + 6, teardown_end=t + trial)
            store.record_trial(run_id, TrialResult(point, n, "ok", phases))
            t += trial
    store.finish_run(run_id, status, t + finish)


def test_estimate_learns_setup_trial_overhead_and_cleanup(plan: Plan, tmp_path: Path) -> None:
    guessed = history_estimate(plan, "local", results_dir=tmp_path)
    assert not (tmp_path / "vbench.db").exists()  # validate and plan never create a store
    # No stored run: the phases, 3 s per trial and a guessed set-up and clean-up.
    assert guessed.estimated_seconds == pytest.approx(GUESS_SETUP + 6 * (5 + 3) + GUESS_FINISH)
    assert "guessed" in guessed.estimate_basis
    with Store.open(None, tmp_path) as store:
        _store_run(store, "r1", lab="local", setup=20.0, trial=9.0, finish=15.0)
        _store_run(store, "r2", lab="local", setup=10.0, trial=8.0, finish=5.0)
        _store_run(store, "r3", lab="elsewhere", setup=300.0, trial=60.0, finish=300.0)
        _store_run(store, "r4", lab="local", setup=1.0, trial=6.0, finish=1.0, status="failed")
        learned = learn(store, plan, "local")
    assert learned is not None and learned.runs == 2  # the same lab; finished runs only
    p = history_estimate(plan, "local", results_dir=tmp_path)
    # Median of the runs: set-up 15 s, trials 8.5 s (5 s of phases + 3.5 s), clean-up 10 s.
    assert p.setup_seconds == pytest.approx(15.0) and p.finish_seconds == pytest.approx(10.0)
    assert p.overhead_per_trial == pytest.approx(3.5)
    assert p.estimated_seconds == pytest.approx(15.0 + 6 * 8.5 + 10.0)
    assert p.estimate_basis == ("prepare, teardown and clean-up as in the last 2 stored runs "
                                "of this scenario")
    assert p.to_json()["estimated_seconds"] == pytest.approx(76.0)
    # Another lab's runs count only when the lab has none of its own.
    other = history_estimate(plan, "new-lab", results_dir=tmp_path)
    assert other.setup_seconds > 15.0


def test_a_stored_run_with_the_quick_start_shape_matches_its_own_duration(
    plan: Plan, tmp_path: Path
) -> None:
    with Store.open(None, tmp_path) as store:
        _store_run(store, "r1", lab="local", setup=0.6, trial=8.4, finish=1.2)
        run = store.list_runs()[0]
    p = history_estimate(plan, "local", results_dir=tmp_path)
    assert run.ended is not None
    assert p.estimated_seconds == pytest.approx(run.ended - run.started)
