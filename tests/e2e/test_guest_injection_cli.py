"""The two command-injection attacks of issue 18, replayed against real guests (sshd on
loopback, real fio): a lab node name carrying a fio section, and ``exec_prerun`` in
``workload.params.extra``. Neither runs anything; with ``allow_exec: true`` the second
does, which shows the refusal is what stops it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import guest_workdir, vbench, write_lab, write_scenario

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _scenario(tmp: Path, params: str) -> Path:
    path = write_scenario(tmp / "s.yaml", groups=1, repeat=1, warmup="0s", steady="1s",
                          factors="  bs: [4k]\n")  # fmt: skip
    text = path.read_text().replace("    direct: false\n", f"    direct: false\n{params}")
    path.write_text(text)
    return path


def test_a_hostile_node_name_stops_the_run_before_any_guest_is_touched(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    doc = yaml.safe_load(lab.read_text())
    pwned = tmp_path / "PWNED"
    evil = f"guest1\n[global]\nexec_prerun=touch {pwned}"
    doc["nodes"] = {evil: doc["nodes"]["guest1"]}
    lab.write_text(yaml.safe_dump(doc))
    res = vbench("run", str(_scenario(tmp_path, "")), "--lab", str(lab),
                 env={"VBENCH_HOME": str(tmp_path / "home")})  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert f"{lab}:" in res.stderr and "nodes.guest1\\n[global]" in res.stderr
    assert not pwned.exists()
    assert not list(guest_workdir(lab).rglob("*.fio"))


def test_exec_prerun_runs_only_when_the_scenario_allows_it(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    pwned = tmp_path / "PWNED"
    extra = f"    extra:\n      exec_prerun: touch {pwned}\n"
    home = {"VBENCH_HOME": str(tmp_path / "home")}
    refused = vbench("run", str(_scenario(tmp_path, extra)), "--lab", str(lab), env=home)
    assert refused.returncode == 2, refused.stderr
    assert "workload.params.extra.exec_prerun" in refused.stderr
    assert "allow_exec" in refused.stderr
    assert not pwned.exists()
    assert not list(guest_workdir(lab).rglob("*.fio"))
    allowed = vbench("run", str(_scenario(tmp_path, f"    allow_exec: true\n{extra}")),
                     "--lab", str(lab), env=home)  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert pwned.exists()
    # The run says so, as validate and plan do.
    assert "workload.params.allow_exec: warning:" in allowed.stderr
