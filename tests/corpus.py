"""The shared corpus of real output files (../shared/corpus beside the project).

It is not part of the project: tests read it where it exists. Every test that needs it
asks through :func:`need`, the one place that skips (saying which path is missing) when
the project is checked out on its own; in the lab and in CI the corpus is present and
nothing is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def need(path: Path) -> Path:
    """``path`` (a corpus file or folder), or skip the test when it is absent."""
    if not path.exists():
        pytest.skip(f"{path} is not present (the shared corpus sits beside the project)")
    return path
