"""vcsim (govmomi's vCenter simulator) for tests: started on a free loopback port with the
inventory a test needs, stopped at the end. The binary comes from ``make tools``
(``.tools/bin/vcsim``); a missing binary fails the tests, as a broken setup.

Import the fixtures into a test module::

    from tests.vcsim import vcsim, vcsim_factory  # noqa: F401

``vcsim`` is one simulator per test module (default inventory: one datacenter, a
cluster of three hosts, a standalone host, two VMs per pool); ``vcsim_factory(**options)``
starts simulators of any shape for one test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vbench.testing import (
    VCSIM_PASSWORD,
    VCSIM_PASSWORD_ENV,
    VCSIM_USER,
    VcsimServer,
    start_vcsim_server,
)

# The simulator and its credentials: vbench's plugin author's kit (vbench/testing.py).
USER, PASSWORD, PASSWORD_ENV = VCSIM_USER, VCSIM_PASSWORD, VCSIM_PASSWORD_ENV
start_server = start_vcsim_server


@pytest.fixture(scope="module")
def vcsim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VcsimServer]:
    server = start_server(tmp_path_factory.mktemp("vcsim"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def vcsim_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., VcsimServer]]:
    started: list[VcsimServer] = []
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)

    def factory(**options: Any) -> VcsimServer:
        server = start_server(tmp_path / f"vcsim-{len(started)}", **options)
        started.append(server)
        return server

    try:
        yield factory
    finally:
        for s in started:
            s.stop()


@pytest.fixture
def vc_password(monkeypatch: pytest.MonkeyPatch) -> str:
    """Sets the environment variable lab files made by ``lab_vcenter`` refer to."""
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    return PASSWORD
