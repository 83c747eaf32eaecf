"""`validate --lab` warns, located at the scenario's `lab_hygiene:` (and `disturbance:`),
when the run would look at none of it: a run on static lab nodes alone works in no
vCenter, so `lab_hygiene: {drs: manual}` — a check the scenario requires — was passed
in silence, and `disturbance: fail` watched nothing without esxtop (seen: validate and
lab check of such a scenario said nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan

LAB = {"version": 1, "name": "static", "nodes": {
    "g1": {"address": "127.0.0.2", "roles": ["storage"]}},
    "hosts": {"esx1": {"address": "127.0.0.5"}}}


def _warnings(tmp_path: Path, lab: dict[str, Any] | None = None, **extra: Any) -> list[str]:
    doc = {"version": 1, "name": "w", "topology": {"storage": {"count": 1}},
           "workload": {"driver": "fio", "params": {"rw": "randread", "size": "4m"}},
           "repeat": 1, "phases": {"warmup": "0s", "steady": "20s"}, **extra}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(lab or LAB, sort_keys=False))
    plan = build_plan(load_scenario(tmp_path / "s.yaml"), load_lab(tmp_path / "lab.yaml"))
    return [f"{f.at}: {f.path}: {f.message}" for f in plan.findings
            if "not checked" in f.message or "nothing watches" in f.message]


def test_lab_hygiene_on_a_lab_without_vcenter_is_warned(tmp_path: Path) -> None:
    (warning,) = _warnings(tmp_path, lab_hygiene={"drs": "manual", "tune": True})
    assert warning.startswith(f"{tmp_path / 's.yaml'}:") and ": lab_hygiene: " in warning
    assert warning.endswith("lab_hygiene: not checked nor tuned: the run works in no "
                            "vCenter (no `vm:` group; its driver acts on none)")


def test_a_disturbance_action_nothing_can_see_is_warned(tmp_path: Path) -> None:
    (warning,) = _warnings(tmp_path, disturbance="fail")
    assert ": disturbance: " in warning and warning.endswith(
        "disturbance: nothing watches the trials: the run works in no vCenter and collects "
        "no esxtop")
    # esxtop watches the busy VMs; `watch: false` asks for nothing; neither set: nothing.
    assert _warnings(tmp_path, disturbance="fail", collectors=[{"kind": "esxtop"}]) == []
    assert _warnings(tmp_path, disturbance={"action": "flag", "watch": False}) == []
    assert _warnings(tmp_path) == []


def test_a_run_in_vsphere_is_not_warned(tmp_path: Path) -> None:
    lab = {"version": 1, "name": "vs", "vcenters": {"vc1": {
        "url": "https://127.0.0.1:1/sdk", "user": "u", "password": "${env:VB_NONE}",
        "ip_pool": {"addresses": ["10.0.0.1"]}}}}
    assert _warnings(tmp_path, lab, lab_hygiene={"drs": "manual"}, disturbance="fail",
                     topology={"storage": {"count": 1, "vm": {"template": "t"}}}) == []
