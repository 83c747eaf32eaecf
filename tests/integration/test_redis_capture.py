"""The parser on output captured from the installed redis-benchmark, in every shape."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port, missing_peer
from tests.e2e.helpers import wait_for
from vbench.parsers.redis_benchmark import combine_iterations, parse_redis_benchmark

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if not (shutil.which("redis-server") and shutil.which("redis-benchmark")):
        missing_peer("redis-server / redis-benchmark not installed (make test installs them)")
    port = free_port()
    work = tmp_path_factory.mktemp("redis-capture")
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--dir", str(work)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )

    def answers() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    # Until it listens (the event), failing here if it never does, rather than letting the
    # first test meet a server that is not up yet.
    try:
        wait_for(answers, 60, f"redis-server on port {port}")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def bench(port: int, *extra: str) -> str:
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", "2000", "-c", "4",
            "-r", "100", "-t", "set,get,lrange_100", *extra]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_captured_csv(redis_port: int) -> None:
    result = parse_redis_benchmark(bench(redis_port, "--csv"), "csv")
    assert result.format == "csv"
    names = result.names()
    assert names[:2] == ["SET", "GET"] and "LRANGE_100 (first 100 elements)" in names
    for t in result.tests:
        assert t.rps and t.rps > 0
        assert t.min_ms is not None and t.max_ms is not None and t.min_ms <= t.p50_ms <= t.max_ms


def test_captured_text_report(redis_port: int) -> None:
    result = parse_redis_benchmark(bench(redis_port), "text")
    assert result.format == "text"
    get = result.by_test("GET")[0]
    assert get.requests == 2000 and get.clients == 4 and get.rps and get.rps > 0
    assert get.p99_ms is not None and get.avg_ms is not None


def test_captured_quiet_lines(redis_port: int) -> None:
    result = parse_redis_benchmark(bench(redis_port, "-q"), "quiet")
    assert result.format == "quiet"
    assert [t.command for t in result.tests][:2] == ["SET", "GET"]
    assert all(t.rps and t.p50_ms is not None for t in result.tests)


def test_captured_loop_output_stopped_mid_iteration(redis_port: int, tmp_path: Path) -> None:
    out = tmp_path / "loop.csv"
    with out.open("w") as fh:
        proc = subprocess.Popen(
            ["stdbuf", "-oL", "redis-benchmark", "-p", str(redis_port), "-n", "3000", "-c", "4",
             "-t", "get", "--csv", "-l"],
            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
        )
        # Stop it mid-run once two iterations have finished (seen in the file, not timed).
        wait_for(lambda: out.read_text().count('"GET"') >= 2, 60, "two finished iterations")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    result = parse_redis_benchmark(out.read_text(), "loop", cut_short=True)
    runs = result.by_test("GET")
    assert len(runs) >= 2  # several finished iterations survived the stop
    combined = combine_iterations(runs)
    assert combined.iterations == len(runs)
    assert min(t.rps for t in runs) <= combined.rps <= max(t.rps for t in runs)
