"""faban driver end to end against a *replay of a recorded Faban run*
(tests/tools/faban_replay.py installed on the loopback guests as the user's Faban command:
Faban's Java harness does not run here). The replay reads the run configuration vbench
wrote, lasts its phases, and leaves the recorded CloudSuite run's summary.xml, detail.xan
and driver.log (the shared corpus's faban_olio_cloudsuite folder) in the output folder it
was given, as Faban does."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.corpus import SHARED, need
from tests.integration.test_iperf3_workload import totals
from tests.integration.test_redis_scaleout import live_groups, run
from tests.integration.test_redis_scaleout import write_lab as redis_lab

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "tests" / "tools" / "faban_replay.py"
CORPUS = SHARED / "faban_olio_cloudsuite"
RUN = "parsa-epfl_cloudsuite__web-serving_"
RECORDED_OPS_PER_SEC = 8.0  # the summary's metric: 240 operations over a 30 s steady state


def install(guests: LocalGuests, folder: str, *, summary: str | None = None,
            files: bool = True, console: bool = False) -> Path:  # fmt: skip
    """The replay and the recorded run's files in a folder every loopback guest sees."""
    remote = Path(guests.sshd.workdir) / folder
    remote.mkdir(parents=True)
    shutil.copy(REPLAY, remote / "faban")
    os.chmod(remote / "faban", 0o755)
    if files:
        for name in ("summary.xml", "detail.xan", "driver.log"):
            shutil.copy(need(CORPUS / f"{RUN}run129_{name}"), remote / name)
    if summary is not None:
        (remote / "summary.xml").write_text(summary)
    if console:
        shutil.copy(need(CORPUS / f"{RUN}log.txt"), remote / "console.txt")
    return remote


def total(done: Any, metric: str) -> float:
    """The one point's cross-instance figure."""
    [value] = totals(done, metric).values()
    return value


def scenario(path: Path, params: dict[str, Any], **extra: Any) -> Path:
    doc = {
        "version": 1, "name": "faban-it",
        "topology": {"clients": {"nodes": ["guest1", "guest2"], "count": 2}},
        "workload": {"driver": "faban", "params": params},
        "repeat": 1,
        "phases": {"warmup": "1s", "steady": "2s", "cooldown": "1s"},
    } | extra  # fmt: skip
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def params(remote: Path, **more: Any) -> dict[str, Any]:
    return {"command": [str(remote / "faban"), "{run_config}", "{output_dir}"],
            "run_config": str(need(CORPUS / f"{RUN}run.xml"))} | more


def test_faban_run_config_written_results_imported_per_instance_and_summed(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    remote = install(local_guests, "faban-ok")
    s = scenario(tmp_path / "s.yaml", params(remote, users=5))
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    # The phases and users of the scenario reached Faban's run configuration; each
    # instance got its own output folder inside its trial directory.
    calls = (remote / "calls.log").read_text().splitlines()
    assert len(calls) == 2
    for call in calls:
        assert call.startswith("rampUp=1\tsteadyState=2\trampDown=1\tscale=5\toutputDir=")
    outs = {c.split("outputDir=")[1] for c in calls}
    assert len(outs) == 2 and all(re.search(r"/faban-guest\d-p\d+-t\d+/output$", o) for o in outs)
    # Two instances of the recorded run: throughput summed, response times averaged.
    assert total(done, "ops_per_sec") == pytest.approx(2 * RECORDED_OPS_PER_SEC)
    assert total(done, "instances") == 2.0
    assert total(done, "faban_passed") == 1.0
    df = done.samples
    login = df[(df.metric == "rt_avg") & df.guest.isna() & df.labels.str.contains("DoLogin")]
    assert list(login.value) == [pytest.approx(263.226)]
    per = df[(df.metric == "operations") & df.guest.notna() & df.labels.str.contains('"all"')]
    assert sorted(per.value) == [240.0, 240.0]
    # The replayed run's clock (2022) is not this trial's: the controller's window stands.
    [window] = done.events("faban_window")
    assert window["kept"] == "controller" and "replayed" in window["why"]
    # Nothing left running, nothing left in the guests' work directories.
    pids = {pid for e in done.events("faban_started") for pid in e["pids"].values()}
    assert pids and not live_groups(pids)
    assert not list(Path(local_guests.sshd.workdir).glob(f"{done.outcome.run_id}/faban-*"))


def test_faban_summary_printed_on_the_console_is_imported(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    """CloudSuite's client prints summary.xml in its console log and keeps no files."""
    remote = install(local_guests, "faban-console", files=False, console=True)
    s = scenario(tmp_path / "s.yaml", params(remote),
                 topology={"clients": {"nodes": ["guest1"]}})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    assert total(done, "ops_per_sec") > 0
    assert total(done, "instances") == 1.0


def test_faban_passed_with_zero_operations_fails_the_trial_with_that_reason(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    # The recorded summary, edited to a run that measured nothing yet says passed=true.
    text = need(CORPUS / f"{RUN}run129_summary.xml").read_text()
    empty = re.sub(r"<totalOps unit=\"operations\">\d+</totalOps>",
                   '<totalOps unit="operations">0</totalOps>', text)
    assert empty != text
    remote = install(local_guests, "faban-empty", summary=empty)
    s = scenario(tmp_path / "s.yaml", params(remote),
                 topology={"clients": {"nodes": ["guest1"]}})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status != "ok"
    text = json.dumps(done.log)
    assert "zero operations measured (file says passed=true)" in text
    # The figures Faban gave are kept, with its verdict as vbench judged it.
    assert total(done, "faban_passed") == 0.0


def test_faban_driver_exit_status_fails_the_trial_naming_the_guest(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    remote = install(local_guests, "faban-exit")
    s = scenario(tmp_path / "s.yaml", params(remote) | {
        "command": [str(remote / "faban"), "--exit", "3", "{run_config}", "{output_dir}"]})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status != "ok"
    text = json.dumps(done.log)
    assert re.search(r"guest\d: Faban driver (on guest\d )?exited 3", text), text[-2000:]
    assert "replayed failure" in text
