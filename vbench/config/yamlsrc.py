"""YAML loading that remembers where every value came from.

PyYAML's composer gives each node a start mark; we walk the node tree beside the
constructed data and record ``path -> (line, column)`` for every key and value, so
that a validation error on ``workload.params.bs`` can name ``file:12:9``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vbench.errors import ConfigIssue, ConfigValidationError

PathT = tuple[str | int, ...]


@dataclass
class Source:
    """Loaded YAML data plus the positions of its keys and values (1-based)."""

    file: str
    data: Any
    values: dict[PathT, tuple[int, int]] = field(default_factory=dict)
    keys: dict[PathT, tuple[int, int]] = field(default_factory=dict)
    overridden: dict[PathT, str] = field(default_factory=dict)  # path -> "--set a.b=c"

    def locate(self, path: PathT, *, key: bool = False) -> tuple[str, int | None, int | None]:
        """The file/line/column closest to ``path`` (walking up to a known parent)."""
        p = tuple(path)
        while True:
            if p in self.overridden:
                return (self.overridden[p], None, None)
            table = self.keys if key and p in self.keys else self.values
            if p in table:
                line, col = table[p]
                return (self.file, line, col)
            if not p:
                return (self.file, None, None)
            p = p[:-1]
            key = False

    def issue(self, path: PathT, message: str, *, key: bool = False) -> ConfigIssue:
        file, line, col = self.locate(path, key=key)
        return ConfigIssue(file, line, col, dotted(path), message)


def dotted(path: PathT) -> str:
    return ".".join(str(p) for p in path)


def load_yaml_file(path: str | Path) -> Source:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigValidationError(
            [ConfigIssue(str(path), None, None, "", "file not found")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigValidationError(
            [ConfigIssue(str(path), None, None, "", f"cannot read: {exc}")]
        ) from None
    return load_yaml_text(text, str(path))


def load_yaml_text(text: str, file: str) -> Source:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "syntax error"
        if exc.context:
            problem = f"{exc.context}, {problem}"
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ConfigValidationError(
            [ConfigIssue(file, line, col, "", f"YAML syntax: {problem}")]
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigValidationError([ConfigIssue(file, None, None, "", f"YAML: {exc}")]) from None
    finally:
        loader.dispose()
    src = Source(file=file, data=data)
    if node is not None:
        issues: list[ConfigIssue] = []
        _walk(loader, node, (), src, issues)
        if issues:
            raise ConfigValidationError(issues)
    return src


def _walk(
    loader: yaml.SafeLoader, node: yaml.Node, path: PathT, src: Source, issues: list[ConfigIssue]
) -> None:
    src.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for knode, vnode in node.value:
            key = loader.construct_object(knode, deep=True)
            if not isinstance(key, str | int):
                key = str(key)
            child = (*path, key)
            src.keys[child] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            if key in seen:
                issues.append(
                    ConfigIssue(
                        src.file,
                        knode.start_mark.line + 1,
                        knode.start_mark.column + 1,
                        dotted(child),
                        "duplicate key (each key may appear once)",
                    )
                )
            seen.add(key)
            _walk(loader, vnode, child, src, issues)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(loader, item, (*path, i), src, issues)
