"""YAML loading that remembers where every value came from, with bounded resources.

PyYAML's composer gives each node a start mark; we walk the node tree beside the
constructed data and record ``path -> (line, column)`` for every key and value, so
that a validation error on ``workload.params.bs`` can name ``file:12:9``.

A scenario or lab may come from anyone, so the loader refuses, with a location, what
would otherwise exhaust the machine: a file over :data:`MAX_BYTES`, nesting deeper
than :data:`MAX_DEPTH` (the composer recurses per level), more than :data:`MAX_VALUES`
values once every alias is expanded ("billion laughs": each alias is walked once, its
expanded size counted from the anchor's), and a recursive alias (a value containing
itself). Bytes that are not UTF-8 and characters YAML forbids (NUL, most control
characters) are reported at their line and column.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.error import Mark, MarkedYAMLError
from yaml.reader import ReaderError

from vbench.errors import ConfigIssue, ConfigValidationError

PathT = tuple[str | int, ...]

MAX_BYTES = 1024 * 1024  # a scenario or lab file is a few kilobytes
MAX_DEPTH = 50  # mappings and lists inside each other; the catalog's deepest is 6
MAX_VALUES = 100_000  # keys and values, every alias counted as what it expands to
_LIMIT = "(a limit of vbench's config loader, see docs/scenarios.md)"


@dataclass
class Source:
    """Loaded YAML data plus the positions of its keys and values (1-based)."""

    file: str
    data: Any
    values: MutableMapping[PathT, tuple[int, int]] = field(default_factory=dict)
    keys: MutableMapping[PathT, tuple[int, int]] = field(default_factory=dict)
    overridden: dict[PathT, str] = field(default_factory=dict)  # path -> "--set a.b=c"

    def locate(self, path: PathT, *, key: bool = False) -> tuple[str, int | None, int | None]:
        """The file/line/column closest to ``path`` (walking up to a known parent)."""
        p = tuple(path)
        inside = self._set_inside(p)
        if inside is not None:
            return (inside, None, None)
        while True:
            if p in self.overridden:
                return (self.overridden[p], None, None)
            table = self.keys if key and p in self.keys else self.values
            if p in table:
                line, col = table[p]
                return (self.file, line, col)
            if not p:
                return (self.file, None, None)
            made_by = self._made_by(p)
            if made_by is not None:
                return (made_by, None, None)
            p = p[:-1]
            key = False

    def _set_inside(self, path: PathT) -> str | None:
        """The one ``--set`` that changed a value inside ``path``: an error of the whole
        section (``search: min (50) must be below max (-5)`` after ``--set
        search.max=-5``) is that --set's, not the section's line in the file. Not for
        the file's top (every --set is inside it)."""
        if not path:
            return None
        found = {what for over, what in self.overridden.items()
                 if len(over) > len(path) and over[: len(path)] == path}
        return found.pop() if len(found) == 1 else None

    def _made_by(self, path: PathT) -> str | None:
        """The ``--set`` that created ``path`` (not in the file) as a parent of its own
        path, e.g. ``nope`` of ``--set nope.x=1``: an error there is that --set's."""
        if path in self.values or path in self.keys:
            return None
        for over, what in self.overridden.items():
            if over[: len(path)] == path:
                return what
        return None

    def override(self, path: PathT, what: str) -> None:
        """``what`` (a ``--set``) replaced the value at ``path``: it is where anything
        under it comes from now, not the file's lines that were there."""
        for table in (self.values, self.keys):
            for p in [p for p in table if p[: len(path)] == path]:
                del table[p]
        self.overridden[path] = what

    def issue(self, path: PathT, message: str, *, key: bool = False) -> ConfigIssue:
        file, line, col = self.locate(path, key=key)
        return ConfigIssue(file, line, col, dotted(path), message)


def dotted(path: PathT) -> str:
    # A key may hold a newline or an escape sequence (a hostile node name): shown escaped.
    return ".".join(_printable(str(p)) for p in path)


def _printable(text: str) -> str:
    return text if text.isprintable() else repr(text)[1:-1]


def shown(value: Any, limit: int = 60) -> str:
    """A value as a message shows it: YAML-like for dates and null, short for long ones
    (never a Python repr such as ``datetime.date(...)``)."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, datetime.date):  # datetime is a date too
        text = value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else (
            value.isoformat())
    elif isinstance(value, bytes):
        text = f"binary data ({len(value)} bytes)"
    elif isinstance(value, dict):
        text = "a mapping"
    elif isinstance(value, list | tuple | set):
        text = "a list"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load_yaml_file(path: str | Path) -> Source:
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigValidationError(
            [ConfigIssue(str(path), None, None, "", "file not found")]
        ) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigValidationError(
            [ConfigIssue(str(path), None, None, "", f"cannot read: {reason}")]
        ) from None
    return load_yaml_text(decode_utf8(raw, str(path)), str(path))


def decode_utf8(raw: bytes, file: str) -> str:
    """The text of a file, or a located error at the first byte that is not UTF-8."""
    if len(raw) > MAX_BYTES:  # located where the limit is crossed
        line, col = _line_col(raw, MAX_BYTES)
        message = f"the file is larger than {MAX_BYTES // 1024} KiB {_LIMIT}"
        raise ConfigValidationError([ConfigIssue(file, line, col, "", message)])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(raw, exc.start)
        bad = raw[exc.start : exc.start + 1].hex()
        raise ConfigValidationError(
            [ConfigIssue(file, line, col, "", f"byte 0x{bad} is not UTF-8 text "
                         "(save the file as UTF-8)")]
        ) from None


def _line_col(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset."""
    before = raw[:offset]
    start = before.rfind(b"\n") + 1
    return before.count(b"\n") + 1, len(before[start:].decode("utf-8", "replace")) + 1


class _Refused(Exception):
    """A document over one of the loader's limits, at the mark where it was found."""

    def __init__(self, mark: Mark, message: str) -> None:
        super().__init__(message)
        self.mark, self.message = mark, message


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses deep nesting while composing (before Python's recursion
    limit is near) and remembers where each alias was used."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0
        # (id(parent node), index or id(key node)) -> mark of the alias used there
        self.alias_marks: dict[tuple[int, int], Mark] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            if parent is not None and index is not None:
                self.alias_marks[(id(parent), _index_key(index))] = mark
            return node
        collection = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        if collection and self.depth >= MAX_DEPTH:
            message = f"nested deeper than {MAX_DEPTH} levels {_LIMIT}"
            raise _Refused(self.peek_event().start_mark, message)
        self.depth += collection
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= collection


    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # A scalar the resolver typed but Python refuses (2024-13-45, !!int x) is a
        # mistake at that value, not an internal error.
        try:
            value = super().construct_object(node, deep=deep)
        except (yaml.YAMLError, _Refused):
            raise
        except Exception as exc:  # e.g. "!!timestamp x" fails inside PyYAML itself
            raise _Refused(node.start_mark, f"cannot read this value: {exc}") from None
        # "\ud83d\udca5" (a JSON-style pair) is two lone surrogates to YAML: no text can
        # hold them (writing them anywhere fails), so they are refused here.
        if isinstance(value, str) and (bad := _SURROGATE.search(value)):
            raise _Refused(node.start_mark, f"\\u{ord(bad.group()):04x} is half of a UTF-16 "
                           "surrogate pair, not a character (write the character itself, "
                           "or \\U and its 8 hex digits)")
        return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _index_key(index: Any) -> int:
    return index if isinstance(index, int) else id(index)


def load_yaml_text(text: str, file: str) -> Source:
    if len(text) > MAX_BYTES:
        decode_utf8(text.encode("utf-8"), file)  # raises: too large
    try:
        loader = _BoundedLoader(text)  # the reader checks characters here
    except ReaderError as exc:
        raise ConfigValidationError([_reader_issue(exc, text, file)]) from None
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_size(loader, node)
        data = loader.construct_document(node) if node is not None else None
        src = Source(file=file, data=data)
        if node is not None:
            issues: list[ConfigIssue] = []
            _Walk(loader, src, issues).walk(node, (), node.start_mark)
            if issues:
                raise ConfigValidationError(issues)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "syntax error"
        if exc.context:
            problem = f"{exc.context}, {problem}"
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ConfigValidationError(
            [ConfigIssue(file, line, col, "", f"YAML syntax: {problem}")]
        ) from None
    except _Refused as exc:
        line, col = exc.mark.line + 1, exc.mark.column + 1
        raise ConfigValidationError(
            [ConfigIssue(file, line, col, "", exc.message)]
        ) from None
    except ReaderError as exc:
        raise ConfigValidationError([_reader_issue(exc, text, file)]) from None
    except yaml.YAMLError as exc:
        raise ConfigValidationError([ConfigIssue(file, 1, 1, "", f"YAML: {exc}")]) from None
    finally:
        loader.dispose()
    return src


def _reader_issue(exc: ReaderError, text: str, file: str) -> ConfigIssue:
    before = text[: exc.position]
    line = before.count("\n") + 1
    col = exc.position - (before.rfind("\n") + 1) + 1
    char = exc.character if isinstance(exc.character, int) else 0
    what = "a NUL character" if char == 0 else f"control character U+{char:04X}"
    return ConfigIssue(file, line, col, "", f"{what} is not allowed in a YAML file "
                       "(write it escaped in a double-quoted string if you mean it)")


def _check_size(loader: _BoundedLoader, root: yaml.Node) -> None:
    """Refuse a recursive alias, and a document deeper than MAX_DEPTH or larger than
    MAX_VALUES once its aliases are expanded.

    Each node is visited once: a node reached again through an alias adds the size and
    height already counted for it, so a billion-laughs file costs what its text does."""
    known: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height)
    open_nodes: set[int] = set()

    def measure(node: yaml.Node, mark: Mark, depth: int) -> tuple[int, int]:
        got = known.get(id(node))
        if got is None:
            if id(node) in open_nodes:
                raise _Refused(mark, "recursive alias: a value that contains itself")
            open_nodes.add(id(node))
            got = _children(node, depth)
            open_nodes.discard(id(node))
            known[id(node)] = got
        if depth + got[1] > MAX_DEPTH:
            raise _Refused(mark, f"nested deeper than {MAX_DEPTH} levels once aliases are "
                           f"expanded {_LIMIT}")
        return got

    def _children(node: yaml.Node, depth: int) -> tuple[int, int]:
        # height: levels of mappings and lists, the node's own included (a scalar: 0)
        total, height = 1, 0 if isinstance(node, yaml.ScalarNode) else 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise _Refused(k.start_mark, "a key must be a plain value such as a name")
                mark = loader.alias_marks.get((id(node), id(k)), v.start_mark)
                size, h = measure(v, mark, depth + 1)
                total, height = total + 1 + size, max(height, h + 1)
                _over(total, mark)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                mark = loader.alias_marks.get((id(node), i), item.start_mark)
                size, h = measure(item, mark, depth + 1)
                total, height = total + size, max(height, h + 1)
                _over(total, mark)
        return total, height

    measure(root, root.start_mark, 0)


def _over(total: int, mark: Mark) -> None:
    if total > MAX_VALUES:
        raise _Refused(mark, f"more than {MAX_VALUES:,} values once aliases are expanded "
                       f"{_LIMIT}")


class _Walk:
    """Record the position of every key and value; a node shared through aliases is
    walked once (later uses record where the alias is, not the anchor's contents)."""

    def __init__(self, loader: _BoundedLoader, src: Source, issues: list[ConfigIssue]) -> None:
        self.loader, self.src, self.issues = loader, src, issues
        self.seen: set[int] = set()

    def walk(self, node: yaml.Node, path: PathT, mark: Mark) -> None:
        self.src.values[path] = (mark.line + 1, mark.column + 1)
        if id(node) in self.seen:
            return
        self.seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            self._mapping(node, path)
        elif isinstance(node, yaml.SequenceNode):
            marks = self.loader.alias_marks
            for i, item in enumerate(node.value):
                self.walk(item, (*path, i), marks.get((id(node), i), item.start_mark))

    def _mapping(self, node: yaml.MappingNode, path: PathT) -> None:
        seen: set[Any] = set()
        for knode, vnode in node.value:
            key = self.loader.construct_object(knode, deep=True)
            if not isinstance(key, str | int):
                key = str(key)
            child = (*path, key)
            kline, kcol = knode.start_mark.line + 1, knode.start_mark.column + 1
            self.src.keys[child] = (kline, kcol)
            if key in seen:
                self.issues.append(
                    ConfigIssue(self.src.file, kline, kcol, dotted(child),
                                "duplicate key (each key may appear once)")
                )
            seen.add(key)
            mark = self.loader.alias_marks.get((id(node), id(knode)), vnode.start_mark)
            self.walk(vnode, child, mark)
