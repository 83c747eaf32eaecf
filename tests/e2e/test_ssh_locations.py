"""SSH failures say where: `lab check` names address:port and the lab file line of the
node, a wrong key names its key file, `validate --lab` finds missing key files before
anything connects, and a port conflict at `lab up` names the settings to change."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests, free_port
from tests.e2e.helpers import vbench, write_lab, write_scenario

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def test_lab_check_names_address_port_lab_line_and_key_file(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    closed = free_port("127.0.0.3")
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    lab = write_lab(tmp_path / "lab.yaml", local_guests, extra_nodes={
        "ghost": {"address": "127.0.0.3", "port": closed},
        "stranger": {"address": "127.0.0.3", "key_file": str(key)},
    })
    res = vbench("lab", "check", str(lab))
    assert res.returncode == 3, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    ghost = next(ln for ln in lines if "node ghost" in ln)
    assert ghost == (f"FAIL  node ghost  ssh: 127.0.0.3:{closed} (nodes.ghost, "
                     f"{lab}:{_line_of(lab, 'ghost:')}): connection refused")
    stranger = next(ln for ln in lines if "node stranger" in ln)
    port = local_guests.sshd.port
    assert stranger.startswith(f"FAIL  node stranger  ssh: 127.0.0.3:{port} (nodes.stranger, "
                               f"{lab}:{_line_of(lab, 'stranger:')}): authentication failed")
    assert f"with key file {key} " in stranger
    assert any(ln.startswith("pass  node guest1  ssh: 127.0.0.2:") for ln in lines)


def test_validate_with_lab_checks_key_files(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    scenario = write_scenario(tmp_path / "s.yaml")
    assert vbench("validate", str(scenario), "--lab", str(lab)).returncode == 0
    doc = yaml.safe_load(lab.read_text())
    missing = tmp_path / "no-such-key"
    doc["defaults"]["key_file"] = str(missing)
    doc["nodes"]["guest2"]["key_file"] = str(tmp_path)  # a directory
    lab.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = vbench("validate", str(scenario), "--lab", str(lab))
    assert res.returncode == 2, res.stdout + res.stderr
    key_line = _line_of(lab, "key_file: " + str(missing))
    assert f"{lab}:{key_line}:13: defaults.key_file: key file {missing} not found" in res.stderr
    dir_line = _line_of(lab, f"key_file: {tmp_path}\n".rstrip())
    assert (f"{lab}:{dir_line}:" in res.stderr
            and f"nodes.guest2.key_file: key file {tmp_path} is a directory" in res.stderr)
    assert "Traceback" not in res.stderr


def test_lab_up_port_conflict_names_the_settings_to_change(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.9", 0))
        busy.listen()
        port = busy.getsockname()[1]
        lab = tmp_path / "lab.yaml"
        lab.write_text(f"version: 1\nname: mini\nlocal:\n  addresses: [127.0.0.9]\n"
                       f"  port: {port}\ndefaults:\n  port: {port}\n"
                       f"nodes:\n  g: {{address: 127.0.0.9}}\n")
        res = vbench("lab", "up", str(lab))
    assert res.returncode == 3, res.stdout + res.stderr
    assert res.stderr.strip() == (
        f"error: 127.0.0.9:{port}: port {port} already in use by another program: change "
        f"local.port (line 5) in {lab} to a free port, and with it defaults.port (line 7)")
