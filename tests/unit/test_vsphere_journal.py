"""The provisioning journal: durable lines, torn tails, and what is still pending."""

from __future__ import annotations

from pathlib import Path

from vbench.vsphere.journal import Journal, items, opened_by, parse_lines, pending


def test_pending_folds_events_per_object_in_intent_order() -> None:
    entries = [
        {"event": "open", "run_id": "r", "pid": 1, "host": "h"},
        {"event": "intent", "vcenter": "vc", "name": "a", "action": "clone"},
        {"event": "intent", "vcenter": "vc", "name": "b", "action": "clone", "keep": True},
        {"event": "started", "vcenter": "vc", "name": "a", "task": "task-1"},
        {"event": "created", "vcenter": "vc", "name": "a", "moid": "vm-1"},
        {"event": "intent", "vcenter": "vc", "name": "c", "action": "clone"},
        {"event": "failed", "vcenter": "vc", "name": "c", "error": "DuplicateName"},
        {"event": "destroyed", "vcenter": "vc", "name": "a", "moid": "vm-1"},
    ]
    todo = pending(entries)
    assert [(i.name, i.state, i.keep) for i in todo] == [
        ("b", "intent", True),
        ("c", "failed", False),
    ]
    a = next(i for i in items(entries) if i.name == "a")
    assert (a.moid, a.task, a.state) == ("vm-1", "task-1", "destroyed")
    assert opened_by(entries) == entries[0]


def test_kept_and_missing_objects_are_not_pending() -> None:
    entries = [
        {"event": "intent", "vcenter": "vc", "name": "a"},
        {"event": "intent", "vcenter": "vc", "name": "b"},
        {"event": "kept", "vcenter": "vc", "name": "a"},
        {"event": "missing", "vcenter": "vc", "name": "b"},
    ]
    assert pending(entries) == []


def test_events_for_unknown_objects_are_ignored() -> None:
    assert pending([{"event": "created", "vcenter": "vc", "name": "x", "moid": "vm-9"}]) == []


def test_a_torn_last_line_is_ignored() -> None:
    lines = ['{"event": "intent", "vcenter": "vc", "name": "a"}', '{"event": "crea']
    assert [e["name"] for e in parse_lines(lines)] == ["a"]


def test_journal_round_trip(tmp_path: Path) -> None:
    j = Journal.in_run_dir(tmp_path / "run")
    j.open("20250101-000000-aa")
    j.write("intent", vcenter="vc", name="vb-x-web-1", action="clone")
    entries = j.read()
    assert [e["event"] for e in entries] == ["open", "intent"]
    assert entries[0]["run_id"] == "20250101-000000-aa" and isinstance(entries[0]["pid"], int)
    assert pending(entries)[0].name == "vb-x-web-1"
    assert Journal(tmp_path / "none.jsonl").read() == []


def test_an_intent_without_a_task_may_still_become_a_vm_for_a_while() -> None:
    from vbench.vsphere.cleanup import CLONE_GRACE, _may_still_appear

    entries = [
        {"ts": 1000.0, "event": "intent", "vcenter": "vc", "name": "a"},
        {"ts": 1000.0, "event": "intent", "vcenter": "vc", "name": "b"},
        {"ts": 1001.0, "event": "started", "vcenter": "vc", "name": "b", "task": "task-2"},
    ]
    a, b = pending(entries)
    assert a.since == 1000.0 and b.task == "task-2"
    assert _may_still_appear(a, now=1010.0)
    assert not _may_still_appear(a, now=1000.0 + CLONE_GRACE + 1)
    assert not _may_still_appear(b, now=1010.0)  # its task is known: cleanup waits for it


def test_step_calls_and_their_tasks_are_folded_without_changing_the_state() -> None:
    base = [
        {"event": "intent", "vcenter": "vc", "name": "a", "ts": 1.0},
        {"event": "created", "vcenter": "vc", "name": "a", "moid": "vm-1"},
        {"event": "call", "vcenter": "vc", "name": "a", "op": "reconfigure", "ts": 2.0},
        {"event": "task", "vcenter": "vc", "name": "a", "op": "reconfigure", "task": "task-7"},
    ]
    done = pending(base)[0]
    assert (done.state, done.step_tasks, done.open_call) == ("created", ("task-7",), None)
    on_the_wire = [
        *base,
        {"event": "call", "vcenter": "vc", "name": "a", "op": "power on", "ts": 3.5},
    ]
    item = pending(on_the_wire)[0]
    assert (item.state, item.step_tasks, item.open_call) == ("created", ("task-7",), 3.5)
    assert item.moid == "vm-1" and item.since == 1.0


def test_a_step_call_refused_without_a_task_is_no_longer_open() -> None:
    entries = [
        {"event": "intent", "vcenter": "vc", "name": "a", "ts": 1.0},
        {"event": "call", "vcenter": "vc", "name": "a", "op": "power on", "ts": 2.0},
        {"event": "task", "vcenter": "vc", "name": "a", "op": "power on", "error": "InvalidState"},
    ]
    item = pending(entries)[0]
    assert (item.open_call, item.step_tasks) == (None, ())


def test_steps_need_not_be_fsynced_but_reach_the_file(tmp_path: Path) -> None:
    j = Journal.in_run_dir(tmp_path)
    j.write("call", durable=False, vcenter="vc", name="a", op="power on")
    assert [e["op"] for e in j.read()] == ["power on"]
