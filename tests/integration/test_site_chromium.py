"""`vbench site DIR` opened in a real headless Chromium: the index lists every scenario
with its latest verdict, a scenario's trend page marks its change points (the
acknowledged one apart) and lists their triage, and each run's report opens from its
link and leads back — every page loaded from the folder alone (no request but the file
itself, relative links only) and quiet (no error in the console)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from click.testing import CliRunner

from tests.analysis_runs import T0, add_run, scenario_doc
from tests.conftest import missing_peer
from tests.integration.test_report_chromium import CHROMIUM, Pipe
from vbench.analysis.history import load_history
from vbench.analysis.nightly import find_changes
from vbench.cli import cli
from vbench.results.store import Store

pytestmark = pytest.mark.integration

NIGHTS = 12
HOSTILE = "<b>x</b>\"'"


def _store(tmp: Path) -> str:
    """Two scenarios: nightly (iops at qd=1 drops 30 % from night 8, at qd=8 from night 4;
    the qd=8 change acknowledged) and a one-run scenario with a hostile name."""
    url = f"sqlite:///{tmp}/t.db"
    with Store.open(url, tmp) as store:
        for night in range(NIGHTS):
            sc = scenario_doc("nightly", {"qd": ["1", "8"]}, report={"headline": ["iops"]})
            pts = []
            for qd, drop_at in (("1", 8), ("8", 4)):
                base = 1000.0 * int(qd) * (0.7 if night >= drop_at else 1.0)
                pts.append(({"qd": qd}, {"iops": [base * f for f in (0.99, 1.0, 1.01)]}))
            add_run(store, f"2027{night + 1:04d}-020000-{night:08d}", pts, scenario=sc,
                    started=T0 + night * 86400)
        add_run(store, "20270101-030000-00000099", [({}, {"ops": [5.0, 5.1, 4.9]})],
                scenario=scenario_doc(HOSTILE), started=T0 + 3600)
        add_run(store, "20270013-020000-00000012", [({"qd": "1"}, {"iops": [1.0]})],
                scenario=scenario_doc("nightly", {"qd": ["1"]}), started=T0 + 12.5 * 86400,
                status="failed", failed=[(0, 0)])
        hist = load_history(store, "nightly", (), limit=30)
        [qd8] = [c for c in find_changes(store, hist) if c.labels == {"qd": "8"}]
    res = CliRunner().invoke(cli, ["ack", qd8.change_id, "--why", "ESXi patch, expected",
                                   "--who", "ana", "--store", url])
    assert res.exit_code == 0, res.output
    return url


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pipe, str, Path]]:
    if CHROMIUM is None:
        missing_peer("chromium is not installed (make test installs it)")
    tmp = tmp_path_factory.mktemp("site")
    url = _store(tmp)
    built = tmp / "built"
    res = CliRunner().invoke(cli, ["site", str(built), "--store", url])
    assert res.exit_code == 0, res.output
    assert "(2 scenarios, 14 reports written, 0 kept)" in res.output
    # Copied elsewhere (a file share; a space in its path), every link still leads home.
    root = tmp / "share" / "vbench site"
    root.parent.mkdir()
    built.rename(root)
    pipe = Pipe(tmp / "profile")
    try:
        yield pipe, pipe.new_page(), root
    finally:
        pipe.close()


def _open(pipe: Pipe, session: str, url: str) -> list[str]:
    """Load ``url``; the URLs it requested. Fails on a console error or a failed load."""
    pipe.events.clear()
    pipe.send("Page.navigate", {"url": url}, session=session)
    pipe.wait_for("Page.loadEventFired")
    _eval(pipe, session, "1")  # drain the load's events
    bad = [e for e in pipe.events if e.get("method") in (
        "Runtime.exceptionThrown", "Runtime.consoleAPICalled", "Network.loadingFailed")]
    bad += [e for e in pipe.events if e.get("method") == "Log.entryAdded"
            and e["params"]["entry"]["level"] in ("error", "warning")]
    assert not bad, bad
    return [e["params"]["request"]["url"] for e in pipe.events
            if e.get("method") == "Network.requestWillBeSent"]


def _eval(pipe: Pipe, session: str, js: str) -> Any:
    res = pipe.send("Runtime.evaluate", {"expression": js, "returnByValue": True},
                    session=session)
    return res["result"].get("value")


def _follow(pipe: Pipe, session: str, selector: str, root: Path) -> str:
    """Open the page a link leads to: it must be a file inside the site."""
    href = _eval(pipe, session, f"document.querySelector({selector!r}).href")
    path = Path(unquote(urlparse(href).path))
    assert path.is_file() and root in path.parents, href
    assert _open(pipe, session, href) == [href]
    return href


def test_index_scenario_page_and_report_link_up_offline(
        site: tuple[Pipe, str, Path]) -> None:
    pipe, session, root = site
    index = (root / "index.html").as_uri()
    assert _open(pipe, session, index) == [index]
    rows = _eval(pipe, session, """Array.from(document.querySelectorAll('tr.scenario'))
        .map(r => Array.from(r.cells).map(c => c.innerText.trim()))""")
    assert [r[0] for r in rows] == [HOSTILE, "nightly"]  # the name is text, not markup
    assert _eval(pipe, session, "document.querySelectorAll('b').length") == 0
    nightly = rows[1]
    assert nightly[1] == "13" and nightly[3].startswith("20270013-020000-00000012")
    assert nightly[4] == "failed"  # the newest run, whatever its status
    assert rows[0][5].startswith("ok ops 5.000 ± ")  # its verdict: status and first line
    assert nightly[6:] == ["2", "1"]  # two change points, one not acknowledged

    _follow(pipe, session, "tr.scenario:nth-child(2) a", root)
    marks = _eval(pipe, session, """Array.from(document.querySelectorAll('svg.chart g'))
        .map(g => [g.closest('figure').querySelector('figcaption').innerText.split(';')[0],
                   g.getAttribute('class')])""")
    assert sorted(marks) == [["qd=1", "change"], ["qd=8", "change acknowledged"]]
    triage = dict(_eval(pipe, session, """Array.from(
        document.querySelectorAll('#changes tbody tr'))
        .map(r => [r.className, r.cells[4].innerText])"""))
    assert triage["change open"] == "new"
    assert triage["change acknowledged"].startswith("acknowledged by ana (")
    assert triage["change acknowledged"].endswith("): ESXi patch, expected")

    # The failed night is not on the charts, but its report is reached from the page.
    listed = _eval(pipe, session, """Array.from(document.querySelectorAll('#all-runs tbody tr'))
        .map(r => [r.cells[0].innerText, r.cells[2].innerText])""")
    assert len(listed) == NIGHTS + 1 and listed[0] == ["20270013-020000-00000012", "failed"]
    _follow(pipe, session, "#runs tbody tr a", root)  # the newest completed run's report
    assert _eval(pipe, session, "document.body.innerText").count("20270012-020000-00000011")
    _follow(pipe, session, "nav.site a", root)
    assert _eval(pipe, session, "document.title") == "vbench results"


def test_writing_again_renders_only_what_changed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    with Store.open(url, tmp_path) as store:
        for night in range(3):
            add_run(store, f"2027{night + 1:04d}-020000-{night:08d}",
                    [({}, {"ops": [1.0, 1.1, 0.9]})], started=T0 + night * 86400)
    root = tmp_path / "site"
    first = CliRunner().invoke(cli, ["site", str(root), "--store", url])
    assert "(1 scenario, 3 reports written, 0 kept)" in first.output, first.output
    again = CliRunner().invoke(cli, ["site", str(root), "--store", url])
    # The newest run's report is rendered each time (its verdict feeds the index).
    assert "(1 scenario, 1 report written, 2 kept)" in again.output, again.output
