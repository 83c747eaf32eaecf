"""govmomi's vCenter simulator (vcsim): find it, start it on loopback, stop it.

The project's setup builds ``vcsim`` and ``govc`` at a pinned govmomi version into
``.tools/bin`` (``make tools``). Tests and benchmarks start a simulator they own
(:func:`start_vcsim`); ``vbench lab up`` starts one per simulated vCenter of the lab file
as a daemon with a pid file under ``<vbench home>/vcsim/<name>/`` (:func:`sim_up`), with
a certificate vbench generated so that TLS verification stays on (the lab trusts it
through ``ca_file:``).

Credentials never reach vcsim's command line (any local user can read that in ``ps``):
vcsim reads ``-username``/``-password`` values that name a readable file from that file,
so both are written to mode-600 files in a private temporary directory that is removed
once vcsim serves. vcsim prints ``GOVC_URL`` with the user and password in it; that line
goes to a private FIFO (``-E``) that vbench reads to know the server is up, so the log
(mode 600) never holds them.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vbench
from vbench.config.secrets import vbench_home
from vbench.errors import LabError
from vbench.localproc import pid_alive, read_pid, stop_child, stop_pid

GOVMOMI_VERSION = "v0.46.0"
READY_MARK = "GOVC_URL="
TOOLS_ENV = {"vcsim": "VBENCH_VCSIM", "govc": "VBENCH_GOVC"}


def find_tool(name: str) -> str:
    """``$VBENCH_VCSIM``/``$VBENCH_GOVC``, else the checkout's ``.tools/bin``, else PATH."""
    override = os.environ.get(TOOLS_ENV.get(name, ""), "")
    if override:
        return override
    local = Path(vbench.__file__).resolve().parents[1] / ".tools" / "bin" / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if found:
        return found
    raise LabError(
        name,
        f"not found (run `make tools` to build govmomi {GOVMOMI_VERSION}'s {name} into "
        f".tools/bin, or set {TOOLS_ENV.get(name, 'PATH')})",
    )


@dataclass(frozen=True)
class VcsimOptions:
    """The simulated inventory and behaviour (vcsim's command-line flags)."""

    datacenters: int = 1
    clusters: int = 1
    hosts: int = 3  # per cluster
    standalone_hosts: int = 1
    vms: int = 2  # per resource pool and per standalone host
    datastores: int = 1
    folders: int = 0
    pools: int = 0
    portgroups: int = 1
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    method_delay_ms: tuple[tuple[str, int], ...] = ()
    delay_jitter: float = 0.0
    tls_cert: str | None = None
    tls_key: str | None = None


def vcsim_argv(
    binary: str,
    address: str,
    port: int,
    o: VcsimOptions,
    *,
    credential_files: tuple[str, str] | None = None,
    env_out: str | None = None,
) -> list[str]:
    """vcsim's command line. A user and password are passed as the paths of the files
    holding them (``credential_files``: user file, password file), never as values."""
    argv = [
        binary, "-l", f"{address}:{port}",
        "-dc", str(o.datacenters), "-cluster", str(o.clusters), "-host", str(o.hosts),
        "-standalone-host", str(o.standalone_hosts), "-vm", str(o.vms),
        "-ds", str(o.datastores), "-folder", str(o.folders), "-pool", str(o.pools),
        "-pg", str(o.portgroups),
    ]  # fmt: skip
    if o.username:
        if credential_files is None:
            raise ValueError("vcsim credentials are passed in files, never on its command line")
        argv += ["-username", credential_files[0], "-password", credential_files[1]]
    if env_out:
        argv += ["-E", env_out]
    if o.method_delay_ms:
        argv += ["-method-delay", ",".join(f"{m}:{ms}" for m, ms in o.method_delay_ms)]
    if o.delay_jitter:
        argv += ["-delay-jitter", str(o.delay_jitter)]
    if o.tls_cert and o.tls_key:
        argv += ["-tlscert", o.tls_cert, "-tlskey", o.tls_key]
    return argv


def _private_file(path: Path, text: str) -> str:
    """``text`` in a new mode-600 file; returns its path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    return str(path)


def _credential_files(folder: Path, o: VcsimOptions) -> tuple[str, str] | None:
    if not o.username:
        return None
    if (o.password or "") != (o.password or "").strip() or o.username != o.username.strip():
        raise LabError("vcsim", "a simulator's user and password cannot begin or end with "
                       "white space (vcsim trims what it reads from its credential files)")
    # vcsim trims the file's content; an empty password file means "no password".
    return (
        _private_file(folder / "username", o.username),
        _private_file(folder / "password", o.password or ""),
    )


@dataclass
class VcsimProcess:
    """A running simulator."""

    pid: int
    address: str
    port: int
    log: Path
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.port}/sdk"

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_alive(self.pid)

    def stop(self, timeout: float = 5.0) -> None:
        if self.popen is not None:
            stop_child(self.popen, timeout)
        else:
            stop_pid(self.pid, timeout)


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def start_vcsim(
    options: VcsimOptions,
    log: Path,
    *,
    address: str = "127.0.0.1",
    port: int | None = None,
    detach: bool = False,
    timeout: float = 60.0,
) -> VcsimProcess:
    """Start vcsim and wait until it serves; a free port is picked when none is given."""
    binary = find_tool("vcsim")
    log.parent.mkdir(parents=True, exist_ok=True)
    attempts = 1 if port is not None else 5
    last = ""
    # Mode 700, removed on return: vcsim reads its credentials at start, before it serves.
    with tempfile.TemporaryDirectory(prefix="vbench-vcsim-") as private:
        creds = _credential_files(Path(private), options)
        fifo = Path(private) / "env"
        os.mkfifo(fifo, 0o600)
        for _ in range(attempts):
            p = port if port is not None else free_port(address)
            argv = vcsim_argv(binary, address, p, options, credential_files=creds,
                              env_out=str(fifo))
            # Our reader is open first, so vcsim's open of the FIFO does not block.
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            try:
                out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.fchmod(out, 0o600)  # a log left by an older vbench may be 644
                    popen = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=detach,
                    )
                finally:
                    os.close(out)
                proc = VcsimProcess(popen.pid, address, p, log, popen)
                ready = _wait_ready(proc, reader, timeout)
            finally:
                os.close(reader)
            if ready:
                return proc
            last = _tail(log)
            proc.stop()
            if "address already in use" not in last:
                break
    raise LabError(f"vcsim ({address})", f"did not start: {last or 'no output'}")


def _wait_ready(proc: VcsimProcess, reader: int, timeout: float) -> bool:
    """Whether vcsim printed its ``GOVC_URL`` line to the FIFO before ``timeout``."""
    deadline = time.monotonic() + timeout
    seen = b""
    while time.monotonic() < deadline:
        with contextlib.suppress(BlockingIOError):  # vcsim opened it, wrote nothing yet
            seen += os.read(reader, 4096)
        if READY_MARK.encode() in seen:
            return True
        if not proc.alive():
            return False
        time.sleep(0.05)
    return False


def _tail(path: Path, size: int = 2000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-size:].decode(errors="replace").strip()


# --- a certificate the lab can trust -------------------------------------------------


def ensure_certificate(folder: Path, hosts: Sequence[str]) -> tuple[Path, Path]:
    """A self-signed certificate (and key) for ``hosts``, created once in ``folder``."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    if cert.is_file() and key.is_file():
        return cert, key
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    alt: list[x509.GeneralName] = []
    for h in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            alt.append(x509.DNSName(h))
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(private.public_key()), critical=False
        )
    )
    certificate = builder.sign(private, hashes.SHA256())
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key.chmod(0o600)
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert, key


# --- simulators started by `vbench lab up` ---------------------------------------------


@dataclass(frozen=True)
class SimStatus:
    name: str
    running: bool
    pid: int | None
    address: str
    port: int
    folder: Path

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.port}/sdk"


def sim_dir(name: str, home: Path | None = None) -> Path:
    return Path(os.path.abspath(home or vbench_home())) / "vcsim" / name


def _is_our_vcsim(pid: int, port: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid_alive(pid)
    return (
        bool(argv)
        and Path(argv[0].decode()).name == "vcsim"
        and (f":{port}".encode() in b" ".join(argv))
    )


def sim_status(name: str, address: str, port: int, home: Path | None = None) -> SimStatus:
    folder = sim_dir(name, home)
    pid = read_pid(folder / "vcsim.pid")
    running = pid is not None and pid_alive(pid) and _is_our_vcsim(pid, port)
    return SimStatus(name, running, pid if running else None, address, port, folder)


def sim_up(
    name: str, options: VcsimOptions, address: str, port: int, home: Path | None = None
) -> SimStatus:
    """Start the named simulator as a daemon unless it already runs (idempotent)."""
    status = sim_status(name, address, port, home)
    if status.running:
        return status
    folder = status.folder
    cert, key = ensure_certificate(folder, (address, "localhost"))
    opts = VcsimOptions(**{**options.__dict__, "tls_cert": str(cert), "tls_key": str(key)})
    proc = start_vcsim(opts, folder / "vcsim.log", address=address, port=port, detach=True)
    (folder / "vcsim.pid").write_text(f"{proc.pid} {address}:{port}\n")
    return SimStatus(name, True, proc.pid, address, port, folder)


def sim_down(home: Path | None = None) -> list[str]:
    """Stop every simulator `lab up` started; returns their names."""
    root = Path(os.path.abspath(home or vbench_home())) / "vcsim"
    stopped = []
    for pidfile in sorted(root.glob("*/vcsim.pid")):
        pid = read_pid(pidfile)
        if pid is not None and pid_alive(pid):
            stop_pid(pid, 5.0)
            stopped.append(pidfile.parent.name)
        pidfile.unlink(missing_ok=True)
    return stopped


def ensure_password_file(path: Path) -> None:
    """Create a simulator's password file (random, mode 600) when it does not exist."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(18) + "\n")


def ensure_templates(session: Any, names: Sequence[str]) -> list[str]:
    """Create the simulator's templates (clones of its first VM) that are missing;
    returns the names created. Only for simulators vbench started."""
    from pyVmomi import vim

    from vbench.vsphere.inventory import Inventory
    from vbench.vsphere.tasks import Watcher

    inv = Inventory.load(session)
    have = {o.name for o in inv.candidates("template")}
    missing = [n for n in names if n not in have]
    if not missing:
        return []
    source = sorted(inv.candidates("vm"), key=lambda o: o.name)[0]
    pool, folder = source.get("resourcePool"), source.get("parent")
    with Watcher(session) as watcher:
        for name in missing:
            spec = vim.vm.CloneSpec(
                location=vim.vm.RelocateSpec(pool=pool), powerOn=False, template=True
            )
            task = source.ref.CloneVM_Task(folder=folder, name=name, spec=spec)
            watcher.wait_task(task, f"template {name}", "clone")
    return missing


def _password_for(ref: str, where: str) -> str:
    """The simulator's password; a missing ``${file:..}`` is created (random, 600)."""
    from vbench.config.secrets import _REF, expand_path, resolve_secret

    m = _REF.match(ref.strip())
    if m and m.group(1) == "file":
        ensure_password_file(Path(expand_path(m.group(2).strip())))
    return resolve_secret(ref, where)


def lab_simulators_up(lab: Any, home: Path | None = None) -> list[SimStatus]:
    """Start every simulated vCenter of a lab (idempotent) and create its templates."""
    from vbench.vsphere.connection import connect, parse_url, target_from_lab

    out = []
    for name, vc in lab.vcenters.items():
        sim = vc.simulator
        if sim is None:
            continue
        host, port, _ = parse_url(vc.url)
        options = VcsimOptions(
            datacenters=sim.datacenters,
            clusters=sim.clusters,
            hosts=sim.hosts,
            standalone_hosts=sim.standalone_hosts,
            vms=sim.vms,
            datastores=sim.datastores,
            username=vc.user,
            password=_password_for(vc.password, f"vcenters.{name}.password"),
            method_delay_ms=tuple((m, round(s * 1000)) for m, s in sim.method_delay.items()),
        )
        status = sim_up(name, options, host, port, home)
        if sim.templates:
            with connect(target_from_lab(lab, name)) as session:
                ensure_templates(session, sim.templates)
        out.append(status)
    return out


def lab_simulators_status(lab: Any, home: Path | None = None) -> list[SimStatus]:
    from vbench.vsphere.connection import parse_url

    out = []
    for name, vc in lab.vcenters.items():
        if vc.simulator is not None:
            host, port, _ = parse_url(vc.url)
            out.append(sim_status(name, host, port, home))
    return out
