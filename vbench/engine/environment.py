"""Record the environment of a run: the controller and every guest it touched."""

from __future__ import annotations

import getpass
import os
import platform
import socket
import sys
import time
from typing import Any

from vbench import __version__
from vbench.errors import VbenchError
from vbench.guest.ssh import Guest, GuestPool

_GUEST_FACTS = (
    "uname -srm; nproc; "
    "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; "
    "grep -m1 MemTotal /proc/meminfo | awk '{print $2}'"
)


def controller_facts(argv: list[str] | None = None) -> dict[str, Any]:
    return {
        "vbench_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "user": getpass.getuser(),
        "cpu_count": os.cpu_count(),
        "command": " ".join(argv if argv is not None else sys.argv),
        "recorded_at": time.time(),
    }


def guest_facts(guest: Guest, tools: tuple[str, ...]) -> dict[str, Any]:
    facts: dict[str, Any] = {"address": f"{guest.spec.address}:{guest.spec.port}"}
    res = guest.run_script(_GUEST_FACTS, timeout=30, check=False)
    lines = [ln.strip() for ln in res.stdout.splitlines()]
    lines += [""] * (4 - len(lines))
    facts["kernel"], facts["vcpus"], facts["cpu_model"] = lines[0], _int(lines[1]), lines[2]
    mem_kib = _int(lines[3])
    facts["memory_gib"] = round(mem_kib / 1048576, 2) if mem_kib else None
    versions: dict[str, str | None] = {}
    for tool in tools:
        r = guest.run([tool, "--version"], timeout=30, check=False)
        first = (r.stdout or r.stderr).strip().splitlines()
        versions[tool] = first[0] if first and r.status == 0 else None
    facts["tools"] = versions
    try:
        offset, rtt = guest.clock_offset()
        facts["clock_offset_s"], facts["clock_rtt_s"] = round(offset, 6), round(rtt, 6)
    except VbenchError:
        facts["clock_offset_s"] = facts["clock_rtt_s"] = None
    return facts


def all_guest_facts(
    pool: GuestPool, tools_by_guest: dict[str, tuple[str, ...]]
) -> dict[str, dict[str, Any]]:
    return pool.fan_out(list(tools_by_guest), lambda g: guest_facts(g, tools_by_guest[g.name]))


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
