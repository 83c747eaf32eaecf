"""The trend page of `vbench report --history` opened in a real headless Chromium (as the
single-run report is in test_report_chromium.py): the only request is the file itself,
nothing is logged as an error, every chart is laid out with a marker per run, series of
different variants are drawn apart, and hostile names are text, never markup."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run, scenario_doc
from tests.conftest import missing_peer
from tests.integration.test_report_chromium import CHROMIUM, Pipe
from vbench.cli import cli
from vbench.results.store import Store

pytestmark = pytest.mark.integration

HOSTILE = "<script>alert(1)</script>"
LOCAL = {"name": "local", "local": {"addresses": ["127.0.0.2"], "port": 2222}}
SIM = {"name": "sim\"<b>x</b>", "vcenters": {"sim": {"url": "https://127.0.0.1:18443/sdk",
                                                    "simulator": {"method_delay": {"X": 1}}}}}
RUNS = 12  # nights; night 5 in the simulated lab, night 8 with --set


def _page(tmp: Path) -> Path:
    url = f"sqlite:///{tmp}/t.db"
    with Store.open(url, tmp) as store:
        for night in range(RUNS):
            sc = scenario_doc("nightly", {"qd": ["1", "8", "32"]},
                              report={"headline": ["iops", HOSTILE]})
            sets: tuple[str, ...] = ()
            if night == 8:
                sc["workload"]["params"]["rate_iops"] = 300
                sets = ("workload.params.rate_iops=300",)
            pts = [({"qd": qd}, {"iops": [1000.0 * int(qd) ** 0.5 * f for f in (0.98, 1, 1.02)],
                                 HOSTILE: [float(night + int(qd))] * 2})
                   for qd in ("1", "8", "32")]
            add_run(store, f"2027{night + 1:04d}-020000-{night:08d}", pts, scenario=sc,
                    started=T0 + night * 86400, lab=SIM if night == 5 else LOCAL,
                    overrides=sets)
    out = tmp / "trend.html"
    res = CliRunner().invoke(cli, ["report", "--history", "nightly", "--store", url,
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pipe, str]]:
    if CHROMIUM is None:
        missing_peer("chromium is not installed (make test installs it)")
    tmp = tmp_path_factory.mktemp("trend")
    page = _page(tmp)
    pipe = Pipe(tmp / "profile")
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send("Emulation.setDeviceMetricsOverride", {
            "width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=session)
        pipe.send("Page.navigate", {"url": page.as_uri()}, session=session)
        pipe.wait_for("Page.loadEventFired")
        yield pipe, session
    finally:
        pipe.close()


def _eval(pipe: Pipe, session: str, js: str) -> Any:
    res = pipe.send("Runtime.evaluate", {"expression": js, "returnByValue": True},
                    session=session)
    return res["result"].get("value")


def test_offline_and_quiet(opened: tuple[Pipe, str]) -> None:
    pipe, session = opened
    _eval(pipe, session, "1")  # drain the events of the load
    urls = [e["params"]["request"]["url"] for e in pipe.events
            if e.get("method") == "Network.requestWillBeSent"]
    assert len(urls) == 1 and urls[0].endswith("trend.html")
    bad = [e for e in pipe.events if e.get("method") in ("Runtime.exceptionThrown",
                                                        "Runtime.consoleAPICalled")]
    bad += [e for e in pipe.events if e.get("method") == "Log.entryAdded"
            and e["params"]["entry"]["level"] in ("error", "warning")]
    assert not bad, bad


def test_every_chart_laid_out_with_a_marker_per_run(opened: tuple[Pipe, str]) -> None:
    pipe, session = opened
    charts = _eval(pipe, session, """
        Array.from(document.querySelectorAll('svg.chart')).map(s => {
            const r = s.getBoundingClientRect();
            const dots = Array.from(s.querySelectorAll('circle.run')).map(c => {
                const b = c.getBoundingClientRect();
                return [b.width, b.left >= r.left && b.right <= r.right];
            });
            return [s.id, r.width, r.height, dots];
        })""")
    assert len(charts) == 2 * 3  # iops and the hostile metric, three points each
    for chart_id, w, h, dots in charts:
        assert w > 300 and h > 150, chart_id
        assert len(dots) == RUNS, chart_id
        assert all(width > 0 and inside for width, inside in dots), (chart_id, dots)
    widest = _eval(pipe, session, "document.documentElement.scrollWidth")
    assert widest <= 1400  # no horizontal scrolling at 1400 px


def test_variants_are_separate_series_and_set_runs_hollow(opened: tuple[Pipe, str]) -> None:
    pipe, session = opened
    found = _eval(pipe, session, """
        (() => {
          const s = document.getElementById('trend-chart-1');
          const lines = Array.from(s.querySelectorAll('polyline.series'))
              .map(p => [p.dataset.variant, p.points.numberOfItems,
                         getComputedStyle(p).stroke]);
          const hollow = Array.from(s.querySelectorAll('circle.run'))
              .filter(c => c.getAttribute('fill') === '#fff').map(c => c.dataset.run);
          return [lines, hollow];
        })()""")
    lines, hollow = found
    assert [(v, n) for v, n, _ in lines] == [("A", RUNS - 2)]  # B and C: one run each
    assert hollow == ["20270009-020000-00000008"]
    legend = _eval(pipe, session, """
        Array.from(document.querySelectorAll('#variants tbody tr'))
            .map(r => r.cells[0].innerText.trim())""")
    assert legend == ["A", "B", "C"]


def test_hostile_names_are_text(opened: tuple[Pipe, str]) -> None:
    pipe, session = opened
    assert _eval(pipe, session, "document.scripts.length") == 0
    assert _eval(pipe, session, "document.querySelectorAll('b, img, iframe').length") == 0
    text = _eval(pipe, session, "document.body.innerText")
    assert HOSTILE in text and 'sim"<b>x</b>' in text
