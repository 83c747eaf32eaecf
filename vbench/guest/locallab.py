"""A local lab: one OpenSSH server on loopback addresses, each address standing for a guest.

``vbench lab up`` starts ``sshd`` as an ordinary daemon with its own host key, user key,
authorized_keys and known_hosts under ``<vbench home>/lab/``, so strict host-key checking
and key authentication work exactly as against real guests. It outlives the command that
started it; ``vbench lab down`` stops it through its pid file.
"""

from __future__ import annotations

import errno
import getpass
import ipaddress
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vbench.config.secrets import vbench_home
from vbench.errors import ConfigError, LabError
from vbench.guest.spec import GuestSpec
from vbench.localproc import pid_alive, read_pid, stop_pid

TARGET = "local lab sshd"
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/opt/homebrew/sbin/sshd")
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


class PortInUse(LabError):
    """The lab's port is taken on one of its addresses by a program that is not the lab."""

    def __init__(self, address: str, port: int, setting: str = "") -> None:
        self.address, self.port = address, port
        where = setting or ("start the lab on a free port: give `vbench lab up` a lab file "
                            "with `local: {port: N}` (and the nodes' port to match)")
        super().__init__(f"{address}:{port}", f"port {port} already in use by another "
                                              f"program: {where}")


@dataclass(frozen=True)
class LocalLabStatus:
    running: bool
    pid: int | None
    addresses: tuple[str, ...]
    port: int
    home: Path
    reachable: dict[str, bool]
    user: str | None = None  # the login the lab accepts (None when not configured)




def lab_dir(home: Path | None = None) -> Path:
    return Path(os.path.abspath(home or vbench_home())) / "lab"


def local_key_file(home: Path | None = None) -> Path:
    """The private key the lab's guests accept."""
    return lab_dir(home) / "id_ed25519"


def local_known_hosts(home: Path | None = None) -> Path:
    return lab_dir(home) / "known_hosts"


def _config_path(home: Path | None) -> Path:
    return lab_dir(home) / "sshd_config"


def _pid_path(home: Path | None) -> Path:
    return lab_dir(home) / "sshd.pid"


def _log_path(home: Path | None) -> Path:
    return lab_dir(home) / "sshd.log"


def lab_guest_specs(
    addresses: Sequence[str],
    port: int,
    *,
    user: str | None = None,
    home: Path | None = None,
    prefix: str = "guest",
    workdir: str = "/tmp/vbench",
) -> list[GuestSpec]:
    """GuestSpecs for the lab's addresses, named ``guest1``, ``guest2`` … in order."""
    return [
        GuestSpec(
            name=f"{prefix}{i}",
            address=addr,
            port=port,
            user=user,
            key_file=str(local_key_file(home)),
            known_hosts=str(local_known_hosts(home)),
            workdir=workdir,
        )
        for i, addr in enumerate(addresses, start=1)
    ]


# ---- status -------------------------------------------------------------------------


def _read_pid(home: Path | None) -> int | None:
    return read_pid(_pid_path(home))


def _is_our_sshd(pid: int, home: Path | None) -> bool:
    """The pid is alive and (where /proc tells) an sshd using our config."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # someone else's process reusing the pid
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.exists():
        return True
    try:
        # sshd rewrites its title into one string ("sshd: /usr/sbin/sshd -f CONF … [listener]").
        title = cmdline.read_bytes().replace(b"\0", b" ") + b" "
    except OSError:
        return False
    return b" " + os.fsencode(_config_path(home)) + b" " in title


def _running_pid(home: Path | None) -> int | None:
    pid = _read_pid(home)
    return pid if pid is not None and _is_our_sshd(pid, home) else None


def reachable(address: str, port: int, timeout: float = 2.0) -> bool:
    """An SSH server answers with its banner at address:port."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def _configured(home: Path | None) -> tuple[tuple[str, ...], int | None, str | None]:
    """Addresses, port and user of the config on disk (empty when there is none)."""
    try:
        text = _config_path(home).read_text()
    except OSError:
        return (), None, None
    addrs: list[str] = []
    port: int | None = None
    user: str | None = None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "ListenAddress":
            host, _, p = value.rpartition(":")
            addrs.append(host)
            port = int(p)
        elif key == "AllowUsers":
            user = value.strip()
    return tuple(addrs), port, user


def lab_status(
    addresses: Sequence[str] | None = None, port: int | None = None, *, home: Path | None = None
) -> LocalLabStatus:
    """Whether the lab sshd runs and which addresses answer (default: the configured ones)."""
    conf_addrs, conf_port, user = _configured(home)
    addrs = tuple(addresses) if addresses is not None else conf_addrs
    use_port = port if port is not None else (conf_port or 0)
    pid = _running_pid(home)
    return LocalLabStatus(
        running=pid is not None,
        pid=pid,
        addresses=addrs,
        port=use_port,
        home=home or vbench_home(),
        reachable={a: pid is not None and reachable(a, use_port) for a in addrs},
        user=user,
    )


# ---- up -----------------------------------------------------------------------------


def _check_request(addresses: Sequence[str], port: int, user: str) -> None:
    if not addresses:
        raise ConfigError("the local lab needs at least one loopback address")
    for addr in addresses:
        try:
            ip = ipaddress.ip_address(addr)
        except ValueError as exc:
            raise ConfigError(f"local lab address {addr!r} is not an IP address") from exc
        if ip.version != 4 or not ip.is_loopback:
            raise ConfigError(f"local lab address {addr} is not a 127.x.y.z loopback address")
    if not 1024 <= port <= 65535:
        raise ConfigError(f"local lab port {port} must be an unprivileged port (1024-65535)")
    if os.geteuid() != 0 and user != getpass.getuser():
        raise ConfigError(
            f"without root the local lab can only log in as {getpass.getuser()}, not {user}"
        )


def _tool(name: str, candidates: Sequence[str] = ()) -> str:
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found is None:
        raise LabError(TARGET, f"{name} not found (install the openssh-server package)")
    return os.path.abspath(found)


def _keygen(path: Path, comment: str) -> None:
    if path.exists() and path.with_name(path.name + ".pub").exists():
        return
    path.unlink(missing_ok=True)
    keygen = _tool("ssh-keygen")
    res = subprocess.run(
        [keygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if res.returncode != 0:
        raise LabError(TARGET, f"ssh-keygen failed: {(res.stderr or res.stdout).strip()}")


def _quoted(path: Path) -> str:
    return f'"{path}"'


def _config_text(addresses: Sequence[str], port: int, user: str, d: Path) -> str:
    lines = [
        "# vbench local lab (generated by `vbench lab up`; stopped by `vbench lab down`)",
        *(f"ListenAddress {a}:{port}" for a in addresses),
        f"HostKey {_quoted(d / 'ssh_host_ed25519_key')}",
        f"PidFile {_quoted(d / 'sshd.pid')}",
        f"AuthorizedKeysFile {_quoted(d / 'authorized_keys')}",
        f"AllowUsers {user}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "AllowTcpForwarding yes",  # a lab guest may serve as a jump host
        "X11Forwarding no",
        "PrintMotd no",
        # A HOME of its own: the login's dotfiles (a slow ~/.bashrc, a PATH with shims)
        # neither slow down every command nor leak into measurements.
        f'SetEnv "HOME={d / "home"}"',
        "UseDNS no",
        # Many parallel channels per connection and many guests connecting at once.
        "MaxSessions 64",
        "MaxStartups 200:30:400",
        "LogLevel INFO",
        "Subsystem sftp internal-sftp",
    ]
    return "\n".join(lines) + "\n"


def _prepare_files(addresses: Sequence[str], port: int, user: str, d: Path) -> str:
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    (d / "home").mkdir(mode=0o700, exist_ok=True)
    host_key = d / "ssh_host_ed25519_key"
    _keygen(host_key, "vbench-lab-host")
    _keygen(d / "id_ed25519", "vbench-lab-user")
    (d / "authorized_keys").write_text((d / "id_ed25519.pub").read_text())
    host_pub = " ".join(host_key.with_name(host_key.name + ".pub").read_text().split()[:2])
    (d / "known_hosts").write_text("".join(f"[{a}]:{port} {host_pub}\n" for a in addresses))
    return _config_text(addresses, port, user, d)


def _port_busy(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same option sshd uses, so TIME_WAIT leftovers do not count as "in use".
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise LabError(f"{address}:{port}", f"cannot listen: {exc.strerror}") from exc
    return False


def lab_up(
    addresses: Sequence[str], port: int, *, user: str | None = None, home: Path | None = None
) -> LocalLabStatus:
    """Start the lab sshd (idempotent: the same running config is left alone)."""
    login = user or getpass.getuser()
    _check_request(addresses, port, login)
    d = lab_dir(home)
    text = _prepare_files(addresses, port, login, d)
    conf = _config_path(home)
    if _running_pid(home) is not None:
        if conf.exists() and conf.read_text() == text:
            return _wait_ready(addresses, port, home, log_from=None)
        lab_down(home=home)
    for addr in addresses:
        if _port_busy(addr, port):
            raise PortInUse(addr, port)
    conf.write_text(text)
    sshd = _tool("sshd", SSHD_CANDIDATES)
    if os.geteuid() == 0:
        # sshd refuses to start as root without its privilege-separation directory.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    _run_sshd([sshd, "-t", "-f", str(conf)], "configuration rejected")
    _pid_path(home).unlink(missing_ok=True)
    log = _log_path(home)
    log_from = log.stat().st_size if log.exists() else 0
    # Without -D sshd daemonizes itself, so it survives `vbench lab up` exiting.
    _run_sshd([sshd, "-f", str(conf), "-E", str(log)], "did not start")
    return _wait_ready(addresses, port, home, log_from=log_from)


def _run_sshd(argv: list[str], what: str) -> None:
    res = subprocess.run(
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
        start_new_session=True,
    )
    if res.returncode != 0:
        detail = (res.stderr or res.stdout).strip().splitlines()
        raise LabError(TARGET, f"{what}: {detail[-1] if detail else f'exit {res.returncode}'}")


def _wait_ready(
    addresses: Sequence[str], port: int, home: Path | None, log_from: int | None
) -> LocalLabStatus:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        status = lab_status(addresses, port, home=home)
        if status.running and all(status.reachable.values()):
            return status
        pid = _read_pid(home)
        if time.monotonic() >= deadline or (pid is not None and not pid_alive(pid)):
            break  # out of time, or sshd wrote its pid file and died
        time.sleep(0.05)
    lab_down(home=home)
    down = [a for a, ok in status.reachable.items() if not ok]
    raise LabError(
        TARGET,
        f"not answering on {', '.join(f'{a}:{port}' for a in down) or 'any address'}"
        f"{_log_tail(home, log_from)}",
    )


def _log_tail(home: Path | None, start: int | None) -> str:
    try:
        with open(_log_path(home), "rb") as fh:
            fh.seek(start or 0)
            lines = [ln for ln in fh.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return f" (sshd.log: {lines[-1].strip()})" if lines else ""


# ---- down ---------------------------------------------------------------------------


def lab_down(*, home: Path | None = None) -> bool:
    """Stop the lab sshd; False when it was not running (idempotent)."""
    pid = _running_pid(home)
    if pid is None:
        _pid_path(home).unlink(missing_ok=True)
        return False
    stop_pid(pid, STOP_TIMEOUT)
    _pid_path(home).unlink(missing_ok=True)
    return True
