"""dvdstore driver end to end against a *replay of a recorded DVD Store driver run*
(tests/tools/dvdstore_replay.py installed on the loopback guests as the driver command:
DVD Store's drivers are C# programs that cannot run here). The replay prints the real
console capture of the ds2 driver documentation at its recorded pace, time-scaled to the
--warmup_time/--run_time it is given, hard-wrapped Final line included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.corpus import SHARED, need
from tests.integration.test_iperf3_workload import totals
from tests.integration.test_redis_scaleout import live_groups, run
from tests.integration.test_redis_scaleout import write_lab as redis_lab
from vbench.guest.ssh import Guest
from vbench.report.build import render_report

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "tests" / "tools" / "dvdstore_replay.py"
DOC = SHARED / "dvdstore" / "dvdstore_ds21__ds2driver_doc.txt"
RECORDED_OPM = 147  # the capture's Final line


def recording() -> str:
    """The console run inside the driver documentation (prompt lines left out)."""
    lines = need(DOC).read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("C:\\ds2\\drivers> ds2"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("C:\\ds2"))
    return "\n".join(lines[start + 1:end]) + "\n"


def install_replay(guests: LocalGuests, folder: str) -> str:
    remote = f"{guests.sshd.workdir}/{folder}"
    with Guest(guests[0]) as g:
        g.put(REPLAY, f"{remote}/ds2webdriver")
        g.run(["chmod", "+x", f"{remote}/ds2webdriver"])
        g.put_text(recording(), f"{remote}/recording.txt")
    return remote


def scenario(path: Path, params: dict[str, Any], **extra: Any) -> Path:
    doc = {
        "version": 1,
        "name": "dvdstore-it",
        "topology": {"clients": {"nodes": ["guest1", "guest2"], "count": 2}},
        "workload": {"driver": "dvdstore", "params": params},
        "factors": {"mode": {"levels": [
            {"label": "Native", "set": {"workload.params.instances": 1}},
            {"label": "VM", "set": {"workload.params.instances": 2}}]}},
        "label": "{mode}-S",
        "repeat": 1,
        "phases": {"warmup": "3s", "steady": "3s"},
        "derived": [{"name": "vs_native", "kind": "normalize", "metric": "opm",
                     "baseline": {"mode": "Native"}}],
        "report": {"headline": ["vs_native", "opm", "rt_avg_ms"]},
    }
    doc.update(extra)
    doc = {k: v for k, v in doc.items() if v is not None}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_dvdstore_replay_opm_per_instance_summed_and_normalised(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    remote = install_replay(local_guests, "ds-replay")
    s = scenario(tmp_path / "s.yaml", {
        "command": [f"{remote}/ds2webdriver"], "targets": ["db1:3306", "db2"],
        "n_threads": 4, "db_size": "20GB", "think_time": 0.5, "virt_dir": "ds2",
        "page_type": "php", "detailed_view": False, "extra": {"pct_newmember": 10}})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    # Native: one instance per client guest (2); VM: two per guest (4).
    opm = totals(done, "opm")
    assert opm == {0: 2 * RECORDED_OPM, 1: 4 * RECORDED_OPM}
    assert totals(done, "opm_per_instance") == {0: RECORDED_OPM, 1: RECORDED_OPM}
    assert totals(done, "rt_avg_ms")[1] == 137 and totals(done, "rt_max_ms")[1] == 1205
    assert totals(done, "rollback_rate_pct")[0] == pytest.approx(100 * 5 / 150)
    df = done.samples
    per = df[(df.metric == "opm") & df.guest.notna()]
    assert len(per) == 6 and set(per.value) == {RECORDED_OPM}
    # The documented options, each one argument; the phases in minutes; targets round robin.
    calls = [c.split("\t") for c in (Path(remote) / "calls.log").read_text().splitlines()
             if "--target=" in c]
    assert len(calls) == 6
    assert {"--n_threads=4", "--db_size=20GB", "--think_time=0.5", "--warmup_time=0.05",
            "--run_time=0.05", "--detailed_view=N", "--pct_newmember=10"} <= set(calls[0])
    assert sorted(c[0] for c in calls).count("--target=db1:3306") == 3
    # The steady window began at the driver's Stats reset, after the warm-up lines.
    marks = {e["mark"]: e for e in done.events("phase_mark") if e.get("point") == 1}
    assert {"warmup_start", "steady_start", "steady_end"} <= set(marks)
    # The normalised figure and the label template reach the exports.
    from vbench.results.store import Store

    with Store.open(None, tmp_path / "results") as store:
        doc = json.loads(render_report(store, [done.outcome.run_id], "json"))
        html = render_report(store, [done.outcome.run_id], "html")
    agg = {(a["title"], a["metric"]): a for a in doc["runs"][0]["aggregates"]
           if a["point"] is not None}
    assert agg[("VM-S", "vs_native")]["mean"] == pytest.approx(2.0)
    assert agg[("Native-S", "opm")]["mean"] == 2 * RECORDED_OPM
    # The report leads with the normalised figure: first row of the headline table.
    head = html.split('class="results headline-figures"', 1)[1].split("</table>", 1)[0]
    first = head.split("<tbody>", 1)[1].split("</tr>", 1)[0]
    assert "vs_native" in first and "at VM-S" in first


def test_dvdstore_driver_failure_names_guest_and_stops_the_others(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    remote = install_replay(local_guests, "ds-replay-fail")
    s = scenario(tmp_path / "s.yaml", {"command": [f"{remote}/ds2webdriver"],
                                        "targets": ["db1", "unreachable"]})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status != "ok"
    text = json.dumps(done.log)
    assert "DVD Store driver 1 (unreachable) exited before the end of its warm-up" in text
    assert "Error connecting to unreachable" in text
    pids = {pid for e in done.events("dvdstore_started") for pid in e["pids"].values()}
    assert pids and not live_groups(pids)


def test_dvdstore_targets_default_to_the_databases_guests(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    remote = install_replay(local_guests, "ds-replay-db")
    s = scenario(tmp_path / "s.yaml", {"command": [f"{remote}/ds2webdriver"]},
                 topology={"clients": {"nodes": ["guest1"]},
                           "databases": {"nodes": ["guest1", "guest2"], "count": 2}},
                 factors={}, label=None, derived=[], report={})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    [event] = done.events("dvdstore_instances")
    assert [i["target"] for i in event["instances"]] == [local_guests[0].address]
    calls = (Path(remote) / "calls.log").read_text()
    assert f"--target={local_guests[0].address}" in calls
