"""Bulk downloads over TLS done in memory (vsphere/memory_tls) against a real TLS server
on loopback (python's ssl in a thread, a certificate made for the test): bodies arrive
byte-identical, many records come from one socket read, the lab's trust settings hold
(CA file, pinned thumbprint), and a body cut short is an error, not a short file."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from vbench.vsphere.connection import (
    ThumbprintMismatch,
    VCenterTarget,
    der_thumbprint,
    tls_context,
)
from vbench.vsphere.memory_tls import HTTPSBulkConnection, MemoryTls
from vbench.vsphere.simulator import ensure_certificate

pytestmark = pytest.mark.integration
Respond = Callable[[ssl.SSLSocket], None]
BODY = os.urandom(3 * (1 << 20) + 7)


@dataclass(frozen=True)
class Server:
    port: int
    cert: Path
    responded: threading.Event  # set once the response is written (or refused)


@contextmanager
def tls_server(tmp_path: Path, respond: Respond) -> Iterator[Server]:
    """One connection: read the request head, answer with ``respond``, close without
    close_notify (as many servers do)."""
    cert, key = ensure_certificate(tmp_path / "tls", ["127.0.0.1"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    responded = threading.Event()

    def serve() -> None:
        try:
            raw, _ = listener.accept()
            with ctx.wrap_socket(raw, server_side=True) as conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(65536)
                    if not data:
                        return
                    head += data
                respond(conn)
        except OSError:
            pass  # the client refused the certificate: nothing to answer
        finally:
            responded.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield Server(listener.getsockname()[1], cert, responded)
    finally:
        listener.close()
        thread.join(timeout=30)


def _sized(body: bytes) -> Respond:
    def respond(conn: ssl.SSLSocket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    return respond


def _chunked(body: bytes, chunk: int = 32768) -> Respond:
    def respond(conn: ssl.SSLSocket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(body), chunk):
            piece = body[i : i + chunk]
            conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        conn.sendall(b"0\r\n\r\n")

    return respond


def _trusting(server: Server, **kw: object) -> ssl.SSLContext:
    base: dict[str, object] = {"name": "vc1", "host": "127.0.0.1", "port": server.port}
    base.update(kw or {"ca_file": str(server.cert)})
    return tls_context(VCenterTarget(**base))  # type: ignore[arg-type]


def _get(server: Server, context: ssl.SSLContext) -> bytes:
    conn = HTTPSBulkConnection("127.0.0.1", server.port, context=context, timeout=30)
    try:
        conn.request("GET", "/file")
        r = conn.getresponse()
        assert r.status == 200
        return r.read()
    finally:
        conn.close()


@pytest.mark.parametrize("framing", [_sized, _chunked], ids=["content-length", "chunked"])
def test_bodies_arrive_byte_identical_through_memory_tls(
    tmp_path: Path, framing: Callable[[bytes], Respond]
) -> None:
    with tls_server(tmp_path, framing(BODY)) as server:
        assert _get(server, _trusting(server)) == BODY


class _CountingSocket(socket.socket):
    reads = 0

    def recv_into(self, *args: object, **kw: object) -> int:  # type: ignore[override]
        self.reads += 1
        return super().recv_into(*args, **kw)  # type: ignore[arg-type]


def test_one_socket_read_carries_many_tls_records(tmp_path: Path) -> None:
    # 512 KiB leave the server as 32+ records of at most 16 KiB; all of it is waiting
    # in the client's receive buffer (made large enough) before the client reads. An
    # SSLSocket would make two socket reads per record; MemoryTls takes them in a few.
    body = BODY[: 512 << 10]
    with tls_server(tmp_path, _sized(body)) as server:
        sock = _CountingSocket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.connect(("127.0.0.1", server.port))
        tls = MemoryTls(sock, _trusting(server), "127.0.0.1")
        try:
            tls.sendall(b"GET /file HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert server.responded.wait(30)
            sock.reads = 0
            received = bytearray()
            with tls.makefile("rb") as f:
                while block := f.read1(1 << 20):
                    received += block
        finally:
            tls.close()
    assert received.endswith(body)
    assert sock.reads <= 8, f"{sock.reads} socket reads for {len(body) >> 14} records or more"


def test_pinned_thumbprint_is_checked_on_the_memory_tls_handshake(tmp_path: Path) -> None:
    wrong = "ab" * 32
    with tls_server(tmp_path, _sized(b"pinned")) as server, pytest.raises(ThumbprintMismatch):
        _get(server, _trusting(server, thumbprint=wrong))
    with tls_server(tmp_path, _sized(b"pinned")) as server:
        pin = der_thumbprint(ssl.PEM_cert_to_DER_cert(server.cert.read_text()))
        assert _get(server, _trusting(server, thumbprint=pin)) == b"pinned"


def test_untrusted_certificate_is_refused_by_memory_tls(tmp_path: Path) -> None:
    system_cas = tls_context(VCenterTarget(name="vc1", host="127.0.0.1"))
    with tls_server(tmp_path, _sized(b"x")) as server, pytest.raises(ssl.SSLCertVerificationError):
        _get(server, system_cas)


def test_body_cut_short_is_an_error_not_a_short_file(tmp_path: Path) -> None:
    def half(conn: ssl.SSLSocket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
        conn.sendall(BODY[: len(BODY) // 2])  # then closed, without close_notify

    with tls_server(tmp_path, half) as server, pytest.raises(http.client.IncompleteRead):
        _get(server, _trusting(server))
