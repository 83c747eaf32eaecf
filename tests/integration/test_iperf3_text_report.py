"""iperf3's default text report from the real iperf3 on loopback: with ``-i 0.5`` the
``(omitted)`` warm-up rows are half a second each, and the parsed ``omit`` is in
seconds (as ``-J``'s), not a count of rows."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import free_port, missing_peer
from vbench.parsers.iperf3 import parse_iperf3

pytestmark = pytest.mark.integration


def test_text_report_omit_is_seconds_with_half_second_rows() -> None:
    if shutil.which("iperf3") is None:
        missing_peer("iperf3 is not installed (make test installs it)")
    port = free_port("127.0.0.1")
    server = subprocess.Popen(["iperf3", "-s", "-1", "--forceflush", "-B", "127.0.0.1",
                               "-p", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:  # the event: the server says it listens
            if "Server listening" in line:
                break
        client = subprocess.run(
            ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "1", "-O", "1", "-i", "0.5",
             "-b", "10M"], capture_output=True, text=True, timeout=120, check=True)
    finally:
        server.kill()
        server.wait()
    r = parse_iperf3(client.stdout, "loopback")
    omitted = [i for i in r.intervals if i.omitted]
    assert len(omitted) == 2, client.stdout
    assert r.omit == pytest.approx(1.0, abs=0.01)
    assert r.directions[0].received_bps is not None
