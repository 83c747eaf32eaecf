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

import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vbench.errors import LabError
from vbench.vsphere.simulator import VcsimOptions, VcsimProcess, start_vcsim

USER = "vbench-test"
PASSWORD = "vcsim-Pw-91c4"
PASSWORD_ENV = "VBENCH_TEST_VC_PASSWORD"


@dataclass
class VcsimServer:
    process: VcsimProcess
    user: str
    password: str

    @property
    def host(self) -> str:
        return self.process.address

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def url(self) -> str:
        return self.process.url

    def certificate_pem(self) -> str:
        return ssl.get_server_certificate((self.host, self.port))

    def lab_vcenter(self, **extra: Any) -> dict[str, Any]:
        """A lab file's `vcenters.<name>` entry for this simulator (password from env)."""
        entry: dict[str, Any] = {
            "url": self.url,
            "user": self.user,
            "password": "${env:" + PASSWORD_ENV + "}",
        }
        entry.update(extra)
        return entry

    def stop(self) -> None:
        self.process.stop()


def start_server(log_dir: Path, **options: Any) -> VcsimServer:
    opts = VcsimOptions(**{"username": USER, "password": PASSWORD, **options})
    try:
        proc = start_vcsim(opts, log_dir / "vcsim.log")
    except LabError as exc:
        pytest.fail(f"cannot start vcsim (run `make tools`): {exc}", pytrace=False)
    return VcsimServer(proc, opts.username or "", opts.password or "")


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
