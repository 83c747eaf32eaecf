"""The suite's tiers are its folders: `make test` runs tests/unit, tests/integration and
tests/e2e (in that order) and `make test-<tier>` one of them, so a test file elsewhere would
never run in CI, and a test without its tier's mark would escape `pytest -m <tier>`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import seed

ROOT = Path(__file__).resolve().parents[2]
TIERS = ("unit", "integration", "e2e")


def test_every_test_file_lives_in_a_tier_folder() -> None:
    stray = [p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
             if p.relative_to(ROOT / "tests").parts[0] not in TIERS]  # fmt: skip
    assert stray == []


def test_make_test_runs_every_tier_and_each_alone() -> None:
    makefile = (ROOT / "Makefile").read_text()
    tiers = re.search(r"^TIERS := (.*)$", makefile, re.M)
    assert tiers and tiers.group(1).split() == [f"tests/{t}" for t in TIERS]
    # the whole suite, and the 25 slowest tests named at its end
    assert re.search(r"^test:.*\n(\t.*\n)*\t\$\(PYTEST\) --durations=25 \$\(TIERS\)$", makefile,
                     re.M)  # fmt: skip
    for tier in TIERS:
        assert re.search(rf"^test-{tier}:.*\n\t\$\(PYTEST\).* tests/{tier}$", makefile, re.M), tier


def test_a_test_carries_the_mark_of_its_folder(request: pytest.FixtureRequest) -> None:
    marks = {m.name for m in request.node.iter_markers()}
    assert "unit" in marks and not marks & {"integration", "e2e"}


def test_samples_are_drawn_from_the_printed_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two draws for one test under one seed agree (a run repeats), and the line pytest
    # prints names the seed that repeats it.
    assert seed.rng("x").random() == seed.rng("x").random()
    assert seed.rng("x").random() != seed.rng("y").random()
    assert f"VBENCH_TEST_SEED={seed.SEED}" in seed.how_to_repeat()
    monkeypatch.setenv("VBENCH_TEST_EVERY_CASE", "1")
    assert seed.every_case()
    monkeypatch.setenv("VBENCH_TEST_EVERY_CASE", "0")
    assert not seed.every_case()
