"""Sessions to vCenter: verified TLS, thumbprint pinning, keep-alive and re-login.

TLS is verified against the system's CAs (or the lab's ``ca_file``) by default. A
certificate that does not verify is refused with its SHA-256 thumbprint in the message,
so the user can pin it (``thumbprint:``); a pinned connection compares every handshake
with the pin. ``insecure: true`` turns verification off and says so through ``warn``.

A session is reused for the whole run: a keep-alive thread touches it well inside
vCenter's idle timeout, and a call that finds it gone (expired, or terminated by an
administrator) logs in again on the same stub and is retried once, so every managed
object reference held elsewhere stays valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from vbench.config.lab import Lab
from vbench.config.secrets import expand_path
from vbench.errors import ConfigError, LabError
from vbench.lazy import lazy_module
from vbench.vsphere.faults import fault_text

if TYPE_CHECKING:
    from pyVmomi import vim, vmodl
else:
    vim = lazy_module("pyVmomi", "vim")
    vmodl = lazy_module("pyVmomi", "vmodl")

T = TypeVar("T")
Warn = Callable[[str], None]
# Told of every login of a session (the first and each one after an expiry): a run
# journals it so that `vbench cleanup RUN` can end the sessions a killed run left.
OnLogin = Callable[["VSphereSession"], None]

DEFAULT_KEEPALIVE = 600.0  # vCenter's default idle timeout is 30 minutes
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class VCenterTarget:
    """A resolved vCenter: where, who, and how to trust it."""

    name: str
    host: str
    port: int = 443
    path: str = "/sdk"
    user: str = ""
    password: str = field(default="", repr=False)
    thumbprint: str | None = None  # normalised: 64 lower-case hex digits
    insecure: bool = False
    ca_file: str | None = None
    datacenter: str | None = None
    keepalive: float = DEFAULT_KEEPALIVE
    timeout: float = DEFAULT_TIMEOUT
    # The command that starts it when it does not answer (a lab's simulated vCenter).
    start_hint: str | None = None

    @property
    def label(self) -> str:
        return f"vcenter {self.name} ({self.host}:{self.port})"


def target_from_lab(lab: Lab, name: str) -> VCenterTarget:
    """Resolve the lab's vCenter ``name`` (secret, trust settings) into a target."""
    vc = lab.vcenters.get(name)
    if vc is None:
        known = ", ".join(lab.vcenters) or "none"
        raise ConfigError(f"no vCenter {name!r} in lab {lab.name} (vcenters: {known})")
    host, port, path = parse_url(vc.url)
    return VCenterTarget(
        name=name,
        host=host,
        port=port,
        path=path,
        user=vc.user,
        password=lab.secret(("vcenters", name, "password"), vc.password),
        thumbprint=normalize_thumbprint(vc.thumbprint) if vc.thumbprint else None,
        insecure=vc.insecure,
        ca_file=expand_path(vc.ca_file) if vc.ca_file else None,
        datacenter=vc.datacenter,
        keepalive=vc.keepalive,
        timeout=vc.timeout,
        start_hint=lab.up_command() if vc.simulator is not None else None,
    )


def parse_url(url: str) -> tuple[str, int, str]:
    """``https://vc.example.com[:port][/sdk]`` -> (host, port, path)."""
    text = url if "://" in url else f"https://{url}"
    parts = urlsplit(text)
    if parts.scheme != "https":
        raise ConfigError(f"vCenter url {url!r}: only https is supported")
    if not parts.hostname:
        raise ConfigError(f"vCenter url {url!r} has no host name")
    try:
        port = parts.port or 443
    except ValueError:
        raise ConfigError(f"vCenter url {url!r}: the port is not a number") from None
    path = parts.path.rstrip("/") or "/sdk"
    return parts.hostname, port, path


def normalize_thumbprint(value: str) -> str:
    """``AB:CD:..`` or ``abcd..`` (SHA-256, 32 bytes) -> 64 lower-case hex digits."""
    hexed = value.replace(":", "").replace(" ", "").strip().lower()
    if len(hexed) != 64 or any(c not in "0123456789abcdef" for c in hexed):
        raise ConfigError(
            f"thumbprint {value!r} is not a SHA-256 thumbprint "
            "(32 hex bytes, e.g. AB:CD:...; SHA-1 thumbprints are not accepted)"
        )
    return hexed


def format_thumbprint(hexed: str) -> str:
    """64 hex digits -> ``AB:CD:...`` as vSphere shows thumbprints."""
    return ":".join(hexed[i : i + 2] for i in range(0, len(hexed), 2)).upper()


def der_thumbprint(der: bytes) -> str:
    return hashlib.sha256(der).hexdigest()


def server_thumbprint(host: str, port: int, timeout: float = 10.0) -> str:
    """The SHA-256 thumbprint of the certificate the server presents (not verified)."""
    pem = ssl.get_server_certificate((host, port), timeout=timeout)
    return der_thumbprint(ssl.PEM_cert_to_DER_cert(pem))


class ThumbprintMismatch(ssl.SSLError):
    """The server's certificate is not the pinned one."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"thumbprint {format_thumbprint(actual)} is not the pinned one")
        self.expected, self.actual = expected, actual


def _check_pin(tls: ssl.SSLSocket | ssl.SSLObject) -> None:
    pin = getattr(tls.context, "vbench_pin", None)
    der = tls.getpeercert(binary_form=True)
    if pin and (der is None or der_thumbprint(der) != pin):
        raise ThumbprintMismatch(pin, der_thumbprint(der or b""))


class _PinnedSocket(ssl.SSLSocket):
    """Checks the peer certificate against the context's pin after every handshake."""

    def do_handshake(self, block: bool = False) -> None:
        super().do_handshake(block)
        _check_pin(self)


class _PinnedObject(ssl.SSLObject):
    """The same check for TLS done in memory BIOs (bulk downloads, vsphere/memory_tls)."""

    def do_handshake(self) -> None:
        super().do_handshake()
        _check_pin(self)


def tls_context(target: VCenterTarget) -> ssl.SSLContext:
    if target.insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if target.thumbprint:
        # The pin replaces chain and host-name checks: it names the exact certificate.
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.sslsocket_class = _PinnedSocket
        ctx.sslobject_class = _PinnedObject
        ctx.vbench_pin = target.thumbprint  # type: ignore[attr-defined]
        return ctx
    try:
        return ssl.create_default_context(cafile=target.ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{target.label}: cannot read ca_file {target.ca_file}: {exc}") from None


def _untrusted(target: VCenterTarget, exc: ssl.SSLCertVerificationError) -> LabError:
    reason = exc.verify_message or str(exc)
    try:
        thumb = format_thumbprint(server_thumbprint(target.host, target.port, target.timeout))
    except OSError:
        thumb = "(could not be read)"
    return LabError(
        target.label,
        f"certificate not trusted ({reason}); its SHA-256 thumbprint is {thumb}: if that is "
        "your vCenter's, pin it with `thumbprint:` in the lab file (or trust its CA with "
        "`ca_file:`)",
    )


def connection_error(target: VCenterTarget, exc: BaseException) -> LabError:
    """One line for anything that can go wrong reaching or logging in to a vCenter."""
    if isinstance(exc, LabError):
        return exc
    if isinstance(exc, ThumbprintMismatch):
        return LabError(
            target.label,
            f"certificate SHA-256 thumbprint {format_thumbprint(exc.actual)} does not match "
            f"the pinned {format_thumbprint(exc.expected)} (lab file `thumbprint:`)",
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _untrusted(target, exc)
    if isinstance(exc, vim.fault.InvalidLogin):
        return LabError(
            target.label, f"login failed for user {target.user!r}: wrong user name or password"
        )
    if isinstance(exc, vmodl.MethodFault):
        return LabError(target.label, fault_text(exc))
    if isinstance(exc, ConnectionRefusedError):
        start = f"; run: {target.start_hint}" if target.start_hint else ""
        return LabError(target.label,
                        f"cannot connect: connection refused (is it running?{start})")
    if isinstance(exc, socket.gaierror):
        return LabError(target.label, f"cannot resolve host name {target.host!r}")
    if isinstance(exc, TimeoutError | socket.timeout):
        return LabError(target.label, f"no answer within {target.timeout:g}s")
    if isinstance(exc, ssl.SSLError):
        return LabError(target.label, f"TLS handshake failed: {exc.reason or exc}")
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        return LabError(target.label, f"connection failed: {type(exc).__name__}: {exc}")
    if isinstance(exc, OSError):
        return LabError(target.label, f"cannot connect: {exc.strerror or exc}")
    return LabError(target.label, f"{type(exc).__name__}: {exc}")


class VSphereSession:
    """One logged-in session to one vCenter, shared by every thread of a run."""

    def __init__(self, target: VCenterTarget, stub: Any, warn: Warn | None = None) -> None:
        self.target = target
        self.stub = stub
        self.warn = warn or (lambda _m: None)
        self.si = vim.ServiceInstance("ServiceInstance", stub)
        self.content: Any = None
        self.relogins = 0
        self._generation = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._keepalive: threading.Thread | None = None
        self.on_login: OnLogin | None = None

    # --- login ---------------------------------------------------------------------------
    def login(self) -> None:
        self.content = self.si.RetrieveContent()
        self.content.sessionManager.Login(self.target.user, self.target.password)
        if self.on_login is not None:
            self.on_login(self)

    def _relogin(self, seen_generation: int) -> None:
        with self._lock:
            if self._generation != seen_generation:
                return  # another thread already logged in again
            try:
                self.content.sessionManager.Login(self.target.user, self.target.password)
            except Exception as exc:
                raise connection_error(self.target, exc) from None
            self._generation += 1
            self.relogins += 1
            if self.on_login is not None:
                self.on_login(self)

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()``; when the session has expired, log in again and retry once."""
        generation = self._generation
        try:
            return fn()
        except vim.fault.NotAuthenticated:
            self._relogin(generation)
        return fn()

    @property
    def session_key(self) -> str | None:
        current = self.call(lambda: self.content.sessionManager.currentSession)
        return current.key if current is not None else None

    def session_mark(self) -> dict[str, str] | None:
        """What finds this session again among vCenter's sessions, without being able to
        use it: the user and a SHA-256 of the session key (a simulator's key is also its
        cookie, so the key itself is never written down)."""
        current = self.content.sessionManager.currentSession
        if current is None:
            return None
        return {"user": str(current.userName), "key_sha256": key_digest(str(current.key))}

    # --- keep-alive ----------------------------------------------------------------------
    def start_keepalive(self) -> None:
        if self._keepalive is None and self.target.keepalive > 0:
            self._keepalive = threading.Thread(
                target=self._keepalive_loop, name=f"vbench-vc-{self.target.name}", daemon=True
            )
            self._keepalive.start()

    def _keepalive_loop(self) -> None:
        while not self._stop.wait(self.target.keepalive):
            with contextlib.suppress(Exception):
                self.touch()

    def touch(self) -> None:
        """Use the session (resetting vCenter's idle timer); log in again if it is gone."""
        generation = self._generation
        try:
            current = self.content.sessionManager.currentSession
        except vim.fault.NotAuthenticated:
            current = None
        if current is None:  # vCenter answers "no session" rather than a fault
            self._relogin(generation)

    # --- end -----------------------------------------------------------------------------
    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            self.content.sessionManager.Logout()
        with contextlib.suppress(Exception):
            self.stub.DropConnections()

    def __enter__(self) -> VSphereSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def connect(
    target: VCenterTarget, *, pool_size: int = 8, warn: Warn | None = None,
    on_login: OnLogin | None = None,
) -> VSphereSession:
    """Log in to ``target``; every failure is a LabError naming the vCenter and the cause."""
    from pyVim.connect import SmartStubAdapter

    if target.insecure and warn is not None:
        warn(
            f"{target.label}: TLS certificate verification is off (insecure: true); "
            "pin the certificate with `thumbprint:` instead"
        )
    ctx = tls_context(target)
    try:
        stub = SmartStubAdapter(
            host=target.host,
            port=target.port,
            path=target.path,
            sslContext=ctx,
            poolSize=max(1, pool_size),
            httpConnectionTimeout=target.timeout,
        )
        session = VSphereSession(target, stub, warn)
        session.on_login = on_login
        session.login()
    except Exception as exc:
        raise connection_error(target, exc) from None
    session.start_keepalive()
    return session


class SessionPool:
    """Sessions by vCenter name, opened on first use and reused; closed together."""

    def __init__(
        self,
        targets: dict[str, VCenterTarget] | Callable[[str], VCenterTarget],
        *,
        pool_size: int = 8,
        warn: Warn | None = None,
    ) -> None:
        self._targets = targets
        self._sessions: dict[str, VSphereSession] = {}
        self._lock = threading.Lock()
        self.pool_size, self.warn = pool_size, warn
        self.on_login: OnLogin | None = None

    @classmethod
    def for_lab(cls, lab: Lab, **kw: Any) -> SessionPool:
        return cls(lambda name: target_from_lab(lab, name), **kw)

    def target(self, name: str) -> VCenterTarget:
        if callable(self._targets):
            return self._targets(name)
        try:
            return self._targets[name]
        except KeyError:
            known = ", ".join(self._targets) or "none"
            raise ConfigError(f"no vCenter {name!r} in the lab (vcenters: {known})") from None

    def get(self, name: str) -> VSphereSession:
        with self._lock:
            session = self._sessions.get(name)
            if session is None:
                session = connect(self.target(name), pool_size=self.pool_size, warn=self.warn,
                                  on_login=self.on_login)
                self._sessions[name] = session
            return session

    def watch_logins(self, on_login: OnLogin) -> None:
        """Tell ``on_login`` of every session open now, and of each later login."""
        with self._lock:
            self.on_login = on_login
            sessions = list(self._sessions.values())
        for s in sessions:
            s.on_login = on_login
            on_login(s)

    def open_sessions(self) -> dict[str, VSphereSession]:
        with self._lock:
            return dict(self._sessions)

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            s.close()

    def __enter__(self) -> SessionPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


@contextlib.contextmanager
def session_for(target: VCenterTarget, **kw: Any) -> Iterator[VSphereSession]:
    session = connect(target, **kw)
    try:
        yield session
    finally:
        session.close()
