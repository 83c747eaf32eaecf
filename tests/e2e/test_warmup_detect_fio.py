"""Warm-up found on real fio: a rate-capped fio on a loopback guest settles at once, so
its figure carries no late-warm-up warning, and the report's fio_iops chart marks where
the series settled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, write_lab, write_scenario

pytestmark = pytest.mark.e2e


def test_a_steady_fio_settles_inside_its_warm_up_and_the_chart_marks_it(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    s = write_scenario(tmp_path / "s.yaml", groups=1, steady="30s", warmup="5s", repeat=1,
                       factors="  bs: [4k]\n")
    s.write_text(s.read_text().replace(
        "    direct: false\n",
        "    direct: false\n    rate_iops: 300\n    per_second_logs: true\n"))
    res = vbench("run", str(s), "--lab", str(lab))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    doc = show(run_id_of(res.stdout))
    run_dir = Path(doc["run"]["run_dir"])
    warnings = json.loads((run_dir / "verdict.json").read_text())["warnings"]
    assert not [w for w in warnings if "fio_iops" in w and "settle" in w], warnings
    html = (run_dir / "report.html").read_text()
    assert "Dashed line: the series settled" in html
    assert "settled " in html
