"""End-to-end helpers: run the `vbench` CLI against real sshd guests.

``vbench(...)`` runs the CLI in this process (its behaviour: output, exit code, store,
guests — without paying the interpreter's start and vbench's imports at every call);
``vbench_process(...)`` and ``vbench_popen(...)`` run it as a real process, for what only a
process has: signals, kill -9, its exit status as the shell sees it, a wrapper script.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click.formatting
import click.testing
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
    vbench_process,
    wait_for,
    wait_for_log,
    write_lab,
)
from vbench.testing import (
    local_processes as remote_processes,
)

SSHD = "/usr/sbin/sshd"


class CliTimeout(BaseException):
    """The in-process CLI outlived its timeout (a BaseException: the CLI's own catch-all
    must not turn it into an exit code)."""


# What a CLI run may change in its process and must leave as it found it: a process
# discards these at exit, an in-process run would leak them into the next test.
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGALRM)
_THREAD_GRACE_S = 60.0
_PYTHONPATH_AT_START = os.environ.get("PYTHONPATH")


def vbench(
    *args: str, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI in this process as ``vbench ARGS`` would run (vbench.cli.main: the same
    output, exit code and error mapping), with stdout and stderr captured apart, ``env``
    set for the call only, and ``sys.argv`` as the command line. Fails the test if the run
    left a non-daemon thread running, or changed the working directory, the environment
    or a signal handler. For signals, kill -9 or the shell's view of the exit status, use
    ``vbench_process`` / ``vbench_popen``. It runs as a process when PYTHONPATH differs
    from this process's (a plugin installed beside vbench), and with VBENCH_E2E_PROCESS=1
    every call does (to tell an in-process artefact from a real failure)."""
    pythonpath = (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH"))
    if os.environ.get("VBENCH_E2E_PROCESS") or pythonpath != _PYTHONPATH_AT_START:
        # A PYTHONPATH (a plugin installed beside vbench) counts only when a process starts.
        return vbench_process(*args, timeout=timeout, env=env)
    from vbench.cli import main  # the CLI's imports, paid once per test session

    runner = click.testing.CliRunner()
    before = _process_state()
    threads = set(threading.enumerate())
    argv = sys.argv
    sys.argv = ["vbench", *args]
    try:
        with runner.isolation(env=env) as (out, err, _), _deadline(timeout, args):
            click.formatting.FORCED_WIDTH = None  # help as wide as a process makes it
            try:
                main(list(args))
                code: int = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            stdout = out.getvalue().decode(errors="replace")
            stderr = err.getvalue().decode(errors="replace")
    finally:
        sys.argv = argv
    _check_left_as_found(before, threads, args)
    return subprocess.CompletedProcess(["vbench", *args], code, stdout, stderr)


@contextlib.contextmanager
def _deadline(timeout: float, args: Sequence[str]) -> Iterator[None]:
    def expired(signum: int, frame: object) -> None:
        raise CliTimeout(f"vbench {' '.join(args)} ran over its {timeout} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _process_state() -> dict[str, object]:
    return {
        "working directory": os.getcwd(),
        "environment": dict(os.environ),
        **{f"handler of {s.name}": signal.getsignal(s) for s in _SIGNALS},
    }


def _check_left_as_found(
    before: dict[str, object], threads: set[threading.Thread], args: Sequence[str]
) -> None:
    changed = [k for k, v in _process_state().items() if before[k] != v]
    # Put things back first, so that one faulty run does not fail every later test.
    os.chdir(str(before["working directory"]))
    os.environ.clear()
    os.environ.update(before["environment"])  # type: ignore[arg-type]
    for s in _SIGNALS:
        signal.signal(s, before[f"handler of {s.name}"])  # type: ignore[arg-type]
    # A run's worker threads may still be finishing their last step when main returns: a
    # process would wait for them at exit, so wait for them here (the event: they end).
    left = [t for t in threading.enumerate() if t not in threads and not t.daemon]
    for t in left:
        t.join(_THREAD_GRACE_S)
    alive = [t.name for t in left if t.is_alive()]
    assert not changed and not alive, (
        f"vbench {' '.join(args)} in process changed {changed or 'nothing'}"
        f" and left threads running: {alive or 'none'}"
    )


def show(run_id: str, *extra: str) -> dict:
    res = vbench("show", run_id, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def interrupt_at_trial(
    proc: subprocess.Popen, home: Path, nth: int, timeout: float, what: str
) -> str:
    """Ctrl-C a ``vbench run`` process once its ``nth`` steady phase has begun (counted
    over the run's log) or it has ended; it must exit 130. The run's id."""

    def steady_starts() -> int:
        return sum(1 for r in log_events(home)
                   if r.get("event") == "phase_mark" and r.get("mark") == "steady_start")

    wait_for(lambda: steady_starts() >= nth or proc.poll() is not None, timeout, what)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    return run_id_of(out + err)


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
    "vbench_process",
    "wait_for",
    "wait_for_log",
    "write_lab",
    "write_scenario",
)
