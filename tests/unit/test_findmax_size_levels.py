"""A find-max over a size (issue 23, item 7): `bs: 4k..1m` is searched in the driver's
own units (levels written as 4k, 8k… to the parameter), a bound that is not a number
says the searched factor must be numeric at its line, and bounds are printed as given
(4k..1m; 4096..1048576, never 1.04858e+06)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vbench.cli.run_cmds import _search_text
from vbench.config.levels import search_level, size_text
from vbench.config.load import load_scenario
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fio-findmax-local.yaml"


def _scenario(tmp: Path, **search: object) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["workload"]["params"].pop("bs")
    doc["search"] = {**doc["search"], "factor": "bs", **search}
    doc["search"].pop("step")
    path = tmp / "bs.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_search_over_block_sizes_takes_the_drivers_units(tmp_path: Path) -> None:
    plan = build_plan(load_scenario(_scenario(tmp_path, min="4k", max="1m", step="4k")))
    assert plan.scenario.search is not None and plan.scenario.search.sizes
    assert plan.points[0].params["bs"] == "4k"  # fio's own notation, a string as it takes
    assert plan.points[0].labels["bs"] == "4096"
    assert _search_text(plan).startswith("find-max over bs in 4k..1m, 1 search ")


def test_whole_number_bounds_print_whole(tmp_path: Path) -> None:
    path = _scenario(tmp_path, min=4096, max=1048576, path="workload.params.rate_iops")
    doc = yaml.safe_load(path.read_text())
    doc["workload"]["params"]["bs"] = "4k"
    doc["search"]["factor"] = "rate_iops"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    text = _search_text(build_plan(load_scenario(path)))
    assert text.startswith("find-max over rate_iops in 4096..1048576, "), text


def test_a_bound_that_is_no_number_says_the_factor_must_be_numeric(tmp_path: Path) -> None:
    path = _scenario(tmp_path, min="fast", max="1m")
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(path))
    (issue,) = [str(i) for i in exc.value.issues]
    line = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if "min: fast" in ln)
    assert issue.startswith(f"{path}:{line}:"), issue
    assert "search.min: the searched factor must be numeric: expected a number or a size" in issue


@pytest.mark.parametrize(("given", "number", "text"), [
    ("4k", 4096, "4k"), ("1m", 1 << 20, "1m"), ("64KiB", 65536, "64k"), ("1.5k", 1536, "1536"),
    ("2g", 2 << 30, "2g"), (4096, 4096, "4k"), ("512", 512, "512"),
])
def test_size_levels_read_and_print_back(given: object, number: int, text: str) -> None:
    assert search_level(given) == number
    assert size_text(number) == text


def test_a_stored_size_search_reads_back_as_sizes_and_answers_in_them() -> None:
    from types import SimpleNamespace

    from vbench.analysis.findmax_search import FindMaxReport
    from vbench.config.findmax import SearchSpec

    spec = SearchSpec.model_validate({"factor": "bs", "min": "4k", "max": "1m"})
    stored = spec.model_dump(mode="json", exclude_none=True)  # as a run stores it
    assert (stored["min"], stored["max"]) == ("4k", "1m")
    assert SearchSpec.model_validate(stored).sizes
    shown = SimpleNamespace(sizes=True, integer=True)
    assert FindMaxReport.fmt(shown, 65536.0) == "64k"  # type: ignore[arg-type]
    assert FindMaxReport.fmt(SimpleNamespace(sizes=False, integer=True),  # type: ignore[arg-type]
                             1048576.0) == "1048576"
