"""The seed of this test session: one number from which every sampled test draws its cases.

Large matrices (the fuzzed configurations, the interrupt matrix) run a seeded sample of
their cases rather than all of them, and the sample rotates from run to run so that, over
many runs, every case is exercised. The seed is printed in pytest's header and summary;
``VBENCH_TEST_SEED=N`` repeats a run's sample exactly.

It is read at import time because parametrised tests choose their cases at collection.
"""

from __future__ import annotations

import os
import random

ENV = "VBENCH_TEST_SEED"


def _session_seed() -> int:
    given = os.environ.get(ENV, "").strip()
    if given:
        try:
            return int(given)
        except ValueError:
            raise SystemExit(f"{ENV} must be an integer, not {given!r}") from None
    return random.SystemRandom().randrange(1, 1_000_000)


SEED: int = _session_seed()
# pytest-xdist's workers inherit the environment: each collects the same sample as the
# controller (they would each draw their own and refuse to run otherwise).
os.environ[ENV] = str(SEED)


def rng(salt: str) -> random.Random:
    """A generator of its own for one test or matrix: its draws do not depend on which
    other sampled tests are collected or in what order they run."""
    return random.Random(f"{SEED}:{salt}")


def every_case() -> bool:
    """VBENCH_TEST_EVERY_CASE=1: sampled matrices run all their cases (before a release,
    or after a change to what they guard)."""
    return os.environ.get("VBENCH_TEST_EVERY_CASE", "") not in ("", "0")


def how_to_repeat() -> str:
    sampled = "every case of the sampled matrices" if every_case() else "samples"
    return f"vbench test seed: {SEED} (repeat this run's {sampled} with {ENV}={SEED})"
