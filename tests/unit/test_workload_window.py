"""The workload's own steady window: what samples carry and what the report judges; the
controller's wall window stays beside it as overhead."""

from __future__ import annotations

import pandas as pd
import pytest

from vbench.parsers.fio import FioRecord, FioResult, measured_window
from vbench.report.data import ReportData, ReportView
from vbench.results.records import PhaseTimes

T0 = 1_800_000_000.0


def test_phase_times_prefer_the_workloads_window() -> None:
    wall = PhaseTimes(steady_start=T0, steady_end=T0 + 5.6)
    assert wall.steady is not None and wall.steady.seconds == pytest.approx(5.6)
    own = PhaseTimes(steady_start=T0, steady_end=T0 + 5.6, workload_start=T0 + 0.4,
                     workload_end=T0 + 5.401)
    assert own.steady is not None and own.steady.seconds == pytest.approx(5.001)
    assert own.wall_steady is not None and own.wall_steady.seconds == pytest.approx(5.6)
    assert own.as_dict()["workload_end"] == T0 + 5.401


def _fio(runtimes: list[float | None], stamp: float | None) -> FioResult:
    recs = tuple(FioRecord(f"j{i}", "read", "runtime", r, "s", "fio-3.33", 0)
                 for i, r in enumerate(runtimes))
    return FioResult("fio-3.33", stamp, tuple(f"j{i}" for i in range(len(runtimes))), recs, (),
                     "")


def test_fio_window_ends_at_its_time_stamp_and_lasts_the_longest_job() -> None:
    assert measured_window(_fio([5.001, 4.999], T0 + 10)) == (T0 + 10 - 5.001, T0 + 10)
    assert measured_window(_fio([5.0], None)) is None
    assert measured_window(_fio([None, 0.0], T0)) is None


def _view(phases: dict[str, float]) -> ReportView:
    trials = [{"point": 0, "trial": 1, "status": "ok", "error": None, "phases": phases}]
    samples = pd.DataFrame([{"point": 0, "trial": 1, "guest": None, "metric": "iops",
                             "value": 1.0, "unit": "IO/s", "source": "fio", "labels": "{}",
                             "window_start": T0, "window_end": T0 + 5}])
    run = {"run_id": "r", "scenario_name": "s", "status": "ok",
           "scenario": {"phases": {"warmup": 0, "steady": 5, "cooldown": 0}, "repeat": 1}}
    return ReportView(ReportData(run, [{"point": 0, "labels": {}}], trials, samples))


def test_window_warning_only_when_the_workloads_own_window_deviates() -> None:
    wall = {"steady_start": T0, "steady_end": T0 + 5.6}
    fine = _view({**wall, "workload_start": T0 + 0.3, "workload_end": T0 + 5.301})
    assert not [w for w in fine.warnings() if "scenario asks" in w]
    assert fine.trial_window(fine.data.trials[0]) == pytest.approx(5.001)
    assert "workload-timed; controller +0.6 s" in fine.window_text
    short = _view({**wall, "workload_start": T0 + 0.3, "workload_end": T0 + 4.0})
    assert [w for w in short.warnings() if "window 3.7 s, scenario asks 5 s" in w]
    # A driver that records no window of its own: the controller's marks are judged.
    plain = _view(wall)
    assert [w for w in plain.warnings() if "window 5.6 s, scenario asks 5 s" in w]
    assert "controller +" not in plain.window_text
