"""A level named in a derived figure's baseline/target or a QoS criterion's `at` may be
written as the factor's levels are: `{guests: 1}`, not only `{guests: "1"}`."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan

SCENARIO = """version: 1
name: levels
topology:
  storage: {count: 1}
workload:
  driver: fio
  params: {rw: randread, size: 8m, ioengine: psync, direct: false}
factors:
  guests: {path: topology.storage.count, levels: [1, 2, 4]}
  fast: {path: workload.params.direct, levels: [true, false]}
  ratio: {path: workload.params.rate_iops, levels: [1000, 1500]}
phases: {warmup: 0s, steady: 1s}
derived:
  - {name: vs_one, kind: normalize, metric: total_iops, baseline: {guests: 1}}
  - {name: up, kind: speedup, metric: total_iops, baseline: {guests: 1, fast: false},
     target: {guests: 4, ratio: 1500}}
qos:
  - {metric: total_iops, op: ">=", threshold: 1, at: {guests: [2, 4], fast: true}}
"""


def test_numeric_and_boolean_levels_need_no_quotes(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    sc = load_scenario(p).model
    assert sc.derived[0].baseline == {"guests": "1"}
    assert sc.derived[1].baseline == {"guests": "1", "fast": "false"}
    assert sc.derived[1].target == {"guests": "4", "ratio": "1500"}
    assert sc.qos[0].at == {"guests": ["2", "4"], "fast": "true"}
    # The same labels as the factor's own levels.
    levels = {f: [lv.label for lv in factor.levels] for f, factor in sc.factors.items()}
    assert "1" in levels["guests"] and "false" in levels["fast"] and "1500" in levels["ratio"]
    assert build_plan(load_scenario(p)).n_trials == 3 * 2 * 2 * 3


def test_a_level_of_another_shape_is_still_refused(tmp_path: Path) -> None:
    from vbench.errors import ConfigValidationError

    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO.replace("baseline: {guests: 1}}", "baseline: {guests: {n: 1}}}"))
    with pytest.raises(ConfigValidationError) as err:
        load_scenario(p)
    assert [i for i in err.value.issues if "derived" in str(i)], err.value.issues


def test_level_text_is_the_levels_label() -> None:
    from vbench.config.scenario import _level_text

    assert [_level_text(v) for v in (1, 1.5, True, "x")] == ["1", "1.5", "true", "x"]
    assert _level_text([2, False]) == ["2", "false"]
