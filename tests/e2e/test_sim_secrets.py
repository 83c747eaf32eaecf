"""`vbench lab up` of a simulated vCenter and a run in it: the simulator's password is in
no process's command line while it runs, and in no file vbench wrote (run directory,
store, vcsim folder, local lab folder) except the lab's own mode-600 password file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from tests.conftest import free_port
from tests.e2e.helpers import run_id_of, vbench
from tests.integration.test_vcsim_secrets import command_lines_holding

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _sim_lab(tmp: Path, port: int) -> Path:
    doc = {
        "version": 1,
        "name": "sim-secrets",
        "vcenters": {
            "sim": {
                "url": f"https://127.0.0.1:{port}/sdk",
                "user": "vbench",
                "password": "${file:${vbench:vcsim/sim/password}}",
                "ca_file": "${vbench:vcsim/sim/cert.pem}",
                "simulator": {"hosts": 1},
            }
        },
    }
    path = tmp / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _scenario(tmp: Path) -> Path:
    doc = {
        "version": 1,
        "name": "sim-secrets",
        "workload": {"driver": "vcbench", "params": {"template": "DC0_C0_RP0_VM0", "sessions": 1}},
        "repeat": 1,
        "phases": {"warmup": "0s", "steady": "1s", "cooldown": "0s"},
    }
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_simulator_password_is_in_no_command_line_and_no_file_but_its_own(
    tmp_path: Path, vbench_home: Path
) -> None:
    lab = _sim_lab(tmp_path, free_port())
    try:
        up = vbench("lab", "up", str(lab))
        assert up.returncode == 0, up.stdout + up.stderr
        password_file = vbench_home / "vcsim" / "sim" / "password"
        password = password_file.read_text().strip()
        assert len(password) >= 16
        assert command_lines_holding(password) == []
        run = vbench("run", str(_scenario(tmp_path)), "--lab", str(lab))
        assert run.returncode == 0, run.stdout + run.stderr
        assert (vbench_home / "results" / run_id_of(run.stdout)).is_dir()
        assert command_lines_holding(password) == []
        assert password not in run.stdout + run.stderr + up.stdout + up.stderr
    finally:
        down = vbench("lab", "down")
    assert down.returncode == 0 and "vcsim sim stopped" in down.stdout
    holding = [
        p for p in vbench_home.rglob("*")
        if p.is_file() and password.encode() in p.read_bytes()
    ]  # fmt: skip
    assert holding == [password_file]
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    log = vbench_home / "vcsim" / "sim" / "vcsim.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and "GOVC_URL" not in log.read_text()
