"""vcbench's pure parts: figures from the raw log, the parameter checks, the mix choice."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from vbench.vsphere.operations import Lease, Site, VmState, legal_ops
from vbench.workloads.vcbench import metrics
from vbench.workloads.vcbench.loop import LoadRun, Session
from vbench.workloads.vcbench.params import DEFAULT_MIX, OPS, VcbenchParams, mix_findings


def _row(
    op: str, start: float, end: float, ok: bool = True, fault: str | None = None
) -> metrics.Row:
    return metrics.Row(op, 0, "vc", "vm", start, end, ok, fault, f"{fault}: msg" if fault else None)


def test_only_operations_completed_in_the_window_count() -> None:
    rows = [
        _row("power_on", 9.0, 10.5),  # started before, completed inside: counts
        _row("power_off", 11.0, 12.0),
        _row("power_on", 19.5, 20.5),  # completed after the window: does not
        _row("clone_full", 12.0, 13.0, ok=False, fault="DuplicateName"),
    ]
    s = metrics.steady_samples(rows, 10.0, 20.0, sessions=2, think_time=0.0, mix=DEFAULT_MIX)
    by = {(x.metric, x.labels): x.value for x in s}
    assert by[("vcbench.ops_per_s", ())] == pytest.approx(2 / 10)
    assert by[("vcbench.completed", ())] == 2
    assert by[("vcbench.failed", ())] == 1
    assert by[("vcbench.latency_avg", ())] == pytest.approx((1.5 + 1.0) / 2)
    assert by[("vcbench.littles_ideal_ops_per_s", ())] == pytest.approx(2 / 1.25)
    assert by[("vcbench.failures", (("fault", "DuplicateName"), ("op", "clone_full")))] == 1
    # An operation of the mix that never completed has no latency (None, never 0.0).
    assert by[("vcbench.op_latency_avg", (("op", "snapshot_revert"),))] is None
    assert by[("vcbench.op_ops_per_s", (("op", "snapshot_revert"),))] == 0


def test_percentiles_interpolate_and_the_log_round_trips(tmp_path: Path) -> None:
    st = metrics.latency_stats([1.0, 2.0, 3.0, 4.0])
    assert (st.p50, st.max, st.avg) == (2.5, 4.0, 2.5)
    assert st.p99 == pytest.approx(3.97)
    rows = [_row("power_on", 1.0, 2.0), _row("destroy", 2.0, 3.5, ok=False, fault="Timeout")]
    metrics.write_log(tmp_path / "ops.csv", rows)
    assert metrics.read_log(tmp_path / "ops.csv") == rows
    # The successful operation ended at 2.0: second one-second bin; the failed one is not
    # a completed operation.
    assert metrics.per_second(rows, 1.0, 4.0) == [(1.0, 0), (2.0, 1), (3.0, 0)]


def test_params_refuse_unknown_operations_and_a_loop_without_its_setting() -> None:
    with pytest.raises(ValidationError, match="unknown operation"):
        VcbenchParams(template="t", mix={"power_cycle": 1})
    with pytest.raises(ValidationError, match="needs `rate`"):
        VcbenchParams(template="t", loop="open")
    with pytest.raises(ValidationError, match="template"):
        VcbenchParams()
    assert set(DEFAULT_MIX) == set(OPS)


def test_a_mix_without_inverse_operations_is_warned_about() -> None:
    found = mix_findings(VcbenchParams(template="t", mix={"clone_full": 1, "power_on": 1}))
    text = " ".join(f.message for f in found)
    assert "without destroy" in text and "without power_off" in text
    wrong = mix_findings(VcbenchParams(vms=["a", "b"], sessions=3))
    assert [f.level for f in wrong if f.path == "vms"] == ["error"]


def _site(hosts: int = 3, datastores: int = 2) -> Site:
    return Site("vc", None, None, tuple(range(hosts)),
                tuple((f"ds{i}", i) for i in range(datastores)))  # fmt: skip


def test_legal_operations_follow_the_vms_state() -> None:
    lease = Lease(VmState("vm", None, powered_on=True))
    legal = set(legal_ops(lease, _site()))
    assert "power_off" in legal and "power_on" not in legal
    assert not {"reconfigure_cpu", "destroy", "snapshot_remove", "clone_linked"} & legal
    lease.home.snapshots.append(object())
    lease.spares.append(VmState("s", None))
    lease.spares.append(VmState("s2", None))
    legal = set(legal_ops(lease, _site(hosts=1, datastores=1)))
    assert {"destroy", "snapshot_remove", "unregister"} <= legal
    assert not {"clone_full", "create", "relocate_host", "relocate_datastore"} & legal


class _Op:
    """Stands in for an Operator in the choice only (no vCenter involved)."""

    def __init__(self) -> None:
        self.site = _site()


def test_the_deficit_choice_keeps_each_operation_near_its_share() -> None:
    # Simulate a session whose operations change the state as vCenter would.
    lease = Lease(VmState("vm", None))
    load = LoadRun([Session(_Op(), lease)], DEFAULT_MIX)  # type: ignore[arg-type]
    rng, counts = random.Random(3), {}
    for _ in range(4000):
        op = load._choose(rng, load.sessions[0], counts)
        assert op is not None
        _apply(op, lease)
    total = sum(counts.values())
    weight = sum(DEFAULT_MIX.values())
    for op, w in DEFAULT_MIX.items():
        # Power on/off must alternate, so they may lag their share by a few.
        assert abs(counts[op] - total * w / weight) <= 4, (op, counts[op])


def _apply(op: str, lease: Lease) -> None:
    vm = lease.home
    if op in ("power_on", "power_off"):
        vm.powered_on = op == "power_on"
    elif op in ("clone_full", "clone_linked", "create"):
        lease.spares.append(VmState("s", None))
    elif op == "destroy":
        lease.spares.pop()
    elif op == "unregister":
        lease.unregistered.append(lease.spares.pop())
    elif op == "register":
        lease.spares.append(lease.unregistered.pop())
    elif op == "snapshot_create":
        vm.snapshots.append(object())
    elif op == "snapshot_remove":
        vm.snapshots.pop()
    elif op == "snapshot_revert":
        vm.powered_on = False
