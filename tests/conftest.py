"""Shared fixtures: an isolated vbench home for every test, and real SSH guests on loopback.

``local_guests`` starts one OpenSSH server (through vbench's own local-lab code) listening
on 127.0.0.2 and 127.0.0.3, each address standing for a guest, with its own host key, user
key and pre-filled known_hosts. It lives for the whole session.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.seed import how_to_repeat
from vbench.guest.locallab import (
    SSHD_CANDIDATES,
    lab_down,
    lab_guest_specs,
    lab_up,
    local_key_file,
    local_known_hosts,
)
from vbench.guest.ssh import GuestPool, GuestSpec

GUEST_ADDRESSES = ("127.0.0.2", "127.0.0.3")


def missing_peer(reason: str) -> None:
    """A real peer (sshd, fio, redis, chromium …) is not installed. A developer's ad-hoc
    run skips; `make test` (and so CI) sets VBENCH_REQUIRE_PEERS=1, where a missing peer
    is a failure: a skipped test must never pass for coverage."""
    if os.environ.get("VBENCH_REQUIRE_PEERS"):
        pytest.fail(f"{reason} — required under `make test`")
    pytest.skip(reason)

# vcsim fixtures (vcsim, vcsim_factory, vc_password) and the session's PostgreSQL server
# (postgresql_server, postgresql_url, fresh_postgresql_url) for every test module. Use them
# by name; importing them into a module would make a second, module-bound copy.
pytest_plugins = ("tests.vcsim", "tests.pg")

TESTS = Path(__file__).resolve().parent
# The tiers are the folders: each is marked by where its tests live (`pytest -m unit`, or
# `make test-unit`), so a test file never has to say which tier it belongs to.
TIERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.resolve()
        parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
        if len(parts) > 1 and parts[0] in TIERS:
            item.add_marker(parts[0])


def pytest_report_header() -> str:
    return how_to_repeat()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(how_to_repeat())


def free_port(*addresses: str) -> int:
    """A TCP port free on every given address (default 127.0.0.1) at the time of asking."""
    addrs = addresses or ("127.0.0.1",)
    for _ in range(50):
        with socket.socket() as first:
            first.bind((addrs[0], 0))
            port = first.getsockname()[1]
            if all(_bindable(a, port) for a in addrs[1:]):
                return port
    raise RuntimeError(f"no common free port on {addrs}")


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class LocalSshd:
    """The session's sshd: where it listens and what a client needs to log in."""

    home: Path  # vbench home holding lab/ (keys, config, log)
    port: int
    addresses: tuple[str, ...]
    key_file: Path
    known_hosts: Path
    pid: int
    workdir: Path  # a scratch folder the guests' specs use as workdir
    specs: tuple[GuestSpec, ...]

    @property
    def log(self) -> Path:
        return self.home / "lab" / "sshd.log"


class LocalGuests(list[GuestSpec]):
    """The two guest specs (guest1, guest2), with ``.sshd`` describing their server."""

    sshd: LocalSshd


@pytest.fixture(autouse=True)
def vbench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own VBENCH_HOME: nothing touches the real user's data."""
    home = tmp_path / "vbench-home"
    monkeypatch.setenv("VBENCH_HOME", str(home))
    return home


def _have_sshd() -> bool:
    return any(Path(p).exists() for p in SSHD_CANDIDATES) or shutil.which("sshd") is not None


@pytest.fixture(scope="session")
def local_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSshd]:
    if not _have_sshd():
        missing_peer("OpenSSH server (sshd) is not installed")
    home = tmp_path_factory.mktemp("sshd-home")
    workdir = tmp_path_factory.mktemp("guest-workdir")
    port = free_port(*GUEST_ADDRESSES)
    status = lab_up(GUEST_ADDRESSES, port, home=home)
    assert status.pid is not None
    specs = lab_guest_specs(GUEST_ADDRESSES, port, home=home, workdir=str(workdir))
    try:
        yield LocalSshd(
            home=home,
            port=port,
            addresses=GUEST_ADDRESSES,
            key_file=local_key_file(home),
            known_hosts=local_known_hosts(home),
            pid=status.pid,
            workdir=workdir,
            specs=tuple(specs),
        )
    finally:
        lab_down(home=home)


@pytest.fixture(scope="session")
def local_guests(local_sshd: LocalSshd) -> LocalGuests:
    """[guest1 (127.0.0.2), guest2 (127.0.0.3)] with key_file and known_hosts set."""
    guests = LocalGuests(local_sshd.specs)
    guests.sshd = local_sshd
    return guests


@pytest.fixture
def guest_pool(local_guests: LocalGuests) -> Iterator[GuestPool]:
    """A pool over the local guests, its background processes killed at the end."""
    with GuestPool(local_guests) as pool:
        yield pool
