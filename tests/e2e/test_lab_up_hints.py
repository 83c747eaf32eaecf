"""Forgetting `vbench lab up` (issue 23, item 8): a simulated vCenter or a node of the
local lab that refuses the connection says the next command, `run: vbench lab up LAB`;
and `vbench lab status` without a lab file follows the lab this data directory brought
up instead of probing the default addresses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import free_port
from tests.e2e.helpers import vbench

pytestmark = [pytest.mark.e2e]


def _sim_lab(tmp: Path, port: int, **extra: object) -> Path:
    doc = {"version": 1, "name": "forgot",
           "vcenters": {"sim": {"url": f"https://127.0.0.1:{port}/sdk", "user": "vbench",
                                "password": "${env:VBENCH_HINT_PW}", "insecure": True,
                                "simulator": {"clusters": 1, "hosts": 1}}}, **extra}  # fmt: skip
    path = tmp / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_simulated_vcenter_not_up_says_run_lab_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VBENCH_HINT_PW", "x")
    lab = _sim_lab(tmp_path, free_port("127.0.0.1"))
    check = vbench("lab", "check", str(lab))
    assert check.returncode == 3, check.stdout + check.stderr
    (line,) = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL")]
    assert line.endswith(f"connection refused (is it running?; run: vbench lab up {lab})"), line
    scenario = tmp_path / "vcb.yaml"
    scenario.write_text(yaml.safe_dump({
        "version": 1, "name": "vcb", "repeat": 1, "phases": {"steady": "1s"},
        "workload": {"driver": "vcbench", "params": {"template": "DC0_C0_RP0_VM0"}}}))
    run = vbench("run", str(scenario), "--lab", str(lab))
    assert run.returncode == 3, run.stdout + run.stderr
    assert f"run: vbench lab up {lab}" in run.stderr, run.stderr


def test_a_local_lab_node_refusing_ssh_says_run_lab_up(tmp_path: Path) -> None:
    port = free_port("127.0.0.9")
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({
        "version": 1, "name": "local-forgot",
        "local": {"addresses": ["127.0.0.9"], "port": port},
        "nodes": {"guest1": {"address": "127.0.0.9", "port": port}},
        "defaults": {"host_key_policy": "accept-new"}}))  # fmt: skip
    check = vbench("lab", "check", str(lab))
    assert check.returncode == 3, check.stdout + check.stderr
    (line,) = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL")]
    assert line.endswith(f"connection refused (is the local lab up? run: vbench lab up {lab})")


@pytest.mark.integration
def test_lab_status_without_a_file_follows_what_this_home_brought_up(
    tmp_path: Path, vbench_home: Path
) -> None:
    port = free_port("127.0.0.9", "127.0.0.10")
    lab = tmp_path / "mini.yaml"
    lab.write_text(f"version: 1\nname: mini\n"
                   f"local: {{addresses: [127.0.0.9, 127.0.0.10], port: {port}}}\n")
    try:
        assert vbench("lab", "up", str(lab)).returncode == 0
        st = vbench("lab", "status")
        assert st.returncode == 0, st.stdout + st.stderr
        assert st.stdout.splitlines()[0].startswith(f"lab {lab}")
        assert f"port {port}" in st.stdout
        assert "127.0.0.9: reachable" in st.stdout and "127.0.0.10: reachable" in st.stdout
    finally:
        vbench("lab", "down")
    st = vbench("lab", "status")
    assert st.returncode == 3 and f"port {port}" in st.stdout and "not running" in st.stdout
