"""A tiny arithmetic language for derived figures: ``total_iops / (cpu_used_pct / 100)``.

Names are metric or derived-figure names; they may contain dots (``read_clat_p99.9``).
Supported: numbers, names, ``+ - * /``, unary minus, parentheses and the functions
``min``, ``max`` and ``abs``. Nothing is ever handed to ``eval``: the text is parsed into
a small tree and evaluated here, so a scenario cannot run code.

A missing operand (``None``) or a division by zero makes the result ``None``: a derived
figure without a defined value is missing, never 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>[-+*/(),]))"
)
FUNCTIONS = ("min", "max", "abs")
# Brackets, signs and operators nested deeper than this are refused: the parser and the
# walks over the tree recurse, and thousands of levels raised RecursionError.
MAX_DEPTH = 100


class ExprError(ValueError):
    """A syntax error in an expression, with the position it was found at."""


@dataclass(frozen=True)
class Node:
    kind: str  # num | name | neg | bin | call
    value: float | str | None = None  # number, name, operator or function name
    args: tuple[Node, ...] = ()


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise ExprError(f"unexpected {text[col]!r} at column {col + 1}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def _deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            tok = self._peek()
            where = f" at column {tok[2] + 1}" if tok is not None else ""
            raise ExprError(f"expression nested more than {MAX_DEPTH} deep{where}")

    def _peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _take(self, value: str | None = None) -> tuple[str, str, int]:
        tok = self._peek()
        if tok is None:
            raise ExprError(
                f"unexpected end of expression (expected {repr(value) if value else 'a value'})"
            )
        if value is not None and tok[1] != value:
            raise ExprError(f"expected {value!r} at column {tok[2] + 1}, found {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        if not self.toks:
            raise ExprError("empty expression")
        node = self._sum()
        tok = self._peek()
        if tok is not None:
            raise ExprError(f"unexpected {tok[1]!r} at column {tok[2] + 1}")
        if _depth(node) > MAX_DEPTH:  # a chain a+b+c… is as deep as it is long
            raise ExprError(f"expression nested more than {MAX_DEPTH} deep (a chain of "
                            "operators counts each)")
        return node

    def _sum(self) -> Node:
        node = self._product()
        while (tok := self._peek()) is not None and tok[1] in "+-" and tok[0] == "op":
            self.i += 1
            node = Node("bin", tok[1], (node, self._product()))
        return node

    def _product(self) -> Node:
        node = self._unary()
        while (tok := self._peek()) is not None and tok[1] in "*/" and tok[0] == "op":
            self.i += 1
            node = Node("bin", tok[1], (node, self._unary()))
        return node

    def _unary(self) -> Node:
        tok = self._peek()
        if tok is not None and tok[0] == "op" and tok[1] in "+-":
            self.i += 1
            self._deeper()
            inner = self._unary()
            self.depth -= 1
            return Node("neg", None, (inner,)) if tok[1] == "-" else inner
        return self._atom()

    def _atom(self) -> Node:
        kind, text, col = self._take()
        if kind == "num":
            return Node("num", float(text))
        if kind == "name":
            nxt = self._peek()
            if nxt is not None and nxt[1] == "(":
                return self._call(text, col)
            return Node("name", text)
        if text == "(":
            self._deeper()
            node = self._sum()
            self._take(")")
            self.depth -= 1
            return node
        raise ExprError(f"unexpected {text!r} at column {col + 1}")

    def _call(self, name: str, col: int) -> Node:
        if name not in FUNCTIONS:
            raise ExprError(
                f"unknown function {name!r} at column {col + 1} (known: {', '.join(FUNCTIONS)})"
            )
        self._take("(")
        self._deeper()
        args = [self._sum()]
        while (tok := self._peek()) is not None and tok[1] == ",":
            self.i += 1
            args.append(self._sum())
        self._take(")")
        self.depth -= 1
        if name == "abs" and len(args) != 1:
            raise ExprError("abs() takes one argument")
        return Node("call", name, tuple(args))


def _depth(node: Node) -> int:
    """The tree's depth, walked without recursion (the tree may be deeper than Python's
    stack)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        here, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((arg, depth + 1) for arg in here.args)
    return deepest


def parse(text: str) -> Node:
    """Parse an expression; raises :class:`ExprError` with the column of a mistake."""
    return _Parser(text).parse()


def names(node: Node) -> set[str]:
    """The metric/derived names an expression refers to."""
    if node.kind == "name":
        return {str(node.value)}
    out: set[str] = set()
    for a in node.args:
        out |= names(a)
    return out


def evaluate(node: Node, env: Mapping[str, float | None]) -> float | None:
    """The value of ``node`` with names looked up in ``env``; None when undefined."""
    if node.kind == "num":
        return float(node.value)  # type: ignore[arg-type]
    if node.kind == "name":
        v = env.get(str(node.value))
        return None if v is None or not math.isfinite(v) else float(v)
    args = [evaluate(a, env) for a in node.args]
    if any(a is None for a in args):
        return None
    xs: list[float] = [a for a in args if a is not None]
    if node.kind == "neg":
        return -xs[0]
    if node.kind == "call":
        fn = {"min": min, "max": max, "abs": lambda *v: abs(v[0])}[str(node.value)]
        return float(fn(*xs))
    left, right = xs
    if node.value == "+":
        return left + right
    if node.value == "-":
        return left - right
    if node.value == "*":
        return left * right
    return None if right == 0 else left / right
