"""Whether servers a driver started on a guest listen: listening TCP sockets read from
``/proc/net/tcp`` and ``/proc/net/tcp6`` (parsed here, so no ss/netstat is needed and the
parsing is unit-tested), ports checked free before a start, and a wait until every
started server listens. Shared by the drivers that start servers (redis_scaleout,
iperf3, netperf): a plugin never imports another plugin.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.errors import GuestError, Interrupted, VbenchError

if TYPE_CHECKING:
    import threading

    from vbench.guest.ssh import Guest, RemoteProcess

_LISTEN = "0A"
_WILDCARDS = frozenset({"0.0.0.0", "::"})
_READ_LISTENERS = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true"


def parse_listeners(text: str) -> set[tuple[str, int]]:
    """(address, port) of every listening TCP socket in /proc/net/tcp{,6} text."""
    found: set[tuple[str, int]] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[3] != _LISTEN or ":" not in parts[1]:
            continue
        addr_hex, port_hex = parts[1].rsplit(":", 1)
        try:
            raw = bytes.fromhex(addr_hex)
            port = int(port_hex, 16)
        except ValueError:
            continue
        if len(raw) == 4:
            found.add((str(ipaddress.IPv4Address(raw[::-1])), port))
        elif len(raw) == 16:
            # Four host-order 32-bit words.
            swapped = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
            v6 = ipaddress.IPv6Address(swapped)
            mapped = v6.ipv4_mapped
            found.add((str(mapped) if mapped else str(v6), port))
    return found


def conflicts(listeners: Iterable[tuple[str, int]], bind: str, port: int) -> list[str]:
    """Listeners that would stop a bind to (bind, port)."""
    return sorted(
        f"{a}:{p}"
        for a, p in listeners
        if p == port and (a == bind or a in _WILDCARDS or bind in _WILDCARDS)
    )


def is_listening(listeners: Iterable[tuple[str, int]], bind: str, port: int) -> bool:
    return any(p == port and (a == bind or a in _WILDCARDS) for a, p in listeners)


def listeners(guest: Guest) -> set[tuple[str, int]]:
    return parse_listeners(guest.run(["sh", "-c", _READ_LISTENERS], timeout=30).stdout)


def check_ports_free(guest: Guest, wanted: Sequence[tuple[str, int, str]]) -> None:
    """Fail before starting anything when a (bind, port, what) is already taken."""
    if not wanted:
        return
    now = listeners(guest)
    taken = []
    for bind, port, what in wanted:
        busy = conflicts(now, bind, port)
        if busy:
            taken.append(f"{what} needs {bind}:{port} but {', '.join(busy)} is already listening")
    if taken:
        raise GuestError(guest.name, "ports in use: " + "; ".join(taken))


@dataclass
class Pending:
    """A started server or proxy waiting to listen."""

    what: str  # e.g. "redis-server 127.0.0.2:7001"
    bind: str
    port: int
    proc: RemoteProcess


def wait_listening(
    guest: Guest, pending: Sequence[Pending], timeout: float, cancel: threading.Event,
    tail_lines: int = 12,
) -> None:
    """Until every pending process listens; a process that exits is reported with its log."""
    deadline = time.monotonic() + timeout
    left = list(pending)
    while left:
        now = listeners(guest)
        left = [p for p in left if not is_listening(now, p.bind, p.port)]
        if not left:
            return
        for p in left:
            if not p.proc.is_running():
                status = p.proc.wait(timeout=5)
                raise GuestError(
                    guest.name,
                    f"{p.what} did not start (exit status {status}); "
                    f"last lines of {p.proc.log}:\n{tail(p.proc, tail_lines)}",
                )
        if time.monotonic() > deadline:
            names = ", ".join(p.what for p in left)
            raise GuestError(
                guest.name,
                f"{names} not listening after {timeout:g} s; last lines of "
                f"{left[0].proc.log}:\n{tail(left[0].proc, tail_lines)}",
            )
        if cancel.wait(0.1):
            raise Interrupted("interrupted while servers and proxies were starting")


def tail(proc: RemoteProcess, lines: int = 12) -> str:
    try:
        text = proc.tail(lines)
    except (VbenchError, OSError):
        return "(log unreadable)"
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept) if kept else "(log empty)"
