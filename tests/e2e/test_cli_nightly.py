"""The nightly path end to end: `vbench run --fail-on-qos --check-regression --json`
with real fio on the loopback guests, then compare, history, baseline and exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import vbench, write_lab, write_scenario

pytestmark = pytest.mark.e2e

QOS = """qos:
  - {metric: read_clat_p99_max, op: "<=", threshold: 10, unit: s}
  - {name: impossible, metric: total_iops, op: ">=", threshold: 1e12}
derived:
  - {name: bw_vs_4k, kind: normalize, metric: total_bw, baseline: {bs: 4k}}
"""


def test_nightly_exit_statuses_and_reports(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", steady="1s", warmup="0s", repeat=3, extra=QOS)
    first = vbench("run", str(s), "--lab", str(lab), "--tag", "nightly", "--fail-on-qos",
                   "--check-regression", "--json")
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-2000:]  # "impossible"
    doc = json.loads(first.stdout)  # stdout holds the JSON document only
    assert doc["exit_code"] == 1 and doc["status"] == "ok"
    assert doc["regression"]["skipped"] is True  # first night: no baseline, no failure
    assert {c["criterion"]: c["status"] for c in doc["qos"]["checks"]}["impossible"] == "fail"
    p4k = next(p for p in doc["points"] if p["labels"] == {"bs": "4k"})
    assert p4k["figures"]["total_iops"]["n"] == 3
    assert p4k["figures"]["bw_vs_4k"]["mean"] == pytest.approx(1.0)
    assert "QoS FAIL" in first.stderr and Path(doc["report"]).is_file()
    html = Path(doc["report"]).read_text()
    assert 'id="qos"' in html and 'id="derived"' in html and "not checked" in html

    # A throttled run against the first one: a significant regression, exit 1.
    second = vbench("run", str(s), "--lab", str(lab), "--set",
                    "workload.params.rate_iops=300", f"--check-regression={doc['run_id']}",
                    "--json")
    # (3 would mean a trial failed: the JSON's warnings say which and why.)
    assert second.returncode == 1, second.stdout[-3000:] + second.stderr[-2000:]
    reg = json.loads(second.stdout)["regression"]
    assert reg["regressed"] is True and reg["baseline"] == [doc["run_id"]]
    worse = {(c["point"], c["metric"]) for c in reg["checks"] if c["status"] == "regression"}
    assert ("bs=4k", "total_iops") in worse
    run2 = json.loads(second.stdout)["run_id"]

    # The second run recorded what makes it comparable: its --set, and the scenario
    # file's hash without it (the first run's scenario hash).
    listed = {r["run_id"]: r for r in json.loads(vbench("ls", "--json").stdout)}
    assert listed[run2]["overrides"] == ["workload.params.rate_iops=300"]
    assert listed[run2]["base_scenario_hash"] == listed[doc["run_id"]]["scenario_hash"]
    assert listed[run2]["scenario_hash"] != listed[doc["run_id"]]["scenario_hash"]
    assert "the baseline and this run differ:" in second.stderr
    assert "    + workload.params.rate_iops: 300" in second.stderr

    cmp = vbench("compare", doc["run_id"], run2, "--metric", "total_iops")
    assert cmp.returncode == 0 and "worse" in cmp.stdout
    assert "  + workload.params.rate_iops: 300" in cmp.stdout
    assert "--set in B: workload.params.rate_iops=300" in cmp.stdout
    assert "\nlab: same (" in cmp.stdout  # one lab, described the same way
    hist = vbench("history", "e2e-fio", "--metric", "total_iops", "--metric", "bw_vs_4k")
    assert hist.returncode == 0 and hist.stdout.count("\n20") >= 4
    assert f"\n{run2} +" in hist.stdout and "bw_vs_4k: no data" not in hist.stdout
    same = vbench("history", "e2e-fio", "--same-scenario", "--metric", "total_iops")
    assert run2 in same.stdout and doc["run_id"] not in same.stdout
    trend = tmp_path / "trend.html"
    res = vbench("report", "--history", "e2e-fio", "-o", str(trend))
    assert res.returncode == 0 and trend.read_text().count('class="chart"') >= 2
    assert vbench("baseline", "set", run2).returncode == 0
    assert run2 in vbench("baseline", "show", "e2e-fio").stdout
    junit = tmp_path / "r.xml"
    res = vbench("report", run2, "--baseline", doc["run_id"], "-o", str(junit))
    assert res.returncode == 0 and "<failure" in junit.read_text()
