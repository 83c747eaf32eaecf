"""A find-max over a block size on a real fio guest (issue 23, item 7): `bs: 4k..64k`
writes each level to fio as a size (`8k`), and the answer says the bracket in sizes.
At a fixed 100 IO/s the bandwidth is 100 × bs, so a 1 MiB/s limit passes 8k (0.78 MiB/s)
and fails 16k (1.56 MiB/s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, write_lab

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

EXAMPLE = Path(__file__).parents[2] / "examples" / "fio-findmax-local.yaml"


def test_a_block_size_search_runs_fio_at_sizes_and_answers_in_sizes(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["workload"]["params"].pop("bs")
    doc["workload"]["params"]["rate_iops"] = 100
    doc["qos"] = [{"name": "under 1 MiB/s", "metric": "total_bw", "op": "<=", "threshold": 1}]
    doc["search"] = {"factor": "bs", "min": "4k", "max": "64k", "step": "4k", "trials": 1,
                     "verify_trials": 0, "stop": {"gap": 60, "max_levels": 6}}
    scenario = tmp_path / "bs.yaml"
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    res = vbench("run", str(scenario), "--lab", str(lab), timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "highest pass 8k · lowest fail 16k" in out, out
    run = show(run_id_of(out))
    levels = sorted(int(p["labels"]["bs"]) for p in run["points"])
    assert levels == [4096, 8192, 16384], levels
    # fio was given each level in its own notation, as the scenario wrote the bounds.
    given = set()
    for path in (Path(run["run"]["run_dir"]) / "raw").glob("*/guest1/fio.json"):
        data = json.loads(path.read_text())
        options = {**data.get("global options", {}), **data["jobs"][0].get("job options", {})}
        given.add(options["bs"])
    assert given == {"4k", "8k", "16k"}, given
