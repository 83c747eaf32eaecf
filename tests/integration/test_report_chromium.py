"""The HTML report opened in a real headless Chromium (Debian's package).

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
no port is opened). The page's Network, Runtime and Log domains are enabled *before*
the report is loaded, so every request the page makes, every console message and every
uncaught exception is seen. The test proves: the only request is the report file
itself, nothing is logged as an error, every chart is in the DOM and laid out, and
names containing ``<script>`` or quotes are text, never markup.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.analysis_runs import T0, add_run, scenario_doc
from tests.conftest import missing_peer
from vbench.report.build import render_report
from vbench.results.store import Store

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BASH = shutil.which("bash") or "/bin/bash"
HOSTILE_METRIC = "<script>alert(1)</script>"
HOSTILE_LABEL = "it's \"quoted\" <b>bold</b>"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio",
    "--remote-debugging-pipe",
)  # fmt: skip


def _high(fd: int) -> int:
    """``fd`` moved above 9, so that the shell's ``3<&N 4>&M`` cannot clobber it."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Pipe:
    """A minimal DevTools protocol client over Chromium's fds 3 (in) and 4 (out)."""

    def __init__(self, user_data: Path) -> None:
        to_chrome_r, self._w = (_high(fd) for fd in os.pipe())
        self._r, from_chrome_w = (_high(fd) for fd in os.pipe())
        assert CHROMIUM is not None
        argv = [CHROMIUM, *FLAGS, f"--user-data-dir={user_data}", "about:blank"]
        # Chromium reads commands on fd 3 and writes replies on fd 4: a shell puts the
        # pipe ends there and execs it (bash: dash refuses fd numbers above 9).
        shell = f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w}'
        self.proc = subprocess.Popen(
            [BASH, "-c", shell, "chromium", *argv],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        want = self._id
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == want:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def new_page(self) -> str:
        """A new tab reporting its network, runtime, log and page events: its session."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session=session)
        return str(session)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for e in self.events:
            if e.get("method") == method:
                return e
        deadline = time.monotonic() + timeout
        while True:
            msg = self._next(deadline)
            self.events.append(msg)
            if msg.get("method") == method:
                return msg

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            os.write(self._w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)


def _hostile_report(tmp: Path) -> Path:
    """A run with every kind of chart, and hostile scenario/metric/label names."""
    sc = scenario_doc(
        "hostile", {"vms": ["1", "2", "4"], "mode": ["native", HOSTILE_LABEL]},
        report={"headline": ["ops", HOSTILE_METRIC]},
        derived=[{"name": "speedup", "kind": "speedup", "metric": "ops",
                  "baseline": {"vms": "1"}, "ideal": "vms"},
                 {"name": "rel", "kind": "normalize", "metric": "ops",
                  "baseline": {"mode": "native"}}],
        qos=[{"name": "<img src=x onerror=alert(2)>", "metric": HOSTILE_METRIC,
              "op": "<=", "threshold": 5.0}],
    )
    sc["name"] = "<script>alert('scenario')</script>"
    run_dir = tmp / "run"
    (run_dir / "series").mkdir(parents=True)
    with Store.open(f"sqlite:///{tmp}/c.db", tmp) as store:
        pts = []
        for mode in ("native", HOSTILE_LABEL):
            for v in (1, 2, 4):
                pts.append(({"vms": str(v), "mode": mode},
                            {"ops": [1000.0 * v * f for f in (0.98, 1.0, 1.02)],
                             HOSTILE_METRIC: [1.5 * v * f for f in (0.98, 1.0, 1.02)]}))
        for rid, started in (("20270101-000000-aaaaaaaa", T0), ("20270102-000000-bbbbbbbb",
                                                                  T0 + 86400)):
            add_run(store, rid, pts, scenario=sc, started=started, run_dir=str(run_dir),
                    testbed={"hosts": [{"name": "esx-1", "model": HOSTILE_LABEL}]})
        ts = T0 + 86400 + np.arange(0, 1800, 1.0)
        pd.DataFrame({"ts": ts, "metric": HOSTILE_METRIC, "value": np.sin(ts) + 2,
                      "unit": "%"}).to_parquet(run_dir / "series" / "x.parquet")
        html = render_report(store, ["20270102-000000-bbbbbbbb", "20270101-000000-aaaaaaaa"],
                             "html", baseline="last")
    out = tmp / "report.html"
    out.write_text(html, encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pipe, str, str]]:
    if CHROMIUM is None:
        missing_peer("chromium is not installed (make test installs it)")
    tmp = tmp_path_factory.mktemp("chromium")
    report = _hostile_report(tmp)
    pipe = Pipe(tmp / "profile")  # a fresh profile every time
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            pipe.send(f"{domain}.enable", session=session)
        # The reviewer's screen: 1400 px wide, 1000 px of it visible at first.
        pipe.send("Emulation.setDeviceMetricsOverride", {
            "width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False,
        }, session=session)
        pipe.send("Page.navigate", {"url": report.as_uri()}, session=session)
        pipe.wait_for("Page.loadEventFired")
        yield pipe, session, report.read_text(encoding="utf-8")
    finally:
        pipe.close()


def _eval(pipe: Pipe, session: str, js: str) -> Any:
    res = pipe.send("Runtime.evaluate", {"expression": js, "returnByValue": True},
                    session=session)
    return res["result"].get("value")


def test_the_only_request_is_the_report_itself(opened: tuple[Pipe, str, str]) -> None:
    pipe, session, _ = opened
    _eval(pipe, session, "1")  # drain events that arrived with the load
    urls = [e["params"]["request"]["url"] for e in pipe.events
            if e.get("method") == "Network.requestWillBeSent"]
    assert len(urls) == 1 and urls[0].startswith("file://") and urls[0].endswith("report.html")
    resources = _eval(pipe, session, "performance.getEntriesByType('resource').length")
    assert resources == 0


def test_no_console_error_and_no_exception(opened: tuple[Pipe, str, str]) -> None:
    pipe, session, _ = opened
    _eval(pipe, session, "1")
    bad = [e for e in pipe.events if e.get("method") == "Runtime.exceptionThrown"]
    bad += [e for e in pipe.events if e.get("method") == "Runtime.consoleAPICalled"]
    bad += [e for e in pipe.events if e.get("method") == "Log.entryAdded"
            and e["params"]["entry"]["level"] in ("error", "warning")]
    assert not bad, bad


def test_the_first_screen_is_the_summary_and_details_are_folded(
    opened: tuple[Pipe, str, str],
) -> None:
    pipe, session, _ = opened
    first = _eval(pipe, session, """(() => {
        const screen = window.innerHeight;
        const charts = Array.from(document.querySelectorAll('#headline-charts svg.chart'));
        const top = charts.map(c => c.getBoundingClientRect().top);
        const tables = Array.from(document.querySelectorAll('#results table'));
        return {screen, width: window.innerWidth, charts: charts.length,
                visible: top.filter(t => t < screen).length,
                answer: document.querySelector('#answer').getBoundingClientRect().top,
                badges: document.querySelector('ul.badges').getBoundingClientRect().top,
                tables: tables.length,
                shown_tables: tables.filter(t => t.checkVisibility()).length,
                folded: Array.from(document.querySelectorAll('details:not([open])')).map(
                    d => d.closest('section').id)};
    })()""")
    assert first["screen"] == 1000 and first["width"] == 1400
    # The study's answer opens the page; the badges follow it, and both headline
    # metrics' charts sit side by side on the first screen under them.
    assert first["charts"] == 2 and first["visible"] == 2, first
    assert first["answer"] < 200, first
    assert first["answer"] < first["badges"] < first["screen"] / 2, first
    # The per-metric tables are there, folded away: none takes room until opened.
    assert first["tables"] >= 2 and first["shown_tables"] == 0
    for folded in ("results", "guests", "trials", "environment", "timeseries"):
        assert folded in first["folded"], first["folded"]


def test_every_chart_is_present_and_laid_out(opened: tuple[Pipe, str, str]) -> None:
    pipe, session, html = opened
    in_source = html.count('<svg id="vbench-chart-')
    assert in_source >= 10  # headline, derived, QoS, time series and overlay charts
    _eval(pipe, session, "document.querySelectorAll('details').forEach(d => d.open = true)")
    sizes = _eval(pipe, session, """
        Array.from(document.querySelectorAll('svg.chart')).map(s => {
            const r = s.getBoundingClientRect(); return [s.id, r.width, r.height];
        })""")
    assert len(sizes) == in_source
    assert all(w > 100 and h > 100 for _, w, h in sizes), sizes
    sections = _eval(pipe, session, """
        ['summary','derived','qos','timeseries','comparison'].map(
            id => document.querySelectorAll('#' + id + ' svg.chart').length)""")
    assert all(n >= 1 for n in sections), sections


def test_hostile_names_are_text_never_markup(opened: tuple[Pipe, str, str]) -> None:
    pipe, session, _ = opened
    assert _eval(pipe, session, "document.scripts.length") == 0
    assert _eval(pipe, session, "document.querySelectorAll('img, b, iframe').length") == 0
    text = _eval(pipe, session, "document.body.innerText")
    assert HOSTILE_METRIC in text
    assert HOSTILE_LABEL in text
    assert "<img src=x onerror=alert(2)>" in text
    assert "<script>alert('scenario')</script>" in _eval(pipe, session, "document.title")
    svg_text = _eval(pipe, session, """
        Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('|')""")
    assert HOSTILE_METRIC in svg_text  # axis labels are text nodes inside the SVG
