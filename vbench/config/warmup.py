"""``phases.warmup``: a duration, or ``auto`` — the warm-up the detector ends.

``auto`` (vbench/analysis/warmup.py, ``warmup_end``) is ended live by MSER-5 on the
workload's own throughput, at the latest after ``phases.warmup_cap``. Only drivers that
can read their throughput while they run take it (``Workload.auto_warmup``: fio).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, WithJsonSchema

from vbench.config.types import parse_duration

AUTO = "auto"
DEFAULT_CAP = 300.0  # seconds: phases.warmup_cap when warmup is auto and none is given


def _warmup(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    return parse_duration(value)


Warmup = Annotated[
    float | Literal["auto"],
    BeforeValidator(_warmup),
    WithJsonSchema({
        "anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": r"^((\d+(\.\d+)?(ms|s|m|h|d))+|auto)$"},
        ],
        "description": "seconds, a duration such as 30s, 5m, 1h30m, or auto",
    }),
]


def auto_cap(phases: Any) -> float | None:
    """The cap of an automatic warm-up in a stored scenario's ``phases`` mapping, None
    when its warm-up is a fixed duration."""
    if not isinstance(phases, dict) or phases.get("warmup") != AUTO:
        return None
    cap = phases.get("warmup_cap")
    return float(cap) if isinstance(cap, int | float) else DEFAULT_CAP


def planned_seconds(phases: Any) -> float:
    """The warm-up a stored scenario planned for: its duration, or the cap of ``auto``."""
    cap = auto_cap(phases)
    if cap is not None:
        return cap
    value = phases.get("warmup") if isinstance(phases, dict) else None
    return float(value) if isinstance(value, int | float) else 0.0
