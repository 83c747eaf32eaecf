"""Lab hygiene: each rule of vbench/vsphere/hygiene_rules.py, the scenario's severities,
the tune proposal, event and task classification, and the texts the verdict shows."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from vbench.config.hygiene import DisturbanceSpec, LabHygiene
from vbench.report.hygiene_text import hygiene_lines, hygiene_warnings
from vbench.vsphere import hygiene_rules as r
from vbench.vsphere.hygiene_events import (
    Disturbance,
    classify_event,
    classify_task,
    disturbance_text,
)
from vbench.vsphere.hygiene_tune import propose

SPEC = LabHygiene()
AUTO = r.ClusterFacts("C1", drs_enabled=True, drs_behavior=None)


def test_host_state_fails_a_host_in_maintenance_or_disconnected() -> None:
    ok = r.host_state(SPEC, r.HostFacts("h1", connection="connected", maintenance=False))
    assert (ok.level, ok.state) == ("ok", "connected")
    bad = r.host_state(SPEC, r.HostFacts("h2", connection="notResponding", maintenance=True))
    assert bad.level == "fail"
    assert bad.detail == "host h2 in maintenance mode and notResponding"
    warned = r.host_state(LabHygiene(host_state="warn"), r.HostFacts("h2", maintenance=True))
    assert warned.level == "warn"


def test_drs_rule_holds_when_drs_cannot_move_the_vms() -> None:
    assert r.drs(SPEC, r.ClusterFacts("C1", drs_enabled=False), ["vm1"]).level == "ok"
    manual = r.ClusterFacts("C1", drs_enabled=True, drs_behavior="partiallyAutomated")
    assert r.drs(SPEC, manual, ["vm1"]).state == "partiallyAutomated"
    assert r.drs(SPEC, manual, ["vm1"]).level == "ok"
    # Unset default behaviour means fully automated.
    moved = r.drs(SPEC, AUTO, ["vm1", "vm2"])
    assert (moved.level, moved.state) == ("warn", "fullyAutomated")
    assert "it may migrate vm1, vm2 during a trial" in moved.detail
    over = r.ClusterFacts("C1", drs_enabled=True, vm_overrides={"vm1": "manual",
                                                                 "vm2": "disabled"})
    held = r.drs(SPEC, over, ["vm1", "vm2"])
    assert (held.level, held.state) == ("ok", "fullyAutomated, overridden")
    half = r.ClusterFacts("C1", drs_enabled=True, vm_overrides={"vm1": "manual"})
    assert "may migrate vm2 " in r.drs(SPEC, half, ["vm1", "vm2"]).detail


def test_drs_manual_is_required_and_rules_are_listed() -> None:
    spec = LabHygiene(drs="manual")
    c = r.ClusterFacts("C1", drs_enabled=True, rules=("ClusterAffinityRuleSpec keep",))
    f = r.drs(spec, c, [])
    assert f.level == "fail" and "the run's VMs" in f.detail
    # The way that works for every run's VM, the clones too (`vbench lab tune` only
    # reaches VMs that exist before the run, and sends a cloning scenario to this).
    assert "(`lab_hygiene: {tune: true}` overrides it to manual for them for the run)" \
        in f.detail
    assert f.detail.endswith("DRS rules naming the run's VMs: ClusterAffinityRuleSpec keep")
    waived = r.drs(LabHygiene(drs="ignore"), c, [])
    assert waived.level == "ok" and "(waived: lab_hygiene.drs: ignore)" in waived.detail


def test_power_policy_wanted_and_severity() -> None:
    host = r.HostFacts("h1", power_policy="dynamic")
    f = r.power_policy(SPEC, host)
    assert (f.level, f.state) == ("warn", "balanced")
    assert f.detail == "host h1: power policy balanced (wanted high-performance)"
    assert r.power_policy(LabHygiene(power_policy="balanced"), host).level == "ok"
    assert r.power_policy(LabHygiene(power_policy="high-performance"), host).level == "fail"
    assert r.power_policy(SPEC, r.HostFacts("h1", power_policy="static")).level == "ok"
    unknown = r.power_policy(SPEC, r.HostFacts("h1"))
    assert unknown.level == "warn" and "not reported" in unknown.detail


def test_ha_and_alarms() -> None:
    on = r.ha(SPEC, r.ClusterFacts("C1", ha_enabled=True, admission_control=True))
    assert (on.level, on.state) == ("warn", "on, admission control")
    assert r.ha(SPEC, r.ClusterFacts("C1", ha_enabled=False)).level == "ok"
    assert r.alarms(SPEC, "host h1", ()).level == "ok"
    raised = r.alarms(LabHygiene(alarms="fail"), "host h1", ("red: Host CPU usage",))
    assert raised.level == "fail" and raised.detail == "host h1: alarms red: Host CPU usage"


def test_other_vms_are_listed_with_their_use() -> None:
    none = r.other_vms(SPEC, ["h1"], [])
    assert none.level == "ok"
    vms = [r.OtherVm("db1", "h1", 2400, 4096), r.OtherVm("idle", "h1")]
    f = r.other_vms(SPEC, ["h1"], vms)
    assert (f.level, f.state) == ("warn", "2 powered on")
    assert "db1 on h1 (2400 MHz, 4096 MiB active)" in f.detail
    assert "idle on h1 (CPU not reported, memory not reported)" in f.detail


def test_storage_tasks_only_storage_tasks_in_progress() -> None:
    tasks = [r.LabTask("VirtualMachine.removeAllSnapshots", "vm9", "running", "bob"),
             r.LabTask("VirtualMachine.powerOn", "vm8", "running"),
             r.LabTask("VirtualMachine.relocate", "vm7", "success")]
    f = r.storage_tasks(SPEC, "vc1", tasks)
    assert f.level == "warn" and f.state == "1 in progress"
    assert "VirtualMachine.removeAllSnapshots on vm9 (running, by bob)" in f.detail
    assert r.storage_tasks(SPEC, "vc1", tasks[1:]).level == "ok"


def test_clock_agreement() -> None:
    good = r.LabFacts("vc1", hosts=(r.HostFacts("h1", clock_offset=0.2),), vcenter_offset=0.1)
    assert r.clock(SPEC, good).level == "ok"
    skewed = r.LabFacts("vc1", hosts=(r.HostFacts("h1", clock_offset=3.0),),
                        vcenter_offset=0.1)
    f = r.clock(SPEC, skewed)
    assert f.level == "warn" and f.state == "over 1 s" and "h1" in f.detail.split("(")[-1]
    assert r.clock(LabHygiene(clock_skew="5s"), skewed).level == "ok"
    unknown = r.clock(SPEC, r.LabFacts("vc1", hosts=(r.HostFacts("h1"),)))
    assert unknown.level == "warn" and "not reported: vCenter, h1" in unknown.detail


def test_judge_orders_checks_and_findings_serialise() -> None:
    facts = r.LabFacts("vc1", hosts=(r.HostFacts("h1", "C1", "connected", False, "static",
                                                  0.0),),
                       clusters=(AUTO,), run_vms=("vm1",), vcenter_offset=0.0)
    found = r.judge(facts, SPEC)
    assert [f.check for f in found] == ["host_state", "drs", "power_policy", "ha", "alarms",
                                        "alarms", "other_vms", "storage_tasks", "clock"]
    doc = found[1].to_json()
    assert doc["id"] == "drs cluster C1" and r.finding_from_json(doc) == found[1]
    assert r.failures(r.judge(facts, LabHygiene(drs="manual")))[0].check == "drs"


def test_scenario_model_forms() -> None:
    assert DisturbanceSpec.model_validate("retry").action == "retry"
    assert DisturbanceSpec.model_validate({"action": "fail"}).retries == 2
    with pytest.raises(ValidationError):
        DisturbanceSpec.model_validate("ignore")
    with pytest.raises(ValidationError):
        LabHygiene.model_validate({"drs": "automatic"})
    assert LabHygiene(power_policy="low-power").wanted_policy == "low-power"
    assert LabHygiene(power_policy="fail").wanted_policy == "high-performance"
    assert LabHygiene(drs="manual").severity("drs") == "fail"


def test_tune_proposes_only_what_breaks_the_rules() -> None:
    facts = r.LabFacts("vc1", hosts=(r.HostFacts("h1", power_policy="dynamic"),
                                     r.HostFacts("h2", power_policy="static")),
                       clusters=(r.ClusterFacts("C1", drs_enabled=True,
                                                vm_overrides={"vm2": "manual",
                                                              "vm3": "fullyAutomated"}),),
                       run_vms=("vm1", "vm2", "vm3"))
    changes = propose(facts, SPEC)
    assert [c.text for c in changes] == [
        "cluster C1: DRS override manual for VM vm1 (now no override)",
        "cluster C1: DRS override manual for VM vm3 (now override fullyAutomated)",
        "host h1: power policy high-performance (now balanced)",
    ]
    assert propose(facts, LabHygiene(drs="ignore", power_policy="ignore")) == []
    off = r.LabFacts("vc1", clusters=(r.ClusterFacts("C1", drs_enabled=False),),
                     run_vms=("vm1",))
    assert propose(off, SPEC) == []
    # A host whose policy vCenter does not report: the undo could not set it back (it
    # proposed 'now ?' and its undo failed forever: 'power policy None is not available').
    unknown = r.LabFacts("vc1", hosts=(r.HostFacts("h3", power_policy=None),))
    assert propose(unknown, SPEC) == []


def test_events_and_tasks_are_classified() -> None:
    assert classify_event("VmMigratedEvent", {"vm": "guest1", "host": "esx2",
                                              "source_host": "esx1"}) == (
        "migration", "vMotion of guest1 from esx1 to esx2")
    assert classify_event("DrsVmMigratedEvent", {"vm": "g"})[0] == "migration"
    # The host stayed (a Storage vMotion; vcsim records the source host as both): the
    # VM is not said to have moved to the host it left ("from esx1 to esx1" before).
    assert classify_event("VmMigratedEvent", {"vm": "g", "host": "esx1", "source_host": "esx1",
                                              "ds": "ds2", "source_ds": "ds1"}) == (
        "migration", "vMotion of g on esx1 (datastore ds1 to ds2)")
    assert classify_event("VmMigratedEvent", {"vm": "g", "host": "esx1", "source_host": "esx1",
                                              "ds": "ds1", "source_ds": "ds1"})[1] == \
        "vMotion of g on esx1"
    assert classify_event("EnteredMaintenanceModeEvent", {"host": "esx3"}) == (
        "host", "host esx3 entered maintenance mode")
    assert classify_event("DasHostFailedEvent", {"host": "esx3"})[0] == "ha"
    assert classify_event("AlarmStatusChangedEvent", {"alarm": "CPU", "host": "esx1"},
                          "red") == ("alarm", "alarm CPU turned red on esx1")
    assert classify_event("AlarmStatusChangedEvent", {"alarm": "CPU"}, "green") is None
    assert classify_event("VmResettingEvent", {"vm": "g1"}) == ("vm", "g1 reset")
    assert classify_event("UserLoginSessionEvent", {}) is None
    assert classify_task("VirtualMachine.relocate", "g1")[0] == "migration"
    assert classify_task("VirtualMachine.createSnapshot", "g1")[0] == "snapshot"
    # Said as the event would say it (vcsim logs the task only), the task named after.
    assert classify_task("HostSystem.enterMaintenanceMode", "esx1") == (
        "host", "host esx1 entering maintenance mode (task HostSystem.enterMaintenanceMode)")
    assert classify_task("HostSystem.exitMaintenanceMode", "esx1")[1].startswith(
        "host esx1 leaving maintenance mode (task ")
    assert classify_task("HostSystem.disconnect", "esx1")[1] == (
        "host esx1 disconnecting (task HostSystem.disconnect)")
    assert classify_task("VirtualMachine.reconfigure", "g1") == (
        "vm", "task VirtualMachine.reconfigure on g1")
    assert classify_task("VirtualMachine.clone", "g1") == ("task", "task VirtualMachine.clone "
                                                           "on g1")


def test_an_operation_that_is_an_event_and_a_task_is_said_once() -> None:
    """vCenter logs a power-off or a reconfiguration as an event and a task: one
    disturbance (it was two: 'g1 powered off; task VirtualMachine.powerOff on g1',
    seen on vcsim, whose tasks carry no eventChainId)."""
    from vbench.vsphere.hygiene_events import said_once

    def d(at: float, kind: str, what: str, about: str = "g1") -> Disturbance:
        return Disturbance(at, kind, what, "x", None, about)

    off = d(1.0, "vm", "g1 powered off")
    task = d(1.0, *classify_task("VirtualMachine.powerOff", "g1"))
    assert said_once([off], [task]) == [off]
    # Two migrations of the same VM, one event each: the second task is not swallowed
    # by the first event, a third task with no event is kept.
    m1, m2 = d(1, "migration", "vMotion of g1"), d(5, "migration", "vMotion of g1")
    tasks = [d(t, *classify_task("VirtualMachine.relocate", "g1")) for t in (1, 5, 9)]
    assert said_once([m1, m2], tasks) == [m1, m2, tasks[2]]
    # Another VM's task is its own.
    other = d(1, *classify_task("VirtualMachine.powerOff", "g2"), about="g2")
    assert said_once([off], [other]) == [off, other]


def test_disturbance_text_says_what_and_when_in_the_window() -> None:
    start = dt.datetime(2026, 1, 1, 12, 2, 43).timestamp()
    d = Disturbance(start + 21.4, "migration", "vMotion of guest1 to esx2", "VmMigratedEvent")
    assert disturbance_text(d, start) == ("vMotion of guest1 to esx2 at 12:03:04, 21 s into "
                                          "the steady window")
    by = Disturbance(start, "task", "task X on g", "X", user="alice")
    assert disturbance_text(by, None) == "task X on g at 12:02:43 (by alice)"


def test_verdict_warnings_and_testbed_lines() -> None:
    testbed = {
        "hygiene": [r.Finding("drs", "cluster C1", "warn", "fullyAutomated", "DRS …").to_json(),
                    r.Finding("clock", "vcenter vc1", "ok", "agree", "fine").to_json()],
        "disturbances": [{"point": 0, "trial": 2, "action": "retried", "text": "vMotion of g"},
                         {"point": 1, "trial": 1, "action": "fail", "text": "g1 reset"}],
    }
    warnings = hygiene_warnings({"testbed": testbed})
    assert warnings == [
        "lab hygiene: 1 finding not ok before the run: drs cluster C1: DRS …",
        "point 1 trial 2 run again, disturbed: vMotion of g (that attempt is not stored)",
        "point 2 trial 1 failed, disturbed: g1 reset (left out of the statistics)",
    ]
    lines = hygiene_lines(testbed)
    assert lines[0] == "  lab hygiene: 1 ok, 1 warn, 0 fail"
    assert lines[1] == "    warn: drs cluster C1: DRS …"
    assert hygiene_warnings({"testbed": None}) == [] and hygiene_lines(None) == []


def test_report_tables_lead_with_disturbances_and_hygiene() -> None:
    from vbench.report.sections import testbed_tables

    testbed = {
        "hosts": [{"name": "esx1", "power_policy": "dynamic"}],
        "hygiene": [r.Finding("power_policy", "host esx1", "warn", "balanced", "x").to_json()],
        "disturbances": [{"id": "point 1 trial 1 #1", "point": 0, "trial": 1,
                          "action": "flag", "text": "vMotion of g1 at 12:00:01"}],
    }
    titles = [t.title for t in testbed_tables(testbed)]
    assert titles[:3] == ["Disturbed trials", "Lab hygiene", "Hosts"]


def test_a_changed_power_policy_is_a_testbed_difference() -> None:
    from vbench.analysis.figures import fact_differences

    def run(state: str) -> dict:
        finding = r.Finding("power_policy", "host esx1", "ok", state, f"host esx1: {state}")
        return {"testbed": {"hygiene": [finding.to_json()]}}

    diffs = {d.key: (d.a, d.b) for d in fact_differences(run("balanced"),
                                                          run("high-performance"))}
    assert diffs["testbed.hygiene[power_policy host esx1].state"] == ("balanced",
                                                                     "high-performance")


def test_disturbances_are_not_testbed_facts_of_a_comparison() -> None:
    """What disturbed a run's trials happened in it; it is not how the lab was set up.
    compare says them on its own 'disturbed:' lines; as testbed facts every busy
    neighbour's CPU figure and clock time was a 'testbed difference' between two runs."""
    from vbench.analysis.figures import fact_differences

    def run(cpu: int, policy: str) -> dict:
        finding = r.Finding("power_policy", "host esx1", "ok", policy, f"host esx1: {policy}")
        return {"testbed": {"hygiene": [finding.to_json()], "disturbances": [
            {"id": "point 1 trial 1 #1", "point": 0, "trial": 1, "action": "flag",
             "text": f"VM poseidon used {cpu} % of a core on esx1", "events": []}]}}

    assert fact_differences(run(85, "balanced"), run(60, "balanced")) == []
    assert [d.key for d in fact_differences(run(85, "balanced"), run(85, "custom"))] == [
        "testbed.hygiene[power_policy host esx1].state"]


def test_what_a_finding_measured_each_time_is_not_a_testbed_difference() -> None:
    """Two runs of one lab, set up alike: the guests' clock offsets, the other VMs' MHz
    and the clones' disk uuids differ every run. compare listed them as 'testbeds
    differ' (seen on vcsim: 3 facts, none of them the lab's set-up); a finding is
    compared by its level and state, and a changed state is still a difference."""
    from vbench.analysis.figures import fact_differences

    def run(offset: str, mhz: int, uuid: str, level: str = "warn") -> dict:
        clock = r.Finding("clock", "guests", "ok", "agree",
                          f"guest clocks from the controller's: storage-1 {offset} s")
        others = r.Finding("other_vms", "hosts esx1", level, "1 powered on",
                           f"1 other powered-on VM on the run's hosts: db on esx1 ({mhz} MHz)")
        return {"testbed": {"hygiene": [clock.to_json(), others.to_json()],
                            "vms": [{"name": "vb-x-storage-1", "disk_enable_uuid": True,
                                     "disks": [{"label": "Hard disk 1", "uuid": uuid}]}]}}

    assert fact_differences(run("+0.003", 12, "be05"), run("+0.001", 40, "e402")) == []
    assert [(d.key, d.a, d.b) for d in fact_differences(
        run("+0.003", 12, "be05"), run("+0.003", 12, "be05", level="fail"))] == [
        ("testbed.hygiene[other_vms hosts esx1].level", "warn", "fail")]


def test_what_a_disturbed_trial_gets() -> None:
    from vbench.engine.disturbances import disturbed_action

    assert disturbed_action(DisturbanceSpec(), 0) == "flag"
    assert disturbed_action(DisturbanceSpec(action="fail"), 0) == "fail"
    retry = DisturbanceSpec(action="retry", retries=2)
    assert [disturbed_action(retry, n) for n in range(4)] == ["retried", "retried", "flag",
                                                               "flag"]


def test_guest_clocks_against_the_controller() -> None:
    ok = r.guest_clocks(SPEC, {"g1": 0.004, "g2": -0.2})
    assert (ok.level, ok.target, ok.state) == ("ok", "guests", "agree")
    assert ok.detail == "guest clocks from the controller's: g1 +0.004 s; g2 -0.200 s"
    off = r.guest_clocks(LabHygiene(clock="fail"), {"g1": 2.5, "g2": None})
    assert (off.level, off.state) == ("fail", "over 1 s")
    assert off.detail.endswith("not measured: g2 (more than 1 s: g1)")
    assert r.guest_clocks(SPEC, {"g2": None}).level == "warn"


def test_a_window_not_watched_is_said() -> None:
    testbed = {"disturbances": [{"point": 0, "trial": 1, "action": "unread",
                                 "text": "events not read: connection refused"}]}
    assert hygiene_warnings({"testbed": testbed}) == [
        "point 1 trial 1 not watched: events not read: connection refused"]


def test_which_events_concern_the_run() -> None:
    from pyVmomi import vim

    from vbench.vsphere.hygiene_events import _from_event

    when = dt.datetime(2026, 1, 1, 12, 0, 5, tzinfo=dt.UTC)

    def event(kind: type, vm: str, host: str, user: str = "bob") -> object:
        return kind(vm=vim.event.VmEventArgument(name=vm),
                    host=vim.event.HostEventArgument(name=host), createdTime=when,
                    userName=user, key=1, chainId=1)

    objects = {"vb-run-web-1", "esx1"}
    shown = {"vb-run-web-1": "web-1"}
    other_off = event(vim.event.VmPoweredOffEvent, "someone-else", "esx1")
    assert _from_event(other_off, objects, shown, 0.0, None) is None
    ours = _from_event(event(vim.event.VmResettingEvent, "vb-run-web-1", "esx1"), objects,
                       shown, 2.0, None)
    assert ours is not None and (ours.kind, ours.what, ours.about) == ("vm", "web-1 reset",
                                                                         "web-1")
    assert ours.at == when.timestamp() - 2.0  # back on the controller's clock
    arriving = _from_event(event(vim.event.VmMigratedEvent, "someone-else", "esx1"), objects,
                           shown, 0.0, None)
    assert arriving is not None and arriving.what == "vMotion of someone-else to esx1"
    elsewhere = event(vim.event.VmMigratedEvent, "x", "esx9")
    assert _from_event(elsewhere, objects, shown, 0.0, None) is None
    mine = event(vim.event.VmMigratedEvent, "vb-run-web-1", "esx1", user="vbench")
    assert _from_event(mine, objects, shown, 0.0, "vbench") is None


def test_another_vm_powered_on_on_a_runs_host_is_a_disturbance() -> None:
    """A neighbour powered on in the steady window boots on the run's host (CPU, memory
    allocation, its storage): vCenter's event was dropped as 'another VM's power', and
    esxtop has no column for a VM powered on after it started — nothing saw it (vcsim,
    VM powered on by a second client). Another VM powered off stays no disturbance."""
    from pyVmomi import vim

    from vbench.vsphere.hygiene_events import _from_event

    when = dt.datetime(2026, 1, 1, 12, 0, 5, tzinfo=dt.UTC)

    def event(kind: type, vm: str, host: str) -> object:
        return kind(vm=vim.event.VmEventArgument(name=vm),
                    host=vim.event.HostEventArgument(name=host), createdTime=when,
                    userName="bob", key=1, chainId=1)

    objects = {"vb-run-web-1", "esx1"}
    on = _from_event(event(vim.event.VmPoweredOnEvent, "poseidon", "esx1"), objects, {},
                     0.0, None)
    assert on is not None
    assert (on.kind, on.what, on.about) == ("vm", "another VM poseidon powered on on esx1",
                                            "poseidon")  # `disturbance.ignore` names it so
    assert _from_event(event(vim.event.VmPoweredOnEvent, "poseidon", "esx9"), objects, {},
                       0.0, None) is None  # not on a run's host
    assert _from_event(event(vim.event.VmPoweredOffEvent, "poseidon", "esx1"), objects, {},
                       0.0, None) is None


def test_a_resumed_runs_own_vms_are_not_other_vms() -> None:
    from vbench.engine.hygiene import without_own

    facts = r.LabFacts("vc1", other_vms=(r.OtherVm("vb-20260101-000000-abcd1234-web-1", "h1"),
                                          r.OtherVm("vb-20250101-000000-ffff0000-web-1", "h1"),
                                          r.OtherVm("db1", "h1")))
    kept = without_own(facts, "20260101-000000-abcd1234").other_vms
    assert [v.name for v in kept] == ["vb-20250101-000000-ffff0000-web-1", "db1"]
    assert without_own(facts, "") == facts


def test_the_tune_undo_restores_only_what_is_still_as_vbench_set_it() -> None:
    from vbench.vsphere.hygiene_tune import undo_step

    assert undo_step(None, "manual", "manual") == "restore"
    assert undo_step("balanced", "high-performance", "high-performance") == "restore"
    # Journaled as applying but never made (killed before vCenter was asked): as recorded.
    assert undo_step(None, "manual", None) == "already"
    assert undo_step("balanced", "high-performance", "balanced") == "already"
    # vcsim's undo leaves a fully automated override: the same as none.
    assert undo_step(None, "manual", "fullyAutomated") == "already"
    # Someone else changed it since: left as they set it.
    assert undo_step(None, "manual", "partiallyAutomated") == "left"
    assert undo_step("balanced", "high-performance", "low-power") == "left"


def test_a_refused_preflight_names_the_vcenter_of_each_failed_check() -> None:
    """Two vCenters may both have a host esx1 (two vcsims do): the refusal says which."""
    from vbench.engine.hygiene import finding_line, refuse
    from vbench.errors import LabError

    facts = r.LabFacts("vc2", hosts=(r.HostFacts("esx1", maintenance=True,
                                                 connection="connected"),))
    found = r.judge(facts, SPEC)
    with pytest.raises(LabError) as err:
        refuse(list(found))
    assert "host_state host esx1 (vcenter vc2): host esx1 in maintenance mode" in str(err.value)
    clock = next(f for f in found if f.check == "clock")
    assert finding_line(clock).startswith("lab hygiene warn: clock vcenter vc2: ")
    assert r.finding_from_json(found[0].to_json()) == found[0]


def test_the_json_fields_are_documented() -> None:
    """docs/lab-hygiene.md "In JSON" names every key a finding and an event carry."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "lab-hygiene.md").read_text()
    section = doc.split("## In JSON", 1)[1].split("\n## ", 1)[0]
    items = {m.group(1): m.group(2) for m in re.finditer(
        r"^- `([^`]+)`[^:]*:(.*?)(?=^- |\Z)", section, re.S | re.M)}

    def named(key: str) -> set[str]:
        text = items[key].split("\n- ")[0]
        return {n for n in re.findall(r"`(\w+)` \(|`(\w+)`[,.]|`(\w+)` *$", text)
                for n in n if n}

    finding = r.Finding("drs", "cluster C", "ok", "x", "d", "vc1")
    assert set(finding.to_json()) <= named("testbed.hygiene[]")
    event = Disturbance(1.0, "vm", "g powered off", "VmPoweredOffEvent")
    assert set(event.to_json()) <= named("events[]")
    from dataclasses import fields

    from vbench.vsphere.hygiene_tune import TuneChange

    tune = {f.name for f in fields(TuneChange)} | {"id", "state", "error", "note"}
    assert tune <= named("tune.jsonl")


def test_a_trial_not_watched_names_the_vcenter_that_did_not_answer() -> None:
    """Two vCenters: the notice and the testbed say which one's events were not read."""
    from types import SimpleNamespace as NS

    from vbench.engine.disturbances import TrialWatch
    from vbench.engine.hygiene import RunHygiene
    from vbench.results.records import PhaseTimes, TrialResult

    def refused(_fn: object) -> None:
        raise ConnectionRefusedError("connection refused")

    from pyVmomi import vim

    def ok_session() -> NS:
        return NS(call=lambda fn: [], content=NS(eventManager=None, taskManager=None,
                                                 rootFolder=vim.Folder("group-d1")))

    sessions = {"vc1": ok_session(), "vc2": NS(call=refused, content=NS(eventManager=None))}
    vs = NS(scenario=NS(lab_hygiene=None, disturbance=None), vcenters=["vc1", "vc2"],
            lab=NS(vcenters={"vc1": NS(user="u"), "vc2": NS(user="u")}), journal=None,
            workload_vcenters=[], vms=[], inventories={}, extra_testbed={},
            sessions=NS(get=sessions.__getitem__))
    said: list[str] = []
    watch = TrialWatch(None, [RunHygiene(vs)], said.append)  # type: ignore[arg-type]
    published: list[list[dict]] = []
    watch.publish = published.append
    result = TrialResult(0, 2, "ok", PhaseTimes(steady_start=100.0, steady_end=110.0))
    assert watch.check_trial(NS(index=0), result) is result  # type: ignore[arg-type]
    # vc1 answered (nothing happened there): only vc2 was not watched.
    assert said == ["point 1 trial 2: vCenter's events not read (vcenter vc2: connection "
                    "refused); the rest was watched"]
    assert published[-1][0]["action"] == "unread"
    assert published[-1][0]["text"] == "events not read: vcenter vc2: connection refused"


def test_a_vcenter_that_answered_still_counts_when_another_did_not(monkeypatch) -> None:
    """Two vCenters, vc2 not answering: vc1's vMotion in the steady window still disturbs
    the trial (it was dropped with vc2's error: 'not watched', never flagged); with
    neither answering the trial is not watched."""
    from types import SimpleNamespace as NS

    from vbench.engine import hygiene
    from vbench.engine.disturbances import TrialWatch
    from vbench.results.records import PhaseTimes, TrialResult

    moved = Disturbance(104.0, "migration", "vMotion of guest1 to esx2", "VmMigratedEvent",
                        "alice", "guest1")
    down: set[str] = {"vc2"}

    def read(session: str, *_a: object, **_k: object) -> list[Disturbance]:
        if session in down:
            raise ConnectionRefusedError("connection refused")
        return [moved]

    monkeypatch.setattr(hygiene, "read_disturbances", read)
    vs = NS(scenario=NS(lab_hygiene=None, disturbance=None), vcenters=["vc1", "vc2"],
            lab=NS(vcenters={"vc1": NS(user="u"), "vc2": NS(user="u")}), journal=None,
            workload_vcenters=[], vms=[], inventories={}, extra_testbed={},
            sessions=NS(get=lambda vc: vc))
    said: list[str] = []
    watch = TrialWatch(None, [hygiene.RunHygiene(vs)], said.append)  # type: ignore[arg-type]
    result = TrialResult(0, 1, "ok", PhaseTimes(steady_start=100.0, steady_end=110.0))
    assert watch.check_trial(NS(index=0), result) is result  # type: ignore[arg-type]
    assert [(d["action"], d["text"]) for d in watch.disturbed] == [
        ("unread", "events not read: vcenter vc2: connection refused"),
        ("flag", watch.disturbed[1]["text"])]
    assert watch.disturbed[1]["text"].startswith("vMotion of guest1 to esx2 at ")
    down.add("vc1")
    watch.check_trial(NS(index=0), TrialResult(0, 2, "ok", PhaseTimes(  # type: ignore[arg-type]
        steady_start=100.0, steady_end=110.0)))
    assert [d["action"] for d in watch.disturbed[2:]] == ["unread"]
    assert said[-1].endswith("; the trial is kept, not watched")


def test_an_undo_that_cannot_reach_vcenter_is_said_and_the_rest_goes_on(tmp_path) -> None:
    """A socket error (vCenter gone) during the undo at a run's end: journaled
    undo_failed, said with the vCenter, and the next change still undone. It raised
    ConnectionResetError out of the run's clean-up, before the run's VMs were removed."""
    from vbench.vsphere.hygiene_tune import TuneJournal, undo_pending

    journal = TuneJournal.in_dir(tmp_path)
    for n, vc in ((1, "vc1"), (2, "vc2")):
        journal.append({"id": f"t{n}", "kind": "power_policy", "vcenter": vc,
                        "target": "esx1", "vm": None, "current": "balanced",
                        "wanted": "high-performance", "state": "applied"})
    asked: list[str] = []

    def session_of(vc: str) -> object:
        asked.append(vc)
        raise ConnectionResetError(f"{vc} reset the connection")

    done, errors = undo_pending(session_of, journal, lambda vc: lambda *_a: None)
    assert asked == ["vc2", "vc1"] and done == []
    assert errors[0] == ("lab tune undo on vcenter vc2: host esx1: power policy "
                         "high-performance (now balanced): vc2 reset the connection")
    assert [r["state"] for r in journal.read()][-2:] == ["undo_failed", "undo_failed"]


def test_a_resumed_run_keeps_the_disturbances_of_the_trials_it_keeps(tmp_path) -> None:
    """The earlier session's disturbed trial 1 is kept by the resumed run: its flag stays
    in the testbed (and so in the verdict's warnings); trial 2 runs again, so what was
    found in its interrupted attempt is not. The testbed held only the new session's."""
    import json

    from vbench.engine.disturbances import DISTURBANCES_FILE, TrialWatch

    entries = [{"id": f"point 1 trial {t} #{t}", "point": 0, "trial": t, "action": "flag",
                "text": f"vMotion of g1 on esx1 at 12:00:0{t}", "events": []} for t in (1, 2)]
    (tmp_path / DISTURBANCES_FILE).write_text(
        "".join(json.dumps(e) + "\n" for e in entries) + '{"id": "cut sh')
    watch = TrialWatch(None, [])
    testbed: dict = {}
    watch.publish = lambda found: testbed.update(disturbances=found)
    watch.resumed(tmp_path, {(0, 1)})
    assert testbed["disturbances"] == [entries[0]]
    assert hygiene_warnings({"testbed": testbed}) == [
        "point 1 trial 1 disturbed: vMotion of g1 on esx1 at 12:00:01 (kept in the "
        "statistics)"]


def test_a_change_whose_apply_failed_is_still_looked_at_by_the_undo(tmp_path) -> None:
    """An apply that failed while vbench waited for vCenter's task (Ctrl-C, a timeout)
    may have been made: the undo looks at it (and leaves it when it was not made:
    undo_step 'already'). It was dropped from the undo, so an override made anyway on a
    `vm: existing` VM stayed."""
    from vbench.vsphere.hygiene_tune import TuneJournal

    journal = TuneJournal.in_dir(tmp_path)
    rec = {"id": "t1", "kind": "drs_override", "vcenter": "vc1", "target": "C1",
           "vm": "db1", "current": None, "wanted": "manual"}
    journal.append({**rec, "state": "applying"})
    journal.append({**rec, "state": "apply_failed", "error": "interrupted by the user"})
    assert [p["state"] for p in journal.pending()] == ["apply_failed"]
    journal.append({**rec, "state": "undone", "note": "already as recorded"})
    assert journal.pending() == []


def test_a_task_running_through_the_window_is_asked_for() -> None:
    """A relocation started before the steady window and still running after it: the
    window's query by start time misses it; the tasks in progress started before the
    window are added (those started in it come from the window's query)."""
    import datetime as dt
    from types import SimpleNamespace as NS

    from vbench.vsphere.hygiene_events import started_before

    begin = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    long_one = NS(state="running", startTime=begin - dt.timedelta(minutes=3))
    inside = NS(state="running", startTime=begin + dt.timedelta(seconds=5))
    queued = NS(state="queued", startTime=None)
    assert started_before([long_one, inside, queued], begin) == [long_one]


def test_a_task_that_ended_inside_the_window_ran_into_it() -> None:
    """Tasks asked for from before the window are kept when they ran in it: started in
    it, still running, or ended inside it; not when they ended before it or are queued.
    Each task is said once, and one that started before says how it reached in."""
    import datetime as dt
    from types import SimpleNamespace as NS

    from vbench.vsphere.hygiene_events import Disturbance, disturbance_text, once, ran_into

    begin = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    sec = dt.timedelta(seconds=1)
    ended_inside = NS(key="a", startTime=begin - 30 * sec, completeTime=begin + 4 * sec)
    ended_before = NS(key="b", startTime=begin - 30 * sec, completeTime=begin - sec)
    running = NS(key="c", startTime=begin - 30 * sec, completeTime=None)
    started_in = NS(key="d", startTime=begin + 2 * sec, completeTime=begin + 3 * sec)
    queued = NS(key="e", startTime=None, completeTime=None)
    got = ran_into([ended_inside, ended_before, running, started_in, queued], begin)
    assert got == [ended_inside, running, started_in]
    assert once([running, started_in, running]) == [running, started_in]
    at = begin.timestamp() - 30
    d = Disturbance(at, "snapshot", "snapshot operation on db1 (removeSnapshot) (ended 4 s "
                    "into the steady window)", "VirtualMachine.removeSnapshot")
    text = disturbance_text(d, begin.timestamp())
    assert text.endswith(", 30 s before the steady window"), text


def test_lab_check_says_the_run_tunes_drs_and_power_policy_not_that_they_are_waived() -> None:
    """`lab_hygiene: {drs: manual, power_policy: high-performance, tune: true}`: lab check
    said '(waived: lab_hygiene.drs: ignore)' of what the user required. The run tunes
    them before judging: lab check says so. A policy vCenter does not report cannot be
    tuned: it is judged as the run will judge it. A check the user waived stays waived."""
    from vbench.engine.lab_tune import tuned_by_the_run

    spec = LabHygiene(drs="manual", power_policy="high-performance", tune=True)
    cluster = r.ClusterFacts("C1", drs_enabled=True)
    balanced_host = r.HostFacts("h1", power_policy="dynamic")
    found = [r.drs(spec, cluster, []), r.power_policy(spec, balanced_host),
             r.power_policy(spec, r.HostFacts("h2")), r.host_state(spec, r.HostFacts("h3"))]
    drs, balanced, unknown, state = tuned_by_the_run(found, spec)
    for f in (drs, balanced):
        assert f.level == "ok" and "waived" not in f.detail
        assert f.detail.endswith(" (the run tunes it first: lab_hygiene.tune)")
    assert balanced.state == "balanced"  # the lab as it is now
    assert (unknown, state) == (found[2], found[3]) and unknown.level == "fail"
    waived = LabHygiene(drs="ignore", tune=True)
    assert tuned_by_the_run([r.drs(waived, cluster, [])], waived)[0].detail.endswith(
        "(waived: lab_hygiene.drs: ignore)")
    untuned = spec.model_copy(update={"tune": False})
    assert tuned_by_the_run(found, untuned) == found
