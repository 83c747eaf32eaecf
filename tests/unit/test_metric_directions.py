"""Every metric of every catalogue declares which way is better, and nothing ranks a
metric without one (issue 22: CloudStone's load-generator CPU was ranked "higher is
better", a guess from its name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vbench.analysis.catalogue import BETTER, Metric, metric
from vbench.analysis.direction import Directions, directions_of, from_stored, to_stored
from vbench.analysis.figures import better
from vbench.collectors.base import collector_kinds, get_collector
from vbench.collectors.derived import METRICS as COLLECTOR_DERIVED
from vbench.workloads.base import Workload, driver_names, get_driver

# Parameters for the drivers whose catalogue follows their parameters and that have
# required ones (a new such driver without an entry here fails the walk).
_PARAMS: dict[str, dict[str, Any]] = {
    "content_library": {"steps": [{"op": "create_library", "library": "pub"},
                                  {"op": "import", "library": "pub", "label": "import"}]},
    "vcbench": {"template": "t"},
}


def _driver_catalogue(name: str) -> tuple[Metric, ...]:
    cls = get_driver(name)
    overridden = cls.metric_catalogue.__func__ is not Workload.metric_catalogue.__func__  # type: ignore[attr-defined]
    if not overridden:
        return cls.metrics or ()
    params = cls.Params.model_validate(_PARAMS.get(name, {}))
    return cls.metric_catalogue(params) or ()


def _every_catalogue() -> list[tuple[str, Metric]]:
    out = [(f"driver {n}", m) for n in driver_names() for m in _driver_catalogue(n)]
    for kind in collector_kinds():
        cls = get_collector(kind)
        declared = cls.metric_catalogue(cls.Options.model_validate({})) or ()
        out += [(f"collector {kind}", m) for m in declared]
    return out + [("collectors' derived figures", m) for m in COLLECTOR_DERIVED]


def test_every_catalogue_entry_declares_a_direction() -> None:
    entries = _every_catalogue()
    assert len({owner for owner, _ in entries}) >= 12  # every driver and collector walked
    missing = [f"{owner}: {m.pattern} ({m.better!r})" for owner, m in entries
               if m.better not in BETTER]
    assert missing == []


def test_a_catalogue_entry_without_a_known_direction_is_refused() -> None:
    with pytest.raises(ValueError, match="better must be one of higher, lower, none"):
        metric("x_rate", "1/s", "more")  # type: ignore[arg-type]


def test_cloudstone_load_generator_cpu_is_not_ranked() -> None:
    from vbench.workloads.cloudstone.metrics import METRICS

    stored = {"scenario": {}, "metrics": to_stored(METRICS)}
    d = directions_of(stored)
    # Before: the name guess made the load generator's CPU "higher is better".
    assert better("client_cpu", "fraction", d) == "none"
    assert not d.ranks("client_cpu")
    assert d.of("rt_p90", "ms") == "lower" and d.of("ops_per_sec", "ops/s") == "higher"
    assert d.of("mix") == "none" and d.of("mix_outside_tolerance") == "lower"


def test_a_metric_outside_the_stored_catalogue_has_no_direction() -> None:
    d = directions_of({"scenario": {}, "metrics": to_stored([metric("iops", "IO/s", "higher")])})
    assert d.of("queue_wait_time", "s") == "none"  # not guessed from its name or unit


def test_the_scenario_says_last_and_derived_figures_follow_their_source() -> None:
    scenario = {
        "report": {"better": {"client_cpu": "lower"}},
        "derived": [{"name": "speedup", "kind": "speedup", "metric": "ops_per_sec"},
                    {"name": "ratio1", "kind": "ratio", "expr": "a / b"},
                    {"name": "cost", "kind": "ratio", "expr": "a / b", "better": "lower"}],
    }
    from vbench.workloads.cloudstone.metrics import METRICS

    d = directions_of({"scenario": scenario, "metrics": to_stored(METRICS)})
    assert d.of("client_cpu") == "lower"
    assert d.of("speedup") == "higher"
    assert d.of("cost") == "lower"
    assert d.of("ratio1") == "none"  # an expression's way is the scenario's to say


def test_runs_stored_before_directions_keep_the_old_guess() -> None:
    d = directions_of({"scenario": {}, "metrics": None})
    assert d.declared is None
    assert (d.of("read_clat_p99", "ms"), d.of("total_iops", "IO/s")) == ("lower", "higher")


def test_stored_catalogue_round_trips() -> None:
    entries = (metric("<dir>_iops", "IO/s", "higher", capped_by=("rate_iops",),
                      dir=("read", "write")),
               metric("x", None, "none"))
    assert from_stored(to_stored(entries)) == entries
    assert isinstance(directions_of({"metrics": to_stored(entries)}), Directions)


def test_the_report_ranks_no_best_point_by_a_metric_without_direction() -> None:
    import pandas as pd

    from vbench.report.data import ReportData, ReportView
    from vbench.report.sections import headline_rows
    from vbench.workloads.cloudstone.metrics import METRICS

    samples = pd.DataFrame([
        {"point": p, "trial": 1, "guest": None, "metric": m, "value": v, "unit": u,
         "source": "cloudstone", "labels": "{}", "window_start": None, "window_end": None}
        for p, (cpu, ops) in enumerate([(0.05, 10.0), (0.09, 20.0)])
        for m, v, u in (("client_cpu", cpu, "fraction"), ("ops_per_sec", ops, "ops/s"))])
    run = {"run_id": "r", "scenario_name": "cs", "status": "ok",
           "metrics": to_stored(METRICS), "scenario": {"repeat": 1}}
    points = [{"point": p, "labels": {"users": str(p + 1)}} for p in (0, 1)]
    trials = [{"point": p, "trial": 1, "status": "ok", "phases": {}} for p in (0, 1)]
    data = ReportData(run, points, trials, samples,
                      headline_metrics=("ops_per_sec", "client_cpu"))
    rows = {r["metric"]: r for r in headline_rows(ReportView(data), directions_of(run), set())}
    assert rows["ops_per_sec"]["best"].startswith("20.00") and \
        rows["ops_per_sec"]["note"] == "higher is better"
    # Before: "9.000 % at users=2", "higher is better" - the load generator's CPU ranked.
    assert rows["client_cpu"]["note"] == "not ranked: no direction of improvement"
    assert rows["client_cpu"]["worst"] == ""


def test_history_ranks_by_the_stored_catalogue(tmp_path: Path) -> None:
    from tests.analysis_runs import T0, add_run, scenario_doc
    from vbench.analysis.history import load_history
    from vbench.results.store import Store
    from vbench.workloads.cloudstone.metrics import METRICS

    sc = scenario_doc("cs", {"users": ["10"]})
    with Store.open(f"sqlite:///{tmp_path}/h.db", tmp_path) as store:
        for day in (1, 2):
            add_run(store, f"2027010{day}-000000-0000000{day}",
                    [({"users": "10"}, {"client_cpu": [0.05 * day], "rt_p90": [12.0]})],
                    scenario=sc, started=T0 + day * 86400, metrics=to_stored(METRICS))
        history = load_history(store, "cs", ["client_cpu", "rt_p90"])
    ways = {s.metric: s.better for s in history.series}
    # Before: client_cpu "higher" (a name guess), so a busier load generator read as better.
    assert ways == {"client_cpu": "none", "rt_p90": "lower"}
