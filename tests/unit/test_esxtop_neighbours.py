"""Busy VMs that are not the run's, read from esxtop's VM groups: which group is a VM,
which VM is the benchmark's, the threshold, the text — and the trial watch that turns
them into disturbances (flag, fail, retry, recorded)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace as NS

import pandas as pd
import pytest

from tests.corpus import SHARED, need
from vbench.collectors.esxtop.neighbours import (
    Benchmarks,
    VmCpu,
    busy_neighbours,
    neighbour_event,
    neighbour_text,
    vm_cpu,
    vm_of_group,
    vms_shown,
)
from vbench.config.hygiene import DisturbanceSpec
from vbench.engine.disturbances import DISTURBANCES_FILE, Said, TrialWatch
from vbench.results.records import PhaseTimes, TrialResult, Window

RECORDING = SHARED / "esxtop" / "rach-sharp_esxtopd__esxtop-data.csv"


def test_only_the_vm_groups_of_a_real_recording_are_vms() -> None:
    """The recorded host's groups: system ones, user worlds (<name>.<pid>) and six VMs."""
    from vbench.parsers.esxtop import EsxtopReader

    with EsxtopReader(need(RECORDING), ["Group Cpu(*)\\% Used"]) as reader:
        instances = [c.instance for c in reader.columns]
    assert "1:system" in instances and "10851:vpxa.67409" in instances
    vms = {vm_of_group(i) for i in instances} - {None}
    assert vms == {"styx", "portunus", "hermes", "ananke", "ouranos", "poseidon"}
    assert vm_of_group("0:idle") is None and vm_of_group("11:vmotion") is None
    assert vm_of_group("1456375:sshd.489601") is None
    assert vm_of_group("77:db01.example.com") == "db01.example.com"
    assert vm_of_group("77:vm (copy)") == "vm (copy)"
    assert vm_of_group("poseidon") is None and vm_of_group("x:poseidon") is None


def _frame(rows: list[tuple[float, str, float]]) -> pd.DataFrame:
    return pd.DataFrame({"time": [r[0] for r in rows], "object": "Group Cpu",
                         "instance": [r[1] for r in rows], "counter": "% Used",
                         "value": [r[2] for r in rows], "unit": "%"})


def test_a_vms_cpu_is_its_mean_and_peak_over_the_steady_window() -> None:
    frame = _frame([
        (100.0, "5:poseidon", 90.0),  # covers 98-100: before the window
        (104.0, "5:poseidon", 40.0), (106.0, "5:poseidon", 80.0), (108.0, "5:poseidon", 30.0),
        (106.0, "7:styx", 1.0), (106.0, "1:system", 300.0), (106.0, "9:hostd.1234", 50.0),
        (106.0, "8:styx", 2.5),  # styx powered on again: a second group, same VM
        (112.0, "5:poseidon", 99.0),  # after the window
    ])
    got = {u.vm: u for u in vm_cpu(frame, "esx1", Window(102.0, 108.0), 2.0)}
    assert set(got) == {"poseidon", "styx"}
    p = got["poseidon"]
    assert (p.host, p.mean, p.peak, p.peak_at) == ("esx1", pytest.approx(50.0), 80.0, 106.0)
    # styx has values at 106 only (two groups: 3.5), none at 104 and 108: it used 0 there.
    assert got["styx"].mean == pytest.approx(3.5 / 3)


def test_a_vm_absent_from_part_of_the_window_uses_no_cpu_there() -> None:
    """A VM powered on for the window's last sample only (empty cells before: esxtop's
    columns are fixed when it starts) did not use 90 % of a core over the window."""
    nan = float("nan")
    frame = _frame([(t, "1:system", 50.0) for t in (104.0, 106.0, 108.0, 110.0)]
                   + [(104.0, "5:poseidon", nan), (106.0, "5:poseidon", nan),
                      (108.0, "5:poseidon", nan), (110.0, "5:poseidon", 90.0)])
    (p,) = vm_cpu(frame, "esx1", Window(102.0, 110.0), 2.0)
    assert (p.vm, p.mean, p.peak, p.peak_at) == ("poseidon", pytest.approx(22.5), 90.0, 110.0)


def test_a_vm_named_like_a_user_world_is_a_vm_when_the_capture_shows_its_disks() -> None:
    """``ubuntu-22.04`` ends in .<digits> as ``hostd.66694`` does; its virtual disks (or
    its vmx world) say it is a VM."""
    assert vm_of_group("9:ubuntu-22.04") is None  # nothing else known: a user world
    shown = vms_shown([("Virtual Disk", "ubuntu-22.04"), ("Virtual Disk", "web.01:scsi0:0"),
                       ("Vcpu", "12:db 2.1:4448:vmx"), ("Vcpu", "5481:hostd.66694:66694:hostd"),
                       ("Group Cpu", "13:vm.7")])
    assert shown == {"ubuntu-22.04", "web.01", "db 2.1"}
    assert [vm_of_group(g, shown) for g in ("9:ubuntu-22.04", "10:web.01", "12:db 2.1",
                                            "5481:hostd.66694", "13:vm.7")] == [
        "ubuntu-22.04", "web.01", "db 2.1", None, None]
    frame = pd.concat([_frame([(106.0, "9:ubuntu-22.04", 80.0), (106.0, "5:hostd.66694", 9.0)]),
                       _frame([(106.0, "ubuntu-22.04:scsi0:0", 0.4)]).assign(
                           object="Virtual Disk", counter="Average MilliSec/Read")])
    assert [u.vm for u in vm_cpu(frame, "esx1", Window(102.0, 106.0), 2.0)] == ["ubuntu-22.04"]


def test_the_benchmarks_vms_are_never_neighbours() -> None:
    clones = ["vb-20260101-000000-abcd1234-web-1"]
    own = Benchmarks(lambda: {"guest1-vm", *clones}, ("vb-20260101-000000-abcd1234-",),
                     ("vCLS-*",))
    assert own.owns("guest1-vm") and own.owns("vb-20260101-000000-abcd1234-web-2")
    assert own.owns("vcls-4a1b") and own.owns("vCLS-4a1b")
    assert not own.owns("vb-20250101-000000-ffff0000-web-1")  # another run's clone
    assert not own.owns("poseidon") and not own.owns("guest1")
    # A name typed in the lab file (a node's vm:, default its name) as ignore patterns
    # are: node perf-db-01 is the VM vCenter and esxtop show as PERF-DB-01.
    assert Benchmarks(lambda: {"perf-db-01"}).owns("PERF-DB-01")


def test_a_neighbour_over_the_threshold_disturbs_and_is_said() -> None:
    used = [VmCpu("poseidon", "esx1", 48.4, 97.2, 1_700_000_000.0),
            VmCpu("styx", "esx1", 300.0, 400.0, 1_700_000_000.0),
            VmCpu("hermes", "esx1", 20.0, 21.0, 1_700_000_000.0),
            VmCpu("ananke", "esx2", 60.0, 70.0, 1_700_000_002.0)]
    own = Benchmarks(lambda: {"styx"})
    busy = busy_neighbours(used, own, 20.0)
    assert [u.vm for u in busy] == ["ananke", "poseidon"]  # busiest first; 20 is not > 20
    text = neighbour_text(busy[1])
    # The controller's local time, as vCenter events are said.
    clock_text = dt.datetime.fromtimestamp(1_700_000_000.0).strftime("%H:%M:%S")
    assert text == ("VM poseidon used 48 % of a core on esx1 in the steady window (mean; "
                    f"peak 97 % at {clock_text})")
    assert neighbour_event(busy[1]) == {"at": 1_700_000_000.0, "kind": "cpu",
                                        "what": "VM poseidon used 48 % of a core on esx1",
                                        "source": "esxtop", "user": None, "about": "poseidon"}


def test_the_disturbance_settings_and_their_defaults() -> None:
    spec = DisturbanceSpec()
    assert (spec.other_vm_cpu, spec.ignore, spec.watch) == (20.0, [], True)
    spec = DisturbanceSpec.model_validate({"action": "fail", "ignore": ["vCLS-*", "infra?"]})
    assert spec.ignores("VCLS-1") and spec.ignores("infra1") and not spec.ignores("infra12")
    with pytest.raises(ValueError):
        DisturbanceSpec.model_validate({"other_vm_cpu": 0})


class _Found:
    """A source that finds what it is given (the generic watch's own logic is tested)."""

    name, what, noun = "test", "the test's source", "test"

    def __init__(self, *found: Said, fails: bool = False) -> None:
        self.found, self.fails = list(found), fails

    def __call__(self, result: TrialResult, window: tuple[float, float]) -> list[Said]:
        if self.fails:
            raise OSError("no answer")
        return self.found


def _trial(trial: int = 1) -> TrialResult:
    return TrialResult(0, trial, "ok", PhaseTimes(steady_start=100.0, steady_end=110.0))


BUSY = Said(105.0, "VM poseidon used 48 % of a core on esx1 …",
            {"at": 105.0, "kind": "cpu", "what": "x", "source": "esxtop", "user": None,
             "about": "poseidon"})
MOVED = Said(101.0, "vMotion of g1 …", {"at": 101.0, "kind": "migration"})


@pytest.mark.parametrize(("action", "kept"), [("flag", "ok"), ("fail", "failed")])
def test_a_disturbed_trial_is_flagged_or_failed_and_recorded(tmp_path: Path, action: str,
                                                             kept: str) -> None:
    watch = TrialWatch(DisturbanceSpec(action=action), [_Found(BUSY), _Found(MOVED)])
    watch.run_dir = tmp_path
    published: list[list[dict]] = []
    watch.publish = published.append
    result = watch.check_trial(NS(index=0), _trial())  # type: ignore[arg-type]
    assert result is not None and result.status == kept
    entry = published[-1][0]
    # Both sources' findings, in time order, in one record of the attempt.
    assert entry["text"] == "vMotion of g1 …; VM poseidon used 48 % of a core on esx1 …"
    assert [e["kind"] for e in entry["events"]] == ["migration", "cpu"]
    assert entry["action"] == action and (entry["point"], entry["trial"]) == (0, 1)
    if action == "fail":
        assert result.error == f"disturbed: {entry['text']}"
    lines = (tmp_path / DISTURBANCES_FILE).read_text().splitlines()
    assert [json.loads(x) for x in lines] == published[-1]


def test_a_flagged_trial_is_said_when_it_ends() -> None:
    """disturbance: flag — the live output said nothing until the run's summary (its
    trial line reads 'ok'), while retry and fail said it at once (seen on vcsim)."""
    said: list[str] = []
    watch = TrialWatch(DisturbanceSpec(action="flag"), [_Found(MOVED)], said.append)
    assert watch.check_trial(NS(index=0), _trial(2)) is not None  # type: ignore[arg-type]
    assert said == ["point 1 trial 2 disturbed: vMotion of g1 …; flagged, kept in the "
                    "statistics"]


def test_a_disturbed_trial_runs_again_until_its_retries_are_spent() -> None:
    said: list[str] = []
    watch = TrialWatch(DisturbanceSpec(action="retry", retries=2), [_Found(BUSY)], said.append)
    point = NS(index=0)
    assert watch.check_trial(point, _trial()) is None  # type: ignore[arg-type]
    assert watch.check_trial(point, _trial()) is None  # type: ignore[arg-type]
    kept = watch.check_trial(point, _trial())  # type: ignore[arg-type]
    assert kept is not None and kept.status == "ok"
    assert [d["action"] for d in watch.disturbed] == ["retried", "retried", "flag"]
    assert said[0].endswith("; running it again (1 of 2)")
    # Another trial has its own count.
    assert watch.check_trial(point, _trial(2)) is None  # type: ignore[arg-type]


def test_a_resumed_run_counts_the_attempts_its_earlier_session_ran_again(tmp_path: Path
                                                                         ) -> None:
    """Session 1 ran trial 2 again once (retries: 2), then was interrupted. The resumed
    session has one retry left, not two, keeps the record of the attempt set aside (the
    kept trial's history) but not the interrupted attempt's, and numbers its records
    after the file's (an id repeated made one hide the other in compare's facts)."""
    old = [{"id": "point 1 trial 1 #1", "point": 0, "trial": 1, "action": "flag"},
           {"id": "point 1 trial 2 #2", "point": 0, "trial": 2, "action": "retried"},
           {"id": "point 1 trial 2 #3", "point": 0, "trial": 2, "action": "unread"}]
    (tmp_path / DISTURBANCES_FILE).write_text("".join(json.dumps(e) + "\n" for e in old))
    said: list[str] = []
    watch = TrialWatch(DisturbanceSpec(action="retry", retries=2), [_Found(BUSY)], said.append)
    watch.run_dir = tmp_path
    watch.resumed(tmp_path, {(0, 1)})
    assert [d["id"] for d in watch.disturbed] == ["point 1 trial 1 #1", "point 1 trial 2 #2"]
    point = NS(index=0)
    assert watch.check_trial(point, _trial(2)) is None  # type: ignore[arg-type]
    assert said[-1].endswith("; running it again (2 of 2)")
    kept = watch.check_trial(point, _trial(2))  # type: ignore[arg-type]
    assert kept is not None and kept.status == "ok"
    assert [(d["id"], d["action"]) for d in watch.disturbed[2:]] == [
        ("point 1 trial 2 #4", "retried"), ("point 1 trial 2 #5", "flag")]


def test_a_quiet_trial_is_kept_and_a_source_that_cannot_look_is_said() -> None:
    said: list[str] = []
    watch = TrialWatch(None, [_Found(), _Found(fails=True)], said.append)
    result = _trial()
    assert watch.check_trial(NS(index=0), result) is result  # type: ignore[arg-type]
    assert said == ["point 1 trial 1: the test's source not read (no answer); the trial is "
                    "kept, not watched"]
    assert [(d["action"], d["text"]) for d in watch.disturbed] == [("unread",
                                                                    "test not read: no answer")]
    off = TrialWatch(DisturbanceSpec(watch=False), [_Found(BUSY)])
    assert off.check_trial(NS(index=0), result) is result  # type: ignore[arg-type]
    assert off.disturbed == []


def test_the_collector_keeps_each_vms_cpu_and_its_figure_from_a_real_recording() -> None:
    """Group Cpu % Used is always read; the host's own groups and user worlds are kept
    only when the scenario asked for them, and every VM gets vm_cpu_used per host."""
    from vbench.collectors.esxtop import BASE_COUNTERS, tidy_frame, without_unasked_groups
    from vbench.collectors.esxtop.figures import host_figures
    from vbench.parsers.esxtop import EsxtopReader

    def groups(counters: list[str]) -> tuple[set[str], pd.DataFrame]:
        with EsxtopReader(need(RECORDING), [*counters, *BASE_COUNTERS],
                          require_match=False) as reader:
            frame = without_unasked_groups(tidy_frame(reader), reader, counters)
        cpu = frame[frame["object"].eq("Group Cpu") & frame["counter"].eq("% Used")]
        return set(cpu["instance"]), frame

    asked_other, frame = groups(["Memory\\Free MBytes"])
    assert {vm_of_group(i) for i in asked_other} == {"styx", "portunus", "hermes", "ananke",
                                                     "ouranos", "poseidon"}
    assert "Free MBytes" in set(frame["counter"])
    asked_cpu, _ = groups(["cpu"])
    assert {"1:system", "1456375:sshd.489601"} <= asked_cpu
    times = sorted(set(frame["time"]))
    figures = host_figures("esxtop", "esx1", frame, Window(times[0] - 5, times[-1]), 5.0)
    vm = {s.guest: s for s in figures if s.metric == "vm_cpu_used"}
    assert set(vm) == {"styx", "portunus", "hermes", "ananke", "ouranos", "poseidon"}
    assert vm["poseidon"].value == pytest.approx((5.83 + 6.11 + 5.18) / 3)
    assert (vm["poseidon"].unit, vm["poseidon"].labels) == ("% of a core", (("host", "esx1"),))


def test_a_recorded_vm_named_like_a_user_world_keeps_its_cpu_and_figure(tmp_path: Path
                                                                        ) -> None:
    """The real recording with its VM poseidon renamed ubuntu-22.04 (in every column, as
    esxtop would name it): the collector keeps its group and it gets vm_cpu_used."""
    from vbench.collectors.esxtop import BASE_COUNTERS, tidy_frame, without_unasked_groups
    from vbench.collectors.esxtop.figures import host_figures
    from vbench.parsers.esxtop import EsxtopReader

    copy = tmp_path / "renamed.csv"
    copy.write_bytes(need(RECORDING).read_bytes().replace(b"poseidon", b"ubuntu-22.04"))
    asked = ["Memory\\Free MBytes"]  # not the groups: the user worlds' are left out
    with EsxtopReader(copy, [*asked, *BASE_COUNTERS], require_match=False) as reader:
        frame = without_unasked_groups(tidy_frame(reader), reader, asked)
    assert "5481:hostd.66694" not in set(frame["instance"])
    times = sorted(set(frame["time"]))
    figures = host_figures("esxtop", "esx1", frame, Window(times[0] - 5, times[-1]), 5.0)
    vm = {s.guest: s.value for s in figures if s.metric == "vm_cpu_used"}
    assert set(vm) == {"styx", "portunus", "hermes", "ananke", "ouranos", "ubuntu-22.04"}
    assert vm["ubuntu-22.04"] == pytest.approx((5.83 + 6.11 + 5.18) / 3)


def test_the_esxtop_source_reads_the_trials_stored_series(tmp_path: Path) -> None:
    """BusyNeighbours reads series/<point>-<trial>/ as the collectors stored it."""
    from vbench.engine.neighbours import BusyNeighbours
    from vbench.results.collected import CollectorRecord, write_manifest, write_series

    frame = pd.concat([
        _frame([(104.0, "5:poseidon", 40.0), (106.0, "5:poseidon", 60.0),
                (106.0, "7:styx", 300.0), (106.0, "1:system", 90.0),
                (104.0, "8:web.01", 50.0), (106.0, "8:web.01", 50.0),
                (104.0, "9:hostd.6694", 80.0), (106.0, "9:hostd.6694", 80.0)]),
        # web.01's disk: a VM, though named like a user world (hostd.6694 is one).
        _frame([(106.0, "web.01:scsi0:0", 0.4), (106.0, "web.01", 0.4)]).assign(
            object="Virtual Disk", counter="Average MilliSec/Read")], ignore_index=True)
    frame["metric"] = "m"
    rel = "series/0-1/esxtop/esx1.parquet"
    write_series(tmp_path / rel, frame, source="esxtop", entity="esx1", point=0, trial=1,
                 metadata={})
    record = CollectorRecord("esxtop", "esxtop", "esx1", False, 2.0, file=rel)
    write_manifest(tmp_path / "series" / "0-1", [record])
    source = BusyNeighbours(tmp_path, Benchmarks(lambda: {"styx"}), 20.0)
    said = source(TrialResult(0, 1, "ok", PhaseTimes(steady_start=102.0, steady_end=106.0)),
                  (102.0, 106.0))
    assert [s.event["about"] for s in said] == ["poseidon", "web.01"]
    assert said[0].text.startswith("VM poseidon used 50 % of a core on esx1 in the steady "
                                   "window (mean; peak 60 % at ")
    assert source(_trial(2), (102.0, 106.0)) == []  # no collector ran in that trial


def test_a_host_esxtop_could_not_read_is_not_passed_as_undisturbed(tmp_path: Path) -> None:
    """Three hosts: esx1's esxtop failed, esx2's has no sample in the steady window, esx3's
    shows a busy neighbour. The trial is flagged for esx3 and said not watched for the
    other two (one record each), never quiet."""
    from vbench.engine.neighbours import BusyNeighbours
    from vbench.results.collected import CollectorRecord, write_manifest, write_series

    # esx3 has a second esxtop that failed: the host is read all the same.
    records = [CollectorRecord("esxtop", "esxtop", h, False, 2.0, status="failed",
                               error="esxtop not found on the host") for h in ("esx1", "esx3")]
    for host, t in (("esx2", 130.0), ("esx3", 106.0)):
        frame = _frame([(t, "5:poseidon", 60.0)])
        frame["metric"] = "m"
        rel = f"series/0-1/esxtop/{host}.parquet"
        write_series(tmp_path / rel, frame, source="esxtop", entity=host, point=0, trial=1,
                     metadata={})
        records.append(CollectorRecord("esxtop", "esxtop", host, False, 2.0, file=rel))
    write_manifest(tmp_path / "series" / "0-1", records)
    said: list[str] = []
    watch = TrialWatch(None, [BusyNeighbours(tmp_path, Benchmarks(), 20.0)], said.append)
    result = TrialResult(0, 1, "ok", PhaseTimes(steady_start=102.0, steady_end=108.0))
    assert watch.check_trial(NS(index=0), result) is result  # type: ignore[arg-type]
    assert [(d["action"], d["text"]) for d in watch.disturbed] == [
        ("unread", "VM CPU not read: esxtop on esx1 failed: esxtop not found on the host; "
                   "esxtop on esx2: no sample in the 6 s steady window (a sample covers "
                   "the 2 s before it)"),
        ("flag", watch.disturbed[1]["text"])]
    assert watch.disturbed[1]["text"].startswith("VM poseidon used 60 % of a core on esx3")
    assert said[0].endswith("; the rest was watched")


def test_the_benchmarks_vms_of_a_run() -> None:
    """Lab nodes by their `vm:` (default their name), `vm: existing` names, the run's
    VMs as they are now, the clones' prefixes, and disturbance.ignore."""
    from vbench.config.lab import Lab
    from vbench.engine.neighbours import benchmarks_of

    lab = Lab.model_validate({"version": 1, "name": "l", "nodes": {
        "guest1": {"address": "127.0.0.2", "vm": "web-vm"}, "guest2": {"address": "127.0.0.3"},
        "guest3": {"address": "127.0.0.4"}}})
    scenario = NS(name="s1", disturbance=DisturbanceSpec(ignore=["vCLS-*"]),
                  topology={"db": NS(vm=NS(existing=["db-vm"])), "web": NS(vm=None)})
    vms = [NS(vm_name="vb-RUN-app-1")]
    own = benchmarks_of(scenario, lab, "RUN", ["guest1", "guest2"],  # type: ignore[arg-type]
                        lambda: vms)
    assert [own.owns(v) for v in ("web-vm", "guest2", "db-vm", "vb-RUN-app-1",
                                  "vb-RUN-app-9", "vb-keep-s1-app-1", "vCLS-7")] == [True] * 7
    assert not any(own.owns(v) for v in ("guest1", "guest3", "vb-OTHER-app-1", "x"))
    vms.append(NS(vm_name="later-vm"))
    assert own.owns("later-vm")


def test_the_esxtop_source_knows_a_vm_named_like_a_user_world_by_its_stored_vmx_world(
        tmp_path: Path) -> None:
    """A VM without a virtual disk, named ``web.01`` as a user world would be: its vmx
    world (``Vcpu(<id>:web.01:<world>:vmx)``, stored when Vcpu counters are selected)
    says it is a VM, to the watch as to its ``vm_cpu_used`` figure (vm_cpu reads both)."""
    from vbench.engine.neighbours import BusyNeighbours
    from vbench.results.collected import CollectorRecord, write_manifest, write_series

    frame = pd.concat([
        _frame([(104.0, "8:web.01", 50.0), (106.0, "8:web.01", 50.0),
                (104.0, "9:hostd.6694", 80.0), (106.0, "9:hostd.6694", 80.0)]),
        _frame([(106.0, "8:web.01:4448:vmx", 0.2)]).assign(object="Vcpu")],
        ignore_index=True)
    frame["metric"] = "m"
    rel = "series/0-1/esxtop/esx1.parquet"
    write_series(tmp_path / rel, frame, source="esxtop", entity="esx1", point=0, trial=1,
                 metadata={})
    write_manifest(tmp_path / "series" / "0-1",
                   [CollectorRecord("esxtop", "esxtop", "esx1", False, 2.0, file=rel)])
    assert [u.vm for u in vm_cpu(frame, "esx1", Window(102.0, 106.0), 2.0)] == ["web.01"]
    said = BusyNeighbours(tmp_path, Benchmarks(), 20.0)(
        TrialResult(0, 1, "ok", PhaseTimes(steady_start=102.0, steady_end=106.0)),
        (102.0, 106.0))
    assert [s.event["about"] for s in said] == ["web.01"]
