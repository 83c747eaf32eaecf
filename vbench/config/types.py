"""Shared config building blocks: strict models, durations, secret references."""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: Any) -> float:
    """``90``, ``"90s"``, ``"5m"``, ``"1h30m"``, ``"250ms"`` → seconds."""
    if isinstance(value, bool):
        raise PydanticCustomError("duration", "expected a duration such as 30s, 5m or 1h30m")
    if isinstance(value, int | float):
        if value < 0:
            raise PydanticCustomError("duration", "a duration cannot be negative")
        return float(value)
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
            return float(text)
        except ValueError:
            pass
    raise PydanticCustomError(
        "duration",
        "{value} is not a duration (expected seconds or e.g. 30s, 5m, 1h30m)",
        {"value": repr(value)},
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


_KNOWN_KEYS: dict[type, frozenset[str]] = {}


class Strict(BaseModel):
    """A config model that refuses unknown keys, suggesting the closest known one."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

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
