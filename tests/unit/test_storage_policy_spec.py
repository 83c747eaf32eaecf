"""Storage policy on data disks, the pure parts: the device spec a disk gets, the rules
text of a policy, and the one-line message naming close policy names."""

from __future__ import annotations

import pytest
from pyVmomi import pbm, vim

from vbench.config.scenario import VmSpec
from vbench.errors import ConfigError
from vbench.vsphere.disks import disk_changes
from vbench.vsphere.spbm import missing_policy_text, rules_of


def _disk_changes(policy_ids: dict[str, str] | None) -> list:  # type: ignore[type-arg]
    spec = VmSpec.model_validate({"template": "t", "disks": [
        {"size": "1g", "count": 2, "storage_policy": "gold"}, {"size": "1g"}]})  # fmt: skip
    ctrl = vim.vm.device.ParaVirtualSCSIController(key=1000, busNumber=0)
    changes = disk_changes([ctrl], spec.disks, None, policy_ids)
    return [c for c in changes if isinstance(c.device, vim.vm.device.VirtualDisk)]


def test_each_disk_naming_a_policy_carries_its_profile_id() -> None:
    disks = _disk_changes({"gold": "id-gold"})
    assert [[p.profileId for p in c.profile or ()] for c in disks] == [
        ["id-gold"], ["id-gold"], []]  # fmt: skip


def test_an_unresolved_policy_is_an_error_not_a_disk_without_policy() -> None:
    with pytest.raises(ConfigError, match="'gold' was not resolved"):
        _disk_changes(None)


def test_rules_are_namespace_id_value_lines() -> None:
    cap = pbm.capability.CapabilityInstance(
        id=pbm.capability.CapabilityMetadata.UniqueId(namespace="VSAN", id="stripeWidth"),
        constraint=[pbm.capability.ConstraintInstance(propertyInstance=[
            pbm.capability.PropertyInstance(id="stripeWidth", value=2)])])  # fmt: skip
    sub = pbm.profile.SubProfileCapabilityConstraints.SubProfile(name="r", capability=[cap])
    constraints = pbm.profile.SubProfileCapabilityConstraints(subProfiles=[sub])
    assert rules_of(constraints) == ("VSAN.stripeWidth=2",)
    assert rules_of(pbm.profile.CapabilityConstraints()) == ()


def test_missing_policy_names_close_ones_or_all() -> None:
    known = ["vSAN Default Storage Policy", "VM Encryption Policy"]
    assert "did you mean vSAN Default Storage Policy?" in missing_policy_text(
        "vSAN Default Policy", known)  # fmt: skip
    assert missing_policy_text("zz", known) == (
        "no storage policy 'zz' (it has: VM Encryption Policy, vSAN Default Storage Policy)")
