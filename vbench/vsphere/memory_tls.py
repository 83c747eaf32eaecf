"""HTTPS for bulk downloads: TLS done in memory (``ssl.MemoryBIO``) over a plain socket
read in large blocks, under the standard library's HTTP/1.1 client.

Why not an ``ssl.SSLSocket``: it hands over one TLS record (at most 16 KiB) per call,
through three Python-level frames, and OpenSSL reads each record from the socket with
two system calls (header, then body). Whenever the sender is a little behind, each of
those calls may sleep and wake again. Here one ``recv_into`` takes all the kernel holds
(up to :data:`RECV_BLOCK`), and the records are decrypted from memory until none is
left. On loopback against vcsim this costs 0.87x curl's CPU per GiB downloaded (0.82x
beside four CPU hogs) where the socket path cost 1.05-1.12x (1.14x)
(docs/performance.md, "Content Library transfers").

HTTP framing (status line, headers, chunked or sized bodies) stays ``http.client``'s:
:class:`HTTPSBulkConnection` only replaces the socket it talks through. Memory stays
flat: the socket is read only once every byte already received has been decrypted.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
from typing import Any

RECV_BLOCK = 1 << 20  # one socket read takes up to this much ciphertext


class MemoryTls:
    """A client TLS connection over a connected ``sock``, its records encrypted and
    decrypted in memory. Has the socket methods ``http.client`` uses: ``sendall``,
    ``makefile`` and ``close``. The handshake runs in the constructor (so a pinned
    context's thumbprint check, see ``connection.tls_context``, runs there too)."""

    def __init__(
        self, sock: socket.socket, context: ssl.SSLContext, server_hostname: str | None
    ) -> None:
        self._sock = sock
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=server_hostname
        )
        self._block = bytearray(RECV_BLOCK)
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._send_pending()
                if not self._receive():
                    raise ssl.SSLEOFError("connection closed during the TLS handshake") from None
        self._send_pending()

    def _send_pending(self) -> None:
        if data := self._outgoing.read():
            self._sock.sendall(data)

    def _receive(self) -> int:
        """One socket read into the incoming BIO; 0 at end of stream."""
        n = self._sock.recv_into(self._block)
        if n:
            self._incoming.write(memoryview(self._block)[:n])
        else:
            self._incoming.write_eof()
        return n

    def sendall(self, data: Any) -> None:
        self._tls.write(data)
        self._send_pending()

    def readinto(self, buffer: Any) -> int:
        """Decrypted bytes into ``buffer``: all that is already received, up to its
        size; the socket is read (and may block) only when nothing is. 0 at the end."""
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view):
            try:
                n = self._tls.read(len(view) - filled, view[filled:])
            except ssl.SSLWantReadError:
                if filled:
                    break
                self._send_pending()  # anything the records read so far asked to answer
                if not self._receive():
                    break
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                # close_notify, or the peer closed without one (what SSLSocket's
                # suppress_ragged_eofs also reads as the end): a short body is then
                # http.client's to report, against Content-Length or chunk sizes.
                break
            if not n:
                break
            filled += n
        return filled

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"MemoryTls.makefile: mode {mode!r} (only 'rb')")
        return io.BufferedReader(_Reader(self))

    def close(self) -> None:
        self._sock.close()


class _Reader(io.RawIOBase):
    def __init__(self, tls: MemoryTls) -> None:
        self._tls = tls

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._tls.readinto(buffer)


class HTTPSBulkConnection(http.client.HTTPConnection):
    """``http.client.HTTPSConnection``'s counterpart that talks through :class:`MemoryTls`."""

    default_port = http.client.HTTPS_PORT

    def __init__(
        self, host: str, port: int | None, *, context: ssl.SSLContext, timeout: float
    ) -> None:
        super().__init__(host, port, timeout=timeout)
        self._context = context

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = MemoryTls(sock, self._context, self.host)  # type: ignore[assignment]
        except BaseException:
            sock.close()
            raise
