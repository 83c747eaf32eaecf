"""Consolidation: several workloads in one trial (`workloads:`) and tiles, on the local
lab with real tools — fio and Redis at once with overlapping steady windows proved from
their own windows; one workload failing keeps the other's figures; tiles 1..3 with each
workload's QoS checked per tile."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests, free_port
from tests.e2e.helpers import run_id_of, show, vbench, write_lab
from vbench.results.store import Store
from vbench.testing import log_events

pytestmark = pytest.mark.e2e

FIO = {"rw": "randread", "bs": "4k", "size": "4m", "ioengine": "psync", "direct": False}
REDIS = {"servers": 1, "clients": 1, "twemproxy": False, "haproxy": False,
         "connections": 2, "keyspace": 500, "loop_requests": 1000}


def redis(address: str) -> dict:
    """Redis parameters on a port free on ``address`` (tests run side by side)."""
    port = free_port(address)
    return {**REDIS, "server_ports": f"{port}-{port}"}


def _scenario(path: Path, workloads: dict, topology: dict, **more: object) -> Path:
    doc = {"version": 1, "name": f"tiles-{path.stem}", "topology": topology,
           "workloads": workloads, "repeat": 1, "phases": {"warmup": "1s", "steady": "2s"},
           **more}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run(scenario: Path, lab: Path) -> tuple[str, dict]:
    res = vbench("run", str(scenario), "--lab", str(lab), "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_id = run_id_of(res.stdout)
    return run_id, show(run_id)


def _samples(home: Path, run_id: str):  # type: ignore[no-untyped-def]
    with Store.open(None, home / "results") as store:
        return store.samples_frame(run_id)


def test_two_drivers_run_at_once_with_overlapping_steady_windows(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = _scenario(tmp_path / "two.yaml", {
        "disk": {"driver": "fio", "roles": {"target": "storage"}, "params": FIO},
        "kv": {"driver": "redis_scaleout", "roles": {"servers": "cache", "clients": "cache"},
               "params": redis(local_guests[1].address)},
    }, {"storage": {"nodes": ["guest1"]}, "cache": {"nodes": ["guest2"]}})
    run_id, doc = _run(s, lab)
    assert [t["status"] for t in doc["trials"]] == ["ok"]
    # Each tool's own window (fio's runtime from its output and the guest's clock;
    # redis-benchmark's elapsed time), as the run logged it per workload.
    windows = {e["workload"]: (e["start"], e["end"]) for e in log_events(vbench_home)
               if e.get("event") == "workload_window" and "workload" in e}
    assert set(windows) == {"disk", "kv"}
    overlap = min(e for _, e in windows.values()) - max(s for s, _ in windows.values())
    assert overlap > 1.0, windows  # of a 2 s steady phase each
    samples = _samples(vbench_home, run_id)
    metrics = set(samples["metric"])
    assert {"disk.read_iops", "kv.ops_per_sec", "disk.ok", "kv.ok", "start_spread"} <= metrics
    assert not {"read_iops", "ops_per_sec"} & metrics  # every figure under its workload
    ok = samples[samples["metric"].str.endswith(".ok")]
    assert set(ok["value"]) == {1.0}


def test_one_workload_failing_keeps_the_others_figures(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    broken = {**FIO, "filename": str(tmp_path / "no-such-dir" / "data")}
    s = _scenario(tmp_path / "fail.yaml", {
        "good": {"driver": "fio", "roles": {"target": "a"}, "params": FIO,
                 "qos": [{"metric": "read_iops", "op": ">=", "threshold": 1}]},
        "bad": {"driver": "fio", "roles": {"target": "b"}, "params": broken},
    }, {"a": {"nodes": ["guest1"]}, "b": {"nodes": ["guest2"]}})
    run_id, doc = _run(s, lab)
    assert [t["status"] for t in doc["trials"]] == ["ok"]
    failed = [e for e in log_events(vbench_home) if e.get("event") == "workload_failed"]
    assert [e["workload"] for e in failed] == ["bad"]
    samples = _samples(vbench_home, run_id)
    values = dict(zip(samples["metric"], samples["value"], strict=False))
    assert values["good.ok"] == 1.0 and values["bad.ok"] == 0.0
    assert values["good.read_iops"] > 0
    assert not [m for m in samples["metric"] if m.startswith("bad.") and m != "bad.ok"]
    checks = {c["criterion"]: c["status"] for c in doc["qos"]["checks"]}
    assert checks["good ran"] == "pass" and checks["bad ran"] == "fail"
    assert checks["good: read_iops mean ≥ 1"] == "pass"


def test_tiles_one_to_three_check_each_workloads_qos_per_tile(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    # Three tiles of two fio workloads: six lab nodes on the two loopback guests.
    nodes = {f"{kind}{i}": {"address": local_guests[i % 2].address, "roles": [kind]}
             for kind in ("r", "w") for i in range(3)}
    lab = write_lab(tmp_path / "lab.yaml", local_guests, extra_nodes=nodes, roles=("none",))
    writes = {**FIO, "rw": "randwrite"}
    s = _scenario(tmp_path / "tiles.yaml", {
        "reads": {"driver": "fio", "roles": {"target": "r"}, "params": FIO,
                  "qos": [{"metric": "read_iops", "op": ">=", "threshold": 1}]},
        "writes": {"driver": "fio", "roles": {"target": "w"}, "params": writes,
                   "qos": [{"metric": "write_iops", "op": ">=", "threshold": 1}]},
    }, {"r": {"count": 1}, "w": {"count": 1}},
        tiles={"count": 1}, factors={"tiles": {"path": "tiles.count", "levels": [1, 2, 3]}},
        phases={"warmup": "0s", "steady": "1s"})
    _, doc = _run(s, lab)
    assert [t["status"] for t in doc["trials"]] == ["ok"] * 3
    by_point: dict[str, set[tuple[str, str]]] = {}
    for c in doc["qos"]["checks"]:
        by_point.setdefault(c["point"], set()).add((c["criterion"], c["subject"]["tile"]))
    # Each workload's criterion and its "ran" check, once per tile of the point.
    assert sorted(len(v) for v in by_point.values()) == [4, 8, 12]
    assert doc["qos"]["status"] == "pass"
    answer = doc["verdict"]["answers"][0]
    assert answer["kind"] == "tiles"
    assert answer["text"].startswith("3 of 3 tiles pass")
