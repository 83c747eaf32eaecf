"""Parameters and commands of the iperf3, netperf and dvdstore drivers (pure): what each
builds from a scenario's values, and what it refuses with a location."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError
from vbench.workloads.base import get_driver
from vbench.workloads.dvdstore.params import DvdStoreParams, driver_argv, minutes
from vbench.workloads.pairs import Pair, make_pairs, size_bytes

PAIR = Pair(3, "c1", "s1", "10.0.0.5", 5204)


def test_sizes_are_powers_of_1024() -> None:
    assert [size_bytes(x) for x in ("256", "16K", "64k", "1M")] == [256, 16384, 65536, 1 << 20]
    with pytest.raises(ValueError, match="not a size"):
        size_bytes("16 KB")


def test_pairs_give_each_client_instance_its_own_server_port() -> None:
    pairs = make_pairs(["c1", "c2"], ["s1", "s2", "s3"], 2, 5201,
                       {"s1": "a1", "s2": "a2", "s3": "a3"})
    assert [(p.client, p.server, p.address, p.port) for p in pairs] == [
        ("c1", "s1", "a1", 5201), ("c1", "s2", "a2", 5202),
        ("c2", "s3", "a3", 5203), ("c2", "s1", "a1", 5204)]


def test_iperf3_client_argv_from_params() -> None:
    cls = get_driver("iperf3")
    w = cls(cls.Params(protocol="udp", bitrate="10G", length="64k", streams=4,
                       direction="reverse", window="4M"))
    argv = w.client_argv(PAIR, "/w/d", 2.5, 30)
    assert argv[:13] == ["iperf3", "-c", "10.0.0.5", "-p", "5204", "-t", "30", "-O", "3",
                         "-P", "4", "-i", "1"]
    rest = [a for a in argv[13:] if a not in ("-J", "--logfile", "/w/d/client-3.json")]
    assert rest == ["-u", "-b", "10G", "-l", "64K", "-w", "4M", "-R"]
    assert w.server_argv(PAIR, "/w/d") == ["iperf3", "-s", "-1", "-B", "10.0.0.5", "-p", "5204"]


def test_iperf3_findings() -> None:
    cls = get_driver("iperf3")
    found = cls.findings(cls.Params(protocol="udp", no_delay=True))
    assert {(f.level, f.path) for f in found} == {("warning", "bitrate"), ("error", "protocol")}


def test_netperf_argv_and_findings() -> None:
    cls = get_driver("netperf")
    w = cls(cls.Params(test="TCP_STREAM", message_size="16K", selectors=["THROUGHPUT"]))
    assert w.client_argv(PAIR, "/d", 0, 20) == [
        "netperf", "-H", "10.0.0.5", "-p", "5204", "-t", "TCP_STREAM", "-l", "20", "-c", "-C",
        "--", "-o", "THROUGHPUT", "-m", "16K"]
    assert w.warmup_argv(PAIR, "/d", 5)[w.warmup_argv(PAIR, "/d", 5).index("-l") + 1] == "5"
    bad = cls.findings(cls.Params(test="TCP_RR", message_size="1K", selectors=["rm -rf"]))
    assert {f.path for f in bad} == {"selectors", "message_size"}


def test_dvdstore_argv_one_argument_per_option() -> None:
    p = DvdStoreParams(command=["mono", "/opt/ds3/ds3webdriver.exe"], n_threads=4,
                       think_time=0.5, detailed_view=True, db_size="20GB",
                       extra={"n_reviews": 3, "x": "a b; c"})
    argv = driver_argv(p, "db1:80", 60, 90)
    assert argv == ["mono", "/opt/ds3/ds3webdriver.exe", "--target=db1:80", "--n_threads=4",
                    "--run_time=1.5", "--warmup_time=1", "--think_time=0.5",
                    "--db_size=20GB", "--detailed_view=Y", "--n_reviews=3", "--x=a b; c"]
    assert minutes(300) == "5" and minutes(3) == "0.05"
    assert minutes(7510) == "125.167"  # within a second of the steady state asked for


@pytest.mark.parametrize("params,message", [
    ({"command": []}, "at least 1 item"),
    ({"command": ["ds\n2"]}, "control characters"),
    ({"command": ["ds"], "extra": {"run_time": 5}}, "set by vbench"),
    ({"command": ["ds"], "extra": {"Bad-Name": 1}}, "not a driver option name"),
    ({"command": ["ds"], "targets": ["db1; reboot"]}, "not host[:port]"),
    ({"command": ["ds"], "db_size": "huge"}, "String should match pattern"),
])
def test_dvdstore_bad_params_are_located(tmp_path: Path, params: dict, message: str) -> None:
    import yaml

    doc = {"version": 1, "name": "ds", "topology": {"clients": {"count": 1}},
           "workload": {"driver": "dvdstore", "params": {"targets": ["db"], **params}},
           "phases": {"warmup": "1m", "steady": "1m"}}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(p))
    assert message in str(exc.value) and "s.yaml:" in str(exc.value)
