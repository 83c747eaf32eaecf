"""The JSON of `ls`, `run` and `history` names a run's scenario with one key,
``scenario_name`` (as the store does); ``scenario`` stays in `run`/`history` as an alias."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.analysis_runs import add_run, scenario_doc
from vbench.cli import cli
from vbench.report.build import run_summary_json
from vbench.results.store import Store


def test_ls_run_and_history_json_share_the_scenario_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    with Store.open(url, tmp_path) as store:
        rid = add_run(store, "20270101-000000-aaaa", [({}, {"ops": [1.0, 2.0, 3.0]})],
                      scenario=scenario_doc("keyed"))
        run_doc = run_summary_json(store, rid)
    ls = CliRunner().invoke(cli, ["ls", "--json", "--store", url])
    assert ls.exit_code == 0, ls.output
    hist = CliRunner().invoke(cli, ["history", "keyed", "--json", "--store", url])
    assert hist.exit_code == 0, hist.output
    ls_doc, hist_doc = json.loads(ls.output)[0], json.loads(hist.output)
    assert ls_doc["scenario_name"] == run_doc["scenario_name"] == hist_doc["scenario_name"]
    assert run_doc["scenario_name"] == "keyed"
    assert run_doc["scenario"] == hist_doc["scenario"] == "keyed"  # the documented alias
