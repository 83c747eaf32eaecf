"""A throwaway PostgreSQL server for tests: initdb in a temporary folder, listening on
127.0.0.1 only, stopped and deleted at the end of the session.

tests/conftest.py loads this module as a plugin: every test asks for ``postgresql_server``,
``postgresql_url`` or ``fresh_postgresql_url`` by name and shares the session's one server
(importing the fixtures into a module would start a second server for that module). The
server is started only when a test first asks for it.

The server runs as the ``postgres`` system user when the tests run as root (postgres
refuses root). The superuser ``vbench`` logs in over TCP without a password; the role
``PASSWORD_USER`` needs ``PASSWORD``, for tests of authentication and URL display.
Missing server binaries fail the tests: CI installs them, so absence is a broken setup.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

PG_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "vbench"
PASSWORD_USER = "vbench_pw"
PASSWORD = "pw-S3cret-7f3a"
_HBA = f"""\
local all all trust
host all {SUPERUSER} 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


def find_pg_bin() -> Path:
    """``$VBENCH_PG_BIN``, else the newest ``/usr/lib/postgresql/<version>/bin``."""
    override = os.environ.get("VBENCH_PG_BIN")
    candidates = [Path(override)] if override else sorted(
        (d / "bin" for d in PG_ROOT.glob("*") if re.fullmatch(r"\d+(\.\d+)?", d.name)),
        key=lambda b: tuple(int(x) for x in b.parent.name.split(".")),
        reverse=True,
    )
    for bin_dir in candidates:
        if (bin_dir / "initdb").is_file() and (bin_dir / "pg_ctl").is_file():
            return bin_dir
    pytest.fail(
        f"PostgreSQL server binaries (initdb, pg_ctl) not found under {PG_ROOT}/<version>/bin"
        " (or $VBENCH_PG_BIN): install the Debian package 'postgresql'",
        pytrace=False,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    bin_dir: Path
    root: Path
    port: int = 0

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres", user: str = SUPERUSER,
            password: str | None = None) -> str:
        auth = f"{user}:{password}" if password is not None else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run SQL as the superuser, outside a transaction (CREATE DATABASE needs that)."""
        dsn = f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database}"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self, owner: str = SUPERUSER) -> str:
        """A new empty database; returns its name."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        return name

    # lifecycle

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)

    def init(self) -> None:
        done = self._run(
            "initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
        (self.data_dir / "pg_hba.conf").write_text(_HBA)

    def start(self, attempts: int = 5) -> None:
        # A free port can be taken between probing and binding; try a few.
        for _ in range(attempts):
            self.port = _free_port()
            options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            done = self._run(
                "pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file),
                "-w", "-t", "30", "-o", options, "start",
            )
            if done.returncode == 0:
                return
        log = self.log_file.read_text() if self.log_file.exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()}\n{log[-2000:]}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def start_server() -> PgServer:
    """Initialise and start a server in a new temporary folder."""
    bin_dir = find_pg_bin()
    root = Path(tempfile.mkdtemp(prefix="vbench-pg-"))
    if os.geteuid() == 0:
        pg_user = pwd.getpwnam("postgres")
        os.chown(root, pg_user.pw_uid, pg_user.pw_gid)
    server = PgServer(bin_dir, root)
    try:
        server.init()
        server.start()
        server.execute(f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'")
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[PgServer]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgresql_url(postgresql_server: PgServer) -> str:
    """URL of the server's ``postgres`` database as the password-less superuser."""
    return postgresql_server.url()


@pytest.fixture()
def fresh_postgresql_url(postgresql_server: PgServer) -> str:
    """URL of a new, empty database for one test."""
    return postgresql_server.url(postgresql_server.create_database())
