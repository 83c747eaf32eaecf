"""A redis_scaleout pin's CPU list (``workload.params.pin.cpus``) is expanded to CPU
numbers: ``0-99999999`` made a list of 10^8 numbers in ``vbench validate`` (4 GB of
memory, 2 s of CPU; ten times more digits and the machine runs out of memory). CPU
numbers above Linux's largest (8191) and ranges written backwards are refused as
the located problem they are."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vbench.workloads.redis_scaleout.params import PinSpec, parse_cpu_list


def test_a_cpu_list_is_expanded() -> None:
    assert parse_cpu_list("0-3,8") == [0, 1, 2, 3, 8]
    assert parse_cpu_list("8191") == [8191]


@pytest.mark.parametrize(("cpus", "said"), [
    ("0-99999999999", "8191"),
    ("9" * 5000, "8191"),
    ("0-3,8192", "8191"),
    ("7-3", "backwards"),
])
def test_a_cpu_list_no_linux_has_is_refused_before_it_is_expanded(cpus: str,
                                                                 said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PinSpec(cpus=cpus)
    assert said in str(caught.value)
