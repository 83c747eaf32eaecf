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

import pytest

from vbench.testing import (
    VCSIM_PASSWORD,
    VCSIM_PASSWORD_ENV,
    VCSIM_USER,
    VcsimServer,
    start_vcsim_server,
    vcsim_servers,
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
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    with vcsim_servers(tmp_path) as factory:
        yield factory


@pytest.fixture
def vc_password(monkeypatch: pytest.MonkeyPatch) -> str:
    """Sets the environment variable lab files made by ``lab_vcenter`` refer to."""
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    return PASSWORD
