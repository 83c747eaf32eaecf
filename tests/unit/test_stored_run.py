"""A stored run read back typed: what an older version left out stays missing."""

from __future__ import annotations

from vbench.results.stored import StoredRun

FULL = {
    "run_id": "r1",
    "scenario_name": "dedup",
    "status": "ok",
    "started": 100.0,
    "ended": 160.5,
    "tags": ["nightly"],
    "headline": ["iops", "lat_p99"],
    "lab": {"name": "lab-a"},
    "lab_fingerprint": "abc",
    "vbench_version": "0.1.0",
    "scenario": {
        "name": "dedup",
        "report": {"title": "Dedup", "headline": ["bw"], "better": {"lat": "lower", "x": "up"},
                   "charts": [{"metric": "iops", "x": "bs"}]},
        "settings": {"cv_threshold": 0.1},
        "phases": {"warmup": 10, "steady": 60, "cooldown": 5},
        "repeat": 3,
        "factors": {"bs": {"levels": [{"label": "4k"}, {"label": "64k"}]}},
        "topology": {"target": {"count": 2, "nodes": ["g1", "g2"]}},
        "workload": {"driver": "fio", "params": {"rw": "randread"}},
        "collectors": [{"kind": "esxtop"}, {"interval": 2}],
    },
    "environment": {
        "controller": {"hostname": "ctl", "command": "vbench run x.yaml"},
        "guests": {"g1": {"clock_offset_s": 0.25, "tools": {"fio": "3.33"}},
                   "g2": {"clock_offset_s": None}},
    },
}


def test_a_full_record_reads_typed() -> None:
    run = StoredRun.of(FULL)
    assert run.headline == ("iops", "lat_p99")  # stored with the run wins
    assert run.title == "Dedup" and run.duration == 60.5 and run.lab_name == "lab-a"
    sc = run.scenario
    assert sc.better == {"lat": "lower"}  # an unknown direction is ignored
    assert sc.cv_threshold == 0.1 and sc.repeat == 3 and sc.driver == "fio"
    assert sc.phases == {"warmup": 10.0, "steady": 60.0, "cooldown": 5.0}
    assert [(f.name, f.levels, f.path) for f in sc.factors] == [
        ("bs", ("4k", "64k"), "workload.params.bs")
    ]
    assert [(g.name, g.count, g.nodes) for g in sc.topology] == [("target", 2, ("g1", "g2"))]
    assert sc.collector_kinds == ["esxtop"]
    g1, g2 = run.environment.guests
    assert g1.clock_offset_s == 0.25 and g1.tools == {"fio": "3.33"}
    assert g2.clock_offset_s is None and not g2.clock_offset_measured
    assert run.environment.command == "vbench run x.yaml"


def test_an_old_or_partial_record_stays_missing_not_zero() -> None:
    run = StoredRun.of({"run_id": "r0", "scenario": {"report": {"headline": ["bw"]}}})
    assert run.headline == ("bw",)  # before schema 3: the scenario's own headline
    assert run.started is None and run.ended is None and run.duration is None
    assert run.scenario.phases == {"warmup": None, "steady": None, "cooldown": None}
    assert run.scenario.repeat is None and run.scenario.driver is None
    assert run.scenario.cv_threshold == 0.05  # the documented default, not a reading
    assert run.environment.guests == [] and run.environment.hostname is None
    assert run.lab_name is None and run.testbed is None
    assert StoredRun.of({}).headline == ()
