"""A `vm:` group's count in the vCenter simulator under a random order and under
`--resume`: a shuffled order (recorded in plan.json) runs each point on exactly its VMs,
cloning and destroying only the difference between consecutive points (counted by
vCenter's own events); a run killed with kill -9 and resumed — after `vbench cleanup`
or straight away — runs the rest under the same run id, and nothing is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pyVmomi import vim

from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, wait_for_log
from tests.e2e.test_vm_scaling_cli import ScaleLab, scalelab  # noqa: F401 - the fixture

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _log(run_dir: Path, event: str) -> list[dict]:
    lines = (run_dir / "log.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("event") == event]


def _vc_moves(lab: ScaleLab, run_id: str) -> list[tuple[str, set[str]]]:
    """vCenter's clone and removal events of the run's VMs, oldest first, with a run of
    events of one kind merged into one step: [("clone", {guest, ...}), ("remove", ...)]."""
    with lab.session_pool() as pool:
        em = pool.get("vc1").content.eventManager
        found = em.QueryEvents(vim.event.EventFilterSpec(
            eventTypeId=["VmClonedEvent", "VmRemovedEvent"]))
    prefix = f"vb-{run_id}-"
    steps: list[tuple[str, set[str]]] = []
    for e in sorted(found, key=lambda e: e.key):
        if e.vm is None or not e.vm.name.startswith(prefix):
            continue
        kind = "clone" if isinstance(e, vim.event.VmClonedEvent) else "remove"
        guest = e.vm.name[len(prefix):]
        if steps and steps[-1][0] == kind:
            steps[-1][1].add(guest)
        else:
            steps.append((kind, {guest}))
    return steps


def _merge(steps: list[tuple[str, set[str]]]) -> list[tuple[str, set[str]]]:
    out: list[tuple[str, set[str]]] = []
    for kind, names in steps:
        if not names:
            continue
        if out and out[-1][0] == kind:
            out[-1][1].update(names)
        else:
            out.append((kind, set(names)))
    return out


def _workers(n: int) -> set[str]:
    return {f"workers-{i}" for i in range(1, n + 1)}


def _expected_moves(counts: list[int]) -> list[tuple[str, set[str]]]:
    """What vCenter should see for points of these counts run in this order: the VMs
    every point uses cloned up front, then per change of point the surplus removed and
    the missing cloned, and everything removed at the end."""
    steps: list[tuple[str, set[str]]] = [("clone", _workers(min(counts)))]
    live = min(counts)
    for n in counts:
        steps.append(("remove", _workers(live) - _workers(n)))
        steps.append(("clone", _workers(n) - _workers(live)))
        live = n
    steps.append(("remove", _workers(live)))
    return _merge(steps)


def test_a_random_order_over_the_vm_count_clones_and_destroys_only_the_differences(
    scalelab: ScaleLab,  # noqa: F811
) -> None:
    levels = [1, 3, 2]
    doc = yaml.safe_load(scalelab.scenario(levels).read_text())
    doc["repeat"] = 2
    doc["settings"] = {"order": "random", "seed": 5}
    path = scalelab.tmp / "random.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = vbench("run", str(path), "--lab", str(scalelab.lab), "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_id = run_id_of(res.stdout)
    run_dir = Path(show(run_id)["run"]["run_dir"])
    schedule = json.loads((run_dir / "plan.json").read_text())["schedule"]
    assert schedule["order"] == "random" and schedule["seed"] == 5
    sequence = [p for p, _ in schedule["sequence"]]
    assert sorted(sequence) == [0, 0, 1, 1, 2, 2]
    # Each change of point in the recorded order is one move of the VMs.
    visits = [p for i, p in enumerate(sequence) if i == 0 or sequence[i - 1] != p]
    assert len(visits) >= 4, f"seed 5 should move between points often: {sequence}"
    moves = _log(run_dir, "point_vms")
    assert [e["point"] for e in moves] == visits
    counts = [levels[p] for p in visits]
    for e, n in zip(moves, counts, strict=True):
        assert sorted(v["guest"] for v in e["vms"]) == sorted(_workers(n))
    before = [min(levels), *counts[:-1]]
    for e, was, now in zip(moves, before, counts, strict=True):
        assert (len(e["created"]), len(e["destroyed"])) == (max(0, now - was),
                                                            max(0, was - now))
    # The trials ran in the recorded order.
    trials = sorted(show(run_id)["trials"], key=lambda t: t["started"])
    assert [[t["point"], t["trial"]] for t in trials] == schedule["sequence"]
    assert _vc_moves(scalelab, run_id) == _expected_moves(counts)
    assert scalelab.ours() == set()


@pytest.mark.parametrize("cleanup_first", [True, False], ids=["after-cleanup", "straight"])
def test_a_vm_count_matrix_killed_with_kill_9_resumes_the_rest_and_leaves_nothing(
    scalelab: ScaleLab, vbench_home: Path, cleanup_first: bool  # noqa: F811
) -> None:
    scenario = scalelab.scenario([1, 2])
    proc = vbench_popen("run", str(scenario), "--lab", str(scalelab.lab), "--no-report")
    try:
        # The second point (2 VMs: one cloned for it) is measuring: kill the run there.
        wait_for_log(vbench_home, "phase_mark", timeout=120, proc=proc, mark="steady_start",
                     point=1, trial=1)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    run_dir = next((vbench_home / "results").glob("*/log.jsonl")).parent
    run_id = run_dir.name
    first = show(run_id)
    assert {(t["point"], t["status"]) for t in first["trials"]} >= {(0, "ok")}
    assert scalelab.ours() == {f"vb-{run_id}-workers-1", f"vb-{run_id}-workers-2"}
    if cleanup_first:
        res = vbench("cleanup", run_id, "--lab", str(scalelab.lab))
        assert res.returncode == 0, res.stdout + res.stderr
        assert scalelab.ours() == set()

    res = vbench("run", "--resume", run_id, "--lab", str(scalelab.lab), "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # Without cleanup the killed session's two VMs are still there: removed first.
    removing = f"removing 2 vSphere objects an earlier session of run {run_id} left"
    said = " ".join((res.stdout + res.stderr).split())  # the notice may wrap
    assert (removing in said) is not cleanup_first, res.stderr[-2000:]
    done = show(run_id)
    assert done["run"]["status"] == "ok"
    after = {(t["point"], t["trial"]): t["status"] for t in done["trials"]}
    assert after == {(0, 1): "ok", (1, 1): "ok"}
    kept = {t["started"] for t in first["trials"] if t["point"] == 0}
    assert {t["started"] for t in done["trials"] if t["point"] == 0} == kept
    # The resumed session ran the second point on its two VMs.
    events = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    at = max(i for i, e in enumerate(events) if e.get("event") == "run_resumed")
    assert events[at]["kept"] == 1
    moves = [e for e in events[at:] if e.get("event") == "point_vms"]
    assert [(e["point"], len(e["vms"])) for e in moves] == [(1, 2)]
    assert scalelab.ours() == set()


def test_a_vm_count_search_killed_with_kill_9_resumes_to_its_answer_and_leaves_nothing(
    scalelab: ScaleLab, vbench_home: Path  # noqa: F811
) -> None:
    doc = yaml.safe_load(scalelab.scenario([1, 2]).read_text())
    del doc["factors"]
    doc["workload"]["params"]["rate_iops"] = 100  # per VM: 1 VM ≈ 100 IO/s, 2 VMs ≈ 200
    doc["qos"] = [{"name": "total", "metric": "total_iops", "op": "<=", "threshold": 150}]
    doc["search"] = {"factor": "workers", "path": "topology.workers.count", "min": 1,
                     "max": 2, "trials": 1, "verify_trials": 1}
    doc["phases"]["steady"] = "2s"
    path = scalelab.tmp / "search.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = vbench_popen("run", str(path), "--lab", str(scalelab.lab), "--no-report")
    try:
        # The second level (2 VMs) is measuring: kill the run there, no cleanup after.
        wait_for_log(vbench_home, "phase_mark", timeout=120, proc=proc, mark="steady_start",
                     point=1, trial=1)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    run_dir = next((vbench_home / "results").glob("*/log.jsonl")).parent
    run_id = run_dir.name
    assert len(scalelab.ours()) == 2

    res = vbench("run", "--resume", run_id, "--lab", str(scalelab.lab), "--no-report")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = " ".join((res.stdout + res.stderr).split())
    assert "find-max workers: highest pass 1 · lowest fail 2" in out, out[-3000:]
    data = show(run_id)
    assert data["run"]["status"] == "ok"
    levels = {p["point"]: int(p["labels"]["workers"]) for p in data["points"]}
    # The first level's trial from before the kill is kept, not run again.
    first_level = [t for t in data["trials"] if levels[t["point"]] == 1]
    assert min(t["started"] for t in first_level) < min(
        e["ts"] for e in _log(run_dir, "run_resumed"))
    events = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    at = max(i for i, e in enumerate(events) if e.get("event") == "run_resumed")
    moves = [e for e in events[at:] if e.get("event") == "point_vms"]
    # The resumed session goes on at level 2 and verifies level 1, each on its own VMs.
    assert [levels[e["point"]] for e in moves][:1] == [2]
    assert all(len(e["vms"]) == levels[e["point"]] for e in moves)
    assert 1 in [levels[e["point"]] for e in moves]
    assert scalelab.ours() == set()
