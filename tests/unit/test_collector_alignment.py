"""Collector runtime: clock shift, steady-window summaries, failures, manifest, derived."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from vbench.collectors import base
from vbench.collectors.base import Collector, CollectorContext, CollectorOptions, Series, Target
from vbench.collectors.derived import all_figures
from vbench.collectors.runtime import CollectorRuntime, RunEnv, TrialCollectors
from vbench.collectors.series import ClockOffset, in_window, window_summaries
from vbench.config.scenario import CollectorSpec
from vbench.errors import GuestError
from vbench.results.collected import collector_warnings, read_manifests, series_listing
from vbench.results.records import PhaseTimes, Sample, Window
from vbench.results.rundir import RunDir
from vbench.workloads.base import TrialContext

T0 = 1_700_000_000.0
PHASES = PhaseTimes(warmup_start=T0, steady_start=T0 + 10, steady_end=T0 + 30, cooldown_end=T0 + 40)


class SyntheticOptions(CollectorOptions):
    offset: float = 0.0
    fail: str | None = None  # "start" | "stop"


class Synthetic(Collector):
    """Samples every 2 s on a clock ``offset`` s ahead; 1.0 inside the window, 100 outside."""

    kind: ClassVar[str] = "synthetic"
    target_kind: ClassVar[str] = "entity"
    Options: ClassVar[type[CollectorOptions]] = SyntheticOptions

    @classmethod
    def targets(cls, spec: CollectorSpec, env: RunEnv, ctx: TrialContext) -> list[Target]:
        return [Target(t, "entity") for t in spec.targets or ["box"]]

    def clock_offset(self) -> ClockOffset:
        assert isinstance(self.options, SyntheticOptions)
        return ClockOffset(self.options.offset, 0.001)

    def start(self, ctx: CollectorContext) -> None:
        assert isinstance(self.options, SyntheticOptions)
        if self.options.fail == "start":
            raise GuestError(self.target.name, "synthetic tool not found")

    def stop(self, ctx: CollectorContext) -> Series:
        assert isinstance(self.options, SyntheticOptions)
        if self.options.fail == "stop":
            raise GuestError(self.target.name, "synthetic tool died")
        controller = np.arange(T0 + 2, T0 + 41, 2.0)
        inside = (controller - 2 >= T0 + 10) & (controller <= T0 + 30)
        return Series(
            pd.DataFrame({
                "time": controller + self.options.offset,  # the target's clock
                "object": "Physical Cpu", "instance": "_Total", "counter": "% Util Time",
                "value": np.where(inside, 1.0, 100.0), "unit": "%",
            }),
            notes=("synthetic",),
        )  # fmt: skip


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(base.REGISTRY.loaded(), "synthetic", Synthetic)


def trial(tmp_path: Path, *specs: CollectorSpec) -> tuple[TrialCollectors, RunDir]:
    rundir = RunDir(tmp_path, "run-1")
    ctx = TrialContext(
        run_id="run-1", point=0, trial=1, labels={}, warmup=10, steady=20, cooldown=10,
        guests={}, raw_dir=rundir.raw_dir(0, 1), cancel=threading.Event(),
        mark=lambda _n: None, log=rundir.log,
    )  # fmt: skip
    rt = CollectorRuntime(list(specs), RunEnv(None, None, "run-1"), rundir)
    return TrialCollectors(rt, ctx, 40.0), rundir


def spec(**kw: object) -> CollectorSpec:
    return CollectorSpec.model_validate({"kind": "synthetic", "interval": 2, **kw})


def test_series_are_shifted_onto_controller_time_and_summarised_in_the_window(
    registry: None, tmp_path: Path
) -> None:
    tc, rundir = trial(tmp_path, spec(options={"offset": 3.0}))
    tc.start()
    samples = tc.stop(PHASES)
    [s] = samples
    # Only samples whose whole interval lies in the steady window count: all are 1.0.
    assert (s.metric, s.value, s.unit, s.source, s.guest) == (
        "Physical Cpu(_Total)\\% Util Time", 1.0, "%", "synthetic", "box",
    )  # fmt: skip
    table = pq.read_table(rundir.path / "series/0-1/synthetic/box.parquet")
    df = table.to_pandas()
    assert df["time"].iloc[0].timestamp() == T0 + 2  # remote T0+5 minus the 3 s offset
    assert {"time", "metric", "value", "unit", "source", "entity", "point", "trial"} <= set(
        df.columns
    )
    meta = json.loads(table.schema.metadata[b"vbench"])
    assert meta["clock_offset"] == 3.0 and meta["steady_start"] == T0 + 10
    [rec] = read_manifests(rundir.path)
    assert rec["status"] == "ok" and rec["clock_offset"] == 3.0 and rec["notes"] == ["synthetic"]
    # 3 s is more than half the 2 s interval: a warning the report shows.
    assert any("3.000 s off" in w for w in collector_warnings(rundir.path))


def test_small_offset_raises_no_warning(registry: None, tmp_path: Path) -> None:
    tc, rundir = trial(tmp_path, spec(options={"offset": 0.4}))
    tc.start()
    tc.stop(PHASES)
    assert collector_warnings(rundir.path) == []


def test_failure_is_recorded_and_only_a_required_one_fails_the_trial(
    registry: None, tmp_path: Path
) -> None:
    tc, rundir = trial(
        tmp_path,
        spec(name="soft", options={"fail": "start"}),
        spec(name="hard", required=True, options={"fail": "stop"}),
        spec(name="fine"),
    )
    tc.start()
    assert tc.required_failure is None
    samples = tc.stop(PHASES)
    assert [s.source for s in samples] == ["fine"]
    assert tc.required_failure and "hard on box failed" in tc.required_failure
    listing = {s["collector"]: s for s in series_listing(rundir.path)}
    assert listing["soft"]["failed"] == 1 and "tool not found" in listing["soft"]["errors"][0]
    assert listing["fine"]["failed"] == 0 and listing["fine"]["files"]
    events = [r for r in rundir.read_log() if r["event"] == "collector_failed"]
    assert {(e["collector"], e["level"]) for e in events} == {
        ("soft", "warning"), ("hard", "error"),
    }  # fmt: skip


def test_in_window_takes_samples_whose_interval_is_inside() -> None:
    w = Window(100.0, 120.0)
    times = np.array([100.0, 105.0, 110.0, 120.0, 121.0])
    assert list(in_window(times, w, 5.0)) == [False, True, True, True, False]


def test_window_without_samples_gives_a_missing_figure() -> None:
    frame = pd.DataFrame({"time": [1.0, 2.0], "metric": ["m", "m"], "value": [5.0, 6.0],
                          "unit": ["%", "%"]})  # fmt: skip
    [s] = window_summaries(frame, Window(50.0, 60.0), 1.0, "c", "t")
    assert s.value is None and s.unit == "%"


def esxtop_frame() -> pd.DataFrame:
    rows = []
    for t in np.arange(T0 + 2, T0 + 41, 2.0):
        for inst, v in (("0", 40.0), ("1", 60.0), ("_Total", 50.0)):
            rows.append((t, "Physical Cpu", inst, "% Util Time", v))
        rows.append((t, "Virtual Disk", "vm1:scsi0:0", "Average MilliSec/Read", 2.5))
        rows.append((t, "Virtual Disk", "vm1", "Average MilliSec/Read", 9.0))
    return pd.DataFrame(rows, columns=["time", "object", "instance", "counter", "value"])


def test_derived_host_cpu_efficiency_and_cost_per_1k_iops() -> None:
    series = {("esxtop", "esx1"): ("esxtop", esxtop_frame(), 2.0)}
    workload = [Sample("total_iops", 10_000.0, "IO/s", "fio")]
    got = {(s.metric, s.guest): s for s in all_figures(series, [], PHASES.steady, workload,
                                                       ["total_iops"])}  # fmt: skip
    assert got[("host_cpu_util", "esx1")].value == 50.0
    assert got[("host_cores_used", "esx1")].value == pytest.approx(1.0)
    assert got[("host_cores_used", None)].value == pytest.approx(1.0)
    assert got[("cpu_efficiency", None)].value == pytest.approx(10_000.0)
    assert got[("cpu_efficiency", None)].unit == "IO/s/core"
    # 1 core = 100 % of a core for 10 K IO/s: 10 % of a core per 1 K IO/s.
    assert got[("cpu_cost_per_1k_iops", None)].value == pytest.approx(10.0)
    assert got[("vdisk_read_latency", "vm1:scsi0:0")].value == 2.5
    assert ("vdisk_read_latency", "vm1") not in got  # the VM total is not a disk


def test_derived_guest_cores_from_sysstat_idle() -> None:
    frame = pd.DataFrame({
        "time": np.arange(T0 + 1, T0 + 41, 1.0), "object": "cpu-load", "instance": "all",
        "counter": "idle", "value": 25.0,
    })  # fmt: skip
    own = [Sample("guest_cpus", 4.0, "CPUs", "guest_sysstat", "g1")]
    got = {
        (s.metric, s.guest): s.value
        for s in all_figures(
            {("guest_sysstat", "g1"): ("guest_sysstat", frame, 1.0)}, own, PHASES.steady, [], []
        )
    }
    assert got[("guest_cpu_util", "g1")] == 75.0
    assert got[("guest_cores_used", "g1")] == 3.0
