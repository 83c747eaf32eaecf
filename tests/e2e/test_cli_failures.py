"""Failure paths of `vbench run`: one clear line, the right exit code, nothing left behind,
nothing measured lost."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import LocalGuests, free_port
from tests.e2e.helpers import (
    extra_node,
    fio_started,
    guest_workdir,
    remote_processes,
    run_id_of,
    show,
    vbench,
    vbench_popen,
    wait_for,
    wait_for_log,
    write_lab,
    write_scenario,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def test_broken_scenario_is_located_and_exits_2(tmp_path: Path) -> None:
    s = write_scenario(tmp_path / "s.yaml")
    s.write_text(s.read_text().replace("    iodepth: 2", "    iodeph: 2"))
    res = vbench("validate", str(s))
    assert res.returncode == 2
    assert res.stderr.startswith(
        f"{s}:11:5: workload.params.iodeph: unknown key 'iodeph' (did you mean 'iodepth'?"
    )
    assert "Traceback" not in res.stderr
    s = write_scenario(tmp_path / "s.yaml", repeat=0)
    res = vbench("run", str(s), "--lab", str(tmp_path / "no-lab.yaml"))
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"{s}:17:9: repeat: out of range: got 0 (expected a value greater than or equal to 1)"
    )


def test_valid_scenario_validates_and_plans(tmp_path: Path) -> None:
    s = write_scenario(tmp_path / "s.yaml")
    res = vbench("validate", str(s))
    assert res.returncode == 0 and "2 points × 2 trials = 4 trials" in res.stdout
    import json

    plan = json.loads(vbench("plan", str(s), "--json").stdout)
    assert [p["labels"] for p in plan["points"]] == [{"bs": "4k"}, {"bs": "64k"}]
    assert plan["trials"] == 4 and plan["estimated_seconds"] > 0
    steps = {c["step"] for c in plan["points"][0]["commands"]}
    assert {"run", "collect", "teardown"} <= steps


def test_unreachable_guest_exits_3_naming_it(local_guests: LocalGuests, tmp_path: Path) -> None:
    closed = free_port("127.0.0.5")
    lab = write_lab(
        tmp_path / "lab.yaml",
        local_guests,
        {"ghost": {"address": "127.0.0.5", "port": closed, "roles": ["storage"]}},
    )
    s = write_scenario(tmp_path / "s.yaml", groups=3)
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 3, res.stderr
    err = res.stderr.strip().splitlines()
    assert err[-1].startswith("error: ghost (127.0.0.5:") and "refused" in err[-1]
    assert "Traceback" not in res.stderr
    # Nothing ran: no run was recorded.
    assert vbench("ls", "--json").stdout.strip() == "[]"


def test_fio_missing_on_a_guest_exits_3_naming_it(
    local_guests: LocalGuests, tmp_path: Path, extra_sshd_factory
) -> None:  # type: ignore[no-untyped-def]
    bare = extra_sshd_factory("127.0.0.6", path_env="/nonexistent")
    lab = write_lab(tmp_path / "lab.yaml", local_guests, {"bare": extra_node(bare, tmp_path)})
    s = write_scenario(tmp_path / "s.yaml", groups=3)
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 3, res.stdout + res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "error: bare: fio not found in PATH (install the fio package)"
    )


def test_guest_dying_mid_trial_fails_the_trial_and_the_run_goes_on(
    local_guests: LocalGuests, tmp_path: Path, extra_sshd_factory
) -> None:  # type: ignore[no-untyped-def]
    doomed = extra_sshd_factory("127.0.0.7")
    lab = write_lab(tmp_path / "lab.yaml", local_guests, {"doomed": extra_node(doomed, tmp_path)})
    s = write_scenario(tmp_path / "s.yaml", groups=3, steady="8s", repeat=2, factors="  bs: [4k]\n")
    proc = vbench_popen("run", str(s), "--lab", str(lab))
    wait_for(fio_started(lab, "fio-doomed-p0-t1"), 60, "fio on the doomed guest")
    doomed.kill()

    # A guest that dies takes its processes with it. One forked by its sshd just before the
    # kill (the prepare fio, beside two CPU hogs) outlives it, orphaned: sweep until none
    # is left (no connection to the guest remains to start another).
    def none_left() -> bool:
        import os

        left = remote_processes(f"{guest_workdir(lab)}/.*fio-doomed-")
        for line in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        return not left

    wait_for(none_left, 30, "the doomed guest's processes gone")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, out + err
    run_id = run_id_of(out + "\n--- stderr:\n" + err)
    data = show(run_id)
    assert data["run"]["status"] == "failed"
    trials = data["trials"]
    assert [t["status"] for t in trials] == ["failed", "failed"]  # run went on to trial 2
    assert "doomed" in trials[0]["error"]
    assert "doomed" in trials[1]["error"]
    # The healthy guests' fio was stopped at teardown and their scratch dirs removed.
    assert remote_processes(run_id) == []
    assert not (guest_workdir(lab) / run_id).exists()


def test_fail_fast_stops_at_the_first_failed_trial(
    local_guests: LocalGuests, tmp_path: Path, extra_sshd_factory
) -> None:  # type: ignore[no-untyped-def]
    doomed = extra_sshd_factory("127.0.0.8")
    lab = write_lab(tmp_path / "lab.yaml", local_guests, {"doomed": extra_node(doomed, tmp_path)})
    s = write_scenario(tmp_path / "s.yaml", groups=3, steady="8s", repeat=3, factors="  bs: [4k]\n")
    proc = vbench_popen("run", str(s), "--lab", str(lab), "--fail-fast")
    wait_for(fio_started(lab, "fio-doomed-p0-t1"), 60, "fio on the doomed guest")
    doomed.kill()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, out + err
    assert [t["status"] for t in show(run_id_of(out))["trials"]] == ["failed"]


def test_ctrl_c_stops_at_once_keeps_data_and_cleans_up(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", steady="1s", repeat=3, factors="  bs: [4k, 64k]\n")
    s.write_text(s.read_text().replace("repeat: 3", "repeat: 3\nsettings: {trial_timeout: 5m}"))
    # Long steady state for trial 2 onwards is not needed: interrupt during point 0 trial 2.
    proc = vbench_popen(
        "run", str(s), "--lab", str(lab), "--set", "phases.steady=30s", "--set", "repeat=2"
    )
    # Steady state has begun when the run says so, however slow the machine is.
    wait_for_log(vbench_home, "phase_mark", 120, proc, mark="steady_start", point=0, trial=1)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 20, "interrupt must stop the run at once"
    assert proc.returncode == 130, out + err
    run_id = run_id_of(out + "\n--- stderr:\n" + err)
    data = show(run_id)
    assert data["run"]["status"] == "interrupted"
    assert [t["status"] for t in data["trials"]] == ["interrupted"]
    assert data["trials"][0]["phases"]["steady_start"] is not None  # what was measured is kept
    assert remote_processes(run_id) == []
    assert not (guest_workdir(lab) / run_id).exists()


def test_sigterm_behaves_like_ctrl_c(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", steady="30s", repeat=1, factors="  bs: [4k]\n")
    proc = vbench_popen("run", str(s), "--lab", str(lab))
    wait_for(fio_started(lab, "fio-guest2-p0-t1"), 60, "fio to start")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    run_id = run_id_of(out + "\n--- stderr:\n" + err)
    assert show(run_id)["run"]["status"] == "interrupted"
    assert remote_processes(run_id) == []


def test_secrets_never_reach_the_run_directory_or_store(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    text = lab.read_text().replace("  workdir:", "  password: ${env:E2E_LAB_SECRET}\n  workdir:")
    lab.write_text(text)
    s = write_scenario(tmp_path / "s.yaml", repeat=1, factors="  bs: [4k]\n")
    res = vbench("run", str(s), "--lab", str(lab), env={"E2E_LAB_SECRET": "pa55-w0rd-xyz"})
    assert res.returncode == 0, res.stderr
    for f in (vbench_home / "results").rglob("*"):
        if f.is_file():
            assert b"pa55-w0rd-xyz" not in f.read_bytes(), f
    assert (
        "${env:E2E_LAB_SECRET}"
        in (vbench_home / "results" / run_id_of(res.stdout) / "lab.yaml").read_text()
    )
