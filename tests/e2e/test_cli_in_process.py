"""The e2e tests' in-process CLI (tests/e2e/helpers.py: ``vbench``) answers as the real
process does — exit code, stdout and stderr — and fails the test whose CLI run leaves the
test process changed (environment, working directory, signal handlers, a thread still
running), after putting things back."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from tests.e2e.helpers import vbench, vbench_process

ROOT = Path(__file__).resolve().parents[2]


def _bad_scenario(tmp: Path) -> str:
    path = tmp / "bad.yaml"
    path.write_text("version: 1\nname: bad\nworkload: {driver: fio}\nphases: {steady: soon}\n")
    return str(path)


@pytest.mark.parametrize("case", ["version", "unknown command", "valid", "invalid", "help"])
def test_in_process_answers_as_the_process(case: str, tmp_path: Path) -> None:
    args = {
        "version": ["--version"],
        "unknown command": ["no-such-command"],
        "valid": ["validate", str(ROOT / "examples" / "quickstart.yaml")],
        "invalid": ["validate", _bad_scenario(tmp_path)],
        "help": ["run", "--help"],
    }[case]
    inside, outside = vbench(*args), vbench_process(*args)
    assert (inside.returncode, inside.stdout, inside.stderr) == (
        outside.returncode, outside.stdout, outside.stderr)  # fmt: skip
    assert inside.returncode == {"version": 0, "unknown command": 2, "valid": 0,
                                 "invalid": 2, "help": 0}[case]  # fmt: skip


def test_a_run_that_leaves_the_process_changed_fails_and_is_undone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    release = threading.Event()
    handler = signal.getsignal(signal.SIGTERM)
    cwd = os.getcwd()

    def careless(argv: list[str]) -> None:
        os.environ["VBENCH_LEAKED"] = "1"
        os.chdir(tmp_path)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=release.wait, name="leaked-worker").start()
        print("done")

    monkeypatch.setattr("vbench.cli.main", careless)
    monkeypatch.setattr("tests.e2e.helpers._THREAD_GRACE_S", 0.1)
    try:
        with pytest.raises(AssertionError) as failed:
            vbench("run", "x.yaml")
    finally:
        release.set()
    said = str(failed.value)
    for what in ("environment", "working directory", "handler of SIGTERM", "leaked-worker"):
        assert what in said, said
    assert "VBENCH_LEAKED" not in os.environ
    assert os.getcwd() == cwd and signal.getsignal(signal.SIGTERM) == handler
