"""One SSH guest: a lazily opened, shared transport; commands, files, background processes."""

from __future__ import annotations

import contextlib
import os
import posixpath
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from vbench.errors import CommandFailed, GuestError
from vbench.guest import shell, transfer
from vbench.guest.connect import ConnectionLost, open_jump_channel, open_transport
from vbench.guest.output import StdoutSink, parse_date
from vbench.guest.process import RemoteProcess
from vbench.guest.spec import CommandResult, GuestSpec
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import paramiko
else:
    paramiko = lazy_module("paramiko")

_CONTROL_TIMEOUT = 30.0
_KILL_GRACE = 2.0  # seconds a timed-out foreground command gets between TERM and KILL
_CHUNK = 65536


class GuestRecorder(Protocol):
    """Told of every guest reached and every process group started (the run's guest
    ledger, :mod:`vbench.guest.ledger`), so a killed run can still be cleaned up."""

    def reached(self, spec: GuestSpec) -> None: ...

    def started(
        self, spec: GuestSpec, pgid: int, start: int | None, argv: Sequence[str]
    ) -> None: ...


class KillsOnExit:
    """Leaving the ``with`` block kills what was started, then closes: a failure of that
    cleanup is raised, or noted on the error already on its way out."""

    def kill_all(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.kill_all()
        except GuestError as exc:
            if ev is None:
                raise
            ev.add_note(f"cleanup also failed: {exc}")
        finally:
            self.close()


class Guest(KillsOnExit):
    """A connection to one guest. Methods may be called from several threads at once."""

    def __init__(
        self,
        spec: GuestSpec,
        *,
        jump: Guest | None = None,
        recorder: GuestRecorder | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self._jump = jump
        self.recorder = recorder
        self._owns_jump = False
        self._lock = threading.Lock()  # guards transport and jump creation
        self._transport: paramiko.Transport | None = None
        self._sftp_lock = threading.Lock()
        self._sftp: tuple[paramiko.Transport, paramiko.SFTPClient] | None = None
        self._sessions = threading.BoundedSemaphore(max(1, spec.max_sessions))
        self._procs_lock = threading.Lock()
        self._procs: list[RemoteProcess] = []
        self._closed = False

    def __repr__(self) -> str:
        return f"Guest({self.target})"

    @property
    def target(self) -> str:
        return self.spec.target

    @property
    def via(self) -> str | None:
        """Name of the jump guest this guest is reached through, if any."""
        return self.spec.jump.name if self.spec.jump is not None else None

    # ---- connection -------------------------------------------------------------------

    def connect(self) -> None:
        """Open the connection now (otherwise the first command opens it)."""
        self._live_transport()

    @property
    def connected(self) -> bool:
        t = self._transport
        return t is not None and t.is_active()

    def _live_transport(self) -> paramiko.Transport:
        with self._lock:
            if self._closed:
                raise GuestError(self.target, "connection already closed by vbench")
            t = self._transport
            if t is not None and t.is_active():
                return t
            if t is not None:
                # Report the loss once; the next call reconnects (the next trial may work).
                self._transport = None
                t.close()
                raise ConnectionLost(self.target, "connection lost")
            self._transport = open_transport(self.spec, via=self._jump_opener())
            if self.recorder is not None:
                self.recorder.reached(self.spec)
            return self._transport

    def _jump_opener(self) -> Callable[[str, int, float], paramiko.Channel] | None:
        if self.spec.jump is None:
            return None
        if self._jump is None:
            self._jump = Guest(self.spec.jump)
            self._owns_jump = True
        jump = self._jump

        def opener(address: str, port: int, timeout: float) -> paramiko.Channel:
            try:
                return open_jump_channel(
                    jump.target, jump._live_transport(), address, port, timeout
                )
            except GuestError as exc:
                raise GuestError(self.target, f"via jump host {exc}") from exc

        return opener

    def _lost(self, transport: paramiko.Transport) -> bool:
        if transport.is_active():
            return False
        with self._lock:
            if self._transport is transport:
                self._transport = None
        return True

    @contextmanager
    def _channel(self, *, limited: bool = True) -> Iterator[paramiko.Channel]:
        """A session channel; ``limited`` ones count against spec.max_sessions."""
        if limited:
            self._sessions.acquire()
        try:
            t = self._live_transport()
            try:
                chan = t.open_session(timeout=self.spec.connect_timeout)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                if self._lost(t):
                    raise ConnectionLost(self.target, "connection lost") from exc
                raise GuestError(self.target, f"cannot open a session: {exc}") from exc
            try:
                yield chan
            finally:
                chan.close()
        finally:
            if limited:
                self._sessions.release()

    # ---- commands ---------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str | os.PathLike[str]],
        *,
        timeout: float | None = None,
        check: bool = True,
        on_line: Callable[[str], None] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        """Run argv (quoted with shlex.join); stream stdout lines to ``on_line``."""
        text = shell.argv_text(argv)
        return self._execute(
            text, text, timeout=timeout, check=check, on_line=on_line, cwd=cwd, env=env,
            stdin=stdin,
        )

    def run_script(
        self,
        script: str,
        *,
        timeout: float | None = None,
        check: bool = True,
        on_line: Callable[[str], None] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        """Run an sh script vbench built from quoted parts (never raw scenario text)."""
        display = script.strip().splitlines()[0] if script.strip() else "sh"
        if script.strip().count("\n"):
            display += " …"
        return self._execute(
            script, display, timeout=timeout, check=check, on_line=on_line, cwd=cwd, env=env,
            stdin=stdin,
        )

    def _execute(
        self,
        body: str,
        display: str,
        *,
        timeout: float | None,
        check: bool = True,
        on_line: Callable[[str], None] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        request = shell.foreground(body, cwd, env, stdin=bool(stdin))
        started = time.monotonic()
        out = StdoutSink(on_line)
        err = bytearray()
        feeder: _Feeder | None = None
        with self._channel() as chan, contextlib.ExitStack() as stack:
            try:
                chan.exec_command(request)
                if stdin:
                    # A separate writer: a command that answers before reading all its
                    # input must not deadlock against us not reading yet. It is stopped
                    # before the channel closes (see _Feeder).
                    feeder = _Feeder(chan, stdin.encode())
                    stack.callback(feeder.stop)
                # Without stdin the command reads /dev/null: no EOF is sent (see foreground).
                self._pump(chan, out, err, display, started, timeout)
            except GuestError:
                raise
            except (paramiko.SSHException, EOFError, OSError) as exc:
                if self._lost(chan.get_transport()):
                    lost = f"connection lost during `{display}`"
                    raise ConnectionLost(self.target, lost) from exc
                raise GuestError(self.target, f"`{display}` failed: {exc}") from exc
            except BaseException:
                # on_line raised, or Ctrl-C: do not leave the command running.
                self._kill_quietly(out.pid)
                raise
            status = chan.recv_exit_status() if chan.exit_status_ready() else -1
            if status == -1 and self._lost(chan.get_transport()):
                raise ConnectionLost(self.target, f"connection lost during `{display}`")
        result = CommandResult(
            status=status,
            stdout=out.finish(),
            stderr=err.decode("utf-8", "replace"),
            seconds=time.monotonic() - started,
        )
        if check and status != 0:
            raise CommandFailed(self.target, display, status, result.stderr or result.stdout)
        return result

    def _pump(
        self,
        chan: paramiko.Channel,
        out: StdoutSink,
        err: bytearray,
        display: str,
        started: float,
        timeout: float | None,
    ) -> None:
        deadline = None if timeout is None else started + timeout
        while True:
            while chan.recv_ready():
                out.feed(chan.recv(_CHUNK))
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(_CHUNK)
            if chan.exit_status_ready() and (chan.eof_received or chan.closed):
                if not (chan.recv_ready() or chan.recv_stderr_ready()):
                    return
                continue
            wait = 0.5
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill_quietly(out.pid)
                    raise GuestError(self.target, f"`{display}` timed out after {timeout:g} s")
                wait = min(wait, left)
            # The channel's fileno becomes readable on data and on close, not on
            # exit-status alone; the bounded wait covers that case.
            select.select([chan], [], [], wait)

    def _kill_quietly(self, pgid: int | None) -> None:
        """Kill a foreground command's group; best effort, the caller is already failing."""
        if pgid is None:
            return
        try:
            with self._channel(limited=False) as chan:
                chan.settimeout(_CONTROL_TIMEOUT)
                script = shell.kill_groups([pgid], _KILL_GRACE)
                chan.exec_command(shell.foreground(script, None, None))
                chan.recv_exit_status()
        except (GuestError, paramiko.SSHException, EOFError, OSError):
            pass  # the link is gone: nothing more can be done from here

    # ---- background processes ---------------------------------------------------------

    def start(
        self,
        argv: Sequence[str | os.PathLike[str]],
        *,
        log: str,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RemoteProcess:
        """Start argv in its own session; output to ``log``, exit status to ``log + '.rc'``."""
        text = shell.argv_text(argv)
        res = self._execute(
            shell.background(argv, log, cwd, env), f"start {text}", timeout=_CONTROL_TIMEOUT
        )
        # The last line is "PID [START]" (a chatty login shell may print lines before it).
        last = (res.stdout.strip().splitlines() or [""])[-1].split()
        try:
            pid = int(last[0])
        except (IndexError, ValueError) as exc:
            raise GuestError(self.target, f"could not start `{text}`: no pid reported") from exc
        start = int(last[1]) if len(last) > 1 and last[1].isdigit() else None
        proc = RemoteProcess(self, pid, tuple(os.fspath(a) for a in argv), log)
        with self._procs_lock:
            self._procs.append(proc)
        if self.recorder is not None:
            self.recorder.started(self.spec, pid, start, proc.argv)
        return proc

    def processes(self) -> list[RemoteProcess]:
        """Tracked background processes whose group may still be alive."""
        with self._procs_lock:
            return list(self._procs)

    def _forget(self, proc: RemoteProcess) -> None:
        with self._procs_lock:
            if proc in self._procs:
                self._procs.remove(proc)

    def kill_all(self, grace: float = 5.0) -> None:
        """Kill every tracked background process group still alive (one command)."""
        procs = self.processes()
        if not procs:
            return
        out = self.run_control(shell.kill_groups([p.pid for p in procs], grace), grace)
        signal = {"term": 15, "kill": 9}.get(out.strip())
        for p in procs:
            p._killed(signal)

    def run_control(self, script: str, extra_timeout: float = 0.0) -> str:
        """stdout of a short housekeeping script; reconnects once if the link was lost.

        Cleanup must still work after a dropped connection: the remote processes are
        unaffected by it, only the connection needs reopening.
        """
        timeout = _CONTROL_TIMEOUT + extra_timeout
        try:
            return self.run_script(script, timeout=timeout).stdout
        except ConnectionLost:
            return self.run_script(script, timeout=timeout).stdout

    # ---- files ------------------------------------------------------------------------

    @contextmanager
    def _sftp_client(self, what: str) -> Iterator[paramiko.SFTPClient]:
        t = self._live_transport()
        with self._sftp_lock:
            if self._sftp is None or self._sftp[0] is not t:
                try:
                    self._sftp = (t, paramiko.SFTPClient.from_transport(t))
                except (paramiko.SSHException, EOFError, OSError) as exc:
                    raise GuestError(self.target, f"cannot start SFTP: {exc}") from exc
            try:
                yield self._sftp[1]
            except OSError as exc:
                if self._lost(t):
                    raise ConnectionLost(self.target, f"connection lost during {what}") from exc
                cause = exc.strerror or str(exc) or type(exc).__name__
                raise GuestError(self.target, f"{what}: {cause}") from exc

    def put(self, local: Path, remote: str) -> None:
        """Copy a local file or directory (recursively) to ``remote``; keeps modes."""
        local = Path(local)
        if not local.exists():
            raise GuestError(self.target, f"cannot copy {local}: no such local file")
        with self._sftp_client(f"put {local} -> {remote}") as sftp:
            transfer.makedirs(sftp, posixpath.dirname(remote))
            transfer.put_tree(sftp, local, remote)

    def put_text(self, text: str, remote: str, mode: int = 0o644) -> None:
        with self._sftp_client(f"write {remote}") as sftp:
            transfer.makedirs(sftp, posixpath.dirname(remote))
            with sftp.open(remote, "wb") as fh:
                fh.write(text.encode())
            sftp.chmod(remote, mode)

    def get(self, remote: str, local: Path) -> None:
        """Copy a remote file or directory (recursively) to ``local``."""
        with self._sftp_client(f"get {remote}") as sftp:
            transfer.get_tree(sftp, remote, Path(local))

    def read_text(self, remote: str) -> str:
        with self._sftp_client(f"read {remote}") as sftp, sftp.open(remote, "rb") as fh:
            return fh.read().decode("utf-8", "replace")

    # ---- small helpers ----------------------------------------------------------------

    def which(self, tool: str) -> str | None:
        res = self.run_script(f"command -v {shell.argv_text([tool])}", check=False)
        found = res.stdout.strip().splitlines()
        return found[0] if res.status == 0 and found else None

    def mkdir(self, remote: str) -> None:
        self.run(["mkdir", "-p", "--", remote])

    def remove(self, remote: str) -> None:
        """rm -rf, only below spec.workdir (refuses "/", "" and anything outside)."""
        root = posixpath.normpath(self.spec.workdir)
        path = posixpath.normpath(remote) if remote.strip() else ""
        if not path or path == "/" or root in ("/", ".") or not root.startswith("/"):
            raise GuestError(self.target, f"refusing to remove {remote!r}")
        if path != root and not path.startswith(root + "/"):
            raise GuestError(
                self.target, f"refusing to remove {remote!r}: outside workdir {root}"
            )
        self.run(["rm", "-rf", "--", path])

    def clock_offset(self, rounds: int = 5) -> tuple[float, float]:
        """(remote minus controller clock, round trip) from the fastest of ``rounds`` reads."""
        best: tuple[float, float] | None = None
        for _ in range(max(1, rounds)):
            with self._channel() as chan:
                chan.settimeout(_CONTROL_TIMEOUT)
                t0 = time.time()
                chan.exec_command("date +%s.%N </dev/null")
                raw = chan.makefile("rb").read().decode("ascii", "replace").strip()
                t1 = time.time()
            remote = parse_date(raw)
            if remote is None:
                raise GuestError(self.target, f"cannot read the guest clock (date printed {raw!r})")
            rtt = t1 - t0
            if best is None or rtt < best[1]:
                best = (remote - (t0 + t1) / 2, rtt)
        assert best is not None
        return best

    # ---- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (background processes keep running; see kill_all)."""
        with self._lock:
            self._closed = True
            t, self._transport = self._transport, None
        with self._sftp_lock:
            if self._sftp is not None:
                self._sftp[1].close()
                self._sftp = None
        if t is not None:
            t.close()
        if self._owns_jump and self._jump is not None:
            self._jump.close()



class _Feeder:
    """Writes a command's stdin from its own thread, then sends EOF.

    Why the gate: paramiko builds a channel message under the channel's lock but sends it
    after releasing it, so an EOF (or data) written by this thread can reach sshd after
    the CLOSE our thread sent when the command had already ended. OpenSSH then finds a
    message for a channel it has freed and drops the whole connection ("ieof packet
    referred to nonexistent channel"), killing every background process on it. Each
    send happens under ``_gate``, and :meth:`stop` (called before the channel closes)
    takes the gate, so nothing is sent after it. sshd cannot close first either: the
    shell around a fed command reads its input to the EOF before it exits (see
    :func:`vbench.guest.shell.foreground`), so the transport thread's reply to sshd's
    CLOSE never overtakes our last data or EOF (only a killed command can still race).
    """

    _CHUNK = 32768

    def __init__(self, chan: paramiko.Channel, data: bytes) -> None:
        self._chan, self._data = chan, data
        self._gate = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._run, daemon=True, name="vbench-stdin").start()

    def _run(self) -> None:
        view = memoryview(self._data)
        try:
            while view:
                with self._gate:
                    if self._stopped:
                        return
                    sent = self._chan.send(view[: self._CHUNK])
                if sent <= 0:
                    return  # the channel closed: the command ended without reading it all
                view = view[sent:]
            with self._gate:
                if not self._stopped:
                    self._chan.shutdown_write()
        except (paramiko.SSHException, EOFError, OSError):
            pass  # the command ended or the link broke: its result reports that

    def stop(self) -> None:
        # A send blocked on a full window returns once the ended command's channel closes;
        # the bound only keeps a stuck link from holding the caller forever.
        got = self._gate.acquire(timeout=_CONTROL_TIMEOUT)
        self._stopped = True
        if got:
            self._gate.release()
