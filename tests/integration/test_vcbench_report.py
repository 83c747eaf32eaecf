"""A real vcbench trial on vcsim with a real failure (a name clash made by another
client), stored as the engine stores a trial: the HTML report's Operations section
counts it under its fault type with vCenter's own message."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.analysis_runs import T0, scenario_doc
from tests.integration import vcbench_harness as vh
from tests.vcsim import VcsimServer
from vbench.report.build import render_run_report
from vbench.results.records import PhaseTimes, RunInfo, TrialResult
from vbench.results.store import Store
from vbench.vsphere.inventory import Inventory
from vbench.vsphere.oppool import create_pool, find_template, resolve_site

Factory = Callable[..., VcsimServer]


@pytest.fixture
def h(vcsim_factory: Factory, tmp_path: Path) -> Iterator[vh.Harness]:
    yield from vh.fixture_harness({"vc1": vcsim_factory(datastores=2)}, tmp_path)


def test_a_real_name_clash_shows_in_the_failures_table_with_its_message(
    h: vh.Harness, tmp_path: Path
) -> None:
    session = h.sessions.get("vc1")
    inv = Inventory.load(session)
    clash = f"vb-{h.run_id}-vcb1.1-s0-1"  # the name session 0's first clone asks for
    create_pool(
        session, h.watcher("vc1"), resolve_site(inv, "vc1", None),
        vh.Journal(h.run_dir / "other.jsonl"), "other",
        find_template(inv, None, vh.TEMPLATE), vh.TEMPLATE, [clash],
    )  # fmt: skip
    out = vh.run_trial(h, {"sessions": 1, "mix": {"clone_full": 1, "destroy": 1}}, warmup=0)
    # Stored as the engine stores point 0, trial 1: samples in the store, raw files
    # under <run>/raw/0-1/.
    run_dir = tmp_path / "stored"
    (run_dir / "raw" / "0-1").mkdir(parents=True)
    shutil.copy(out.raw_dir / "window.json", run_dir / "raw" / "0-1" / "window.json")
    store = Store.open(None, tmp_path / "home")
    doc = scenario_doc("vcb", repeat=1, workload={"driver": "vcbench", "roles": {},
                                                  "params": {"sessions": 1}})
    store.create_run(RunInfo(run_id="r1", scenario_name="vcb", started=T0, scenario=doc,
                             run_dir=str(run_dir)))
    store.add_points("r1", [(0, {})])
    store.record_trial("r1", TrialResult(0, 1, "ok", PhaseTimes(T0, T0, T0, T0 + 3, T0 + 3,
                                                                T0 + 4), tuple(out.samples)))
    store.finish_run("r1", "ok", T0 + 5)
    html = render_run_report(store, "r1", tmp_path / "report.html").read_text()
    section = html.split('<section id="operations">', 1)[1].split("</section>", 1)[0]
    section = re.sub(r"<svg.*?</svg>", "", section, flags=re.DOTALL)
    faults = section.split("Failures per fault type", 1)[1]
    row = re.search(r"<tr><td>DuplicateName</td><td class=\"num\">(\d+)</td>"
                    r"<td>clone_full (\d+)</td><td>(.*?)</td></tr>", faults)
    assert row is not None, faults
    assert row.group(1) == row.group(2) == "1"
    assert clash in row.group(3)  # vCenter's message names the clashing VM
    clone = re.search(r"<tr class=\"failed\"><td>clone_full</td>(.*?)</tr>", section)
    assert clone is not None and clone.group(1).endswith('<td class="num">1</td>'), section
