"""What a guest is (address, credentials, policies) and what a command returned."""

from __future__ import annotations

from dataclasses import dataclass, field

from vbench.errors import ConfigError

HOST_KEY_POLICIES = ("strict", "accept-new")


@dataclass(frozen=True)
class GuestSpec:
    """How to reach one SSH guest. Secrets are already resolved and never shown in repr."""

    name: str
    address: str
    port: int = 22
    user: str | None = None  # None -> the controller's login name
    key_file: str | None = None  # private key path, ~ expanded
    password: str | None = field(default=None, repr=False)  # or the key's passphrase
    host_key_policy: str = "strict"  # "strict" | "accept-new"
    known_hosts: str | None = None  # None -> ~/.ssh/known_hosts
    jump: GuestSpec | None = None  # bastion reached first; the guest via direct-tcpip
    workdir: str = "/tmp/vbench"  # remote scratch root; remove() stays inside it
    connect_timeout: float = 10.0
    # Concurrent session channels per connection: OpenSSH refuses more than MaxSessions
    # (10 by default); a few are left for SFTP and for kill commands.
    max_sessions: int = 8
    # The guest's data disks in order, for fio's `filename: disk:N`: a VMware virtual
    # disk uuid (a clone's vm.disks, found by its WWN) or a path its lab node lists.
    data_disks: tuple[str, ...] = ()
    # The command that starts it when it refuses connections (a node of the local lab).
    start_hint: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if not self.name or not self.address:
            problems.append("name and address are required")
        if not 0 < self.port < 65536:
            problems.append(f"port {self.port} is not a TCP port")
        if self.host_key_policy not in HOST_KEY_POLICIES:
            problems.append(
                f"host_key_policy {self.host_key_policy!r} is not one of "
                f"{', '.join(HOST_KEY_POLICIES)}"
            )
        if self.connect_timeout <= 0 or self.max_sessions < 1:
            problems.append("connect_timeout and max_sessions must be positive")
        if problems:
            raise ConfigError(f"guest {self.name or '?'}: {'; '.join(problems)}")

    @property
    def target(self) -> str:
        """How errors name this guest: ``guest2 (127.0.0.3:2222)``."""
        return f"{self.name} ({self.address}:{self.port})"


@dataclass(frozen=True)
class CommandResult:
    status: int
    stdout: str
    stderr: str
    seconds: float
