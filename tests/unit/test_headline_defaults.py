"""A driver's default headline holds only what the run's points can produce: a
read-only fio search led with write_clat_mean and write_clat_p99_max, each shown as
"no data" in every output of the run, by construction."""

from __future__ import annotations

from pathlib import Path

import yaml

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.engine.session import headline_of
from vbench.workloads.fio import FioWorkload

ROOT = Path(__file__).resolve().parents[2]


def _headline(tmp_path: Path, params: dict, factors: dict | None = None) -> tuple[str, ...]:
    doc = {"version": 1, "name": "h", "topology": {"storage": {"count": 1}},
           "workload": {"driver": "fio", "params": {"size": "16m", **params}},
           "phases": {"warmup": "0s", "steady": "2s"}, "repeat": 1}
    if factors:
        doc["factors"] = factors
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(doc))
    return headline_of(build_plan(load_scenario(path)))


def test_a_read_only_search_leads_with_no_write_figure() -> None:
    head = headline_of(build_plan(load_scenario(ROOT / "examples" / "fio-findmax-local.yaml")))
    assert head == ("total_iops", "total_bw", "read_clat_mean", "read_clat_p99_max")


def test_write_only_and_mixed_jobs(tmp_path: Path) -> None:
    assert _headline(tmp_path, {"rw": "randwrite"}) == (
        "total_iops", "total_bw", "write_clat_mean", "write_clat_p99_max")
    assert _headline(tmp_path, {"rw": "randrw"}) == FioWorkload.headline_metrics
    # A factor over rw: the union of what its points make, in the driver's order.
    assert _headline(tmp_path, {}, {"rw": ["randread", "randwrite"]}) == (
        FioWorkload.headline_metrics)
