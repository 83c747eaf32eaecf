"""A mistake that a ``--set`` makes is reported at that ``--set``, not in the scenario
file (issue 28, item 6): also when the --set creates the parent of the wrong key, or a
factor whose level then writes a wrong path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_config_limits import QUICKSTART
from vbench.config.load import load_scenario, set_label
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError


def issues_with(*sets: str) -> list[str]:
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(QUICKSTART, list(sets)))
    return [str(i) for i in exc.value.issues]


@pytest.mark.parametrize(("given", "where"), [
    ("nope.path=1", "nope: unknown key 'nope'"),
    ("report.nope.x=3", "report.nope: unknown key 'nope'"),
    ("factors.new.levels=[1]", "workload.params.new: unknown key 'new'"),
    ("factors.new={levels: [{label: a, set: {workload.params.zz: 1}}]}",
     "workload.params.zz: unknown key 'zz'"),
    ("factors.new={path: workload.params.q, levels: [1]}",
     "workload.params.q: unknown key 'q'"),
])
def test_an_error_a_set_makes_is_located_at_that_set(given: str, where: str) -> None:
    (issue,) = issues_with(given)
    assert issue.startswith(f"{set_label(given)}: {where}"), issue


def test_an_error_of_the_file_stays_at_its_line_beside_a_set(tmp_path: Path) -> None:
    text = QUICKSTART.read_text().replace("rwmixread: 70", "rwmixreed: 70")
    (tmp_path / "s.yaml").write_text(text)
    line = text.splitlines().index("    rwmixreed: 70") + 1
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(tmp_path / "s.yaml", ["report.extra.x=1", "repeat=1"]))
    (issue,) = exc.value.issues
    assert str(issue).startswith("--set report.extra.x=1: report.extra: unknown key 'extra'")
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(tmp_path / "s.yaml", ["factors.new.levels=[1]"]))
    shown = [str(i).replace(str(tmp_path / "s.yaml"), "s.yaml") for i in exc.value.issues]
    assert shown[0].startswith(f"s.yaml:{line}:5: workload.params.rwmixreed: unknown key"), shown
