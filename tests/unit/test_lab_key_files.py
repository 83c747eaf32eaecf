"""A lab's key file that cannot even be looked at (a name too long for the file system, a
path through a file) is a located configuration problem, like a missing one — it was an
internal error (OSError from stat; found by tests/unit/test_fuzz_configs.py, seed 147)."""

from __future__ import annotations

from pathlib import Path

from vbench.config.lab import Lab
from vbench.engine.lab_files import _problem

LAB = Lab.model_validate({"version": 1, "name": "k", "nodes": {"g1": {"address": "127.0.0.2"}}})


def test_a_key_file_name_too_long_is_a_problem_said_not_a_crash() -> None:
    problem = _problem(Path("x" * 5000), LAB)
    assert problem is not None and "File name too long" in problem
    assert "(5000 characters)" in problem and len(problem) < 300


def test_a_key_file_under_a_file_is_a_problem_said(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("not a folder")
    problem = _problem(plain / "id_ed25519", LAB)
    assert problem == f"key file {plain / 'id_ed25519'}: Not a directory"


def test_a_missing_key_file_is_said_not_found(tmp_path: Path) -> None:
    assert _problem(tmp_path / "none", LAB) == f"key file {tmp_path / 'none'} not found"


def test_a_key_file_name_with_a_nul_character_is_a_problem_said() -> None:
    """(ValueError from stat: an internal error; the lab fuzz test, seed 170.)"""
    problem = _problem(Path("id\x00rsa"), LAB)
    assert problem == "key file 'id\\x00rsa': a file name cannot hold a NUL character"
