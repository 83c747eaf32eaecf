"""End-to-end helpers: run the real `vbench` CLI in a subprocess against real sshd guests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import LocalGuests, free_port

# Running the CLI as a process, waiting for a run's log events and writing a lab of the
# loopback guests: vbench's plugin author's kit (vbench/testing.py); importable from here.
from vbench.testing import (
    guest_workdir,
    log_events,
    logged,
    run_id_of,
    vbench_popen,
    wait_for,
    wait_for_log,
    write_lab,
)
from vbench.testing import (
    local_processes as remote_processes,
)

SSHD = "/usr/sbin/sshd"


def vbench(
    *args: str, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would (a real process: signals and exit codes are real)."""
    return subprocess.run(
        [sys.executable, "-m", "vbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def show(run_id: str, *extra: str) -> dict:
    res = vbench("show", run_id, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def fio_started(lab: Path, tag: str):  # type: ignore[no-untyped-def]
    """A predicate: fio of this test's lab runs in the trial directory named by ``tag``."""
    return lambda: len(remote_processes(f"{guest_workdir(lab)}/.*{tag}")) > 0


def write_scenario(
    path: Path,
    *,
    groups: int = 2,
    steady: str = "1s",
    warmup: str = "1s",
    repeat: int = 2,
    factors: str = "  bs: [4k, 64k]\n",
    extra: str = "",
) -> Path:
    path.write_text(
        f"""version: 1
name: e2e-fio
topology:
  storage:
    count: {groups}
workload:
  driver: fio
  params:
    rw: randrw
    rwmixread: 70
    iodepth: 2
    size: 8m
    ioengine: psync
    direct: false
factors:
{factors}repeat: {repeat}
phases:
  warmup: {warmup}
  steady: {steady}
{extra}"""
    )
    return path


@dataclass
class ExtraSshd:
    """A second sshd for one more "guest" that a test may break (kill, strip PATH)."""

    address: str
    port: int
    proc: subprocess.Popen[bytes]

    def kill(self) -> None:
        # The guest "dies": its sshd and every connection it serves go at once. sshd
        # moves each connection into a session of its own, so follow the parent links.
        for pid in [self.proc.pid, *_descendants(self.proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def _descendants(root: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = (int(x) for x in line.split())
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def start_extra_sshd(
    guests: LocalGuests, tmp: Path, address: str, path_env: str | None = None
) -> ExtraSshd:
    lab = guests.sshd.home / "lab"
    port = free_port(address)
    lines = []
    for line in (lab / "sshd_config").read_text().splitlines():
        if line.startswith("ListenAddress"):
            continue
        if line.startswith("PidFile"):
            line = f'PidFile "{tmp / "extra-sshd.pid"}"'
        if line.startswith("SetEnv") and path_env is not None:
            line = f"{line} PATH={path_env}"
        lines.append(line)
    lines.insert(1, f"ListenAddress {address}:{port}")
    conf = tmp / "extra_sshd_config"
    conf.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        [SSHD, "-D", "-f", str(conf), "-E", str(tmp / "extra-sshd.log")], start_new_session=True
    )

    def answers() -> bool:
        try:
            with socket.create_connection((address, port), timeout=0.5) as s:
                return s.recv(4).startswith(b"SSH")
        except OSError:
            return False

    wait_for(answers, 10, f"sshd on {address}:{port}")
    return ExtraSshd(address, port, proc)


@pytest.fixture
def extra_sshd_factory(local_guests: LocalGuests, tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    started: list[ExtraSshd] = []

    def start(address: str, path_env: str | None = None) -> ExtraSshd:
        s = start_extra_sshd(local_guests, tmp_path, address, path_env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


def extra_node(s: ExtraSshd, tmp: Path) -> dict:
    return {
        "address": s.address,
        "port": s.port,
        "roles": ["storage"],
        "host_key_policy": "accept-new",
        "known_hosts": str(tmp / "extra_known_hosts"),
    }


__all__: Sequence[str] = (
    "extra_node",
    "log_events",
    "logged",
    "remote_processes",
    "run_id_of",
    "show",
    "vbench",
    "vbench_popen",
    "wait_for",
    "wait_for_log",
    "write_lab",
    "write_scenario",
)
