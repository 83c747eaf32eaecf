"""Checks of the network values of a lab file: SSH addresses, vCenter URLs, IP pools.

Each is refused at load, at its line, rather than at the first connection (or, for a
16-million-address pool, when the pool is expanded in memory).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from vbench.config.yamlsrc import shown

MAX_POOL = 65_536  # addresses in one IP pool (a /16): more is a typo in a range
_LABEL = r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)"
_HOSTNAME = re.compile(rf"{_LABEL}(\.{_LABEL})*\.?")
_DOTTED = re.compile(r"[0-9.]+")


def check_address(value: str) -> str:
    """``value`` if it is an IP address or a host name, else ValueError saying why."""
    if not value:
        raise ValueError("empty address (expected a host name or IP address)")
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if _DOTTED.fullmatch(value) or len(value) > 253 or not _HOSTNAME.fullmatch(value):
        raise ValueError(f"{shown(value)} is not a host name or IP address")
    return value


def check_vcenter_url(url: str) -> str:
    """``https://host[:port][/path]`` (the scheme may be left out): what the vSphere
    connection accepts, with a port from 1 to 65535 and no credentials in it."""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    if parts.scheme != "https":
        raise ValueError(f"{shown(url)}: only https is supported (https://vcenter.example.com)")
    if parts.username is not None or parts.password is not None:
        raise ValueError("a user or password in the url is refused: use `user` and `password`")
    if not parts.hostname:
        raise ValueError(f"{shown(url)} has no host name")
    check_address(parts.hostname)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{shown(url)}: the port must be a number from 1 to 65535")
    return url


def pool_range(item: str) -> tuple[int, int]:
    """``10.0.0.5`` or ``10.0.0.10-10.0.0.40`` -> (first, last) as integers."""
    first, sep, last = item.partition("-")
    try:
        a = ipaddress.IPv4Address(first.strip())
        b = ipaddress.IPv4Address(last.strip()) if sep else a
    except ValueError:
        raise ValueError(
            f"{shown(item)} is not an IPv4 address or range (e.g. 10.0.0.11-10.0.0.40)"
        ) from None
    if b < a:
        raise ValueError(f"range {shown(item)} ends before it starts")
    return int(a), int(b)


def check_pool_item(item: str) -> str:
    first, last = pool_range(item)
    if last - first + 1 > MAX_POOL:
        raise ValueError(f"range {shown(item)} holds {last - first + 1:,} addresses, more than "
                         f"{MAX_POOL:,} (one pool is at most a /16)")
    return item


def check_pool(items: Sequence[str]) -> Sequence[str]:
    total = 0
    for item in items:
        first, last = pool_range(item)
        total += last - first + 1
    if total > MAX_POOL:
        raise ValueError(f"the pool holds {total:,} addresses, more than {MAX_POOL:,}")
    return items


def check_ipv4(value: str) -> str:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        raise ValueError(f"{shown(value)} is not an IPv4 address") from None
    return value


def check_netmask(value: str) -> str:
    try:
        check_ipv4(value)  # dotted, as guest customization takes it
        ipaddress.IPv4Network(f"0.0.0.0/{value}")
    except ValueError:
        raise ValueError(f"{shown(value)} is not a subnet mask (e.g. 255.255.255.0)") from None
    return value
