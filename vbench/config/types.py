"""Shared config building blocks: strict models, durations, secret references."""

from __future__ import annotations

import difflib
import math
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from vbench.config.yamlsrc import shown

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


# The names a scenario gives things (scenario, groups, figures, searched factor).
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"

def new_list() -> list[Any]:
    """A new empty list: the ``default_factory`` of the models' list fields, instead of
    the builtin ``list``. pydantic reads each factory's signature (does it take the
    validated data?), and for a builtin ``inspect`` parses its text signature with
    ``tokenize`` — whose regular expressions it compiles first: ≈ 4 ms of every
    `vbench validate` for ~25 fields. A Python function's signature is read directly."""
    return []


MAX_DURATION = 30 * 86400.0  # 30 days: longer is a typo (or an attack), not a benchmark


def parse_duration(value: Any) -> float:
    """``90``, ``"90s"``, ``"5m"``, ``"1h30m"``, ``"250ms"`` → seconds (at most 30 days)."""
    seconds = _seconds(value)
    if not math.isfinite(seconds) or seconds > MAX_DURATION:
        raise PydanticCustomError(
            "duration",
            "{value} is longer than 30 days, the longest duration vbench accepts",
            {"value": shown(value)},
        )
    return seconds


def _seconds(value: Any) -> float:
    if isinstance(value, bool):
        raise PydanticCustomError("duration", "expected a duration such as 30s, 5m or 1h30m")
    if isinstance(value, int | float):
        if isinstance(value, float) and math.isnan(value):
            raise _not_a_duration(value)
        if value < 0:
            raise PydanticCustomError("duration", "a duration cannot be negative")
        # a huge whole number would overflow float(); nan and inf are refused by the caller
        return math.inf if value > MAX_DURATION else float(value)
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if not text:
            raise PydanticCustomError("duration", "empty duration (expected e.g. 30s, 5m)")
        pos, total = 0, 0.0
        for m in _DURATION.finditer(text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
            pos = m.end()
        if pos == len(text):
            return total
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            if not math.isnan(number):
                return _seconds(number)
    raise _not_a_duration(value)


def _not_a_duration(value: Any) -> PydanticCustomError:
    return PydanticCustomError(
        "duration",
        "{value} is not a duration (expected seconds or e.g. 30s, 5m, 1h30m)",
        {"value": shown(value)},
    )


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1 and seconds > 0:
        return f"{seconds * 1000:.0f}ms"
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{sec}s" if sec or not (h or m) else ""]
    return "".join(parts)


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": r"^(\d+(\.\d+)?(ms|s|m|h|d))+$"},
            ],
            "description": "seconds, or a duration such as 30s, 5m, 1h30m",
        }
    ),
]

# Free text a terminal, a report or an export shows. A control character there could
# colour or clear the screen, set a window title (ESC, BEL) or make an XML export
# ill-formed (NUL): refused at load, at its line. C1 controls act as ESC sequences on
# some terminals; bidi overrides and line separators make a shown text lie.
_UNSHOWN = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_NOT_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSHOWN}]")  # tab, newline ok
_NOT_ONE_LINE = re.compile(f"[\x00-\x1f{_UNSHOWN}]")


def text_problem(value: str, *, one_line: bool = True) -> str | None:
    """Why ``value`` cannot be shown as free text (a label, a title, a tag), or None."""
    found = (_NOT_ONE_LINE if one_line else _NOT_TEXT).search(value)
    if found is None:
        return None
    return (f"control character {found.group()!r} at position {found.start() + 1} "
            "(not allowed in text vbench shows)")


def _one_line(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _free_text(value: str) -> str:
    problem = text_problem(value, one_line=False)
    if problem:
        raise ValueError(problem)
    return value


# A label, title or name: one line of printable text.
OneLine = Annotated[str, AfterValidator(_one_line)]
# A description: lines of printable text (newlines and tabs allowed).
Text = Annotated[str, AfterValidator(_free_text)]

# A file reference may name its path under vbench's data directory: ${file:${vbench:x}}.
_SECRET_REF = re.compile(r"^\$\{(env|file):((?:[^${}]|\$\{vbench:[^}]*\})+)\}$")


def _check_secret_ref(value: Any) -> str:
    if not isinstance(value, str):
        raise PydanticCustomError("secret_ref", "expected a reference such as ${env:NAME}")
    if not _SECRET_REF.match(value.strip()):
        raise PydanticCustomError(
            "secret_literal",
            "a literal secret is not allowed in a lab file; reference it as ${env:NAME} "
            "(an environment variable) or ${file:/path/to/file} (a file only you can read)",
        )
    return value.strip()


SecretRef = Annotated[
    str,
    BeforeValidator(_check_secret_ref),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^\$\{(env|file):([^${}]|\$\{vbench:[^}]*\})+\}$",
            "description": "secret reference: ${env:NAME} or ${file:PATH}",
        }
    ),
]


def located(issues: list[tuple[tuple[str | int, ...], str]]) -> PydanticCustomError:
    """The error a model validator raises about fields below it: each (path relative to
    the model, message) is reported at that path's line (vbench.config.load)."""
    summary = "; ".join(".".join(map(str, path)) + f": {msg}" for path, msg in issues)
    return PydanticCustomError("located", "{summary}", {"summary": summary, "issues": issues})


_KNOWN_KEYS: dict[type, frozenset[str]] = {}


class Strict(BaseModel):
    """A config model that refuses unknown keys, suggesting the closest known one."""

    # nan and inf are no share, threshold or size: refused at the field, not at a sum.
    # defer_build: pydantic builds a model's validator when the model first validates,
    # not at class creation. A model validated only inside its parent (most of them:
    # the scenario's parts) is then compiled once, into the parent's validator, instead
    # of once on its own as well (≈ 11 ms of `vbench validate`, measured in
    # docs/performance.md).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False,
                              defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _unknown_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = _KNOWN_KEYS.get(cls)
        if known is None:  # cached: a factor matrix validates the scenario per point
            known = frozenset(
                key for name, f in cls.model_fields.items() for key in (name, f.alias) if key
            )
            _KNOWN_KEYS[cls] = known
        unknown = [k for k in data if k not in known]
        if unknown:
            allowed = sorted(f.alias or n for n, f in cls.model_fields.items())
            key = unknown[0]
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise PydanticCustomError(
                "unknown_key",
                "unknown key {key!r} ({hint}expected one of: {allowed})",
                {"key": key, "hint": hint, "allowed": ", ".join(allowed), "keys": unknown},
            )
        return data


def _share(value: Any) -> Any:
    """``20%`` or ``0.2`` → 0.2 (a bare number is a fraction, not a percentage)."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise PydanticCustomError("share", "expected a share such as 20% or 0.2") from None
    return value


# A share strictly between 0 and 1, written as a percentage or a fraction (a confidence
# target, a steady-state excursion or slope).
Share = Annotated[
    float,
    BeforeValidator(_share),
    Field(gt=0, lt=1),
    WithJsonSchema({"type": ["string", "number"], "description": "e.g. 20% or 0.2"}),
]
