"""Sessions to a real vCenter simulator: TLS trust, pinning, credentials, session expiry."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.vcsim import PASSWORD, USER, VcsimServer
from vbench.errors import LabError
from vbench.vsphere.connection import (
    VCenterTarget,
    connect,
    format_thumbprint,
    server_thumbprint,
)
from vbench.vsphere.simulator import ensure_certificate


def _target(server: VcsimServer, **kw: object) -> VCenterTarget:
    base: dict[str, object] = {
        "name": "vc1",
        "host": server.host,
        "port": server.port,
        "user": USER,
        "password": PASSWORD,
        "timeout": 10.0,
    }
    base.update(kw)
    return VCenterTarget(**base)  # type: ignore[arg-type]


def test_self_signed_certificate_is_refused_with_its_thumbprint(vcsim: VcsimServer) -> None:
    with pytest.raises(LabError) as err:
        connect(_target(vcsim))
    thumb = format_thumbprint(server_thumbprint(vcsim.host, vcsim.port))
    msg = str(err.value)
    assert "certificate not trusted" in msg and thumb in msg
    assert msg.startswith(f"vcenter vc1 ({vcsim.host}:{vcsim.port})") and "\n" not in msg
    assert err.value.exit_code == 3


def test_pinned_thumbprint_connects(vcsim: VcsimServer) -> None:
    pin = server_thumbprint(vcsim.host, vcsim.port)
    with connect(_target(vcsim, thumbprint=pin)) as session:
        assert session.content.about.apiType == "VirtualCenter"
        assert session.session_key


def test_wrong_pinned_thumbprint_is_refused(vcsim: VcsimServer) -> None:
    with pytest.raises(LabError, match="does not match the pinned"):
        connect(_target(vcsim, thumbprint="ab" * 32))


def test_insecure_connects_with_a_warning(vcsim: VcsimServer) -> None:
    warnings: list[str] = []
    with connect(_target(vcsim, insecure=True), warn=warnings.append) as session:
        assert session.content.about.name
    assert len(warnings) == 1 and "verification is off" in warnings[0]


def test_ca_file_verifies_the_certificate(
    vcsim_factory: Callable[..., VcsimServer],
    tmp_path: Path,
) -> None:
    cert, key = ensure_certificate(tmp_path / "tls", ("127.0.0.1", "localhost"))
    server = vcsim_factory(tls_cert=str(cert), tls_key=str(key))
    with connect(_target(server, ca_file=str(cert))) as session:
        assert session.session_key
    # The same server without the CA is not trusted.
    with pytest.raises(LabError, match="certificate not trusted"):
        connect(_target(server))


def test_wrong_password_is_one_clear_line(vcsim: VcsimServer) -> None:
    with pytest.raises(LabError) as err:
        connect(_target(vcsim, insecure=True, password="wrong"))
    assert str(err.value) == (
        f"vcenter vc1 ({vcsim.host}:{vcsim.port}): login failed for user "
        f"'{USER}': wrong user name or password"
    )


def test_nothing_listening_is_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = VCenterTarget(name="vc1", host="127.0.0.1", port=port, user="u", password="p")
    with pytest.raises(LabError, match="connection refused"):
        connect(target)


def test_session_terminated_by_another_client_is_reestablished(vcsim: VcsimServer) -> None:
    target = _target(vcsim, insecure=True)
    with connect(target) as session, connect(target) as admin:
        key = session.session_key
        admin.content.sessionManager.TerminateSession([key])
        # The next call finds the session gone, logs in again and succeeds.
        folder = session.call(lambda: session.content.rootFolder.name)
        assert folder
        assert session.relogins == 1 and session.session_key != key


def test_keepalive_touch_logs_in_again_after_expiry(vcsim: VcsimServer) -> None:
    target = _target(vcsim, insecure=True)
    with connect(target) as session, connect(target) as admin:
        admin.content.sessionManager.TerminateSession([session.session_key])
        session.touch()
        assert session.relogins == 1
        session.touch()  # a live session is left alone
        assert session.relogins == 1
