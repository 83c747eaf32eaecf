"""Every mistake a ``--set`` makes is reported at that --set (issue 23, item 6): the
issue's `--set 'factors.concurrency=[1,20]'` over a Content Library study (out of range
for the driver, whether the file's factor is a list or `{levels: …}`), and an error of a
whole section that a --set changed inside it (`--set search.max=-5`: min must be below
max), which was reported at the section's line in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_scenario, set_label
from vbench.engine.plan import build_plan
from vbench.errors import ConfigValidationError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _issues(path: Path, *sets: str) -> list[str]:
    with pytest.raises(ConfigValidationError) as exc:
        build_plan(load_scenario(path, list(sets)))
    return [str(i) for i in exc.value.issues]


@pytest.mark.parametrize("long_form", [False, True])
def test_an_out_of_range_factor_level_from_a_set_is_located_at_it(
    tmp_path: Path, long_form: bool
) -> None:
    text = (EXAMPLES / "content-library-sim.yaml").read_text()
    if long_form:
        text = text.replace("  concurrency: [1, 3]", "  concurrency: {levels: [1, 3]}")
    path = tmp_path / "cl-study.yaml"
    path.write_text(text)
    given = "factors.concurrency=[1,20]"
    (issue,) = _issues(path, given)
    assert issue == (f"{set_label(given)}: workload.params.concurrency: out of range: got 20 "
                     "(expected a value less than or equal to 10)")


def test_a_section_error_a_set_caused_is_located_at_the_set() -> None:
    given = "search.max=-5"
    (issue,) = _issues(EXAMPLES / "fio-findmax-local.yaml", given)
    assert issue == f"{set_label(given)}: search: min (50) must be below max (-5)"


def test_a_section_error_of_the_file_stays_at_its_line_beside_a_set(tmp_path: Path) -> None:
    text = (EXAMPLES / "fio-findmax-local.yaml").read_text().replace("max: 1600", "max: 40")
    path = tmp_path / "fm.yaml"
    path.write_text(text)
    (issue,) = _issues(path, "repeat=1")
    assert issue.startswith(f"{path}:") and "min (50) must be below max (40)" in issue
