"""``aa:`` — an A/A test of the scenario: runs back to back in one lab to measure its
run-to-run noise (vbench/engine/aa.py; docs/nightly.md)."""

from __future__ import annotations

from pydantic import Field

from vbench.config.types import Strict

DEFAULT_AA_RUNS = 5


class AaSpec(Strict):
    """An A/A test: `vbench run` makes `runs` runs of the scenario back to back.

    Their run-to-run noise per metric and point is stored with the lab fingerprint and
    becomes the floor of the minimum effect of regression checks and change points."""

    runs: int = Field(DEFAULT_AA_RUNS, ge=3, le=100, description="runs back to back (at "
                      "least 3: a spread judged from two runs is no measurement)")
