"""Every function of the engine stays short: a run's lifecycle is read as a sequence of
named steps, not as one long function (issue 22: `execute` was 132 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "vbench" / "engine"
MAX_BODY_LINES = 60


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement of the body (its docstring, if any) to the last."""
    return (node.end_lineno or node.lineno) - node.body[0].lineno + 1


def long_functions(root: Path, limit: int = MAX_BODY_LINES) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = body_lines(node)
                if n > limit:
                    out.append(f"{path.relative_to(root.parents[1])}:{node.lineno}: "
                               f"{node.name} has a {n}-line body (at most {limit})")
    return out


def test_every_engine_function_body_is_at_most_60_lines() -> None:
    assert long_functions(ENGINE) == []


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    # The check itself can fail: a 61-line body is found, with its file and line.
    (tmp_path / "pkg").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    (tmp_path / "pkg" / "long.py").write_text(f"def f() -> None:\n{body}\n\n\ndef g() -> None:\n"
                                              "    pass\n")
    found = long_functions(tmp_path / "pkg")
    assert len(found) == 1 and "long.py:1: f has a 61-line body" in found[0]
