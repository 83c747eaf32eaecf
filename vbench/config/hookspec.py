"""Per-point lab hooks: a factor whose levels are a lab set-up, not a parameter.

Inter-site latency on a WAN emulator, an array setting, a BIOS power policy changed by an
out-of-band tool: a factor with a ``hook`` runs ``run`` on the lab node ``node`` (over
SSH) before the first trial of each of its points and ``undo`` after the last. Each
argument is a template over ``{value}`` (the level's value, or its label when it has
none) and ``{level}`` (the level's label); a value is substituted *inside* one argument
and the command is an argv list, so a level value never becomes shell syntax.
"""

from __future__ import annotations

import string
from typing import Any

from pydantic import Field, field_validator

from vbench.config.labels import render_label
from vbench.config.types import Duration, Strict
from vbench.templates import has_control

PLACEHOLDERS = ("value", "level")


class HookSpec(Strict):
    """A command run on a lab node before a point, and its undo after it."""

    node: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                      description="lab node (nodes: in the lab file) the commands run on")
    run: list[str] = Field(min_length=1, description=(
        "argv run before the point, e.g. [sudo, tc, qdisc, replace, dev, eth1, root, netem, "
        "delay, \"{value}\"]; {value} and {level} are replaced inside an argument"))
    undo: list[str] = Field(min_length=1, description=(
        "argv run after the point on every exit path (and by `vbench cleanup RUN` after a "
        "kill), e.g. [sudo, tc, qdisc, del, dev, eth1, root]"))
    timeout: Duration = Field(60.0, gt=0, description="longest each command may take")

    @field_validator("run", "undo")
    @classmethod
    def _templates(cls, argv: list[str]) -> list[str]:
        for arg in argv:
            problems = arg_problems(arg)
            if problems:
                raise ValueError(f"{arg!r}: {'; '.join(problems)}")
        return argv


def arg_problems(arg: str) -> list[str]:
    if has_control(arg):
        return ["control characters are not allowed"]
    try:
        parts = list(string.Formatter().parse(arg))
    except ValueError as exc:
        return [f"{exc} (write {{{{ and }}}} for literal braces)"]
    return [f"{{{name}}}: only {{value}} and {{level}} may be used" for _t, name, spec, conv
            in parts if name is not None and (name not in PLACEHOLDERS or spec or conv)]


def value_text(value: Any, label: str) -> str:
    """A level's value as it goes into an argument (its label when it has no value)."""
    if value is None:
        return label
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render_argv(argv: list[str], value: str, level: str) -> tuple[str, ...]:
    """Every argument with its placeholders replaced; one argument stays one argument."""
    return tuple(render_label(arg, {"value": value, "level": level}) for arg in argv)
