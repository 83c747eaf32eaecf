"""The QoS table printed at the end of a run says why a check has no verdict (no metric
by that name, a unit that does not convert, no data at the point) instead of a bare
`no data  MISSING`."""

from __future__ import annotations

import json

import pandas as pd

from vbench.analysis.figures import build_figures
from vbench.analysis.qos import evaluate_qos
from vbench.config.scenario import QosCriterion
from vbench.report.textfmt import format_qos


def _figures() -> object:
    rows, trials, points = [], [], []
    for p in (0, 1):
        points.append({"point": p, "labels": {"bs": ("4k", "64k")[p]}})
        for t in (0, 1):
            trials.append({"point": p, "trial": t, "status": "ok"})
            rows.append({"point": p, "trial": t, "guest": None, "metric": "read_clat_p99",
                         "value": 1.5 if p == 0 else None, "unit": "ms", "source": "fio",
                         "labels": "{}"})
            rows.append({"point": p, "trial": t, "guest": None, "metric": "rt_avg",
                         "value": 3.0, "unit": "ms", "source": "x",
                         "labels": json.dumps({"operation": "HomePage"})})
    run = {"run_id": "r", "scenario": {"factors": {"bs": {}}}}
    return build_figures(run, points, trials, pd.DataFrame(rows))


def test_missing_and_error_checks_carry_their_reason_to_the_terminal() -> None:
    crits = [
        QosCriterion(metric="read_lat_p99", op="<=", threshold=5),
        QosCriterion(metric="read_clat_p99", op="<=", threshold=5, unit="msec"),
        QosCriterion(metric="read_clat_p99", op="<=", threshold=5, at={"bs": "64k"}),
        QosCriterion(metric="rt_avg", op="<=", threshold=5, where={"operation": "Login"}),
    ]
    text = format_qos(evaluate_qos(_figures(), crits))  # type: ignore[arg-type]
    lines = text.splitlines()
    assert "no metric" in lines[2] and lines[2].endswith("MISSING")
    assert any("unit mismatch" in ln and ln.endswith("ERROR") for ln in lines)
    assert ("MISSING read_lat_p99 mean ≤ 5: no metric read_lat_p99 in this run; did you "
            "mean read_clat_p99?") in lines
    assert ("ERROR read_clat_p99 mean ≤ 5 msec: unit mismatch: data in ms, threshold in "
            "msec") in lines
    assert ("MISSING read_clat_p99 mean ≤ 5: no data: no successful trial of this point "
            "reported read_clat_p99") in lines
    assert ("MISSING rt_avg [operation=Login] mean ≤ 5: no data: no rt_avg with "
            "operation=Login at this point") in lines
    # One reason line per criterion and reason, not one per point.
    assert sum(ln.startswith("MISSING read_lat_p99") for ln in lines) == 1
