"""The results store's engines: store URLs and the SQLite and PostgreSQL connections.

SQLite runs in WAL mode with a 30 s busy timeout and takes its write lock at the start
of each write transaction (``BEGIN IMMEDIATE``) when a connection is opened with the
``vbench_write`` execution option, so several processes can write one file at once.
PostgreSQL is reached with psycopg 3. :class:`vbench.results.store.Store` sits on top.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.errors import StoreError
from vbench.lazy import lazy_module

# Lazy: `validate` and `plan` resolve the store's URL to see whether one exists without
# paying for SQLAlchemy when none does.
if TYPE_CHECKING:
    import json

    import sqlalchemy as sa
    from sqlalchemy.engine import Connection, Engine
else:
    sa = lazy_module("sqlalchemy")
    json = lazy_module("json")

SQLITE_BUSY_TIMEOUT_MS = 30_000
PG_CONNECT_TIMEOUT_S = 10


# --- URLs -----------------------------------------------------------------------------

_SCHEMES = {
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


def resolve_url(url: str | None, results_dir: Path) -> str:
    """The URL the user meant: given, else ``$VBENCH_STORE``, else the default SQLite file.
    A bare path (no ``://``) is taken as an SQLite file."""
    if url is None:
        url = os.environ.get("VBENCH_STORE") or None
    if url is None:
        url = str(Path(results_dir) / "vbench.db")
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().absolute()}"
    return url


def display_url(url: str) -> str:
    """``url`` without its password (in the authority or a ``password=`` parameter)."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError):  # unparseable: still shown, scrubbed
        return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)
    if "password" in parsed.query:
        parsed = parsed.update_query_dict({"password": "***"})
    return parsed.render_as_string(hide_password=True)


def _driver_url(url: str, where: str) -> sa.URL:
    scheme = url.split("://", 1)[0].lower()
    driver = _SCHEMES.get(scheme)
    if driver is None:
        raise StoreError(
            f"{where}: unsupported store URL scheme {scheme!r}; "
            "use sqlite:///PATH or postgresql://USER@HOST/DB"
        )
    try:
        return sa.make_url(url).set(drivername=driver)
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise StoreError(f"{where}: not a valid URL: {one_line(exc)}") from None


def one_line(exc: BaseException, secret: str | None = None) -> str:
    """The root cause of ``exc`` on one line, without ``secret``."""
    cause = getattr(exc, "orig", None) or exc
    text = " ".join(str(cause).split()) or type(cause).__name__
    if secret:
        text = text.replace(secret, "***")
    return text


# --- engines --------------------------------------------------------------------------

def _set_wal(cur: Any) -> None:
    # Switching a new database to WAL needs an exclusive lock, and SQLite may answer
    # "database is locked" at once instead of waiting on busy_timeout when another
    # process is opening the same new file: retry for a while.
    import sqlite3
    import time

    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_engine(url: sa.URL, where: str) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:")
    if not in_memory:
        parent = Path(database).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{where}: cannot create {parent}: {exc.strerror}") from None
    engine = sa.create_engine(
        url,
        json_serializer=_json_dumps,
        # An in-memory database lives in one connection, so share exactly one.
        **({"poolclass": sa.pool.StaticPool, "connect_args": {"check_same_thread": False}}
           if in_memory else {}),
    )

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module; "begin" below issues it.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if not in_memory:
            _set_wal(cur)
            cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes can fail at once with
        # SQLITE_BUSY when another process wrote in between; busy_timeout cannot help it.
        # Writers take the lock up front instead and queue on the busy timeout.
        immediate = conn.get_execution_options().get("vbench_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _pg_engine(url: sa.URL) -> Engine:
    connect_args: dict[str, Any] = {"application_name": "vbench"}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    return sa.create_engine(
        url, json_serializer=_json_dumps, connect_args=connect_args, pool_pre_ping=True
    )


def _json_dumps(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def create_engine(url: str | None, results_dir: Path) -> tuple[Engine, str, str | None]:
    """The engine of the store at ``url`` (read as :func:`resolve_url` reads it), the URL
    as shown to people (no password) and the password to keep out of messages."""
    full = resolve_url(url, results_dir)
    shown = display_url(full)
    driver_url = _driver_url(full, shown)
    if driver_url.get_backend_name() == "sqlite":
        engine = _sqlite_engine(driver_url, shown)
    else:
        engine = _pg_engine(driver_url)
    return engine, shown, driver_url.password
