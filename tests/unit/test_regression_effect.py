"""Regression checks use the scenario's minimum effect per metric, and never call a
metric without a direction, or one the QoS caps, a regression (issue 22)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.analysis_runs import T0, add_run, scenario_doc
from vbench.analysis.regression import check_regression
from vbench.analysis.run_analysis import load_figures
from vbench.results.store import Store

GOOD = {"ops": [1000.0, 1004.0, 996.0, 1002.0, 998.0, 1001.0, 999.0, 1000.0]}
WORSE = {"ops": [v * 0.9 for v in GOOD["ops"]]}  # -10 %, significant


def _checks(tmp_path: Path, scenario: dict[str, object],
            metrics: list[dict[str, object]] | None = None) -> dict[str, object]:
    with Store.open(f"sqlite:///{tmp_path}/r.db", tmp_path) as store:
        base = add_run(store, "20270101-020000-00000001", [({"bs": "4k"}, GOOD)],
                       scenario=scenario, started=T0)
        cur = add_run(store, "20270102-020000-00000002", [({"bs": "4k"}, WORSE)],
                      scenario=scenario, started=T0 + 86400)
        fb, fc = load_figures(store, base), load_figures(store, cur)
    if metrics is not None:  # the catalogue the engine stores with the run
        fc = dataclasses.replace(fc, run={**fc.run, "metrics": metrics})
    [check] = check_regression(fc, [fb], ["ops"], min_effect=0.05)
    return {"status": check.status, "message": check.message}


def test_the_scenario_min_effect_of_a_metric_wins(tmp_path: Path) -> None:
    plain = scenario_doc("n", {"bs": ["4k"]})
    assert _checks(tmp_path / "a", plain)["status"] == "regression"
    wide = scenario_doc("n", {"bs": ["4k"]}, report={"min_effect": {"ops": 0.15}})
    assert _checks(tmp_path / "b", wide)["status"] == "ok"  # -10 % within 15 %


def test_a_metric_without_direction_is_never_a_regression(tmp_path: Path) -> None:
    sc = scenario_doc("n", {"bs": ["4k"]})
    stored = [{"pattern": "ops", "unit": "ops/s", "better": "none", "choices": {}}]
    got = _checks(tmp_path, sc, stored)
    assert got["status"] == "ok"
    assert "not judged: no direction of improvement" in str(got["message"])


def test_a_qos_capped_metric_is_never_a_regression(tmp_path: Path) -> None:
    sc = scenario_doc("n", {"bs": ["4k"]}, qos=[{"metric": "ops", "op": "<=", "threshold": 1000}])
    got = _checks(tmp_path, sc)
    assert got["status"] == "ok" and "capped by QoS ops <= 1000" in str(got["message"])
