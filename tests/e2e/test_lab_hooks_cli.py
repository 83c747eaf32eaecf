"""Per-point lab hooks through the CLI: a factor whose levels are a lab set-up, applied on
a lab node over SSH before its point and undone after it — on a normal end, a failed
hook, Ctrl-C, and kill -9 followed by `vbench cleanup RUN`.

netem is not available in this machine's kernel: the hook runs tests/tools/record_args.py
(installed on the loopback node), which records its arguments instead of changing the
network. What is tested is the mechanics (order, substitution, undo), not netem itself."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import (
    log_events,
    run_id_of,
    vbench,
    vbench_popen,
    wait_for_log,
    write_lab,
    write_scenario,
)
from vbench.engine.hooks import HookJournal

ROOT = Path(__file__).resolve().parents[2]
RECORDER = ROOT / "tests" / "tools" / "record_args.py"


def setup(tmp: Path, guests: LocalGuests, *, steady: str = "1s",
          hostile: bool = True) -> tuple[Path, Path, Path]:
    """(scenario, lab, recorder folder): a fio scenario with a latency hook factor."""
    rec = tmp / "rec"
    rec.mkdir()
    (rec / "tc").write_bytes(RECORDER.read_bytes())
    (rec / "tc").chmod(0o755)
    lab = write_lab(tmp / "lab.yaml", guests, {"wan": {"address": guests[0].address,
                                                      "roles": ["wan-emulator"]}})
    levels = [{"label": "1ms", "value": "1ms"}]
    if hostile:
        levels.append({"label": "hostile", "value": hostile_value(tmp)})
    s = write_scenario(tmp / "s.yaml", groups=1, repeat=1, steady=steady, warmup="0s",
                       factors="  bs: [4k]\n")
    doc = yaml.safe_load(s.read_text())
    doc["factors"]["latency"] = {
        "hook": {"node": "wan",
                 "run": [str(rec / "tc"), "qdisc", "replace", "dev", "eth1", "root", "netem",
                         "delay", "{value}"],
                 "undo": [str(rec / "tc"), "qdisc", "del", "dev", "eth1", "root"]},
        "levels": levels}
    s.write_text(yaml.safe_dump(doc, sort_keys=False))
    return s, lab, rec


def hostile_value(tmp: Path) -> str:
    p = tmp / "pwned"
    return f"5ms; touch {p}1 $(touch {p}2) `touch {p}3` && touch {p}4 | tee {p}5 > {p}6"


def calls(rec: Path) -> list[list[str]]:
    path = rec / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(ln)["argv"] for ln in path.read_text().splitlines()]


ADD_1MS = ["qdisc", "replace", "dev", "eth1", "root", "netem", "delay", "1ms"]
DEL = ["qdisc", "del", "dev", "eth1", "root"]


def test_hooks_apply_before_and_undo_after_each_point_with_hostile_values_inert(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    s, lab, rec = setup(tmp_path, local_guests)
    plan = vbench("plan", str(s), "--lab", str(lab))
    assert plan.returncode == 0, plan.stderr
    assert ("hook latency=1ms on node wan: before: " f"{rec}/tc qdisc replace dev eth1 root "
            "netem delay 1ms; after: " f"{rec}/tc qdisc del dev eth1 root") in plan.stdout
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == 0, res.stdout + res.stderr
    hostile = hostile_value(tmp_path)
    assert calls(rec) == [ADD_1MS, DEL, [*ADD_1MS[:-1], hostile], DEL]
    assert not list(tmp_path.glob("pwned*")), "a level value reached a shell"
    # Order in the run log: the set-up before the point's trial, the undo after it.
    events = [(e["event"], e.get("point"), e.get("mark")) for e in log_events(vbench_home)
              if e["event"] in ("hook_apply", "hook_undone", "phase_mark")]
    p0 = [e for e in events if e[1] == 0]
    assert p0[0][0] == "hook_apply" and p0[-1][0] == "hook_undone"
    assert [e[2] for e in p0[1:-1]][:1] == ["warmup_start"]
    assert events.index(p0[-1]) < events.index(next(e for e in events if e[1] == 1))
    run_dir = vbench_home / "results" / run_id_of(res.stdout)
    assert HookJournal(run_dir).pending() == []
    planned = json.loads((run_dir / "plan.json").read_text())["hooks"]
    assert planned["1"][0]["run"][-1] == hostile and planned["0"][0]["node"] == "wan"
    states = [r["state"] for r in HookJournal(run_dir).read()]
    assert states == ["applying", "applied", "undone"] * 2


def test_a_failing_hook_ends_the_run_exit_3_and_is_undone(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    s, lab, rec = setup(tmp_path, local_guests)
    (rec / "fail-on").write_text("5ms")
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "node wan: hook latency=hostile:" in res.stderr
    # Point 0 applied and undone; point 1's refused set-up still undone.
    assert calls(rec)[0] == ADD_1MS and calls(rec)[1] == DEL and calls(rec)[-1] == DEL
    assert len(calls(rec)) == 4


def test_ctrl_c_undoes_the_hook(local_guests: LocalGuests, tmp_path: Path,
                                vbench_home: Path) -> None:
    s, lab, rec = setup(tmp_path, local_guests, steady="60s", hostile=False)
    proc = vbench_popen("run", str(s), "--lab", str(lab), "--no-report")
    wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert calls(rec) == [ADD_1MS, DEL]
    undo = [e for e in log_events(vbench_home) if e["event"] == "hook_undo"]
    assert undo[0]["because"] == "Interrupted"


def test_kill_9_leaves_the_hook_journaled_and_cleanup_undoes_it(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    s, lab, rec = setup(tmp_path, local_guests, steady="60s", hostile=False)
    proc = vbench_popen("run", str(s), "--lab", str(lab), "--no-report")
    wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert calls(rec) == [ADD_1MS]
    [run_dir] = list((vbench_home / "results").glob("*/hooks.jsonl"))
    run_id = run_dir.parent.name
    assert [p["level"] for p in HookJournal(run_dir.parent).pending()] == ["1ms"]
    res = vbench("cleanup", run_id, "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "undone hook latency=1ms on node wan" in res.stdout
    assert calls(rec) == [ADD_1MS, DEL]
    assert HookJournal(run_dir.parent).pending() == []
    again = vbench("cleanup", run_id, "--lab", str(lab))  # idempotent: nothing left to undo
    assert again.returncode == 0 and "undone" not in again.stdout
    assert calls(rec) == [ADD_1MS, DEL]


def test_a_hook_node_missing_from_the_lab_is_refused_before_anything_runs(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    s, _lab, rec = setup(tmp_path, local_guests, hostile=False)
    lab = write_lab(tmp_path / "lab2.yaml", local_guests)  # no node "wan"
    res = vbench("run", str(s), "--lab", str(lab), "--no-report")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "factors.latency.hook.node: 'wan' is not a node of the lab" in res.stderr
    assert calls(rec) == [] and not list((vbench_home / "results").glob("*/hooks.jsonl"))


def test_resuming_a_killed_run_first_undoes_the_hook_it_left_applied(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    s, lab, rec = setup(tmp_path, local_guests, steady="60s", hostile=False)
    proc = vbench_popen("run", str(s), "--lab", str(lab), "--no-report")
    wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    [journal] = list((vbench_home / "results").glob("*/hooks.jsonl"))
    run_id = journal.parent.name
    assert calls(rec) == [ADD_1MS]
    # The resumed run's own set-up is refused, so it ends at once (exit 3) after it.
    (rec / "fail-on").write_text("1ms")
    res = vbench("run", "--resume", run_id, "--lab", str(lab), "--no-report")
    assert res.returncode == 3, res.stdout + res.stderr
    # The earlier session's 1ms is undone before the resumed run applies its own.
    assert calls(rec) == [ADD_1MS, DEL, ADD_1MS, DEL]
    assert HookJournal(journal.parent).pending() == []
    assert any(e["event"] == "hook_undone_on_resume" for e in log_events(vbench_home))
    # The killed session's fio is still running in the guest: cleanup ends it.
    assert vbench("cleanup", run_id, "--lab", str(lab)).returncode == 0
