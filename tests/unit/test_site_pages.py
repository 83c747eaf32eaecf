"""`vbench site`'s pages as written from a real SQLite store (vbench/report/site.py): what a
reviewer reaches from them. The browsing itself is tests/integration/test_site_chromium.py."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.report.site import run_path, slug, write_site
from vbench.results.store import Store


def test_a_scenario_whose_runs_all_failed_still_links_each_runs_report(tmp_path: Path) -> None:
    # A new nightly failing from its first night has no completed run for the trend
    # charts; its page said only "No stored run matches" and linked no report.
    with Store.open(f"sqlite:///{tmp_path}/t.db", tmp_path) as store:
        for night in range(2):
            add_run(store, f"20270{night + 1}01-020000-0000000{night}",
                    [({}, {"ops": [1.0]})], scenario=scenario_doc("fresh"),
                    started=T0 + night * 86400, status="failed", failed=[(0, 0)])
        write_site(store, tmp_path / "site")
    page = (tmp_path / "site" / "scenarios" / f"{slug('fresh')}.html").read_text()
    for night in range(2):
        run_id = f"20270{night + 1}01-020000-0000000{night}"
        assert f'href="../{run_path(run_id)}"' in page
        assert (tmp_path / "site" / run_path(run_id)).is_file()


def test_a_run_resumed_since_the_last_write_gets_its_report_again(tmp_path: Path) -> None:
    # `vbench run --resume` keeps the run id: an interrupted night resumed to ok kept its
    # 'interrupted' report on the site (only new, unfinished and newest runs were redone).
    site, days_ago = tmp_path / "site", time.time() - 3 * 86400  # both ended before now
    with Store.open(f"sqlite:///{tmp_path}/t.db", tmp_path) as store:
        night1 = add_run(store, "20270101-020000-00000001", [({}, {"ops": [1.0, 1.1]})],
                         scenario=scenario_doc("nightly"), status="interrupted",
                         started=days_ago)
        add_run(store, "20270102-020000-00000002", [({}, {"ops": [1.0, 1.1]})],
                scenario=scenario_doc("nightly"), started=days_ago + 86400)
        assert write_site(store, site).reports_written == 2
        assert write_site(store, site).reports_written == 1  # the newest only
        store.finish_run(night1, "ok", time.time())  # resumed, and ended again just now
        assert write_site(store, site).reports_written == 2


def test_every_run_a_trend_page_links_has_its_report(tmp_path: Path) -> None:
    # The trend charts take the newest --limit *completed* runs, the reports were written
    # for the newest --limit runs of any status: with a failed night among them, the
    # oldest charted run was linked and its report missing (a broken link on the share).
    with Store.open(f"sqlite:///{tmp_path}/t.db", tmp_path) as store:
        for night, status in enumerate(("ok", "failed", "ok")):
            add_run(store, f"2027010{night + 1}-020000-0000000{night}",
                    [({}, {"ops": [1.0, 1.1]})], scenario=scenario_doc("nightly"),
                    started=T0 + night * 86400, status=status)
        write_site(store, tmp_path / "site", limit=2)
    site = tmp_path / "site"
    page = (site / "scenarios" / f"{slug('nightly')}.html").read_text()
    linked = re.findall(r'href="\.\./(runs/[^"]+)"', page)
    assert "runs/20270101-020000-00000000/report.html" in linked  # charted, oldest
    for href in linked:
        assert (site / href).is_file(), href
