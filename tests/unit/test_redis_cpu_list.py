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


@pytest.mark.parametrize("field", ["requests", "loop_requests"])
def test_a_request_count_redis_benchmark_cannot_read_is_refused(field: str) -> None:
    """redis-benchmark reads -n with atoi (a C int); 10^400 requests raised OverflowError
    in 'vbench plan' when they were shared over the mix (an internal error, exit 3)."""
    from vbench.workloads.redis_scaleout.params import RedisParams

    for too_many in (10**400, 2**31):
        with pytest.raises(ValidationError):
            RedisParams(**{field: too_many})
    assert getattr(RedisParams(**{field: 2**31 - 1}), field) == 2**31 - 1
