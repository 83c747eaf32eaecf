"""A register that vCenter refuses because the VM is registered already has what it was
for: the VM is back. The operator then takes the VM by the id the fault names, and the
trial's teardown does not call it a failure — an interrupted vcbench trial's teardown
raised 'cannot register vb-…-s1-3 again (AlreadyExists: … name=vm-177)' when a register
still on the wire at the cancel had ended (seen beside a CPU hog in a clean-clone run)."""

from __future__ import annotations

from vbench.vsphere.operations import OpRecord


def _rec(fault_type: str | None, fault: str | None) -> OpRecord:
    return OpRecord("register", 1, "vc1", "vb-t1-s1-3", 0.0, 1.0, fault_type is None,
                    fault_type, fault)


def test_a_register_refused_as_already_registered_names_the_vm() -> None:
    assert _rec("AlreadyExists", "AlreadyExists: name=vm-177").registered_already == "vm-177"


def test_other_register_failures_are_failures() -> None:
    assert _rec("AlreadyExists", "AlreadyExists").registered_already is None  # names none
    assert _rec("NotFound", "NotFound: name=vm-177").registered_already is None
    assert _rec(None, None).registered_already is None
