"""Collectors in real runs: sysstat on the loopback guests, and esxtop as a *replay of
recorded output* (tests/tools/esxtop_replay.py installed as `esxtop` on a loopback SSH
host, printing a real corpus capture with the -d/-n timing it is given)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import LocalGuests
from tests.corpus import SHARED, need
from tests.e2e.helpers import extra_node, run_id_of, vbench, write_lab, write_scenario
from vbench.guest.ssh import Guest
from vbench.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
CORPUS = SHARED / "esxtop"
RECORDING = CORPUS / "rach-sharp_esxtopd__esxtop-data.csv"
REPLAY = ROOT / "tests" / "tools" / "esxtop_replay.py"


def install_replay(guests: LocalGuests, folder: str, die_after: int | None = None) -> str:
    """Install the esxtop replay (and the recording it replays) on the loopback host."""
    need(RECORDING)
    remote = f"{guests.sshd.workdir}/{folder}"
    with Guest(guests[0]) as host:
        host.put(REPLAY, f"{remote}/esxtop")
        host.put(RECORDING, f"{remote}/recording.csv")
        host.run(["chmod", "+x", f"{remote}/esxtop"])
        if die_after is not None:
            host.put_text(str(die_after), f"{remote}/die-after")
    return f"{remote}/esxtop"


def lab_with_host(path: Path, guests: LocalGuests, extra: dict | None = None) -> Path:
    write_lab(path, guests, extra)
    lab = yaml.safe_load(path.read_text())
    lab["hosts"] = {"esx1": {"address": guests[0].address}}
    path.write_text(yaml.safe_dump(lab, sort_keys=False))
    return path


def scenario(path: Path, collectors: list[dict], groups: int = 2) -> Path:
    write_scenario(path, groups=groups, steady="4s", warmup="1s", repeat=1, factors="  bs: [4k]\n")
    doc = yaml.safe_load(path.read_text())
    doc["phases"]["cooldown"] = "1s"
    doc["collectors"] = collectors
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def stored(run_id: str) -> tuple[pd.DataFrame, list[dict], Path]:
    home = Path(os.environ["VBENCH_HOME"])
    with Store.open(None, home / "results") as store:
        samples = store.samples_frame(run_id)
        trials = [t.__dict__ for t in store.trials(run_id)]
        run_dir = Path(store.get_run(run_id).run_dir or "")
    return samples, trials, run_dir


def manifest(run_dir: Path) -> dict[tuple[str, str], dict]:
    recs = json.loads((run_dir / "series" / "0-1" / "collectors.json").read_text())
    return {(r["collector"], r["target"]): r for r in recs}


def test_sysstat_and_replayed_esxtop_series_stored_aligned_and_summarised(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    esxtop = install_replay(local_guests, "replay-ok")
    lab = lab_with_host(tmp_path / "lab.yaml", local_guests)
    s = scenario(tmp_path / "s.yaml", [
        {"kind": "guest_sysstat", "interval": "1s"},
        {"kind": "esxtop", "interval": "2s",
         "options": {"command": esxtop, "counters": ["cpu", "Memory\\Free MBytes"]}},
    ])  # fmt: skip
    # The report (one chart per series metric) is rendered in the next test.
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    samples, trials, run_dir = stored(run_id)
    recs = manifest(run_dir)
    assert set(recs) == {("guest_sysstat", "guest1"), ("guest_sysstat", "guest2"),
                         ("esxtop", "esx1")}  # fmt: skip
    assert all(r["status"] == "ok" for r in recs.values()), recs
    assert all(abs(r["clock_offset"]) < 0.5 for r in recs.values())
    # esxtop: the compressed capture is kept whole; the series holds the selection.
    assert (run_dir / "raw" / "0-1" / "esx1" / "esxtop.csv.gz").stat().st_size > 10_000
    table = pq.read_table(run_dir / recs[("esxtop", "esx1")]["file"]).to_pandas()
    assert "Physical Cpu(_Total)\\% Util Time" in set(table["metric"])
    assert "Memory\\Free MBytes" in set(table["metric"])
    ph = trials[0]["phases"]
    t = table["time"].map(lambda x: x.timestamp())
    assert t.min() >= ph["warmup_start"] - 1 and t.max() <= ph["teardown_end"]
    # Summaries per target over the steady window, and the derived figures.
    by = {(r.metric, r.guest): r for r in samples.itertuples()}
    assert by[("Physical Cpu(_Total)\\% Util Time", "esx1")].value is not None
    assert by[("cpu-load(all)\\idle", "guest1")].unit == "%"
    assert by[("collector_cpu", "guest2")].value >= 0
    assert by[("host_cpu_util", None)].source == "derived"
    assert by[("cpu_efficiency", None)].unit == "IO/s/core"
    assert by[("cpu_cost_per_1k_iops", None)].value > 0
    # CPU cost per 1K IOPS, recomputed here from what was stored: the replayed host's
    # PCPUs over the steady window fio itself measured (a sample at t covers t-2 s..t),
    # against fio's own IOPS of the same trial.
    start = ph.get("workload_start") or ph["steady_start"]
    end = ph.get("workload_end") or ph["steady_end"]
    pcpu = table[table["metric"].str.match(r"Physical Cpu\(\d+\)\\% Util Time$")]
    tp = t.loc[pcpu.index]
    inside = pcpu[(tp - 2.0 >= start - 0.5) & (tp <= end + 0.5)]
    assert not inside.empty, "no esxtop sample inside fio's window: series not aligned"
    # A sample stamped within a few ms of the window's edge (+ its 0.5 s tolerance) is in
    # or out by the stamp's rounding and the clock offset's correction: esxtop's stamps
    # fall on whole seconds and the window's ends often near them. Either reading of such
    # a sample is the figure; anything else is not.
    edge = ((tp - 2.0 - (start - 0.5)).abs() < 0.05) | ((tp - (end + 0.5)).abs() < 0.05)
    readings = (inside.index.difference(pcpu.index[edge]), inside.index.union(pcpu.index[edge]))
    options = [pcpu.loc[ix].groupby("time")["value"].sum().mean() / 100
               for ix in readings if len(ix)]
    stored_cores = by[("host_cores_used", "esx1")].value
    assert any(stored_cores == pytest.approx(c, rel=1e-9) for c in options), (stored_cores,
                                                                              options)
    cores = stored_cores
    iops = by[("total_iops", None)].value
    assert iops and by[("cpu_cost_per_1k_iops", None)].value == pytest.approx(
        cores * 100 / (iops / 1000), rel=1e-9)
    shown = vbench("show", run_id)
    assert "esxtop on esx1: 1/1 trials" in shown.stdout, shown.stdout
    assert "guest_sysstat on guest1: 1/1 trials" in shown.stdout


def test_failed_collectors_are_shown_and_the_trial_keeps_its_figures(
    local_guests: LocalGuests, tmp_path: Path, extra_sshd_factory
) -> None:  # type: ignore[no-untyped-def]
    dying = install_replay(local_guests, "replay-dies", die_after=1)
    # A guest whose PATH has every tool but sysstat's.
    bin_dir = tmp_path / "bin-without-sysstat"
    bin_dir.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if tool.name not in ("sadf", "sar", "iostat", "mpstat", "pidstat"):
            (bin_dir / tool.name).symlink_to(tool)
    bare = extra_sshd_factory("127.0.0.9", path_env=str(bin_dir))
    lab = lab_with_host(tmp_path / "lab.yaml", local_guests, {"bare": extra_node(bare, tmp_path)})
    s = scenario(tmp_path / "s.yaml", [
        {"kind": "guest_sysstat", "interval": "1s"},
        {"kind": "esxtop", "interval": "2s", "options": {"command": "/nonexistent/esxtop"}},
        {"kind": "esxtop", "name": "esxtop-dying", "interval": "2s",
         "options": {"command": dying, "counters": ["Physical Cpu(_Total)\\% Util Time"]}},
    ], groups=3)  # fmt: skip
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "collector failed: esxtop on esx1" in res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    samples, trials, run_dir = stored(run_id)
    assert trials[0]["status"] == "ok"
    assert (samples["source"] == "fio").any()
    recs = manifest(run_dir)
    assert recs[("guest_sysstat", "bare")]["status"] == "failed"
    assert "sadf not found" in recs[("guest_sysstat", "bare")]["error"]
    assert recs[("guest_sysstat", "guest1")]["status"] == "ok"
    assert "/nonexistent/esxtop not found" in recs[("esxtop", "esx1")]["error"]
    died = recs[("esxtop-dying", "esx1")]
    assert died["status"] == "failed" and died["rows"] > 0  # what it measured is kept
    assert "ended before the trial did (exit 1): esxtop: replay told to die" in died["error"]
    shown = vbench("show", run_id)
    assert "failed, point 1 trial 1: esx1" in shown.stdout
    report = (run_dir / "report.html").read_text()
    assert "collector esxtop-dying on esx1 failed" in report


def test_required_collector_failure_fails_the_trial(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    lab = lab_with_host(tmp_path / "lab.yaml", local_guests)
    s = scenario(tmp_path / "s.yaml", [
        {"kind": "esxtop", "interval": "2s", "required": True,
         "options": {"command": "/nonexistent/esxtop"}},
    ])  # fmt: skip
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 3, res.stdout + res.stderr
    _, trials, _ = stored(run_id_of(res.stdout))
    assert trials[0]["status"] == "failed"
    assert "required collector esxtop on esx1 failed" in trials[0]["error"]


def test_unknown_counter_and_host_are_validation_errors(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    lab = lab_with_host(tmp_path / "lab.yaml", local_guests)
    s = scenario(tmp_path / "s.yaml", [
        {"kind": "esxtop", "targets": ["esx2"],
         "options": {"counters": ["cpuu", "Physcal Cpu(_Total)\\% Util Time"]}},
        {"kind": "sysstat"},
    ])  # fmt: skip
    res = vbench("validate", str(s), "--lab", str(lab))
    assert res.returncode == 2
    err = res.stderr
    assert "collectors.0.options: unknown esxtop counter set 'cpuu'" in err
    assert "closest: cpu" in err
    assert "no object 'Physcal Cpu' (closest: Physical Cpu" in err
    assert "no ESXi host 'esx2'" in err and "esx1" in err
    assert "unknown collector 'sysstat'" in err and "guest_sysstat" in err
