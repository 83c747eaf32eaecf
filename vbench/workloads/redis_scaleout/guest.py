"""Guest-side checks of the redis driver: Docker and DBSIZE (listening ports and
readiness: :mod:`vbench.workloads.listening`, shared with the network drivers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vbench.errors import GuestError

if TYPE_CHECKING:

    from vbench.guest.ssh import Guest
    from vbench.workloads.redis_scaleout.topology import Endpoint

_DBSIZE = r"""
while [ $# -ge 2 ]; do
  printf '%s:%s %s\n' "$1" "$2" \
    "$(timeout 15 redis-cli -h "$1" -p "$2" DBSIZE 2>&1 | tr '\n' ' ')"
  shift 2
done
"""


def check_docker(guest: Guest) -> str:
    """The Docker engine's version; GuestError with a clear reason when none answers."""
    if guest.which("docker") is None:
        raise GuestError(
            guest.name,
            "deployment docker: the docker command is not installed in this guest",
        )
    res = guest.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"], check=False, timeout=60
    )
    version = res.stdout.strip()
    if res.status != 0 or not version or "error" in version.lower():
        said = [ln for ln in (res.stderr + "\n" + res.stdout).splitlines() if ln.strip()]
        reason = said[-1].strip() if said else f"exit status {res.status}"
        raise GuestError(
            guest.name,
            f"deployment docker: no Docker engine answers in guest {guest.name} "
            f"(docker info: {reason}); start the engine or use deployment: native",
        )
    return version


def ensure_images(guest: Guest, images: Sequence[str], timeout: float = 1800) -> list[str]:
    """Pull the images the guest lacks (before anything starts, so a slow pull does not
    count against start_timeout); returns those pulled."""
    pulled = []
    for image in images:
        if guest.run(["docker", "image", "inspect", image], check=False, timeout=60).status == 0:
            continue
        res = guest.run(["docker", "pull", image], check=False, timeout=timeout)
        if res.status != 0:
            said = (res.stderr or res.stdout).strip().splitlines()
            raise GuestError(guest.name, f"docker pull {image} failed: "
                             f"{said[-1] if said else res.status}")
        pulled.append(image)
    return pulled


def remove_containers(guest: Guest, names: Sequence[str]) -> None:
    if names:
        guest.run(["docker", "rm", "-f", *names], check=False, timeout=120)


def dbsize(guest: Guest, endpoints: Sequence[Endpoint]) -> dict[str, int | None]:
    """DBSIZE of every server, asked with redis-cli from ``guest``; None when unanswered."""
    args = [x for e in endpoints for x in (e.address, str(e.port))]
    out = guest.run(["sh", "-c", _DBSIZE, "sh", *args], timeout=120).stdout
    sizes: dict[str, int | None] = {str(e): None for e in endpoints}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        value = value.strip()
        if key in sizes:
            sizes[key] = int(value) if value.isdigit() else None
    return sizes


def ping(guest: Guest, target: Endpoint) -> str:
    res = guest.run(
        ["timeout", "15", "redis-cli", "-h", target.address, "-p", str(target.port), "PING"],
        check=False, timeout=30,
    )
    return (res.stdout or res.stderr).strip()
