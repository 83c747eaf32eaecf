"""The plugin author's kit (vbench/testing.py) keeps a test's runs to the test: the CLI it
runs uses the test's home, whatever store a developer's shell points at."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.testing import Cli


def test_the_kit_s_cli_never_reaches_the_developer_s_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VBENCH_STORE", "postgresql://someone@prod/vbench")
    monkeypatch.setenv("VBENCH_RESULTS", "/srv/vbench/results")
    res = Cli(tmp_path / "home")("ls", "--json")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"  # the test's own, empty, store
    assert (tmp_path / "home").is_dir() and not Path("/srv/vbench/results").exists()
