"""The local-lab commands, schema and drivers, from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.e2e.helpers import vbench

pytestmark = [pytest.mark.e2e]


@pytest.mark.integration
def test_lab_up_status_down_is_idempotent(tmp_path: Path, vbench_home: Path) -> None:
    port = free_port("127.0.0.9", "127.0.0.10")
    lab = tmp_path / "lab.yaml"
    lab.write_text(
        f"version: 1\nname: mini\nlocal: {{addresses: [127.0.0.9, 127.0.0.10], port: {port}}}\n"
    )
    try:
        first = vbench("lab", "up", str(lab))
        assert first.returncode == 0, first.stderr
        assert f"port {port}" in first.stdout and str(vbench_home) in first.stdout
        again = vbench("lab", "up", str(lab))
        assert again.returncode == 0
        assert again.stdout.split("pid")[1] == first.stdout.split("pid")[1]  # same sshd
        st = vbench("lab", "status", str(lab))
        assert st.returncode == 0
        assert "127.0.0.9: reachable" in st.stdout and "127.0.0.10: reachable" in st.stdout
        assert (vbench_home / "lab" / "id_ed25519").is_file()
    finally:
        down = vbench("lab", "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert vbench("lab", "down").stdout.strip() == "local lab was not running"
    st = vbench("lab", "status", str(lab))
    assert st.returncode == 3 and "not running" in st.stdout


def test_lab_up_refuses_a_lab_without_local_section(tmp_path: Path) -> None:
    lab = tmp_path / "lab.yaml"
    lab.write_text("version: 1\nname: real\n")
    res = vbench("lab", "up", str(lab))
    assert res.returncode == 2 and "has no `local:` section" in res.stderr


def test_schema_is_json_schema_of_both_files() -> None:
    sc = json.loads(vbench("schema").stdout)
    assert sc["title"] == "vbench scenario file"
    assert {"version", "name", "topology", "workload", "phases"} <= set(sc["properties"])
    assert set(sc["required"]) >= {"version", "name", "phases"}
    # One workload (`workload:`) or several at once (`workloads:`), never neither nor both.
    assert sc["oneOf"] == [{"required": ["workload"]}, {"required": ["workloads"]}]
    # A workload that acts on vCenter alone (vcbench, content_library) needs no guests.
    assert "topology" not in sc["required"]
    lab = json.loads(vbench("schema", "--lab").stdout)
    assert "nodes" in lab["properties"] and lab["title"] == "vbench lab file"


def test_drivers_lists_fio_with_its_roles() -> None:
    drivers = {d["name"]: d for d in json.loads(vbench("drivers", "--json").stdout)}
    assert drivers["fio"]["roles"] == ["target"] and "bs" in drivers["fio"]["params"]


def test_usage_error_exits_2_and_version_works() -> None:
    assert vbench("run").returncode == 2
    assert vbench("no-such-command").returncode == 2
    v = vbench("--version")
    assert v.returncode == 0 and "vbench" in v.stdout
