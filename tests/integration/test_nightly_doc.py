"""docs/nightly.md's month of nights, run as written: every command between the
`month:start` and `month:end` marks, in order, in a fresh folder; every output line the
page shows (… stands for lines left out) must come out, in order."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WHEN = re.compile(r" on \d{4}-\d\d-\d\d \d\d:\d\d UTC")  # the acknowledgement's time


def _steps(doc: str) -> list[tuple[str, list[str]]]:
    part = doc.split("<!-- month:start -->", 1)[1].split("<!-- month:end -->", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", part, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
    return steps


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    if argv[0] == ".venv/bin/python":
        return [sys.executable, *argv[1:]]
    assert argv[0] == "vbench", command
    return [sys.executable, "-m", "vbench", *argv[1:]]


def _in_order(shown: list[str], got: list[str]) -> list[str]:
    """Shown lines missing from ``got`` (in order; … skips)."""
    missing, at = [], 0
    for line in (WHEN.sub(" on <time>", x) for x in shown):
        if line in ("…", ""):
            continue
        try:
            at = got.index(line, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def test_the_month_of_nights_runs_as_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.helpers import vbench

    steps = _steps((ROOT / "docs" / "nightly.md").read_text())
    assert [c.split()[0:3] for c, _ in steps][:3] == [
        [".venv/bin/python", "-m", "bench.nightly_store"], ["vbench", "history", "nightly"],
        ["vbench", "ack", "20261116-020000-000007:total_iops"]]
    env = {"VBENCH_HOME": str(tmp_path), "VBENCH_STORE": "", "VBENCH_RESULTS": ""}
    monkeypatch.chdir(tmp_path)
    for command, shown in steps:
        argv = _argv(command)
        if argv[1:3] == ["-m", "vbench"]:  # the CLI in this process: same output and codes
            done = vbench(*argv[3:], env=env)
        else:
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                                  env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
                                  timeout=600)
        assert done.returncode == 0, (command, done.stderr[-2000:])
        got = [WHEN.sub(" on <time>", x) for x in done.stdout.splitlines()]
        assert not _in_order(shown, got), (command, _in_order(shown, got), done.stdout)


def test_the_order_check_finds_a_line_the_command_does_not_print() -> None:
    assert _in_order(["a", "…", "c"], ["a", "b", "c"]) == []
    assert _in_order(["a", "x"], ["a", "b"]) == ["x"]
    assert _in_order(["c", "a"], ["a", "c"]) == ["a"]  # out of order
