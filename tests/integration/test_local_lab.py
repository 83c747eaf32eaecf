"""The local lab: a real sshd on loopback started, reused, restarted and stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from vbench.errors import ConfigError, LabError
from vbench.guest.locallab import (
    lab_dir,
    lab_down,
    lab_guest_specs,
    lab_status,
    lab_up,
    local_key_file,
    local_known_hosts,
    vbench_home,
)
from vbench.guest.ssh import GuestPool

pytestmark = pytest.mark.integration

ADDRS = ("127.0.0.4", "127.0.0.5")


@pytest.fixture
def port() -> Iterator[int]:
    """A free port; whatever lab a test starts in its VBENCH_HOME is stopped afterwards."""
    yield free_port(*ADDRS, "127.0.0.6")
    lab_down()


def test_vbench_home_follows_the_environment() -> None:
    assert vbench_home() == Path(os.environ["VBENCH_HOME"])
    assert lab_dir() == vbench_home() / "lab"


def test_lab_up_is_idempotent_and_guests_log_in(port: int) -> None:
    first = lab_up(ADDRS, port)
    assert first.running and first.pid is not None
    assert first.reachable == {a: True for a in ADDRS}
    lines = local_known_hosts().read_text().splitlines()
    assert [ln.split()[0] for ln in lines] == [f"[{a}]:{port}" for a in ADDRS]
    assert local_key_file().exists() and (lab_dir() / "sshd_config").exists()

    again = lab_up(ADDRS, port)
    assert again.pid == first.pid  # same config: left running

    # Strict host-key checking works out of the box with the lab's files.
    with GuestPool(lab_guest_specs(ADDRS, port)) as pool:
        out = pool.fan_out(["guest1", "guest2"], lambda g: g.run(["echo", g.name]))
    assert {n: r.stdout for n, r in out.items()} == {"guest1": "guest1\n", "guest2": "guest2\n"}

    status = lab_status(ADDRS, port)
    assert (status.running, status.pid, status.user) == (True, first.pid, first.user)
    assert lab_status().addresses == ADDRS  # defaults to the configured addresses

    assert lab_down() is True
    after = lab_status(ADDRS, port)
    assert not after.running and after.reachable == {a: False for a in ADDRS}
    assert lab_down() is False


def test_lab_up_restarts_on_a_new_config(port: int) -> None:
    first = lab_up(ADDRS[:1], port)
    second = lab_up(ADDRS, port)
    assert second.pid != first.pid
    assert second.reachable == {a: True for a in ADDRS}
    assert not _pid_alive(first.pid)


def test_lab_survives_the_process_that_started_it(port: int) -> None:
    code = f"from vbench.guest.locallab import lab_up; lab_up({list(ADDRS)!r}, {port})"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30, env=os.environ.copy())
    status = lab_status(ADDRS, port)
    assert status.running and all(status.reachable.values())


def test_port_in_use_is_a_lab_error(port: int) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.5", port))
        squatter.listen()
        with pytest.raises(LabError, match=rf"^127\.0\.0\.5:{port}: port {port} already in use.*"
                                           r"local: \{port: N\}"):
            lab_up(ADDRS, port)
    assert not lab_status(ADDRS, port).running


@pytest.mark.parametrize(
    ("addrs", "port_no", "message"),
    [
        (("10.1.2.3",), 2222, "not a 127"),
        (("localhost",), 2222, "not an IP address"),
        ((), 2222, "at least one"),
        (("127.0.0.4",), 22, "unprivileged"),
    ],
)
def test_bad_lab_settings_are_config_errors(
    addrs: tuple[str, ...], port_no: int, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        lab_up(addrs, port_no)
    assert not (lab_dir() / "sshd_config").exists()


def _pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ")[-1][:1] != "Z"
