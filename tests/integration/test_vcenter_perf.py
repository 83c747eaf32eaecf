"""vcenter_perf against vcsim: counters by name, batched queries during the trial, units,
vCenter clock offset, and unknown names answered with the closest ones."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.helpers import wait_for
from tests.vcsim import VcsimServer
from vbench.collectors.runtime import CollectorRuntime, RunEnv, TrialCollectors
from vbench.config.lab import Lab
from vbench.config.scenario import CollectorSpec
from vbench.results.collected import read_manifests
from vbench.results.records import PhaseTimes
from vbench.results.rundir import RunDir
from vbench.workloads.base import TrialContext

TARGETS = ["host:DC0_H0", "vm:DC0_H0_VM0", "vm:DC0_C0_RP0_VM0", "datastore:LocalDS_0"]


def lab(server: VcsimServer) -> Lab:
    return Lab.model_validate({
        "version": 1, "name": "sim",
        "vcenters": {"vc1": server.lab_vcenter(insecure=True)},
    })  # fmt: skip


def trial(tmp_path: Path, server: VcsimServer, **spec: object) -> tuple[TrialCollectors, RunDir]:
    rundir = RunDir(tmp_path, "run-vc")
    ctx = TrialContext(
        run_id="run-vc", point=0, trial=1, labels={}, warmup=0, steady=3, cooldown=0,
        guests={}, raw_dir=rundir.raw_dir(0, 1), cancel=threading.Event(),
        mark=lambda _n: None, log=rundir.log,
    )  # fmt: skip
    s = CollectorSpec.model_validate({"kind": "vcenter_perf", "interval": "20s", **spec})
    rt = CollectorRuntime([s], RunEnv(lab(server), None, "run-vc"), rundir)
    return TrialCollectors(rt, ctx, 3.0), rundir


def test_counters_are_fetched_in_batches_during_the_trial_and_stored(
    vcsim: VcsimServer,
    vc_password: str,
    tmp_path: Path,
) -> None:
    tc, rundir = trial(tmp_path, vcsim, targets=TARGETS,
                       options={"poll": "1s", "batch": 2})  # fmt: skip
    start = time.time()
    tc.start()
    poller = tc.running[0].collector.poller  # type: ignore[union-attr]
    # Fetched while the trial runs: two polls seen, however slow the machine is.
    wait_for(lambda: poller.calls >= 4, 60, "two polls of the vCenter counters")
    # Let the poll under way finish, then count: 3 entities with counters (the datastore
    # has none) in batches of 2 = 2 calls per poll.
    poller.close()
    poller._thread.join(30)
    assert poller.calls >= 4 and poller.calls % 2 == 0
    tc.stop(PhaseTimes(warmup_start=start, steady_start=start, steady_end=time.time()))
    tc.rt.close()
    recs = {r["target"]: r for r in read_manifests(rundir.path)}
    assert set(recs) == set(TARGETS)
    # Datastores have no real-time counters (vCenter samples them every 300 s) and none
    # of the default host/VM counters: said so, not silently empty.
    ds = recs["datastore:LocalDS_0"]
    assert ds["status"] == "failed" and ds["error"] == "no samples collected"
    assert "datastore:LocalDS_0 has no cpu.usage.average at the 300 s interval" in ds["notes"]
    assert all(recs[t]["status"] == "ok" for t in TARGETS[:3])
    host = recs["host:DC0_H0"]
    assert host["status"] == "ok", host
    assert abs(host["clock_offset"]) < 1.0 and host["clock_rtt"] < 1.0
    df = pq.read_table(rundir.path / host["file"]).to_pandas()
    usage = df[df["metric"] == "cpu.usage.average"]
    assert len(usage) > 0 and set(usage["unit"]) == {"%"}
    assert usage["value"].between(0, 100).all()  # hundredths of a percent scaled
    assert "cpu.ready.summation" in set(df["metric"])
    assert set(df[df["metric"] == "mem.consumed.average"]["unit"]) == {"kB"}
    vm = pq.read_table(rundir.path / recs["vm:DC0_H0_VM0"]["file"]).to_pandas()
    assert "net.packetsRx.summation" in set(vm["metric"])


def test_unknown_counter_and_entity_fail_with_the_closest_names(
    vcsim: VcsimServer,
    vc_password: str,
    tmp_path: Path,
) -> None:
    tc, rundir = trial(tmp_path, vcsim, targets=["host:DC0_H0"],
                       options={"counters": ["cpu.usagee.average"]})  # fmt: skip
    tc.start()
    tc.stop(PhaseTimes())
    [rec] = read_manifests(rundir.path)
    assert rec["status"] == "failed"
    assert "unknown performance counter cpu.usagee.average" in rec["error"]
    assert "cpu.usage.average" in rec["error"]
    tc.rt.close()
    tc2, rundir2 = trial(tmp_path / "b", vcsim, targets=["vm:DC0_H0_VM9"])
    tc2.start()
    tc2.stop(PhaseTimes())
    tc2.rt.close()
    [rec2] = read_manifests(rundir2.path)
    assert "no vm named 'DC0_H0_VM9'" in rec2["error"] and "DC0_H0_VM0" in rec2["error"]


def test_interval_must_be_the_realtime_one() -> None:
    from vbench.collectors.vcenter_perf import VCenterPerf, VCenterPerfOptions

    assert VCenterPerf.check(VCenterPerfOptions(), 5.0) == [
        "vcenter_perf reads vCenter's real-time samples: set interval: 20s"
    ]
    with pytest.raises(ValueError, match=r"group\.name\.rollup"):
        VCenterPerfOptions(counters=["cpu_usage"])
