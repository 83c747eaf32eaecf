"""A derived figure's expression (``derived: [{kind: expr, expr: …}]``) nested thousands
deep — brackets, signs, or a chain of additions whose tree is as deep — raised
RecursionError in validate (an internal error, exit 3). It is an expression error
now, at its column, like any other mistake in it; ordinary nesting is still taken."""

from __future__ import annotations

import pytest

from vbench.analysis.expr import ExprError, evaluate, names, parse


@pytest.mark.parametrize("text", [
    "(" * 3000 + "x" + ")" * 3000,
    "-" * 3000 + "x",
    "x" + "+x" * 3000,
    "max(" * 3000 + "x" + ")" * 3000,
])
def test_an_expression_nested_thousands_deep_is_an_expression_error(text: str) -> None:
    with pytest.raises(ExprError, match="nested more than"):
        parse(text)


def test_an_expression_nested_as_people_write_it_is_taken() -> None:
    text = "(" * 40 + "x" + ")" * 40 + " + " + " + ".join(["y"] * 60) + " - -z"
    node = parse(text)
    assert names(node) == {"x", "y", "z"}
    assert evaluate(node, {"x": 1.0, "y": 2.0, "z": 3.0}) == 1.0 + 120.0 + 3.0
