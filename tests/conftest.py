"""Shared fixtures: an isolated vbench home for every test, and real SSH guests on loopback.

``local_guests`` starts one OpenSSH server (vbench.testing.start_local_sshd: vbench's own
local-lab code) listening on 127.0.0.2 and 127.0.0.3, each address standing for a guest,
with its own host key, user key and pre-filled known_hosts. It lives for the whole session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.seed import how_to_repeat
from vbench.guest.ssh import GuestPool

# The reusable parts live in vbench's plugin author's kit (vbench/testing.py), which a
# lab's own driver tests use too; the names stay importable from here.
from vbench.testing import (  # noqa: F401 - re-exported for the test modules
    GUEST_ADDRESSES,
    LocalGuests,
    LocalSshd,
    free_port,
    guests_of,
    missing_peer,
    start_local_sshd,
)

# vcsim fixtures (vcsim, vcsim_factory, vc_password) and the session's PostgreSQL server
# (postgresql_server, postgresql_url, fresh_postgresql_url) for every test module. Use them
# by name; importing them into a module would make a second, module-bound copy.
pytest_plugins = ("tests.vcsim", "tests.pg")

TESTS = Path(__file__).resolve().parent
# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment (a serial
# run has neither): text output would fit 80 columns in one and not the other. Tests that
# want a width set COLUMNS themselves (monkeypatch, or the env of the process they start).
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)
# The tiers are the folders: each is marked by where its tests live (`pytest -m unit`, or
# `make test-unit`), so a test file never has to say which tier it belongs to.
TIERS = ("unit", "integration", "e2e")


def _tier(item: pytest.Item) -> str | None:
    path = item.path.resolve()
    parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if (tier := _tier(item)) is not None:
            item.add_marker(tier)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # On xdist workers the files are handed out in this order: the long peer files
        # first, the many short unit files last, so they fill the workers' idle ends
        # instead of one worker finishing a 4-minute e2e file while the others wait.
        # (A serial run keeps the fastest tier first: its failures show soonest.)
        rank = {"e2e": 0, "integration": 1, "unit": 2}
        items.sort(key=lambda it: rank.get(_tier(it) or "unit", 2))


def pytest_report_header() -> str:
    return how_to_repeat()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(how_to_repeat())


@pytest.fixture(autouse=True)
def vbench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own VBENCH_HOME: nothing touches the real user's data."""
    home = tmp_path / "vbench-home"
    monkeypatch.setenv("VBENCH_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def local_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSshd]:
    with start_local_sshd(tmp_path_factory.mktemp("sshd-home"),
                          tmp_path_factory.mktemp("guest-workdir")) as sshd:
        yield sshd


@pytest.fixture(scope="session")
def local_guests(local_sshd: LocalSshd) -> LocalGuests:
    """[guest1 (127.0.0.2), guest2 (127.0.0.3)] with key_file and known_hosts set."""
    return guests_of(local_sshd)


@pytest.fixture
def guest_pool(local_guests: LocalGuests) -> Iterator[GuestPool]:
    """A pool over the local guests, its background processes killed at the end."""
    with GuestPool(local_guests) as pool:
        yield pool
