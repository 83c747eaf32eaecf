"""A VM's memory, memory reservation and data disk sizes, and its CPU reservation, go to
vCenter in the clone's spec when a run starts: 10^400 MiB passed validate and plan and
would have failed only there, after the run began. Validate refuses sizes past what
vSphere makes (64 TiB covers a VM's 24 TB of memory and a disk's 62 TB) and a CPU
reservation past the API's 64-bit field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vbench.config.vmspec import DataDisk, Reservations


@pytest.mark.parametrize("value", [10**400, 64 * 1024 * 1024 + 1, "65t"])
def test_a_size_past_what_vsphere_makes_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match="64 TiB"):
        DataDisk(size=value)
    with pytest.raises(ValidationError, match="64 TiB"):
        Reservations(memory=value)


def test_sizes_vsphere_makes_are_taken() -> None:
    assert DataDisk(size="62t").size == 62 * 1024 * 1024
    assert Reservations(memory="24t", cpu_mhz=2**63 - 1).memory == 24 * 1024 * 1024


def test_a_cpu_reservation_past_the_apis_64_bit_field_is_refused() -> None:
    with pytest.raises(ValidationError):
        Reservations(cpu_mhz=10**400)
