"""The find-max report section from a stored run: a synthetic system with a known
boundary is searched, each level's trials are stored like an engine stores them, and
the report (replaying the stored verdicts) gives the answer, the path and the criteria;
cut short, it gives the bracket reached so far."""

from __future__ import annotations

import math
import random
from pathlib import Path

from tests.analysis_runs import T0, scenario_doc
from vbench.analysis.findmax import FindMax
from vbench.analysis.findmax_qos import search_params
from vbench.config.findmax import SearchSpec
from vbench.report.build import render_run_report, report_data
from vbench.report.findmax import findmax_of, findmax_text
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

SEARCH = {"factor": "users", "min": 10, "max": 2000, "trials": 2, "verify_trials": 2,
          "stop": {"gap": 2}}
QOS = [{"name": "p95", "metric": "lat", "op": "<=", "threshold": 100.0, "stat": "mean"},
       {"name": "cpu", "metric": "cpu", "op": "<=", "threshold": 90.0, "stat": "mean"}]
CAPACITY = 1000.0  # users; latency = 10 ms / (1 - users / capacity): 100 ms at 900


def latency(users: float, rng: random.Random) -> float:
    base = 10.0 / (1 - users / CAPACITY) if users < CAPACITY else math.inf
    return base * (1 + rng.gauss(0, 0.02))


def stored_search(
    tmp_path: Path, stop_after: int | None = None, pause_after: int | None = None,
    headline: tuple[str, ...] = ("ops",),
) -> tuple[Store, str, FindMax]:
    """Drive a search against the synthetic system, storing every trial as the engine
    does (one point per level); stop after ``stop_after`` trials (an interrupt); a day
    passes after ``pause_after`` trials (an interrupted run resumed the next day)."""
    store = Store.open(None, tmp_path)
    run_id = "run-findmax"
    doc = scenario_doc("fm", qos=QOS, search=SEARCH, repeat=2,
                       report={"headline": list(headline), "charts": []})
    store.create_run(RunInfo(run_id=run_id, scenario_name="fm", started=T0, scenario=doc))
    spec = SearchSpec.model_validate(SEARCH)
    search, rng = FindMax(search_params(spec, 2)), random.Random(3)
    points: dict[float, int] = {}
    verdicts: dict[float, list[bool]] = {}
    t, n = T0, 0
    while (req := search.next()) is not None:
        if req.level not in points:
            points[req.level] = len(points)
            store.add_points(run_id, [(points[req.level], {"users": str(int(req.level))})])
        for _ in range(req.trials):
            if stop_after is not None and n >= stop_after:
                return store, run_id, search
            if n == pause_after:
                t += 86400.0
            lat = latency(req.level, rng)
            verdicts.setdefault(req.level, []).append(lat <= 100)
            trial = len(verdicts[req.level])
            samples = (Sample("lat", lat, "ms", "synthetic"),
                       Sample("cpu", min(100.0, req.level / 12), "%", "synthetic"))
            store.record_trial(run_id, TrialResult(
                points[req.level], trial, "ok", PhaseTimes(t, t, t + 1, t + 61, t + 61, t + 62),
                samples))
            t, n = t + 62, n + 1
        # The search decides on the mean over the level's trials, as the report does.
        search.record(req.level, verdicts[req.level], _mean_ok(store, run_id, points[req.level]))
    return store, run_id, search


def _mean_ok(store: Store, run_id: str, point: int) -> bool:
    df = store.samples_frame(run_id)
    rows = df[df["point"] == point]
    lat = rows[rows["metric"] == "lat"]["value"].mean()
    cpu = rows[rows["metric"] == "cpu"]["value"].mean()
    return bool(lat <= 100 and cpu <= 90)


def test_the_report_gives_the_answer_the_search_reached(tmp_path: Path) -> None:
    store, run_id, search = stored_search(tmp_path)
    store.finish_run(run_id, "ok", T0 + 3600)
    truth = search.outcome()
    [fm] = findmax_of(report_data(store, run_id))
    assert fm.status == "converged"
    assert (fm.outcome.highest_pass, fm.outcome.lowest_fail) == (
        truth.highest_pass, truth.lowest_fail)
    assert truth.highest_pass is not None and 880 <= truth.highest_pass <= 900
    assert [r.level for r in fm.path] == [lv.level for lv in truth.levels]
    assert fm.binding() == ["p95"]  # CPU (users / 12 %) is still under 90 % at 900
    text = findmax_text([fm])
    assert text.startswith(f"find-max users: highest pass {int(truth.highest_pass)}")
    assert "FAIL" in text and "binding at" in text
    html = render_run_report(store, run_id, tmp_path / "report.html").read_text()
    assert 'id="findmax"' in html and "Search path" in html and "highest pass" in html


def test_an_interrupted_search_reports_the_bracket_so_far(tmp_path: Path) -> None:
    store, run_id, _ = stored_search(tmp_path, stop_after=9)
    store.finish_run(run_id, "interrupted", T0 + 3600)
    [fm] = findmax_of(report_data(store, run_id))
    assert fm.status == "interrupted: bracket so far"
    assert fm.outcome.lowest_fail is not None and fm.outcome.highest_pass is not None
    assert fm.outcome.highest_pass < 900 < fm.outcome.lowest_fail


def test_a_search_the_run_ended_itself_stopped_on_its_time_limit(tmp_path: Path) -> None:
    store, run_id, _ = stored_search(tmp_path, stop_after=9)
    store.finish_run(run_id, "ok", T0 + 3600)  # the engine ended it: max_time
    [fm] = findmax_of(report_data(store, run_id))
    assert fm.status == "max time"


def test_the_time_a_resumed_search_took_leaves_out_the_pause_between_sessions(
    tmp_path: Path,
) -> None:
    store, run_id, _ = stored_search(tmp_path, pause_after=9)
    store.finish_run(run_id, "ok", T0 + 3 * 86400)
    [fm] = findmax_of(report_data(store, run_id))
    trials = [t for t in store.trials(run_id) if t.status == "ok"]
    assert fm.seconds == sum(t.ended - t.started for t in trials)  # type: ignore[operator]
    assert fm.seconds is not None and fm.seconds < 86400
