"""vcbench against vcsim: every operation, the mix, the figures from the raw log,
failures counted with vCenter's fault, session expiry, and nothing left behind."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyVmomi import vim

from tests.integration import vcbench_harness as vh
from tests.vcsim import VcsimServer
from vbench.errors import LabError
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.operations import OPS, Lease, Operator
from vbench.vsphere.oppool import create_pool, find_template, resolve_site
from vbench.workloads.vcbench import metrics
from vbench.workloads.vcbench.params import DEFAULT_MIX

Factory = Callable[..., VcsimServer]


@pytest.fixture
def h(vcsim_factory: Factory, tmp_path: Path) -> Iterator[vh.Harness]:
    server = vcsim_factory(datastores=2)
    yield from vh.fixture_harness({"vc1": server}, tmp_path)


def _operator(h: vh.Harness, name: str = "vb-t1-op-0") -> tuple[Operator, Lease]:
    session = h.sessions.get("vc1")
    inv = Inventory.load(session)
    site = resolve_site(inv, "vc1", None)
    watcher = h.watcher("vc1")
    vms = create_pool(
        session, watcher, site, h.journal, h.run_id,
        find_template(inv, None, vh.TEMPLATE), vh.TEMPLATE, [name],
    )  # fmt: skip
    op = Operator(0, session, watcher, site, h.journal, h.run_id, "vb-t1-op", threading.Event())
    return op, Lease(vms[0])


# A legal order that visits every operation at least once.
EVERY_OP = (
    "power_on", "snapshot_create", "clone_linked", "relocate_host", "relocate_datastore",
    "reconfigure_annotation", "power_off", "reconfigure_cpu", "reconfigure_memory",
    "snapshot_revert", "snapshot_remove", "unregister", "register", "destroy", "create",
    "clone_full", "destroy", "destroy",
)  # fmt: skip


def test_every_operation_type_succeeds_on_vcsim(h: vh.Harness) -> None:
    op, lease = _operator(h)
    assert set(EVERY_OP) == set(OPS)
    records = [op.run(name, lease) for name in EVERY_OP]
    failed = [(r.op, r.fault) for r in records if not r.ok]
    assert failed == []
    assert all(r.end >= r.start for r in records)
    assert not lease.spares and not lease.unregistered  # every spare destroyed again


def test_a_vm_removed_by_another_client_is_a_failed_operation_with_its_fault(
    h: vh.Harness,
) -> None:
    # vcsim v0.46 panics on a relocate or clone to a host it does not know (no check
    # before its task dereferences it), so the missing object injected here is the VM.
    op, lease = _operator(h)
    other = h.sessions.get("vc1")
    task = other.call(lambda: vim.VirtualMachine(lease.home.ref._moId, other.stub).Destroy_Task())
    h.watcher("vc1").wait_task(task, "VM", "destroy")
    rec = op.run("power_on", lease)
    assert not rec.ok
    assert rec.fault_type == "ManagedObjectNotFound"
    assert lease.home.ref._moId in (rec.fault or "")
    assert not lease.home.powered_on


def test_each_op_type_is_counted_and_ops_per_s_comes_from_the_raw_log(h: vh.Harness) -> None:
    mix = dict.fromkeys(OPS, 1.0)
    out = vh.run_trial(h, {"sessions": 4, "mix": mix})
    rows = metrics.read_log(out.raw_dir / metrics.OPS_FILE)
    window = json.loads((out.raw_dir / "window.json").read_text())
    start, end = window["steady_start"], window["steady_end"]
    steady_ok = [r for r in rows if r.ok and start <= r.end <= end]
    assert out.value("vcbench.ops_per_s") == pytest.approx(len(steady_ok) / (end - start))
    assert out.value("vcbench.completed") == len(steady_ok)
    counted = Counter(r.op for r in steady_ok)
    for name in OPS:
        assert out.value("vcbench.op_ops_per_s", op=name) == pytest.approx(
            counted[name] / (end - start)
        )
    assert set(Counter(r.op for r in rows if r.ok)) == set(OPS)  # every type ran
    assert out.value("vcbench.failed") == 0
    assert vh.run_vms(h) == []  # teardown removed the pool and every spare


def test_the_default_mix_is_honoured_within_one_op_per_session(h: vh.Harness) -> None:
    sessions = 6
    out = vh.run_trial(h, {"sessions": sessions}, steady=4.0)
    rows = [r for r in metrics.read_log(out.raw_dir / metrics.OPS_FILE)]
    total = len(rows)
    assert total >= 20 * sessions, "too few operations to judge a mix"
    weight = sum(DEFAULT_MIX.values())
    done = Counter(r.op for r in rows)
    for name, w in DEFAULT_MIX.items():
        # Each session keeps each operation within about one of its share (deficit
        # choice); paired operations wait for their inverse: allow two per session.
        assert abs(done[name] - total * w / weight) <= 2 * sessions + 1, name
    share = {s.label_dict()["op"]: s.value for s in out.metric("vcbench.mix_share")}
    target = {s.label_dict()["op"]: s.value for s in out.metric("vcbench.mix_target")}
    assert target["power_on"] == pytest.approx(100 * 16 / weight)
    assert set(share) == set(DEFAULT_MIX)


def test_a_name_clash_is_counted_as_a_failure_with_vcenters_message(h: vh.Harness) -> None:
    # Another client takes the name the first clone of session 0 will ask for.
    session = h.sessions.get("vc1")
    inv = Inventory.load(session)
    site = resolve_site(inv, "vc1", None)
    clash = "vb-t1-vcb1.1-s0-1"
    create_pool(
        session, h.watcher("vc1"), site, vh.Journal(h.run_dir / "other.jsonl"), "other",
        find_template(inv, None, vh.TEMPLATE), vh.TEMPLATE, [clash],
    )  # fmt: skip
    out = vh.run_trial(h, {"sessions": 1, "mix": {"clone_full": 1, "destroy": 1}}, warmup=0)
    faults = json.loads((out.raw_dir / "window.json").read_text())["faults"]
    assert "DuplicateName" in faults
    assert any(clash in m for m in faults["DuplicateName"])
    failures = out.metric("vcbench.failures")
    assert [(s.label_dict(), s.value) for s in failures] == [
        ({"fault": "DuplicateName", "op": "clone_full"}, 1.0)
    ]
    assert out.value("vcbench.completed") and out.value("vcbench.completed") > 1
    # The other client's VM is not the run's: it stays; the run's own are gone.
    assert vh.run_vms(h) == [clash]


def test_terminated_sessions_cost_no_failed_operation_beyond_those_in_flight(
    h: vh.Harness,
) -> None:
    sessions = 4
    steady = threading.Event()
    out_box: dict[str, vh.TrialOutcome] = {}

    def trial() -> None:
        out_box["out"] = vh.run_trial(
            h, {"sessions": sessions}, warmup=0.5, steady=4.0,
            on_mark=lambda m: steady.set() if m == "steady_start" else None,
        )  # fmt: skip

    t = threading.Thread(target=trial)
    t.start()
    assert steady.wait(120)
    admin = h.sessions.get("vc1")
    mgr = admin.content.sessionManager
    mine = admin.session_key
    others = [s.key for s in mgr.sessionList or () if s.key != mine]
    assert len(others) >= sessions
    mgr.TerminateSession(others)
    t.join(300)
    out = out_box["out"]
    rows = metrics.read_log(out.raw_dir / metrics.OPS_FILE)
    failed = [r for r in rows if not r.ok]
    assert len(failed) <= sessions, [r.fault for r in failed]
    terminated_at = max(r.start for r in rows)
    assert any(r.ok and r.start > out.marks["steady_start"] for r in rows)
    assert terminated_at > out.marks["steady_start"]
    assert vh.run_vms(h) == []


def test_an_interrupted_trial_leaves_no_vm_or_snapshot(h: vh.Harness) -> None:
    cancel = threading.Event()
    out = vh.run_trial(
        h, {"sessions": 3}, warmup=0.5, steady=60.0, cancel=cancel,
        on_mark=lambda m: cancel.set() if m == "steady_start" else None,
    )  # fmt: skip
    assert out.samples == []  # no complete steady window: no figures
    assert (out.raw_dir / metrics.OPS_FILE).exists()  # but the raw log is kept
    assert vh.run_vms(h) == []
    assert vh.snapshots_of_run(h) == 0


def test_open_loop_starts_operations_at_the_rate_asked_for(h: vh.Harness) -> None:
    rate, sessions = 8.0, 4
    out = vh.run_trial(h, {"sessions": sessions, "loop": "open", "rate": rate}, steady=3.0)
    window = json.loads((out.raw_dir / "window.json").read_text())
    seconds = window["steady_end"] - window["steady_start"]
    rows = metrics.read_log(out.raw_dir / metrics.OPS_FILE)
    started = [r for r in rows if window["steady_start"] <= r.start <= window["steady_end"]]
    # Each session starts one operation per sessions/rate seconds: never more than the
    # rate allows (one cycle of slack per session at the window's edges).
    assert 0 < len(started) <= rate * seconds + sessions
    assert out.value("vcbench.ops_per_s") is not None
    late = out.value("vcbench.late_starts")
    assert late is not None and late >= 0


def test_sessions_are_spread_over_the_labs_vcenters(
    vcsim_factory: Callable[..., VcsimServer], tmp_path: Path
) -> None:
    servers = {"vc1": vcsim_factory(), "vc2": vcsim_factory()}
    for h in vh.fixture_harness(servers, tmp_path):
        mix = {"power_on": 1, "power_off": 1, "reconfigure_annotation": 1}
        out = vh.run_trial(h, {"sessions": 4, "mix": mix, "vcenters": ["vc1", "vc2"]})
        rows = metrics.read_log(out.raw_dir / metrics.OPS_FILE)
        per_vc = Counter((r.vcenter, r.session) for r in rows)
        assert {vc for vc, _ in per_vc} == {"vc1", "vc2"}
        assert {s for _, s in per_vc} == {0, 1, 2, 3}  # every session ran operations
        assert sorted((out.raw_dir).glob("*-vcenter.json")) == [
            out.raw_dir / "vc1-vcenter.json", out.raw_dir / "vc2-vcenter.json"
        ]
        assert vh.run_vms(h, "vc1") == [] and vh.run_vms(h, "vc2") == []


def test_named_vms_are_used_and_lose_only_the_snapshots_the_run_took(h: vh.Harness) -> None:
    named = ["DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1"]
    mix = {"snapshot_create": 2, "snapshot_remove": 1, "reconfigure_annotation": 1}
    out = vh.run_trial(h, {"sessions": 2, "vms": named, "template": None, "mix": mix})
    rows = metrics.read_log(out.raw_dir / metrics.OPS_FILE)
    assert {r.vm for r in rows} == set(named)
    assert any(r.op == "snapshot_create" and r.ok for r in rows)
    objs = vh.retrieve(h.sessions.get("vc1"), {vim.VirtualMachine: ["name", "snapshot"]})
    snaps = {o.name: o.get("snapshot") for o in objs if o.name in named}
    assert snaps == {n: None for n in named}  # the run's snapshots are gone again
    assert sorted(n for n in vh.vm_names(h.sessions.get("vc1")) if n in named) == named


def test_a_named_vm_left_with_the_runs_snapshots_is_named_in_the_teardown_error(
    h: vh.Harness,
) -> None:
    named = ["DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1"]
    mix = {"snapshot_create": 1, "reconfigure_annotation": 1}
    out = vh.run_trial(h, {"sessions": 2, "vms": named, "template": None, "mix": mix},
                       teardown=False)  # fmt: skip
    taken = {r.vm for r in metrics.read_log(out.raw_dir / metrics.OPS_FILE)
             if r.op == "snapshot_create" and r.ok}  # fmt: skip
    assert taken, "the trial took no snapshot"
    victim = sorted(taken)[0]
    # Another client removes the victim's snapshots behind the run's back: removing
    # them again at teardown fails, and the user must be told which VM it was.
    vm = next(o.ref for o in vh.retrieve(h.sessions.get("vc1"), {vim.VirtualMachine: ["name"]})
              if o.name == victim)  # fmt: skip
    h.watcher("vc1").wait_task(vm.RemoveAllSnapshots_Task(), victim, "remove snapshots")
    ctx, _, _ = vh.context(h, "vc1", out.raw_dir, warmup=0.5, steady=3.0)
    with pytest.raises(LabError) as err:
        out.workload.teardown(ctx)
    assert "vc1: cannot remove the " in str(err.value)
    assert f"took of VM {victim} (" in str(err.value)
    objs = vh.retrieve(h.sessions.get("vc1"), {vim.VirtualMachine: ["name", "snapshot"]})
    assert {o.name: o.get("snapshot") for o in objs if o.name in named} == {
        n: None for n in named
    }  # the other VM's snapshots were still removed
