"""The iperf3 parser on JSON the installed iperf3 writes on loopback (bidirectional TCP
and UDP, as the workload runs them): the parser's unit tests read recorded files, these
read what this machine's iperf3 version writes today."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.conftest import free_port, missing_peer
from vbench.parsers.iperf3 import parse_iperf3


@pytest.fixture(scope="module")
def iperf3_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Real iperf3 on loopback: bidirectional TCP and UDP, as the workload runs them."""
    if shutil.which("iperf3") is None:
        missing_peer("iperf3 is not installed (make test installs it)")
    out = {}
    for name, extra in (("bidir", ["--bidir", "-l", "16K"]),
                        ("udp", ["-u", "-b", "50M", "-l", "1400"])):
        port = free_port()
        server = subprocess.Popen(
            ["iperf3", "-s", "-1", "--forceflush", "-B", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            # Wait for the server's "Server listening" line, not a fixed time.
            line = "start"
            while line and "listening" not in line:
                line = server.stdout.readline()
            assert line, "iperf3 server ended before listening"
            done = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "2",
                                   "-O", "1", "-J", *extra], capture_output=True, text=True,
                                  timeout=60, check=True)
            out[name] = json.loads(done.stdout)
        finally:
            server.wait(timeout=30)
    return out


def test_iperf3_real_bidir_json_gives_both_directions(iperf3_runs: dict[str, dict]) -> None:
    r = parse_iperf3(json.dumps(iperf3_runs["bidir"]))
    assert r.bidir and [d.direction for d in r.directions] == ["forward", "reverse"]
    end = iperf3_runs["bidir"]["end"]
    assert r.directions[1].received_bps == end["sum_received_bidir_reverse"]["bits_per_second"]
    assert {i.direction for i in r.intervals} == {"forward", "reverse"}
    assert any(i.omitted for i in r.intervals)
    assert r.total_gbps() == pytest.approx(
        (end["sum_received"]["bits_per_second"]
         + end["sum_received_bidir_reverse"]["bits_per_second"]) / 1e9)


def test_iperf3_real_udp_json_gives_packet_rate_and_size(iperf3_runs: dict[str, dict]) -> None:
    r = parse_iperf3(json.dumps(iperf3_runs["udp"]))
    d = r.directions[0]
    assert r.protocol == "UDP" and d.packets and d.lost_pct is not None
    assert d.avg_packet_bytes == pytest.approx(1400)
    assert d.packet_rate == pytest.approx(d.packets / d.seconds)
