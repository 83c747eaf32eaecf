"""redis_scaleout parameters: what is refused, the pitfalls found, how the mix is realised."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from vbench.workloads.redis_scaleout.params import (
    RedisParams,
    apportion,
    findings,
    mix_method,
    parse_cpu_list,
    parse_ports,
    placement_findings,
)


def params(**kw: Any) -> RedisParams:
    return RedisParams(**kw)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"pipeline": 0}, "greater than or equal to 1"),
        ({"mix": {"get": 70, "set": 20}}, "sums to 90 %, it must sum to 100 %"),
        ({"mix": {"get": 50, "lrange": 50}}, "unknown operation lrange"),
        ({"mix": {"get": 150, "set": -50}}, "cannot be negative"),
        ({"servers": 0}, "a proxy tier with no servers"),
        ({"server_ports": "7010-7001"}, "first <= last"),
        ({"server_ports": "abc"}, "not a port or port range"),
        ({"twemproxy_ports": "7050-7060"}, "server_ports and twemproxy_ports overlap"),
        ({"haproxy_port": 22221}, "stats ports"),
        ({"redis_conf": {"port": 1}}, "written by vbench"),
        ({"redis_conf": {"io threads": 4}}, "not a redis.conf directive"),
        ({"redis_conf": {"maxmemory": "1gb\nport 1"}}, "control characters"),
        ({"pin": {}}, "exactly one of cpus or numa_node"),
        ({"pin": {"cpus": "0-3", "irqs": True}}, "needs nic"),
        ({"pin": {"cpus": "zero"}}, "not a CPU list"),
        ({"docker_images": {"redis": "redis 7"}}, "not an image reference"),
        ({"unknown_key": 1}, "unknown key"),
    ],
)
def test_invalid_parameters_are_refused(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        params(**kw)


def test_defaults_are_the_study_persistence_and_mix() -> None:
    p = params()
    assert (p.persistence, p.appendfsync) == ("aof", "everysec")
    assert p.mix == {"get": 75.0, "set": 25.0}
    assert p.duration_mode and p.proxies_on


def test_zero_shares_are_dropped_from_the_mix() -> None:
    assert params(mix={"get": 100, "set": 0}).mix == {"get": 100.0}


def test_port_and_cpu_lists() -> None:
    assert parse_ports("7001-7004") == range(7001, 7005)
    assert parse_ports(7001) == range(7001, 7002)
    assert parse_cpu_list("0-2,8,10-11") == [0, 1, 2, 8, 10, 11]


def test_apportion_by_largest_remainder() -> None:
    assert apportion(8, {"get": 75, "set": 25}) == {"get": 6, "set": 2}
    assert apportion(100, {"get": 75, "set": 25}) == {"get": 75, "set": 25}
    assert apportion(3, {"get": 50, "set": 50}) == {"get": 2, "set": 1}
    assert sum(apportion(7, {"get": 33.3, "set": 33.3, "incr": 33.4}).values()) == 7


def test_auto_mix_method_uses_processes_only_when_exact() -> None:
    assert mix_method(params(clients=8)) == "processes"  # 6 GET + 2 SET
    assert mix_method(params(clients=1)) == "connections"  # 75/25 of the connections
    assert mix_method(params(clients=1, mix={"get": 100})) == "processes"
    assert mix_method(params(clients=4, mix_method="connections")) == "connections"


def test_processes_method_with_too_few_clients_is_an_error() -> None:
    found = findings(params(clients=1, mix_method="processes"))
    assert [(f.level, f.path) for f in found] == [("error", "mix_method")]
    assert "cannot carry set" in found[0].message


def test_processes_method_inexact_mix_is_a_warning_with_the_real_mix() -> None:
    (f,) = findings(params(clients=3, mix_method="processes"))
    assert f.level == "warning" and "get 66.7 %" in f.message and "set 33.3 %" in f.message


def test_connection_split_needs_a_connection_per_operation() -> None:
    found = findings(params(clients=1, connections=1))
    assert [(f.level, f.path) for f in found] == [("error", "connections")]


def test_haproxy_without_twemproxy_warns_about_key_placement() -> None:
    found = findings(params(clients=4, twemproxy=False))
    assert [(f.level, f.path) for f in found] == [("warning", "twemproxy")]


def test_docker_twemproxy_needs_an_image() -> None:
    found = findings(params(clients=4, deployment="docker"))
    assert ("error", "docker_images.twemproxy") in [(f.level, f.path) for f in found]
    ok = findings(params(clients=4, deployment="docker", docker_images={"twemproxy": "t:1"}))
    assert not [f for f in ok if f.level == "error"]


def test_more_instances_per_guest_than_ports_is_an_error() -> None:
    p = params(servers=8, server_ports="7001-7004")
    (f,) = placement_findings(p, {"servers": 1, "clients": 1})
    assert f.level == "error" and "8 redis-server instances per guest" in f.message
    assert placement_findings(p, {"servers": 2, "clients": 1}) == []  # 4 per guest fit
    many = params(twemproxy_instances=3, twemproxy_ports="22121-22122")
    assert [f.path for f in placement_findings(many, {"servers": 1})] == ["twemproxy_instances"]


def test_a_keyspace_beyond_the_keys_twelve_digits_is_refused() -> None:
    # Found by tests/unit/test_fuzz_configs.py: 400 nines reached the plan's estimate of
    # the preload and crashed it (OverflowError) instead of a located error.
    with pytest.raises(ValidationError, match="less than or equal to 1000000000000"):
        RedisParams(keyspace=int("9" * 400))
