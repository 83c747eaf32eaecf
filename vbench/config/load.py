"""Load scenario and lab files into validated models, with located error messages."""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from vbench.config.scenario import Scenario
from vbench.config.yamlsrc import PathT, Source, dotted, load_yaml_file, load_yaml_text, shown
from vbench.errors import ConfigError, ConfigIssue, ConfigValidationError

if TYPE_CHECKING:  # the lab's models are built only when a lab is loaded
    from vbench.config.lab import Lab

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Loaded(Generic[M]):
    model: M
    source: Source


def validate_model(model: type[M], src: Source, base: PathT = (), data: Any = None) -> M:
    """Validate ``data`` (default: the whole source) and locate every error."""
    payload = src.data if data is None else data
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise ConfigValidationError(issues_from(exc, src, base, payload)) from None


def issues_from(
    exc: ValidationError, src: Source, base: PathT = (), data: Any = None
) -> list[ConfigIssue]:
    """Located issues of ``exc``; ``data`` (what was validated) tells a key of the file
    from a tag pydantic adds to a location."""
    issues: list[ConfigIssue] = []
    for err in exc.errors(include_url=False):
        raw = tuple(err["loc"])
        # A mapping key that failed (e.g. a lab node name): point at the key itself.
        is_key = len(raw) >= 2 and raw[-1] == "[key]"
        loc = (*_clean_loc(raw[:-2], data), raw[-2]) if is_key else _clean_loc(raw, data)
        path = (*base, *loc)
        etype = err["type"]
        ctx = err.get("ctx") or {}
        if etype == "unknown_key":
            allowed = [a.strip() for a in str(ctx.get("allowed", "")).split(",") if a.strip()]
            for key in ctx.get("keys", [ctx.get("key")]):
                issues.append(src.issue((*path, key), _unknown(key, allowed), key=True))
            continue
        if etype == "located":  # a model validator naming the fields it is about
            for sub, message in ctx.get("issues", []):
                issues.append(src.issue((*path, *sub), message))
            continue
        if etype == "extra_forbidden":
            issues.append(src.issue(path, "unknown key (not allowed here)", key=True))
            continue
        issues.append(src.issue(path, _message(err), key=is_key))
    # Pydantic reports each failing member of a union; keep one line per place.
    unique: dict[str, ConfigIssue] = {}
    for i in issues:
        unique.setdefault(f"{i.path}|{i.message}", i)
    return list(unique.values())


def _unknown(key: Any, allowed: list[str]) -> str:
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key {shown(key)} ({hint}expected one of: {', '.join(allowed)})"


def _clean_loc(loc: tuple[Any, ...], data: Any = None) -> PathT:
    """``loc`` without pydantic's union-member tags ('Level', 'str',
    'function-before[...]'). A part that is a key of the validated data at that place is
    the file's own (a lab node named ``Guest1`` is not a tag, capital letter or not)."""
    out: list[str | int] = []
    here = data
    for part in loc:
        if isinstance(part, int):
            out.append(part)
            here = here[part] if isinstance(here, list) and 0 <= part < len(here) else None
        elif isinstance(here, dict) and part in here:
            out.append(part)
            here = here[part]
        elif isinstance(part, str) and ("[" in part or part in _TYPE_TAGS or part[:1].isupper()):
            continue
        else:
            out.append(part)
            here = None
    return tuple(out)


_TYPE_TAGS = {"str", "int", "float", "bool", "list", "dict", "none"}


def _message(err: Any) -> str:
    etype, msg = err["type"], err["msg"]
    msg = msg.removeprefix("Value error, ")
    expected = {
        "missing": "required field is missing",
        "int_parsing": "expected a whole number",
        "int_type": "expected a whole number",
        "float_parsing": "expected a number",
        "float_type": "expected a number",
        "finite_number": "expected a finite number (not nan or inf)",
        "bool_parsing": "expected true or false",
        "bool_type": "expected true or false",
        "string_type": "expected a string",
        "dict_type": "expected a mapping (key: value)",
        "list_type": "expected a list",
        "model_type": "expected a mapping (key: value)",
        "model_attributes_type": "expected a mapping (key: value)",
    }.get(etype)
    if expected:
        got = err.get("input")
        if etype != "missing" and not isinstance(got, dict | list):
            return f"{expected}, got {shown(got)}"
        return expected
    if etype == "literal_error":
        return f"{msg}, got {shown(err.get('input'))}"
    if etype in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        bound = msg.removeprefix("Input should be ")
        return f"out of range: got {shown(err.get('input'))} (expected a value {bound})"
    return msg


def apply_overrides(src: Source, sets: list[str]) -> None:
    """Apply ``--set a.b.c=value`` to the loaded data (value parsed as YAML, with the
    same limits as a file). A mistake is located at the ``--set``, not in the file."""
    for item in sets:
        what = set_label(item)
        try:
            if "=" not in item:
                raise PathError("expected PATH=VALUE (e.g. repeat=5)")
            path_s, raw = item.split("=", 1)
            path = tuple(_index(p) for p in path_s.strip().split(".") if p)
            if not path:
                raise PathError("empty path (expected PATH=VALUE, e.g. repeat=5)")
            value = load_yaml_text(raw, what).data if raw.strip() else ""
            if not isinstance(src.data, dict):
                raise PathError("the file is not a mapping")
            set_path(src.data, path, value)
        except PathError as exc:
            raise ConfigValidationError([ConfigIssue(what, None, None, "", exc.reason)]) from None
        src.override(path, what)


def set_label(item: str, limit: int = 60) -> str:
    """How messages name a ``--set`` (shortened: a value may be long)."""
    text = f"--set {item}"
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def path_parts(dotted_path: str) -> PathT:
    """``a.b.0`` -> ("a", "b", 0): ASCII digits index a list."""
    return tuple(_index(p) for p in dotted_path.split("."))


def _index(part: str) -> str | int:
    return int(part) if part.isascii() and part.isdigit() else part


class PathError(ConfigError):
    """A dotted path that cannot be set in the data (the caller says where it was)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def set_path(data: Any, path: PathT, value: Any) -> None:
    node = data
    for i, part in enumerate(path[:-1]):
        if isinstance(node, list) and isinstance(part, int):
            if part >= len(node):
                raise PathError(f"{dotted(path[: i + 1])} is past the end of the list")
            node = node[part]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise PathError(f"{dotted(path[:i])} is not a mapping")
    last = path[-1]
    if (isinstance(node, list) and isinstance(last, int) and last < len(node)) or isinstance(
        node, dict
    ):
        node[last] = value
    else:
        raise PathError(f"{dotted(path[:-1])} is not a mapping")


def load_scenario(path: str | Path, sets: list[str] | None = None) -> Loaded[Scenario]:
    src = load_yaml_file(path)
    _require_mapping(src, "scenario")
    src.data = copy.deepcopy(src.data)
    if sets:
        apply_overrides(src, sets)
    return Loaded(validate_model(Scenario, src), src)


def load_lab(path: str | Path) -> Loaded[Lab]:
    from vbench.config.lab import Lab

    src = load_yaml_file(path)
    _require_mapping(src, "lab")
    lab = validate_model(Lab, src)
    lab._source = src  # secrets resolved later are located at their line
    return Loaded(lab, src)


def _require_mapping(src: Source, what: str) -> None:
    if not isinstance(src.data, dict):
        raise ConfigValidationError(
            [ConfigIssue(src.file, 1, 1, "", f"expected a {what} mapping at the top level")]
        )
