"""Which guests `vbench cleanup RUN` reaches for leftovers: static lab nodes of the run's
groups, never the VMs of `vm:` groups; a run id not of vbench's format touches nothing."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from vbench.config.lab import Lab
from vbench.guest.leftovers import clean_guests, recorded_workdir, static_guests

LAB = {
    "version": 1,
    "name": "t",
    "vcenters": {
        "vc": {"url": "https://127.0.0.1:1/sdk", "user": "u", "password": "${env:VB_NO_VAR}"}
    },
    "defaults": {"workdir": "/tmp/default-work"},
    "nodes": {
        "n1": {"address": "127.0.0.2", "workdir": "/tmp/n1-work"},
        "n2": {"address": "127.0.0.3"},
    },
}


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "20261123-000000-0123abcd"
    run_dir.mkdir()
    plan = {"groups": {"clients": ["n1", "n2"], "servers": ["servers-1", "servers-2"]}}
    (run_dir / "plan.json").write_text(json.dumps(plan))
    topology = {"clients": {"count": 2}, "servers": {"count": 2, "vm": {"template": "t"}}}
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump({"topology": topology}))
    (run_dir / "lab.yaml").write_text(yaml.safe_dump(LAB))
    return run_dir


def test_vm_groups_are_skipped_and_lab_nodes_are_reached(tmp_path: Path) -> None:
    lab = Lab.model_validate(LAB)
    assert static_guests(_run_dir(tmp_path), lab) == (["n1", "n2"], ["servers-1", "servers-2"])


def test_the_workdir_is_the_one_the_run_recorded(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    assert recorded_workdir(run_dir, "n1") == "/tmp/n1-work"
    assert recorded_workdir(run_dir, "n2") == "/tmp/default-work"


def test_a_run_id_not_of_vbench_format_touches_no_guest(tmp_path: Path) -> None:
    lab = Lab.model_validate(LAB)
    (result,) = clean_guests(lab, "../../etc", _run_dir(tmp_path))
    assert not result.ok and "not of the form" in result.line


def test_a_run_without_a_plan_started_nothing_in_guests(tmp_path: Path) -> None:
    lab = Lab.model_validate(LAB)
    empty = tmp_path / "20261123-000000-0123abce"
    empty.mkdir()
    assert clean_guests(lab, empty.name, empty) == []


def test_a_damaged_plan_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    lab = Lab.model_validate(LAB)
    run_dir = _run_dir(tmp_path)
    (run_dir / "plan.json").write_text('{"groups": ')  # cut short by a full disk
    (result,) = clean_guests(lab, run_dir.name, run_dir)
    assert not result.ok and "cannot read" in result.line and "plan.json" in result.line
