"""Open one authenticated SSH transport to a guest: socket or jump channel, host key, auth.

Every failure becomes a :class:`GuestError` whose cause is one short line a person can act
on; paramiko's own messages are only used as a last resort.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.errors import GuestError
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import paramiko

    from vbench.guest.spec import GuestSpec
else:
    paramiko = lazy_module("paramiko")

KEEPALIVE_SECONDS = 30
DEFAULT_KEY_NAMES = ("id_ed25519", "id_ecdsa", "id_rsa")

# Failures reach the user as GuestError; paramiko's own log lines would only repeat them
# on stderr through logging's last-resort handler. An application may still add handlers.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

# accept-new appends to a known_hosts file; guests connect from many threads at once.
_KNOWN_HOSTS_LOCK = threading.Lock()


class ConnectionLost(GuestError):
    """An established connection broke; the guest's next call opens a new one."""


def target_of(spec: GuestSpec) -> str:
    return spec.target


def login_user(spec: GuestSpec) -> str:
    return spec.user or getpass.getuser()


def known_hosts_path(spec: GuestSpec) -> Path:
    return Path(spec.known_hosts or "~/.ssh/known_hosts").expanduser()


def host_entry_name(address: str, port: int) -> str:
    """The host name as OpenSSH writes it in known_hosts."""
    return address if port == 22 else f"[{address}]:{port}"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def describe_os_error(exc: OSError, timeout: float) -> str:
    """One-line cause for a socket failure."""
    if isinstance(exc, socket.timeout | TimeoutError):
        return f"timed out after {_seconds(timeout)}"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve address ({exc.strerror or exc})"
    names = {
        errno.ECONNREFUSED: "connection refused",
        errno.EHOSTUNREACH: "host unreachable",
        errno.ENETUNREACH: "network unreachable",
        errno.ECONNRESET: "connection reset by peer",
        errno.EADDRNOTAVAIL: "address not available",
    }
    if exc.errno in names:
        return names[exc.errno]
    return (exc.strerror or str(exc) or type(exc).__name__).lower()


# Opens a direct-tcpip channel to (address, port) on a jump host's transport.
ChannelOpener = Callable[[str, int, float], "paramiko.Channel"]


def open_transport(spec: GuestSpec, via: ChannelOpener | None = None) -> paramiko.Transport:
    """Connect, verify the host key and authenticate; raise GuestError on any failure."""
    sock = _open_socket(spec, via)
    transport = paramiko.Transport(sock)
    try:
        _handshake(spec, transport)
        check_host_key(spec, transport.get_remote_server_key())
        authenticate(spec, transport)
    except BaseException:
        transport.close()
        raise
    transport.set_keepalive(KEEPALIVE_SECONDS)
    return transport


def _open_socket(spec: GuestSpec, via: ChannelOpener | None) -> socket.socket | paramiko.Channel:
    target = target_of(spec)
    if via is not None:
        return via(spec.address, spec.port, spec.connect_timeout)
    try:
        sock = socket.create_connection((spec.address, spec.port), timeout=spec.connect_timeout)
    except OSError as exc:
        cause = describe_os_error(exc, spec.connect_timeout)
        if spec.start_hint and exc.errno == errno.ECONNREFUSED:
            cause += f" (is the local lab up? run: {spec.start_hint})"
        raise GuestError(target, cause) from exc
    # SSH packets are small request/reply pairs: Nagle + delayed ACK would add ~40 ms each.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _handshake(spec: GuestSpec, transport: paramiko.Transport) -> None:
    timeout = spec.connect_timeout
    transport.banner_timeout = timeout
    transport.handshake_timeout = timeout
    transport.auth_timeout = timeout
    _prefer_known_key_types(spec, transport)
    try:
        # The banner has its own timeout inside; leave it room to report first.
        transport.start_client(timeout=2 * timeout)
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise GuestError(target_of(spec), _handshake_cause(exc, timeout)) from exc
    if not transport.is_active() or transport.host_key is None:
        # start_client returns silently when its own timeout passes.
        raise GuestError(target_of(spec), f"SSH handshake timed out after {_seconds(2 * timeout)}")


def _handshake_cause(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, paramiko.SSHException):
        return describe_os_error(exc, timeout)
    text = str(exc)
    if text.startswith("Error reading SSH protocol banner"):
        if isinstance(exc.__context__, socket.timeout | TimeoutError):
            return f"no SSH banner within {_seconds(timeout)} (is this an SSH port?)"
        return "connection closed before the SSH banner (is this an SSH port?)"
    return f"SSH handshake failed: {text or type(exc).__name__}"


def _load_known_hosts(spec: GuestSpec) -> paramiko.HostKeys:
    path = known_hosts_path(spec)
    keys = paramiko.HostKeys()
    if path.exists():
        try:
            keys.load(str(path))
        except (OSError, paramiko.SSHException, ValueError) as exc:
            raise GuestError(target_of(spec), f"cannot read known_hosts {path}: {exc}") from exc
    return keys


def _prefer_known_key_types(spec: GuestSpec, transport: paramiko.Transport) -> None:
    """Ask for the host key type known_hosts already holds, so a known key gets compared."""
    known = _load_known_hosts(spec).lookup(host_entry_name(spec.address, spec.port))
    if not known:
        return
    options = transport.get_security_options()
    offered = list(options.key_types)
    wanted: list[str] = []
    for name in known.keys():  # noqa: SIM118 - HostKeys entries are not plain dicts
        if name == "ssh-rsa":
            wanted.extend(t for t in ("rsa-sha2-512", "rsa-sha2-256") if t in offered)
        elif name in offered:
            wanted.append(name)
    if wanted:
        options.key_types = wanted + [t for t in offered if t not in wanted]


def check_host_key(spec: GuestSpec, key: paramiko.PKey) -> None:
    """Compare the server's key with known_hosts under the spec's policy."""
    target = target_of(spec)
    path = known_hosts_path(spec)
    entry = host_entry_name(spec.address, spec.port)
    with _KNOWN_HOSTS_LOCK:
        known = _load_known_hosts(spec).lookup(entry)
        if known:
            expected = known.get(key.get_name())
            if expected is not None and expected.asbytes() == key.asbytes():
                return
            raise GuestError(
                target,
                f"host key CHANGED for {entry} (server offers {key.get_name()} "
                f"{key.fingerprint}); not connecting. If the guest was rebuilt, remove its "
                f"line from {path}",
            )
        if spec.host_key_policy != "accept-new":
            raise GuestError(
                target,
                f"host key not in {path} (use host_key_policy: accept-new for lab guests)",
            )
        _append_known_host(path, entry, key)


def _append_known_host(path: Path, entry: str, key: paramiko.PKey) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = f"{entry} {key.get_name()} {key.get_base64()}\n"
    with open(path, "a", encoding="ascii") as fh:
        fh.write(line)


def authenticate(spec: GuestSpec, transport: paramiko.Transport) -> None:
    target = target_of(spec)
    user = login_user(spec)
    keys = _candidate_keys(spec)
    for key in keys:
        try:
            transport.auth_publickey(user, key)
        except paramiko.AuthenticationException:
            continue
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise GuestError(target, f"authentication aborted: {exc}") from exc
        if transport.is_authenticated():
            return
    if spec.password is not None:
        try:
            transport.auth_password(user, spec.password)
        except paramiko.AuthenticationException:
            pass
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise GuestError(target, f"authentication aborted: {exc}") from exc
    if not transport.is_authenticated():
        raise GuestError(target, f"authentication failed for user {user} "
                                 f"{_what_was_tried(spec, len(keys))}")


def _what_was_tried(spec: GuestSpec, n_keys: int) -> str:
    """The credentials offered, so that a wrong key names its file."""
    if spec.key_file:
        also = " and the password" if spec.password is not None else ""
        return (f"with key file {Path(spec.key_file).expanduser()}{also} (is its public key "
                f"in the guest's authorized_keys?)")
    if spec.password is not None:
        return "with the password"
    if not n_keys:
        return "(no key_file or password set, and no SSH agent or ~/.ssh key found)"
    return (f"with {n_keys} key{'s' if n_keys != 1 else ''} from the SSH agent and "
            f"~/.ssh ({', '.join(DEFAULT_KEY_NAMES)}); set key_file in the lab file")


def _candidate_keys(spec: GuestSpec) -> list[paramiko.PKey]:
    """The spec's key file; without key and password, the agent and ~/.ssh defaults."""
    if spec.key_file:
        return [_load_key(spec, Path(spec.key_file).expanduser(), required=True)]
    if spec.password is not None:
        return []
    keys: list[paramiko.PKey] = []
    if os.environ.get("SSH_AUTH_SOCK"):
        # An unreachable agent is not an error: fall back to key files.
        with contextlib.suppress(paramiko.SSHException):
            keys.extend(paramiko.Agent().get_keys())
    for name in DEFAULT_KEY_NAMES:
        path = Path("~/.ssh").expanduser() / name
        if path.exists():
            loaded = _load_key(spec, path, required=False)
            if loaded is not None:
                keys.append(loaded)
    return keys


def _load_key(spec: GuestSpec, path: Path, *, required: bool) -> paramiko.PKey | None:
    target = target_of(spec)
    try:
        try:
            return paramiko.PKey.from_path(path)
        except paramiko.PasswordRequiredException:
            # An encrypted key: the lab's password doubles as its passphrase.
            if spec.password is None:
                raise
            return paramiko.PKey.from_path(path, spec.password.encode())
    except FileNotFoundError as exc:
        raise GuestError(target, f"key file {path} not found") from exc
    except paramiko.PasswordRequiredException as exc:
        if not required:
            return None
        raise GuestError(target, f"key file {path} needs a passphrase (set password)") from exc
    except (paramiko.SSHException, ValueError, TypeError, OSError) as exc:
        if not required:
            return None
        raise GuestError(target, f"cannot load key file {path}: {exc}") from exc


def open_jump_channel(
    jump_target: str, transport: paramiko.Transport, address: str, port: int, timeout: float
) -> paramiko.Channel:
    """A direct-tcpip channel through a connected jump host to ``address:port``."""
    try:
        return transport.open_channel(
            "direct-tcpip", (address, port), ("127.0.0.1", 0), timeout=timeout
        )
    except paramiko.ChannelException as exc:
        reason = (exc.text or "refused").lower()
        raise GuestError(
            jump_target, f"jump host cannot reach {address}:{port} ({reason})"
        ) from exc
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise GuestError(jump_target, f"jump channel to {address}:{port} failed: {exc}") from exc
