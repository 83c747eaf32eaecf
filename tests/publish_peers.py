"""Real peers for the publishing tests: Debian's Prometheus Pushgateway and a Prometheus
that scrapes it (each on a free loopback port with its own data under a tmp folder), and
a JSON webhook receiver (a real HTTP server in a thread).

Their binaries are missing only on a broken set-up (CI installs prometheus and
prometheus-pushgateway): the tests then fail, naming the package."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from vbench.testing import free_port, wait_for

PUSHGATEWAY = Path("/usr/bin/prometheus-pushgateway")
PROMETHEUS = Path("/usr/bin/prometheus")


def _need(binary: Path, package: str) -> None:
    if not binary.is_file():
        pytest.fail(f"{binary} not found: install the Debian package '{package}'",
                    pytrace=False)


def _ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def _process(argv: list[str], log: Path, ready: str) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _ready(ready) or proc.poll() is not None, 60, f"{argv[0]} ready")
        if proc.poll() is not None:
            raise AssertionError(f"{argv[0]} exited {proc.returncode}:\n{log.read_text()}")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


@dataclass(frozen=True)
class Prom:
    pushgateway: str  # http://127.0.0.1:PORT
    prometheus: str

    def query(self, promql: str) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.prometheus}/api/v1/query", params={"query": promql}, timeout=10)
        r.raise_for_status()
        return list(r.json()["data"]["result"])

    def scraped(self, promql: str, timeout: float = 60) -> list[dict[str, Any]]:
        """The query's result once Prometheus has scraped something that answers it."""
        found: list[list[dict[str, Any]]] = []
        wait_for(lambda: found.append(self.query(promql)) or found[-1], timeout,
                 f"Prometheus to scrape {promql}")
        return found[-1]


@contextlib.contextmanager
def pushgateway_and_prometheus(tmp: Path) -> Iterator[Prom]:
    _need(PUSHGATEWAY, "prometheus-pushgateway")
    _need(PROMETHEUS, "prometheus")
    gw_port, prom_port = free_port(), free_port()
    gw = f"http://127.0.0.1:{gw_port}"
    (tmp / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: pushgateway\n"
        "    honor_labels: true\n"  # keep the pushed job/scenario/lab labels
        f"    static_configs: [{{targets: ['127.0.0.1:{gw_port}']}}]\n")
    with _process([str(PUSHGATEWAY), f"--web.listen-address=127.0.0.1:{gw_port}",
                   f"--persistence.file={tmp / 'pushgateway.data'}"],
                  tmp / "pushgateway.log", f"{gw}/-/ready"), \
         _process([str(PROMETHEUS), f"--config.file={tmp / 'prometheus.yml'}",
                   f"--storage.tsdb.path={tmp / 'prometheus-data'}",
                   f"--web.listen-address=127.0.0.1:{prom_port}"],
                  tmp / "prometheus.log", f"http://127.0.0.1:{prom_port}/-/ready"):
        yield Prom(gw, f"http://127.0.0.1:{prom_port}")


@dataclass
class Webhook:
    """What a real HTTP server on loopback received: each POST's headers and JSON body
    (each PUT's headers, with its path, and text body)."""

    port: int
    status: int = 200  # what it answers
    received: list[tuple[dict[str, str], Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/vbench"


@contextlib.contextmanager
def webhook_server(port: int | None = None, status: int = 200) -> Iterator[Webhook]:
    hook = Webhook(port or free_port(), status)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hook.received.append((dict(self.headers.items()), json.loads(body)))
            self.send_response(hook.status)
            self.end_headers()
            self.wfile.write(b"stored" if hook.status < 300 else b"try later")

        def do_PUT(self) -> None:  # what a Pushgateway is sent: kept with its path
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hook.received.append(({**dict(self.headers.items()), "path": self.path},
                                  body.decode()))
            self.send_response(hook.status)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", hook.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)

