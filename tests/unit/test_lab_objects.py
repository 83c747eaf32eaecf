"""What each built-in driver declares it will touch in the lab (Workload.lab_objects,
issue 23 item 1), read from its parameters alone: the objects, where the scenario names
them (for located messages) and in which vCenter; and `vbench plan` lists them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from vbench.cli import cli
from vbench.workloads.content_library.params import ContentLibraryParams
from vbench.workloads.content_library.params import lab_objects as cl_objects
from vbench.workloads.vcbench.params import VcbenchParams
from vbench.workloads.vcbench.params import lab_objects as vcb_objects


def _named(objects: tuple) -> list[tuple]:
    return [(o.kind, o.name, o.path, o.vcenter) for o in objects]


def test_vcbench_names_its_template_cluster_and_datastores_in_each_vcenter() -> None:
    p = VcbenchParams(template="t1", sessions=3, vcenters=["vc1", "vc2"], cluster="C0",
                      datastores=["ds1"])
    assert _named(vcb_objects(p)) == [
        ("vm", "t1", "template", "vc1"), ("cluster", "C0", "cluster", "vc1"),
        ("datastore", "ds1", "datastores.0", "vc1"),
        ("vm", "t1", "template", "vc2"), ("cluster", "C0", "cluster", "vc2"),
        ("datastore", "ds1", "datastores.0", "vc2"),
    ]
    assert [o.vcenter_path for o in vcb_objects(p)][::3] == ["vcenters.0", "vcenters.1"]


def test_vcbench_named_vms_are_split_over_the_vcenters_as_the_sessions_are() -> None:
    p = VcbenchParams(vms=["a", "b", "c"], sessions=3, vcenters=["vc1", "vc2"])
    assert _named(vcb_objects(p)) == [("vm", "a", "vms.0", "vc1"), ("vm", "b", "vms.1", "vc1"),
                                      ("vm", "c", "vms.2", "vc2")]


def test_content_library_names_backings_existing_libraries_and_targets() -> None:
    p = ContentLibraryParams.model_validate({
        "datastore": "ds0", "subscriber_vcenter": "vc2", "subscriber_datastore": "ds9",
        "steps": [
            {"op": "create_library", "library": "pub", "publish": True},
            {"op": "subscribe", "library": "sub", "publisher": "pub"},
            {"op": "create_library", "library": "gold", "existing": True, "label": "gold"},
            {"op": "deploy", "library": "gold", "item": "linux",
             "target": {"cluster": "C1", "folder": "vms"}},
            {"op": "create_library", "library": "nfs", "storage_uri": "nfs://h/x", "label": "n"},
        ],
    })  # fmt: skip
    assert _named(cl_objects(p)) == [
        ("datastore", "ds0", "datastore", None),
        ("datastore", "ds9", "subscriber_datastore", "vc2"),
        ("library", "gold", "steps.2.library", None),
        ("library_item", "linux", "steps.3.item", None),
        ("cluster", "C1", "steps.3.target.cluster", None),
        ("folder", "vms", "steps.3.target.folder", None),
    ]
    assert cl_objects(p)[3].library == "gold"


def test_plan_lists_the_objects_the_parameters_name(tmp_path: Path) -> None:
    path = tmp_path / "vcb.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "name": "vcb", "repeat": 1, "phases": {"steady": "1s"},
        "workload": {"driver": "vcbench",
                     "params": {"template": "DC0_C0_RP0_VM9", "datastores": ["LocalDS_7"]}}}))
    text = CliRunner().invoke(cli, ["plan", str(path)])
    assert text.exit_code == 0, text.output
    assert "vCenter objects named: vm DC0_C0_RP0_VM9, datastore LocalDS_7 (looked up" in (
        text.output)
    doc = json.loads(CliRunner().invoke(cli, ["plan", str(path), "--json"]).output)
    assert [(o["kind"], o["name"], o["path"]) for o in doc["lab_objects"]] == [
        ("vm", "DC0_C0_RP0_VM9", "template"), ("datastore", "LocalDS_7", "datastores.0")]
