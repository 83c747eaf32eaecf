"""The system under test of one cloudstone instance: MariaDB, PHP-FPM and nginx serving
the Olio-shaped app from ``drivers/cloudstone/``, deployed in the server guest's run
directory and run as ordinary tracked processes (no systemd, no root needed).

Each server runs under ``timeout --foreground`` (same process group, so vbench's group
kill reaches it): should the controller die without cleanup, nothing outlives the
trial by more than its budget.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vbench.errors import GuestError, Interrupted
from vbench.resources import driver_file
from vbench.templates import Templates

if TYPE_CHECKING:
    import threading

    from vbench.guest.ssh import Guest, RemoteProcess
    from vbench.workloads.cloudstone.params import CloudstoneParams

IMAGES = 20
_T = Templates.for_driver("cloudstone")


@dataclass
class Sut:
    instance: int
    guest: Guest | None  # None: the user's own app (deploy: false)
    dir: str
    url: str
    procs: dict[str, RemoteProcess] = field(default_factory=dict)
    deploy_seconds: float | None = None
    load_seconds: float | None = None

    def dead(self) -> str | None:
        """Which server of this instance is no longer running, with its log's last lines."""
        for what, proc in self.procs.items():
            if not proc.is_running():
                lines = proc.tail(5).strip().replace("\n", " | ")
                return (f"instance {self.instance}: {what} exited during the trial "
                        f"(status {proc.wait(timeout=5) if proc.finished else 'killed'})"
                        + (f"; log: {lines}" if lines else ""))  # fmt: skip
        return None

    def stop(self) -> None:
        # Reverse order: the web tier first, so no request meets a database going away.
        for what in ("nginx", "php-fpm", "mariadbd"):
            proc = self.procs.get(what)
            if proc is not None:
                proc.kill(grace=10)
        if self.guest is not None and self.procs:
            self.guest.run(["sh", f"{self.dir}/sut.sh", "orphans", self.dir], timeout=60)


def sizes(p: CloudstoneParams) -> dict[str, int]:
    """Data size from the users, as Olio's loader scales its tables with them."""
    return {"persons": p.users * p.persons_per_user, "events": p.users * p.events_per_user,
            "tags": max(50, p.users // 2), "images": IMAGES}  # fmt: skip


def deploy(guest: Guest, instance: int, base: str, port: int, p: CloudstoneParams,
           lifetime: float, cancel: threading.Event) -> Sut:  # fmt: skip
    """Push, initialise, load and start one instance; timed (deploy, load) separately."""
    started = time.monotonic()
    d = posixpath.join(base, f"i{instance}")
    if len(f"{d}/run/db.sock") > 107:  # the sun_path limit of a Unix socket
        raise GuestError(guest.name, f"workdir too long for the MariaDB socket {d}/run/db.sock")
    php_fpm = guest.which("php-fpm8.2") or guest.which("php-fpm")
    if php_fpm is None:
        raise GuestError(guest.name, "php-fpm (php8.2-fpm) is not installed in this guest")
    root = guest.run(["id", "-u"], timeout=30).stdout.strip() == "0"
    user = guest.run(["id", "-un"], timeout=30).stdout.strip()
    bind = p.bind or guest.spec.address
    fpm_port = port + 1
    values = {"dir": d, "user": user if root else None, "bind": bind, "port": port,
              "fpm_port": fpm_port, "workers": p.nginx_workers,
              "children": p.php_children}  # fmt: skip
    guest.put(driver_file("cloudstone", "app"), f"{d}/app")
    for name in ("schema.sql", "sut.sh"):
        guest.put(driver_file("cloudstone", name), f"{d}/{name}")
    guest.put_text(_T.render("conf/nginx.conf.j2", **values), f"{d}/conf/nginx.conf")
    guest.put_text(_T.render("conf/php-fpm.conf.j2", **values), f"{d}/conf/php-fpm.conf")
    guest.put_text(_T.render("conf/config.php.j2", **values), f"{d}/app/config.php")
    guest.put_text(_T.render("load.sql.j2", **sizes(p)), f"{d}/load.sql")
    guest.run(["sh", f"{d}/sut.sh", "init", d, str(IMAGES)], timeout=600)
    sut = Sut(instance, guest, d, f"http://{bind}:{port}")
    try:
        _start(guest, sut, p, php_fpm, root, lifetime, cancel)
    except BaseException as exc:
        # The caller never gets this Sut, so its teardown cannot stop the servers already
        # started: they would hold their ports until the run ends (and fail the next trial).
        try:
            sut.stop()
        except GuestError as stop_exc:
            exc.add_note(f"stopping instance {instance}'s servers also failed: {stop_exc}")
        raise
    sut.deploy_seconds = time.monotonic() - started - (sut.load_seconds or 0.0)
    return sut


def _start(guest: Guest, sut: Sut, p: CloudstoneParams, php_fpm: str, root: bool,
           lifetime: float, cancel: threading.Event) -> None:  # fmt: skip
    """Start MariaDB, create and load the data (timed), start PHP-FPM and nginx, and wait
    for the home page."""
    d = sut.dir
    life = ["timeout", "--foreground", "-k", "10", f"{int(lifetime)}"]
    sut.procs["mariadbd"] = guest.start([
        *life, "mariadbd", "--no-defaults", f"--datadir={d}/db", f"--socket={d}/run/db.sock",
        f"--pid-file={d}/run/mysqld.pid", f"--tmpdir={d}/tmp", "--skip-networking",
        "--innodb-buffer-pool-size=256M", "--innodb-flush-log-at-trx-commit=2",
        "--max-connections=2000",
        *(["--user=root"] if root else [])], log=f"{d}/log/mariadbd.log")  # fmt: skip
    _wait(guest, sut, ["test", "-S", f"{d}/run/db.sock"], "mariadbd socket", cancel)
    guest.run(["sh", f"{d}/sut.sh", "schema", d], timeout=120)
    t = time.monotonic()
    guest.run(["sh", f"{d}/sut.sh", "load", d], timeout=3600)
    sut.load_seconds = time.monotonic() - t
    sut.procs["php-fpm"] = guest.start(
        [*life, php_fpm, "--nodaemonize", *(["-R"] if root else []), "--fpm-config",
         f"{d}/conf/php-fpm.conf"], log=f"{d}/log/php-fpm.out")  # fmt: skip
    sut.procs["nginx"] = guest.start(
        [*life, "nginx", "-c", f"{d}/conf/nginx.conf", "-p", f"{d}/", "-e",
         f"{d}/log/nginx-start.log"], log=f"{d}/log/nginx.out")  # fmt: skip
    home = f"{sut.url}/"
    _wait(guest, sut, ["curl", "-sf", "-o", "/dev/null", "--max-time", "5", home],
          f"the home page {home}", cancel)  # fmt: skip


def _wait(guest: Guest, sut: Sut, argv: list[str], what: str, cancel: threading.Event,
          timeout: float = 120.0) -> None:  # fmt: skip
    """Until ``argv`` succeeds in the guest; a server that exits meanwhile is reported."""
    deadline = time.monotonic() + timeout
    while guest.run(argv, check=False, timeout=30).status != 0:
        dead = sut.dead()
        if dead:
            raise GuestError(guest.name, dead.replace("during the trial", "while starting"))
        if time.monotonic() > deadline:
            raise GuestError(guest.name, f"instance {sut.instance}: {what} not ready "
                             f"after {timeout:g} s")  # fmt: skip
        if cancel.wait(0.2):
            raise Interrupted("interrupted while the CloudStone servers were starting")
