"""A lab's lease: one run at a time on a lab, across processes and machines.

A run takes the lease of its lab (keyed by the lab fingerprint) before it touches the lab
and gives it back after its final clean-up. The lease lives where the store lives, so
every run that shares a store shares the queue:

- beside an SQLite store, an exclusive ``flock`` on ``<store>.leases/<fingerprint>.lock``;
  the holder's description (pid, host, run id, since) is written into that file;
- on a PostgreSQL store, a session-level advisory lock ``(LEASE_SPACE, key)`` held by a
  connection of its own; the holder's description rides in a comment of the statement
  that took it, which PostgreSQL shows as that session's last query.

Both die with their process: the kernel drops a dead process's ``flock``, and PostgreSQL
ends a session whose client is gone (its locks with it), so ``kill -9`` frees the lab.
No table is involved: nothing to clean up after a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vbench.errors import Interrupted, LabError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from vbench.results.store import Store

# The first key of every vbench advisory lock ("vbnc"): `lab who` lists vbench's leases
# without mistaking another application's advisory locks for them.
LEASE_SPACE = 0x76626E63
_MARK = "vbench-lease"
WAIT_POLL_S = 0.25  # how often a queued run tries again (a lock has no wake-up call)


@dataclass(frozen=True)
class Holder:
    """Who holds a lab: the process and the run it is for."""

    lab: str  # the lab's name
    fingerprint: str
    run_id: str
    pid: int
    host: str
    since: float | None  # when it took the lease (epoch seconds; None: not told)
    scenario: str = ""

    @classmethod
    def me(cls, lab: str, fingerprint: str, run_id: str, scenario: str = "") -> Holder:
        # Names are cut: PostgreSQL keeps 1 kB of a session's last statement, which
        # carries this (a '/', '*' or non-ASCII character there takes 6 bytes).
        return cls(lab[:60], fingerprint, run_id, os.getpid(), socket.gethostname()[:60],
                   time.time(), scenario[:60])

    def text(self, now: float | None = None) -> str:
        """``run R (pid 1234 on host h, since 2026-11-27 05:41:02 UTC, 3 min ago)``."""
        who = f"run {self.run_id} (pid {self.pid} on host {self.host}"
        if self.since is None:
            return f"{who}, since a time the server does not tell)"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since))
        ago = _ago((time.time() if now is None else now) - self.since)
        return f"{who}, since {stamp}, {ago})"

    @classmethod
    def from_json(cls, text: str) -> Holder | None:
        try:
            doc = json.loads(text)
            return cls(str(doc["lab"]), str(doc["fingerprint"]), str(doc["run_id"]),
                       int(doc["pid"]), str(doc["host"]), float(doc["since"]),
                       str(doc.get("scenario", "")))
        except (ValueError, KeyError, TypeError):
            return None  # being written, or not ours


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s ago"
    if s < 7200:
        return f"{s // 60} min ago"
    return f"{s // 3600} h {s % 3600 // 60} min ago"


class LabBusy(LabError):
    """The lab is leased by another run (and the run was not asked to wait, or waited as
    long as it was allowed: ``waited`` seconds)."""

    def __init__(self, lab: str, holder: Holder | None, waited: float | None = None) -> None:
        self.holder, self.waited = holder, waited
        who = holder.text() if holder else "another run (its holder is being recorded)"
        if waited is None:
            tail = "`vbench run --wait` queues behind it, `vbench lab who` shows the holder"
        else:
            tail = f"gave up after waiting {waited:.0f} s (--wait-max)"
        super().__init__(f"lab {lab}", f"in use by {who}; {tail}")


class Lease:
    """A held lease; :meth:`release` (or leaving the ``with`` block) gives it back."""

    def __init__(self, holder: Holder, release: Callable[[], None],
                 record: Callable[[Holder], None] | None = None) -> None:
        self.holder = holder
        self.waited = 0.0  # seconds it queued behind another holder
        self._release: Callable[[], None] | None = release
        self._record = record  # writes another holder where `lab who` reads it

    def hand_on(self, holder: Holder) -> None:
        """The next run of a series holding this lease (:func:`kept_leases`) is named as
        its holder, with its own run id and start."""
        if self._record is not None:
            self._record(holder)
        self.holder = holder

    def release(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            release()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def take_lease(
    store: Store,
    describe: Callable[[], Holder],
    wait: bool = False,
    on_wait: Callable[[Holder | None, float], None] | None = None,
    cancel: threading.Event | None = None,
    report_every: float = 10.0,
    max_wait: float | None = None,
) -> Lease:
    """Take the lease of the lab ``describe()`` names (called at each attempt: the holder
    is described as of the moment it wins). Held by another: :class:`LabBusy`, or with
    ``wait`` try again until free, calling ``on_wait(holder, waited_s)`` at once and every
    ``report_every`` seconds, for at most ``max_wait`` seconds (then :class:`LabBusy`);
    ``cancel`` set (Ctrl-C) ends the wait with Interrupted. Inside :func:`kept_leases`
    a lab already leased by this process is kept, named after the new holder."""
    kept_here: dict[str, Lease] | None = getattr(_series, "kept", None)
    if kept_here is not None:
        me = describe()
        held = kept_here.get(me.fingerprint)
        if held is not None:
            held.hand_on(me)
            return Lease(me, lambda: None)
        lease = _take(store, describe, wait, on_wait, cancel, report_every, max_wait)
        kept_here[me.fingerprint] = lease
        kept = Lease(lease.holder, lambda: None)  # given back when the series ends
        kept.waited = lease.waited
        return kept
    return _take(store, describe, wait, on_wait, cancel, report_every, max_wait)


# The leases a series of runs holds (kept_leases), by fingerprint, in the thread that
# runs the series (its runs are taken there, one after the other); no attribute outside.
_series = threading.local()


@contextlib.contextmanager
def kept_leases() -> Iterator[None]:
    """Runs inside (in this thread) keep their labs' leases until the block ends: a
    series of runs on one lab (``vbench run --aa``: back to back) lets no other run in
    between them."""
    if getattr(_series, "kept", None) is not None:
        yield  # already inside a series: its outermost block gives them back
        return
    _series.kept = {}
    try:
        yield
    finally:
        held: dict[str, Lease] = _series.kept
        del _series.kept
        for lease in held.values():
            lease.release()


def _take(
    store: Store,
    describe: Callable[[], Holder],
    wait: bool,
    on_wait: Callable[[Holder | None, float], None] | None,
    cancel: threading.Event | None,
    report_every: float,
    max_wait: float | None,
) -> Lease:
    backend = _backend(store)
    start, told, vanished = time.monotonic(), None, 0
    while True:
        me = describe()
        lease = backend.try_take(me)
        if lease is not None:
            lease.waited = time.monotonic() - start if told is not None else 0.0
            return lease
        holder = None if wait else _first(backend.holders(me.fingerprint))
        if not wait and holder is None and vanished < 3:
            # Nobody holds it now: it was given back in between, or `lab who` was
            # looking at that moment (its probe holds the file an instant). Again.
            vanished += 1
            time.sleep(0.05 * vanished)
            continue
        if not wait:
            raise LabBusy(me.lab, holder)
        waited = time.monotonic() - start
        if max_wait is not None and waited >= max_wait:
            raise LabBusy(me.lab, _first(backend.holders(me.fingerprint)), waited)
        if on_wait is not None and (told is None or waited - told >= report_every):
            told = waited
            on_wait(_first(backend.holders(me.fingerprint)), waited)
        if cancel is not None and cancel.wait(WAIT_POLL_S):
            raise Interrupted(f"interrupted while waiting for lab {me.lab}")
        if cancel is None:
            time.sleep(WAIT_POLL_S)


def lease_holders(store: Store, fingerprint: str | None = None) -> list[Holder]:
    """Who holds the lease of the lab with ``fingerprint`` (or of every lab) right now."""
    return _backend(store).holders(fingerprint)


def _first(holders: list[Holder]) -> Holder | None:
    return holders[0] if holders else None


def _backend(store: Store) -> _FileLeases | _PgLeases | _NoLeases:
    engine = store.engine
    if engine.dialect.name == "postgresql":
        return _PgLeases(engine)
    database = engine.url.database or ""
    if database in ("", ":memory:"):
        return _NoLeases()  # a store in memory is one process's: nobody to queue behind
    real = Path(database).resolve()  # one queue per database file, whatever its path
    return _FileLeases(real.with_name(real.name + ".leases"))


class _NoLeases:
    def try_take(self, me: Holder) -> Lease:
        return Lease(me, lambda: None)

    def holders(self, fingerprint: str | None) -> list[Holder]:
        return []


class _FileLeases:
    """``flock`` on a file per lab beside the SQLite store."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, fingerprint: str) -> Path:
        return self.folder / f"{fingerprint}.lock"

    def try_take(self, me: Holder) -> Lease | None:
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        f = open(self._path(me.fingerprint), "a+", encoding="utf-8")  # noqa: SIM115 - held
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return None
        def record(holder: Holder) -> None:
            f.seek(0)
            f.truncate()
            f.write(json.dumps(asdict(holder)))
            f.flush()

        record(me)

        def release() -> None:
            with contextlib.suppress(OSError):
                f.seek(0)
                f.truncate()  # a free lab's file names nobody
            f.close()  # closing the file drops the flock

        return Lease(me, release, record)

    def holders(self, fingerprint: str | None) -> list[Holder]:
        paths = ([self._path(fingerprint)] if fingerprint
                 else sorted(self.folder.glob("*.lock")) if self.folder.is_dir() else [])
        out = []
        for path in paths:
            with _probe(path) as held:
                if held is not None:
                    out.append(held)
        return out


@contextlib.contextmanager
def _probe(path: Path) -> Iterator[Holder | None]:
    """The holder recorded in ``path`` when someone holds its lock, else None."""
    import fcntl

    try:
        f: IO[str] = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        yield None
        return
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            yield Holder.from_json(f.read()) or _unrecorded(path.stem)
            return
        fcntl.flock(f, fcntl.LOCK_UN)
        yield None


def _unrecorded(fingerprint: str) -> Holder:
    return Holder("?", fingerprint, "(being recorded)", 0, "?", time.time())


class _PgLeases:
    """Session-level advisory locks on connections of their own."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def try_take(self, me: Holder) -> Lease | None:
        conn: Connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        # The description rides in the statement's comment: pg_stat_activity shows it as
        # this session's last query for as long as the lock is held.
        keys = {"space": LEASE_SPACE, "key": pg_key(me.fingerprint)}
        try:
            got = conn.exec_driver_sql(
                f"SELECT pg_try_advisory_lock(%(space)s, %(key)s) {_note(me)}", keys).scalar()
        except BaseException:
            conn.invalidate()
            conn.close()
            raise
        if not got:
            conn.close()
            return None

        def release() -> None:
            try:  # at once, not when the server notices the session has gone
                conn.exec_driver_sql("SELECT pg_advisory_unlock(%(space)s, %(key)s)", keys)
            except Exception:  # a broken session: it ends below, its lock with it
                pass
            finally:
                conn.invalidate()  # the session ends, and any lock it still held
                conn.close()

        def record(holder: Holder) -> None:  # the session's last statement names it
            conn.exec_driver_sql(f"SELECT %(space)s, %(key)s {_note(holder)}", keys)

        return Lease(me, release, record)

    def holders(self, fingerprint: str | None) -> list[Holder]:
        sql = ("SELECT a.pid, a.query, a.client_addr::text, "
               "extract(epoch from a.backend_start) FROM pg_locks l "
               "JOIN pg_stat_activity a ON a.pid = l.pid "
               "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
               # advisory locks are per database: this store's only
               "AND l.database = (SELECT oid FROM pg_database "
               "WHERE datname = current_database()) "
               "AND l.classid::text::bigint = %(space)s")
        params: dict[str, Any] = {"space": LEASE_SPACE}
        if fingerprint:
            sql += " AND l.objid::text::bigint = %(key)s"
            params["key"] = pg_key(fingerprint)
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(sql + " ORDER BY a.backend_start", params).all()
        return [_pg_holder(row, fingerprint) for row in rows]


def _note(holder: Holder) -> str:
    """The holder in an SQL comment. No '/' or '*' of a name is left (JSON escapes them):
    PostgreSQL nests comments, so a '/*' would leave it open and a '*/' end it early;
    psycopg turns '%%' back into '%'."""
    text = (json.dumps(asdict(holder)).replace("/", "\\u002f").replace("*", "\\u002a")
            .replace("%", "%%"))
    return f"/* {_MARK} {text} */"


def _pg_holder(row: Any, fingerprint: str | None) -> Holder:
    pid, query, addr, started = row
    text = str(query or "")
    if _MARK in text:
        found = Holder.from_json(text.split(_MARK, 1)[1].rsplit("*/", 1)[0].strip())
        if found is not None:
            return found
    # Not readable by this role (another user's session): what the server tells it, the
    # session's server pid and start (its client address is hidden too).
    return Holder("?", fingerprint or "?",
                  "(unknown: another database user's session, pid of the server's)",
                  int(pid), str(addr or "?"), float(started) if started else None)


def pg_key(fingerprint: str) -> int:
    """The second advisory-lock key of a lab: 31 bits of its fingerprint."""
    return int(fingerprint[:8], 16) & 0x7FFFFFFF
