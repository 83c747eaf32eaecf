"""A lab with several vCenters says which is the default (issue 23, item 5): `validate
--lab` and `plan --lab` report a point of a vCenter driver with no vCenter at the
scenario's line (not `run` without file or line), a lab's `default_vcenter:` chooses one
(a profile's `vcenter:` still wins), and a vCenter a driver's parameters name must be one
of the lab's, located at the parameter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vbench.config.lab import Lab
from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan
from vbench.engine.vsphere_run import VSphereRun
from vbench.errors import ConfigValidationError

VC = {"url": "https://127.0.0.1:8989/sdk", "user": "u", "password": "${env:X}"}
CL_STEPS = [{"op": "create_library", "library": "pub", "datastore": "LocalDS_0"},
            {"op": "import", "library": "pub"}]


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _lab(tmp: Path, **extra: Any) -> Path:
    return _write(tmp / "lab.yaml", {"version": 1, "name": "two",
                                     "vcenters": {"vc1": VC, "vc2": VC}, **extra})


def _scenario(tmp: Path, params: dict[str, Any], **extra: Any) -> Path:
    return _write(tmp / "cl.yaml", {
        "version": 1, "name": "cl", "workload": {"driver": "content_library", "params": params},
        "repeat": 1, "phases": {"steady": "1s"}, **extra,
    })


def _issues(scenario: Path, lab: Path) -> list[str]:
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(scenario), load_lab(lab))
    return [str(i) for i in exc.value.issues]


def _line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def test_a_point_with_no_vcenter_is_refused_at_the_scenarios_line(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, {"steps": CL_STEPS})
    (issue,) = _issues(scenario, _lab(tmp_path))
    where = f"{scenario}:{_line_of(scenario, 'driver: content_library')}:"
    assert issue.startswith(where), issue
    assert "lab" in issue and "has 2 vCenters (vc1, vc2) and no `default_vcenter:`" in issue
    assert "a profile with `vcenter:`" in issue


def test_a_profile_level_without_vcenter_is_located_at_that_level(tmp_path: Path) -> None:
    lab = _lab(tmp_path, profiles={"fast": {"labels": {"disk": "ssd"}},
                                   "other": {"vcenter": "vc2"}})
    scenario = _scenario(tmp_path, {"steps": CL_STEPS}, factors={
        "site": {"levels": [{"label": "a", "profile": "fast"},
                            {"label": "b", "profile": "other"}]}})
    (issue,) = _issues(scenario, lab)
    assert issue.startswith(f"{scenario}:{_line_of(scenario, 'profile: fast')}:"), issue
    assert "(profile fast: no `vcenter:`)" in issue


def test_the_labs_default_vcenter_chooses_and_a_profile_still_wins(tmp_path: Path) -> None:
    lab = _lab(tmp_path, default_vcenter="vc2", profiles={"one": {"vcenter": "vc1"}})
    scenario = _scenario(tmp_path, {"steps": CL_STEPS}, factors={
        "site": {"levels": [{"label": "a"}, {"label": "b", "profile": "one"}]}})
    plan = build_plan(load_scenario(scenario), load_lab(lab))
    model = load_lab(lab).model
    run = VSphereRun(plan.scenario, model, {}, {},
                     workload_profiles=[p.profiles for p in plan.points])
    try:
        assert run.vcenters == ["vc2", "vc1"]
    finally:
        run.close()


def test_an_unknown_default_vcenter_is_located_in_the_lab(tmp_path: Path) -> None:
    lab = _lab(tmp_path, default_vcenter="vc3")
    with pytest.raises(ConfigValidationError) as exc:
        load_lab(lab)
    (issue,) = [str(i) for i in exc.value.issues]
    assert issue.startswith(f"{lab}:{_line_of(lab, 'default_vcenter')}:"), issue
    assert "'vc3' is not in vcenters (vc1, vc2)" in issue


def test_a_vcenter_the_parameters_name_must_be_the_labs(tmp_path: Path) -> None:
    steps = [*CL_STEPS, {"op": "subscribe", "library": "sub", "publisher": "pub",
                         "vcenter": "vc3", "datastore": "LocalDS_1"}]
    scenario = _scenario(tmp_path, {"steps": steps})
    (issue,) = _issues(scenario, _lab(tmp_path, default_vcenter="vc1"))
    assert issue.startswith(f"{scenario}:{_line_of(scenario, 'vcenter: vc3')}:"), issue
    assert "no vCenter 'vc3' in lab" in issue and "did you mean" in issue
    # A vCenter the driver names with no object there: still refused, at the parameters.
    steps[-1].pop("datastore")
    (issue,) = _issues(_scenario(tmp_path, {"steps": steps}), _lab(tmp_path, default_vcenter="vc1"))
    assert "no vCenter 'vc3' in lab" in issue


def test_a_vm_group_takes_the_default_vcenter(tmp_path: Path) -> None:
    lab = Lab.model_validate({"version": 1, "name": "l", "vcenters": {"vc1": VC, "vc2": VC},
                              "default_vcenter": "vc2"})
    from vbench.config.resolve import provisioning_vcenter
    from vbench.config.scenario import GroupSpec

    group = GroupSpec.model_validate({"count": 1, "vm": {"template": "t"}})
    assert provisioning_vcenter(group, lab) == "vc2"


def test_a_lab_without_vcenter_is_refused_for_a_vcenter_driver(tmp_path: Path) -> None:
    lab = _write(tmp_path / "nodes.yaml", {"version": 1, "name": "nodes-only"})
    (issue,) = _issues(_scenario(tmp_path, {"steps": CL_STEPS}), lab)
    assert f"lab {lab} has none: add one under `vcenters:`" in issue, issue


def test_a_scenario_names_its_profile_and_a_levels_profile_still_wins(tmp_path: Path) -> None:
    lab = _lab(tmp_path, profiles={"remote": {"vcenter": "vc2"}, "one": {"vcenter": "vc1"}})
    scenario = _scenario(tmp_path, {"steps": CL_STEPS}, profile="remote", factors={
        "site": {"levels": [{"label": "a"}, {"label": "b", "profile": "one"}]}})
    plan = build_plan(load_scenario(scenario), load_lab(lab))
    assert [p.profiles for p in plan.points] == [("remote",), ("one", "remote")]
    run = VSphereRun(plan.scenario, load_lab(lab).model, {}, {},
                     workload_profiles=[p.profiles for p in plan.points])
    try:
        assert run.vcenters == ["vc2", "vc1"]
    finally:
        run.close()


def test_a_scenario_profile_the_lab_lacks_is_located_at_it(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, {"steps": CL_STEPS}, profile="remot")
    (issue,) = _issues(scenario, _lab(tmp_path, profiles={"remote": {"vcenter": "vc2"}}))
    assert issue.startswith(f"{scenario}:{_line_of(scenario, 'profile: remot')}:"), issue
    assert "no profile 'remot' in lab" in issue and "(profiles: remote)" in issue
