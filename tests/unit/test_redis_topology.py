"""Placement, configs, command lines, listening-socket parsing and the trial's samples."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from vbench.errors import ConfigError
from vbench.parsers.redis_benchmark import RedisBenchTest
from vbench.workloads.listening import conflicts, is_listening, parse_listeners
from vbench.workloads.redis_scaleout.metrics import ClientFigures, samples_for
from vbench.workloads.redis_scaleout.params import RedisParams
from vbench.workloads.redis_scaleout.topology import (
    Host,
    benchmark_argv,
    haproxy_conf,
    nutcracker_conf,
    place,
    preload_streams,
    redis_conf,
)

H1, H2, H3 = Host("h1", "10.0.0.1"), Host("h2", "10.0.0.2"), Host("h3", "10.0.0.3")
STUDY: dict[str, Any] = {"servers": 8, "clients": 8, "connections": 100, "pipeline": 30}


def test_study_scale_out_on_one_host_per_tier() -> None:
    p = RedisParams(**STUDY)
    layout = place(p, [H3], [H2], [H1])
    assert [str(s.endpoint) for s in layout.servers] == [f"10.0.0.3:{7001 + i}" for i in range(8)]
    assert [str(t.endpoint) for t in layout.twemproxies] == ["10.0.0.2:22121"]
    assert [str(h.endpoint) for h in layout.haproxies] == ["10.0.0.2:6380"]
    assert [str(e) for e in layout.entry] == ["10.0.0.2:6380"]
    assert layout.method == "processes"
    ops = [c.op for c in layout.clients]
    assert ops == ["get", "get", "get", "set", "get", "get", "get", "set"]  # interleaved
    assert {c.connections for c in layout.clients} == {100}
    assert layout.describe()["by_operation"] == {
        "get": {"processes": 6, "connections": 600}, "set": {"processes": 2, "connections": 200},
    }  # fmt: skip


def test_baseline_splits_one_clients_connections_by_the_mix() -> None:
    p = RedisParams(servers=1, clients=1, connections=100, twemproxy=False, haproxy=False,
                    requests=1000)
    layout = place(p, [H3], [], [H1])
    assert layout.method == "connections" and not layout.twemproxies and not layout.haproxies
    assert [(c.id, c.op, c.connections, c.requests) for c in layout.clients] == [
        ("c01-get", "get", 75, 750), ("c01-set", "set", 25, 250),
    ]  # fmt: skip
    assert {str(c.target) for c in layout.clients} == {"10.0.0.3:7001"}


def test_vm_mode_spreads_one_server_per_guest_and_uses_only_what_it_needs() -> None:
    vms = [Host(f"vm{i}", f"10.0.1.{i}") for i in range(1, 9)]
    layout = place(RedisParams(**STUDY), vms, [H2], [H1])
    assert [(s.guest, s.port) for s in layout.servers] == [(f"vm{i}", 7001) for i in range(1, 9)]
    base = place(RedisParams(servers=1, twemproxy=False, haproxy=False), vms, [], [H1])
    assert [s.guest for s in base.servers] == ["vm1"]


def test_clients_spread_over_guests_and_entry_points() -> None:
    p = RedisParams(clients=4, mix={"get": 100}, haproxy=False, twemproxy_instances=2)
    layout = place(p, [H3], [H2], [H1, H3])
    assert [c.guest for c in layout.clients] == ["h1", "h3", "h1", "h3"]
    assert [c.target.port for c in layout.clients] == [22121, 22122, 22121, 22122]


def test_missing_groups_are_refused() -> None:
    with pytest.raises(ConfigError, match="role 'proxies' has no guests"):
        place(RedisParams(), [H3], [], [H1])
    with pytest.raises(ConfigError, match="'clients'"):
        place(RedisParams(twemproxy=False, haproxy=False), [H3], [], [])


def test_host_names_bind_every_address() -> None:
    assert Host("a", "10.0.0.1").bind == "10.0.0.1"
    assert Host("a", "redis-vm1.lab").bind == "0.0.0.0"


def test_benchmark_command_lines() -> None:
    p = RedisParams(**STUDY, keyspace=250_000_000, loop_requests=1000, threads=2)
    c = place(p, [H3], [H2], [H1]).clients[3]
    argv = benchmark_argv(p, c, loop=True)
    assert argv[:3] == ["stdbuf", "-oL", "redis-benchmark"]
    joined = " ".join(argv)
    assert "-h 10.0.0.2 -p 6380 -c 100 -P 30 -r 250000000 -d 1 -t set --csv" in joined
    assert argv[-3:] == ["-n", "1000", "-l"] and "--threads 2" in joined
    fixed = benchmark_argv(RedisParams(requests=500), place(
        RedisParams(requests=500, clients=4), [H3], [H2], [H1]).clients[0], loop=False)
    assert fixed[-2:] == ["-n", "500"]


def test_redis_conf_has_aof_and_overrides() -> None:
    p = RedisParams(redis_conf={"io-threads": 4, "lazyfree-lazy-eviction": True,
                                "save-note": "a b"})
    inst = place(p, [H3], [H2], [H1]).servers[0]
    text = redis_conf(p, inst, "/tmp/x y/redis-7001", "hdr")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert "bind 10.0.0.3" in lines and "port 7001" in lines and "daemonize no" in lines
    assert "appendonly yes" in lines and "appendfsync everysec" in lines and 'save ""' in lines
    assert 'dir "/tmp/x y/redis-7001"' in lines
    assert "io-threads 4" in lines and "lazyfree-lazy-eviction yes" in lines
    assert 'save-note "a b"' in lines
    none = redis_conf(RedisParams(persistence="none"), inst, "/d", "h")
    assert "appendonly no" in none and "appendfsync" not in none


def test_nutcracker_pool_is_ketama_over_every_server() -> None:
    p = RedisParams(**STUDY)
    layout = place(p, [H3], [H2], [H1])
    doc = yaml.safe_load(nutcracker_conf(p, layout.twemproxies[0], layout.servers, "hdr"))
    pool = doc["vbench"]
    assert pool["listen"] == "10.0.0.2:22121" and pool["distribution"] == "ketama"
    assert pool["hash"] == "fnv1a_64" and pool["redis"] is True
    assert pool["server_connections"] == 1 and pool["auto_eject_hosts"] is False
    assert pool["servers"] == [f"10.0.0.3:{7001 + i}:1 redis{i + 1}" for i in range(8)]


def test_haproxy_round_robins_over_the_twemproxies() -> None:
    p = RedisParams(**STUDY, twemproxy_instances=2)
    layout = place(p, [H3], [H2, H1], [H1])
    text = haproxy_conf(p, layout.haproxies[0], layout.twemproxies, "hdr", 800)
    assert "mode tcp" in text and "balance roundrobin" in text and "bind 10.0.0.2:6380" in text
    servers = [ln.split()[1:] for ln in text.splitlines() if ln.strip().startswith("server ")]
    assert servers == [["twemproxy1", "10.0.0.2:22121"], ["twemproxy2", "10.0.0.2:22122"],
                       ["twemproxy3", "10.0.0.1:22121"], ["twemproxy4", "10.0.0.1:22122"]]
    assert "maxconn 2000" in text


def test_preload_slices_through_proxies_or_fills_every_server() -> None:
    p = RedisParams(**STUDY, keyspace=10, preload_streams=4)
    streams = preload_streams(p, place(p, [H3], [H2], [H1]))
    assert [(str(t), a, b) for t, a, b in streams] == [
        ("10.0.0.2:6380", 0, 2), ("10.0.0.2:6380", 2, 5), ("10.0.0.2:6380", 5, 7),
        ("10.0.0.2:6380", 7, 10),
    ]  # fmt: skip
    direct = RedisParams(servers=2, clients=2, twemproxy=False, haproxy=False, keyspace=10)
    streams = preload_streams(direct, place(direct, [H3], [], [H1]))
    assert [(str(t), a, b) for t, a, b in streams] == [
        ("10.0.0.3:7001", 0, 10), ("10.0.0.3:7002", 0, 10),
    ]  # fmt: skip


PROC_NET_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0200007F:1B59 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 00000000:18EC 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0200007F:1B59 0300007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3 1
  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0
   1: 0000000000000000FFFF00000300007F:1B5A 00000000000000000000000000000000:0000 0A 0
"""


def test_listening_sockets_from_proc_net_tcp() -> None:
    found = parse_listeners(PROC_NET_TCP)
    assert found == {("127.0.0.2", 7001), ("0.0.0.0", 6380), ("::", 8080), ("127.0.0.3", 7002)}
    assert conflicts(found, "127.0.0.2", 7001) == ["127.0.0.2:7001"]
    assert conflicts(found, "127.0.0.3", 7001) == []  # another loopback guest
    assert conflicts(found, "127.0.0.5", 6380) == ["0.0.0.0:6380"]  # wildcard listener
    assert conflicts(found, "0.0.0.0", 7002) == ["127.0.0.3:7002"]
    assert is_listening(found, "127.0.0.9", 8080) and not is_listening(found, "127.0.0.3", 7001)


def _test(op: str, rps: float | None, avg: float, p99: float) -> RedisBenchTest:
    return RedisBenchTest(op.upper(), rps, avg_ms=avg, min_ms=0.1, p50_ms=avg, p95_ms=p99,
                          p99_ms=p99, max_ms=p99 * 2)


def _samples(rps: list[float | None], sizes: dict[str, int | None]) -> dict[tuple, Any]:
    p = RedisParams(servers=2, clients=4, mix={"get": 75, "set": 25}, connections=4)
    layout = place(p, [H3], [H2], [H1])
    figures = [ClientFigures(c, _test(c.op, r, 1.0 + i, 2.0 + i))
               for i, (c, r) in enumerate(zip(layout.clients, rps, strict=True))]
    out = samples_for(p, layout, figures, sizes)
    return {(s.metric, s.guest, s.labels): s for s in out}


def test_trial_samples_sum_and_weight_the_processes() -> None:
    sizes = {"10.0.0.3:7001": 600, "10.0.0.3:7002": 400}
    s = _samples([100.0, 300.0, 100.0, 500.0], sizes)  # c01-c03 GET, c04 SET
    assert s[("ops_per_sec", None, ())].value == 1000.0
    assert s[("ops_per_sec", None, ())].unit == "ops/s"
    assert s[("ops_per_sec", "h1", ())].value == 1000.0
    one = s[("ops_per_sec", "h1", (("op", "GET"), ("process", "c02-get")))]
    assert one.value == 300.0
    assert s[("latency_p99", "h1", (("op", "SET"), ("process", "c04-set")))].value == 5.0
    assert s[("get_ops_per_sec", None, ())].value == 500.0
    assert s[("set_ops_per_sec", None, ())].value == 500.0
    # GET avg latencies 1, 2, 3 ms at 100, 300, 100 ops/s → (100 + 600 + 300) / 500 = 2.
    assert s[("get_latency_avg", None, ())].value == pytest.approx(2.0)
    assert s[("get_latency_p99_max", None, ())].value == 4.0
    assert s[("mix_get_pct", None, ())].value == 50.0
    assert s[("dbsize", "h3", (("server", "10.0.0.3:7002"),))].value == 400.0
    assert s[("keys_total", None, ())].value == 1000.0
    assert s[("servers_with_keys", None, ())].value == 2.0
    assert s[("key_spread", None, ())].value == pytest.approx(400 / 600)
    assert s[("client_connections", None, ())].value == 16.0


def test_missing_figures_stay_missing() -> None:
    s = _samples([100.0, None, 100.0, 500.0], {"10.0.0.3:7001": 5, "10.0.0.3:7002": None})
    assert s[("ops_per_sec", None, ())].value is None  # never a smaller sum
    assert s[("keys_total", None, ())].value is None
    assert s[("dbsize", "h3", (("server", "10.0.0.3:7002"),))].value is None
