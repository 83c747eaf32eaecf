"""Factor expansion: cartesian product, zip groups, exclusions, level overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario
from vbench.config.matrix import expand
from vbench.errors import ConfigValidationError

BASE = """\
version: 1
name: m
topology: {g: {count: 1}}
workload: {driver: fio, params: {rw: randread}}
phases: {steady: 10s}
"""


def points(tmp_path: Path, extra: str) -> list[dict[str, str]]:
    p = tmp_path / "s.yaml"
    p.write_text(BASE + extra)
    loaded = load_scenario(p)
    return [dict(pt.labels) for pt in expand(loaded.model, loaded.source)]


def test_no_factors_is_a_single_point(tmp_path: Path) -> None:
    assert points(tmp_path, "") == [{}]


def test_cartesian_product_in_declaration_order(tmp_path: Path) -> None:
    got = points(tmp_path, "factors:\n  bs: [4k, 64k]\n  iodepth: [1, 32]\n")
    assert got == [
        {"bs": "4k", "iodepth": "1"},
        {"bs": "4k", "iodepth": "32"},
        {"bs": "64k", "iodepth": "1"},
        {"bs": "64k", "iodepth": "32"},
    ]


def test_zip_group_varies_together(tmp_path: Path) -> None:
    got = points(
        tmp_path,
        "factors:\n  vms: [1, 2, 4]\n  iodepth: [64, 32, 16]\n  bs: [4k, 8k]\n"
        "zip: [[vms, iodepth]]\n",
    )
    assert len(got) == 6
    assert {(g["vms"], g["iodepth"]) for g in got} == {("1", "64"), ("2", "32"), ("4", "16")}


def test_zip_with_unequal_levels_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError) as exc:
        points(tmp_path, "factors:\n  a: [1, 2]\n  b: [1]\nzip: [[a, b]]\n")
    assert "zip.0: zipped factors must have the same number of levels" in str(exc.value)


def test_exclude_removes_matching_points(tmp_path: Path) -> None:
    got = points(
        tmp_path,
        "factors:\n  bs: [4k, 64k]\n  iodepth: [1, 32]\nexclude:\n  - {bs: 64k, iodepth: 1}\n",
    )
    assert {"bs": "64k", "iodepth": "1"} not in got and len(got) == 3


def test_exclude_unknown_level_is_located(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError) as exc:
        points(tmp_path, "factors:\n  bs: [4k, 64k]\nexclude:\n  - {bs: 8k}\n")
    assert str(exc.value).endswith(
        "s.yaml:9:10: exclude.0.bs: '8k' is not a level of bs (expected one of: 4k, 64k)"
    )


def test_level_value_is_written_to_its_path(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(
        BASE + "factors:\n  mode:\n    levels:\n"
        "      - {label: Native-16S, set: {workload.params.numjobs: 16, repeat: 2}}\n"
        "      - {label: short, value: 5, }\n"
        "    path: phases.steady\n"
    )
    loaded = load_scenario(p)
    pts = expand(loaded.model, loaded.source)
    assert pts[0].labels == {"mode": "Native-16S"}
    assert pts[0].scenario is not None and pts[0].scenario.workload.params["numjobs"] == 16
    assert pts[0].scenario.repeat == 2
    assert pts[1].scenario is not None and pts[1].scenario.phases.steady == 5.0


def test_bad_level_value_is_located_at_the_level(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text(BASE + "factors:\n  steady:\n    path: phases.steady\n    levels: [10s, soon]\n")
    loaded = load_scenario(p)
    with pytest.raises(ConfigValidationError) as exc:
        expand(loaded.model, loaded.source)
    assert "s.yaml:9:19: phases.steady: 'soon' is not a duration" in str(exc.value)


def test_duplicate_level_labels_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError) as exc:
        points(tmp_path, "factors:\n  bs: [4k, 4k]\n")
    assert "factors.bs: level labels must be unique, repeated: 4k" in str(exc.value)
