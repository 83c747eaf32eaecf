"""`vbench site DIR`: a static, offline site of the store for reviewers.

``DIR/index.html`` lists every scenario with its latest run's verdict; each scenario has a
trend page (``scenarios/<slug>.html``: the trend charts of `vbench report --history`, its
change points and acknowledgements marked on them and listed, each run linked to its
report); each run has its report (``runs/<run id>/report.html``, as `vbench report` writes
it, with a link back). Every link is relative and nothing is loaded from a network, so the
folder can be copied to a file share and browsed there. Writing it again only renders the
reports of runs that are new, were still running or ended since (a resumed run), and each
scenario's newest (``fresh`` renders all).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from vbench.report.history_watch import change_notes
from vbench.report.trend import ChangeMark, TrendExtras

if TYPE_CHECKING:
    from vbench.analysis.history import History
    from vbench.analysis.nightly import SeriesChange
    from vbench.results.store import RunRow, Store

FINAL = ("ok", "failed", "interrupted")  # a run in another status may still change
Say = Callable[[str], None]


@dataclass(frozen=True)
class ScenarioPage:
    """One scenario as the index lists it."""

    name: str
    href: str  # its trend page, relative to the site's root
    runs: int
    latest: str  # the newest run's id
    latest_href: str
    latest_started: float
    latest_status: str
    verdict_status: str  # the newest run's verdict ("" when it has none)
    verdict_text: str
    labs: tuple[str, ...]
    changes: int  # change points in its history
    open_regressions: int  # regressions nobody has acknowledged


@dataclass(frozen=True)
class Site:
    root: Path
    scenarios: tuple[ScenarioPage, ...]
    reports_written: int
    reports_kept: int


def slug(name: str) -> str:
    """A file name for a scenario: readable, and apart from every other name."""
    plain = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "scenario"
    return f"{plain}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"


def run_path(run_id: str) -> str:
    """A run's report, relative to the site's root (a run id is a safe name; anything
    else is made one)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", run_id).lstrip(".") or "run"
    return f"runs/{safe}/report.html"


def write_site(store: Store, root: Path, limit: int = 30, fresh: bool = False,
               say: Say | None = None) -> Site:
    """The site of every scenario in ``store`` (its newest ``limit`` runs each) in
    ``root``."""
    rows: dict[str, list[RunRow]] = {}
    for row in store.list_runs():  # newest first
        rows.setdefault(row.scenario_name, []).append(row)
    root.mkdir(parents=True, exist_ok=True)
    pages, written, kept = [], 0, 0
    for name in sorted(rows):
        page, n_written = _scenario(store, root, name, rows[name], limit, fresh)
        pages.append(page)
        written += n_written
        kept += page.runs - n_written
        if say is not None:
            say(f"{name}: {page.runs} run{'s' if page.runs != 1 else ''}, "
                f"{n_written} report{'s' if n_written != 1 else ''} written")
    (root / "index.html").write_text(render_index(pages), encoding="utf-8")
    return Site(root, tuple(pages), written, kept)


def _scenario(store: Store, root: Path, name: str, every: Sequence[RunRow], limit: int,
              fresh: bool) -> tuple[ScenarioPage, int]:
    """The scenario's page and its runs' reports: its newest ``limit`` runs, and older
    ones its trend charts show (they take the newest ``limit`` completed runs)."""
    from vbench.analysis.history import load_history

    hist = load_history(store, name, (), limit=limit)
    charted = {r.run_id for r in hist.runs}
    runs = [r for i, r in enumerate(every) if i < limit or r.run_id in charted]
    written = 0
    verdict = ("", "")
    for i, row in enumerate(runs):
        path = root / run_path(row.run_id)
        if i == 0 or fresh or row.status not in FINAL or _stale(path, row):
            verdict_i = _write_report(store, row, path)
            written += 1
            if i == 0:
                verdict = verdict_i
    changes = _changes(store, hist)
    href = f"scenarios/{slug(name)}.html"
    (root / href).parent.mkdir(parents=True, exist_ok=True)
    (root / href).write_text(render_scenario(hist, changes, runs), encoding="utf-8")
    latest = runs[0]
    page = ScenarioPage(
        name, href, len(runs), latest.run_id, run_path(latest.run_id), latest.started,
        latest.status, verdict[0], verdict[1],
        tuple(sorted({str((r.lab or {}).get("name") or "?") for r in runs})), len(changes),
        sum(1 for c in changes if c.regression and c.ack is None))
    return page, written


def _stamp(row: RunRow) -> str:
    """What a report was rendered from, in its first line: a run resumed since (same id)
    has ended again, with another status or end."""
    return f"<!-- vbench site: {row.status} {row.ended!r} -->"


def _stale(report: Path, row: RunRow) -> bool:
    """The report is missing, or was rendered before the run ended as it has now."""
    try:
        with report.open(encoding="utf-8") as f:
            return _stamp(row) not in f.readline()
    except (FileNotFoundError, UnicodeDecodeError):
        return True


def _write_report(store: Store, row: RunRow, path: Path) -> tuple[str, str]:
    """The run's report at ``path`` (with a way back to the index); its verdict's status
    and first line."""
    from vbench.report.build import report_data_of
    from vbench.report.html import render_html
    from vbench.results.stored import StoredRun

    data = report_data_of(StoredRun.load(store, row.run_id))
    html = render_html(data)
    nav = ('<nav class="site"><a href="../../index.html">all scenarios</a></nav>')
    html = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav, html, count=1)
    html = html.replace("\n", f"{_stamp(row)}\n", 1)  # the DOCTYPE's line
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    v = data.verdicted()
    return v.status, (v.answers[0].text if v.answers else "")


def _changes(store: Store, hist: History) -> tuple[SeriesChange, ...]:
    """The change points of the history with their triage (vbench/analysis/nightly.py)."""
    if not hist.runs:
        return ()
    from vbench.analysis.nightly import find_changes

    return find_changes(store, hist)


# ------------------------------------------------------------------ pages


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;
max-width:1400px;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.sub{color:#555}
.pass,.answered,.ok{color:#1a7f37}.fail,.failed{color:#b42318;font-weight:bold}
"""


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def render_index(pages: Sequence[ScenarioPage]) -> str:
    rows = []
    for p in pages:
        open_ = (f'<td class="fail">{p.open_regressions}</td>' if p.open_regressions
                 else "<td>0</td>")
        rows.append(
            f'<tr class="scenario"><td><a href="{escape(p.href)}">{escape(p.name)}</a></td>'
            f"<td>{p.runs}</td><td>{escape(', '.join(p.labs))}</td>"
            f'<td><a href="{escape(p.latest_href)}"><code>{escape(p.latest)}</code></a><br>'
            f"{escape(_utc(p.latest_started))}</td>"
            f'<td class="{escape(p.latest_status)}">{escape(p.latest_status)}</td>'
            f'<td class="verdict"><span class="{escape(p.verdict_status)}">'
            f"{escape(p.verdict_status or '—')}</span> {escape(p.verdict_text)}</td>"
            f"<td>{p.changes}</td>{open_}</tr>")
    body = ("<h1>vbench results</h1>"
            f'<p class="sub">{len(pages)} scenario{"s" if len(pages) != 1 else ""}; '
            f"written {escape(_utc(time.time()))}.</p>"
            '<table id="scenarios"><thead><tr><th>scenario</th><th>runs</th><th>labs</th>'
            "<th>latest run</th><th>status</th><th>latest verdict</th>"
            "<th>change points</th><th>open regressions</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")
    return _page("vbench results", body)


def _page(title: str, body: str) -> str:
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"{body}</body></html>\n")


def render_scenario(hist: History, changes: Sequence[SeriesChange],
                    runs: Sequence[RunRow] = ()) -> str:
    """The scenario's trend page: the trend charts with the change points marked, the
    changes and their triage listed, every run (failed and interrupted ones too, which
    the charts leave out) linked to its report."""
    from vbench.report.trend import render_trend

    marks = tuple(_mark(hist, c) for c in changes)
    extras = TrendExtras(
        header='<nav><a href="../index.html">all scenarios</a></nav>',
        run_href=lambda run_id: "../" + run_path(run_id),
        marks=tuple(m for m in marks if m is not None),
        sections=_changes_section(changes) + _all_runs_section(runs))
    return render_trend(hist, ("the newest runs, completed only",), extras)


def _mark(hist: History, c: SeriesChange) -> ChangeMark | None:
    started = {r.run_id: r.started for r in hist.runs}
    if c.run_before not in started or c.run_id not in started:
        return None
    ack = f"; acknowledged by {c.ack.who}: {c.ack.why}" if c.ack is not None else ""
    return ChangeMark(c.metric, tuple(sorted(c.labels.items())), started[c.run_before],
                      started[c.run_id], c.text() + ack, c.ack is not None)


def _all_runs_section(runs: Sequence[RunRow]) -> str:
    if not runs:
        return ""
    rows = "".join(
        f'<tr><td><a href="../{escape(run_path(r.run_id))}"><code>{escape(r.run_id)}</code>'
        f"</a></td><td>{escape(_utc(r.started))}</td>"
        f'<td class="{escape(r.status)}">{escape(r.status)}</td>'
        f"<td>{escape(str((r.lab or {}).get('name') or '?'))}</td>"
        f"<td>{escape(', '.join(r.tags) or '—')}</td></tr>" for r in runs)
    return ('<section id="all-runs"><h2>Every run and its report</h2><table><thead><tr>'
            "<th>run</th><th>started</th><th>status</th><th>lab</th><th>tags</th></tr>"
            f"</thead><tbody>{rows}</tbody></table></section>")


def _changes_section(changes: Sequence[SeriesChange]) -> str:
    if not changes:
        return ('<section id="changes"><h2>Change points</h2><p class="note">No change '
                "point in these runs.</p></section>")
    rows = []
    for c in changes:
        state = (f"acknowledged by {c.ack.who} ({_utc(c.ack.at)}): {c.ack.why}"
                 if c.ack is not None else c.state)
        # a night either side with a disturbed trial: maybe a noisy neighbour, not a step
        state = ". ".join([state, *(n["text"] for n in change_notes(c))])
        testbed = "; ".join(f"{d.key}: {d.a or 'absent'} → {d.b or 'absent'}"
                            for d in c.testbed) or "—"
        rows.append(
            f'<tr class="change {"acknowledged" if c.ack else "open"}">'
            f"<td><code>{escape(c.change_id)}</code></td><td>{escape(c.text())}</td>"
            f'<td><a href="../{escape(run_path(c.run_id))}">{escape(c.run_id)}</a></td>'
            f"<td>{escape(c.lab)}</td><td>{escape(state)}</td><td>{escape(testbed)}</td></tr>")
    return ('<section id="changes"><h2>Change points</h2><table><thead><tr><th>change</th>'
            "<th>what moved</th><th>first run after</th><th>lab</th><th>triage</th>"
            "<th>testbed differences</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></section>")
