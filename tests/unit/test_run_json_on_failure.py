"""``vbench run --json`` prints one JSON document on every exit (issue 28, item 7): when
the preflight cannot reach a guest (exit 3, no run stored), when the scenario is wrong
(exit 2) and when a ``--tag`` is refused, stdout holds one document saying how the run
ended; the error is still printed on stderr."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from tests.unit.test_config_limits import QUICKSTART
from vbench.errors import EXIT_CONFIG, EXIT_LAB

# A node on a loopback address and port nothing listens on: the preflight's connection
# is refused at once.
LAB = """\
version: 1
name: unreachable
nodes:
  g1: {address: 127.0.0.9, port: 1, roles: [storage]}
  g2: {address: 127.0.0.9, port: 1, roles: [storage]}
"""


def run_json(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    from vbench.cli import main

    lab = tmp_path / "lab.yaml"
    lab.write_text(LAB)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exc:
        main(["run", *argv, "--lab", str(lab), "--results", str(tmp_path / "results"),
              "--json"])
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


def test_a_failed_preflight_prints_one_json_document(tmp_path: Path) -> None:
    code, out, err = run_json(tmp_path, str(QUICKSTART), "--tag", "nightly")
    assert code == EXIT_LAB, err
    doc = json.loads(out)  # one document, nothing else on stdout
    assert doc["exit_code"] == EXIT_LAB and doc["status"] == "error"
    assert doc["run_id"] is None and doc["tags"] == ["nightly"]
    assert "127.0.0.9" in doc["error"] and "127.0.0.9" in err


def test_a_config_error_and_a_refused_tag_print_one_json_document(tmp_path: Path) -> None:
    code, out, err = run_json(tmp_path, str(QUICKSTART), "--set", "repeat=0")
    assert code == EXIT_CONFIG
    doc = json.loads(out)
    assert doc["exit_code"] == EXIT_CONFIG and doc["error"] == err.strip()
    assert doc["error"].startswith("--set repeat=0: repeat: out of range")
    code, out, err = run_json(tmp_path, str(QUICKSTART), "--tag", "a\x1bb")
    assert code == EXIT_CONFIG
    assert json.loads(out)["error"] == err.strip() == (
        "--tag 'a\\x1bb': control character '\\x1b' at position 2 (not allowed in text "
        "vbench shows)")
