"""The nightly path end to end: `vbench run --fail-on-qos --check-regression --json`
with real fio on the loopback guests, then compare, history, baseline and exports."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests, free_port
from tests.e2e.helpers import vbench, write_lab, write_scenario

ROOT = Path(__file__).resolve().parents[2]
NIGHTLY = ROOT / "examples" / "nightly" / "nightly.sh"

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
    # At one point at least: three 1 s trials of unthrottled fio on a loaded machine can
    # spread so wide that 300 IO/s is not significant at that point (a clean-clone run
    # beside other work found only bs=64k regressed; such trials of another e2e run read
    # 27,578 ± 84,106 IO/s).
    assert {m for _, m in worse} >= {"total_iops"}, reg["checks"]
    run2 = json.loads(second.stdout)["run_id"]
    # Its last line says why it exits 1, not "ok".
    last = second.stderr.strip().splitlines()[-1]
    assert last.startswith(f"run {run2}: ") and "significant regression (exit 1)" in last
    assert not last.startswith(f"run {run2}: ok")

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


# ----------------------------------------------------------- examples/nightly/nightly.sh


def _script_env(tmp: Path, **extra: str) -> dict[str, str]:
    """nightly.sh's environment: vbench is this checkout's, its home the test's."""
    wrapper = tmp / "vbench"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m vbench \"$@\"\n")
    wrapper.chmod(0o755)
    return {"PATH": os.environ["PATH"], "HOME": str(tmp), "VBENCH": str(wrapper),
            "VBENCH_HOME": os.environ["VBENCH_HOME"], "OUT": str(tmp / "out"), **extra}


def _tools(tmp: Path) -> Path:
    """A PATH of only what nightly.sh itself needs before vbench runs (no `mail`)."""
    tools = tmp / "tools"
    tools.mkdir()
    for name in ("bash", "dirname", "date", "mkdir", "flock", "grep", "python3", "cat"):
        found = shutil.which(name)
        assert found, f"{name} is needed by nightly.sh"
        (tools / name).symlink_to(found)
    return tools


def _nightly(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NIGHTLY)], capture_output=True, text=True, env=env, timeout=300)


def test_nightly_script_on_sqlite_with_the_local_lab_lock_and_mail(tmp_path: Path) -> None:
    port = free_port("127.0.0.11")
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({
        "version": 1, "name": "nightly-local",
        "local": {"addresses": ["127.0.0.11"], "port": port},
        "defaults": {"port": port, "key_file": "${vbench:lab/id_ed25519}",
                     "known_hosts": "${vbench:lab/known_hosts}", "host_key_policy": "strict",
                     "workdir": str(tmp_path / "guest-work")},
        "nodes": {"guest1": {"address": "127.0.0.11", "roles": ["storage"]}},
    }, sort_keys=False))
    s = write_scenario(tmp_path / "s.yaml", groups=1, steady="1s", warmup="0s", repeat=2,
                       factors="  bs: [4k]\n", extra=QOS)
    mailbox = tmp_path / "mailbox"
    fake_mail = tmp_path / "mailbin"
    fake_mail.mkdir()
    (fake_mail / "mail").write_text(f"#!/bin/bash\necho \"args: $*\" >> {mailbox}\n"
                                    f"cat >> {mailbox}\n")
    (fake_mail / "mail").chmod(0o755)
    env = _script_env(tmp_path, SCENARIO=str(s), LAB=str(lab), MAIL_TO="perf@example.com")
    assert "VBENCH_STORE" not in env  # SQLite, the default store

    # The first night: the local lab is started for it and stopped after; the impossible
    # QoS criterion fails it (exit 1), so the summary is mailed.
    night = _nightly({**env, "PATH": f"{fake_mail}:{env['PATH']}"})
    assert night.returncode == 1, night.stdout[-3000:] + night.stderr[-3000:]
    assert "QoS failure or REGRESSION" in night.stdout.strip().splitlines()[-1]
    out = tmp_path / "out"
    stamp = next(out.glob("*.json")).stem
    assert (out / f"{stamp}.xml").is_file() and (out / f"{stamp}.md").is_file()
    mail = mailbox.read_text()
    assert f"args: -s vbench nightly {stamp}: exit 1 perf@example.com" in mail
    assert (out / f"{stamp}.md").read_text() in mail
    assert vbench("lab", "status", str(lab)).returncode == 3  # stopped again
    assert (Path(env["VBENCH_HOME"]) / "results" / "vbench.db").is_file()  # SQLite

    # A night that finds the previous one still running leaves at once.
    with open(out / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        blocked = _nightly(env)
    assert blocked.returncode == 75, blocked.stdout + blocked.stderr
    assert "still runs" in blocked.stdout and len(list(out.glob("*.json"))) == 1

    # Asked to mail without a mail command: it says so (a broken scenario: nothing ran).
    (tmp_path / "bad.yaml").write_text("version: 1\nname: bad\n")
    nomail = _nightly({**env, "SCENARIO": str(tmp_path / "bad.yaml"), "LOCAL_LAB": "no",
                       "PATH": str(_tools(tmp_path))})
    assert nomail.returncode == 2, nomail.stdout + nomail.stderr
    assert "MAIL_TO is set but the mail command is not installed" in nomail.stdout
