"""VMs deployed from a content library item: the `vm:` fields (located mistakes), what
the plan says, and the pure pieces of deploy and cleanup (placement by id, which
failures leave the intent open, which VMs cleanup may vouch for by name)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pyVmomi import vim

from vbench.config.load import load_scenario
from vbench.config.scenario import VmSpec
from vbench.errors import ConfigValidationError
from vbench.vsphere.cleanup import _deployed_by
from vbench.vsphere.content_library import ContentLibraryError
from vbench.vsphere.inventory import Obj
from vbench.vsphere.journal import JournalItem
from vbench.vsphere.library_deploy import _on_the_wire, rest_placement
from vbench.vsphere.specs import Placement

RUN = "20250102-030405-abcd1234"

SCENARIO = """\
version: 1
name: lib
topology:
  web:
    count: 2
    vm:
{vm}
workload:
  driver: fio
phases:
  steady: 1m
"""


def problems(tmp_path: Path, vm: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(vm=vm))
    with pytest.raises(ConfigValidationError) as exc:
        load_scenario(path)
    return [str(i) for i in exc.value.issues]


def test_library_item_and_library_deploy_instead_of_cloning(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(vm="      library_item: app\n      library: golden\n"
                                    "      cpus: 2\n      keep: true"))  # fmt: skip
    spec = load_scenario(path).model.topology["web"].vm
    assert spec is not None and (spec.library_item, spec.library, spec.template) == (
        "app", "golden", None)  # fmt: skip
    assert spec.source_text == "deployed from item 'app' of content library 'golden'"


@pytest.mark.parametrize(
    ("vm", "expected"),
    [
        ("      library_item: app", "s.yaml:7:21: topology.web.vm.library_item: "
         "`library_item` needs `library`: the content library holding the item"),
        ("      library: golden", "s.yaml:7:16: topology.web.vm.library: `library` goes with "
         "`library_item` (the item to deploy the VMs from): add it, or remove `library`"),
        ("      template: t\n      library_item: app\n      library: golden",
         "s.yaml:8:21: topology.web.vm.library_item: give either `template` or "
         "`library_item` (deploy from a content library), not both"),
        ("      existing: [a, b]\n      library_item: app\n      library: golden",
         "s.yaml:8:21: topology.web.vm.library_item: give either `existing` or "
         "`library_item` (deploy from a content library), not both"),
        ("      library_item: app\n      library: golden\n      linked: true",
         "s.yaml:9:15: topology.web.vm.linked: a linked clone needs a template's snapshot: "
         "VMs deployed from a library item are full copies (remove `linked`)"),
    ],
)
def test_library_mistakes_are_located_at_the_field_to_change(
    tmp_path: Path, vm: str, expected: str
) -> None:
    assert [p.split("/")[-1] for p in problems(tmp_path, vm)] == [expected]


def test_a_vm_group_without_any_source_names_all_three(tmp_path: Path) -> None:
    [line] = problems(tmp_path, "      cpus: 2")
    assert line.endswith("give either `template` (clone), `library_item` + `library` (deploy "
                         "from a content library) or `existing` (VM names)")  # fmt: skip


def test_source_text_of_clones_and_existing_vms() -> None:
    assert VmSpec(template="t").source_text == "clones of template 't'"
    assert VmSpec(template="t", linked=True).source_text == "linked clones of template 't'"
    assert VmSpec(existing=["a", "b"]).source_text == "existing VMs a, b"


def _placement(hosts: int, datastore: bool = True) -> Placement:
    return Placement(
        template=None,
        pool=vim.ResourcePool("resgroup-9"),
        folder=vim.Folder("group-4"),
        datastore=vim.Datastore("datastore-7") if datastore else None,
        hosts=tuple(vim.HostSystem(f"host-{i}") for i in range(hosts)),
        network=None,
    )


def test_rest_placement_names_ids_and_spreads_hosts_by_index() -> None:
    spread = _placement(hosts=2)
    assert [rest_placement(spread, i).host for i in range(3)] == ["host-0", "host-1", "host-0"]
    one = rest_placement(_placement(hosts=0, datastore=False), 5)
    assert (one.folder, one.resource_pool, one.host, one.datastore) == (
        "group-4", "resgroup-9", None, None)  # fmt: skip
    assert rest_placement(spread, 0).vmtx() == {
        "folder": "group-4", "resource_pool": "resgroup-9", "host": "host-0"}  # fmt: skip


def _raised(inner: BaseException | None) -> ContentLibraryError:
    try:
        try:
            if inner is not None:
                raise inner
            raise ValueError("answered")
        except (httpx.HTTPError, ValueError):
            if inner is None:
                raise ContentLibraryError("vcenter vc1", "deploy 'x': HTTP 400") from None
            raise ContentLibraryError("vcenter vc1", "no answer") from None
    except ContentLibraryError as exc:
        return exc


def test_a_deploy_without_an_answer_keeps_its_intent_open() -> None:
    assert _on_the_wire(_raised(httpx.ReadTimeout("timed out")))
    assert _on_the_wire(_raised(httpx.ConnectError("refused")))
    assert not _on_the_wire(_raised(None))  # vCenter answered: the deploy failed


def _item(name: str, action: str = "deploy") -> JournalItem:
    return JournalItem("vc1", name, action)


def test_cleanup_vouches_by_name_only_for_this_runs_deploys() -> None:
    vm = Obj(vim.VirtualMachine("vm-42"))
    assert _deployed_by(_item(f"vb-{RUN}-web-1"), vm, RUN) == "vm-42"
    assert _deployed_by(_item(f"vb-{RUN}-web-1", action="clone"), vm, RUN) is None
    assert _deployed_by(_item("vb-keep-lib-web-1"), vm, RUN) is None  # kept: not run-specific
    assert _deployed_by(_item("vb-20250102-030405-abcd1235-web-1"), vm, RUN) is None
