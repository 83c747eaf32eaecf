"""Per-point lab hooks: a factor whose levels are a lab set-up, not a parameter.

Inter-site latency on a WAN emulator, an array setting, a BIOS power policy changed by an
out-of-band tool: a factor with a ``hook`` runs ``run`` on the lab node ``node`` (over
SSH) before the first trial of each of its points and ``undo`` after the last. Each
argument is a template over ``{value}`` (the level's value, or its label when it has
none) and ``{level}`` (the level's label); a value is substituted *inside* one argument
and the command is an argv list, so a level value never becomes shell syntax.
"""

from __future__ import annotations

import posixpath
import re
import string
from collections.abc import Mapping, Sequence
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


# Programs that run their `-c` argument as shell code (`sudo` or `env` before them too).
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish",
                    "csh", "tcsh"})


def _placeholders(arg: str) -> bool:
    try:
        return any(name in PLACEHOLDERS for _t, name, _s, _c in string.Formatter().parse(arg))
    except ValueError:
        return False


def shell_of(argv: Sequence[str]) -> str | None:
    """What hands a level's value to a shell as code, or None: ``sh`` for ``[sh, -c,
    "… {value}"]``, ``su`` for ``[su, -c, "… {value}"]`` (su runs it with the user's
    shell), ``ssh`` for ``[ssh, router, "… {value}"]`` (ssh joins its command words
    and the remote shell runs them). A value as an argument after a shell's script
    (``[sh, -c, 'tc … "$1"', sh, "{value}"]``) is data, not code: not warned."""
    for i, arg in enumerate(argv):
        name = posixpath.basename(arg)
        rest = list(argv[i + 1:])
        if name in SHELLS and _shell_script_has_value(rest):
            return name
        if name in _SU and _su_command_has_value(rest):
            return name
        if name == "ssh" and any(_placeholders(a) for a in _ssh_command(rest)):
            return name
    return None


_SHELL_C = re.compile(r"-[A-Za-z]*c[A-Za-z]*")  # -c, -ec, -xc …
_SU = frozenset({"su", "runuser"})
# ssh options that take an argument (ssh(1)): the host is the first word after them.
_SSH_ARG_OPTS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


def _shell_script_has_value(rest: list[str]) -> bool:
    """A shell's ``-c`` script (its first operand after the options) holds a
    placeholder; an option between holding one counts too."""
    at = next((j for j, a in enumerate(rest) if _SHELL_C.fullmatch(a)), None)
    if at is None:
        return False
    for a in rest[at + 1:]:
        if a == "--":
            continue
        if _placeholders(a):
            return True
        if not a.startswith("-"):
            return False  # the script, without a placeholder; later words are $0, $1 …
    return False


def _su_command_has_value(rest: list[str]) -> bool:
    for j, a in enumerate(rest):
        if a in ("-c", "--command", "--session-command") and j + 1 < len(rest):
            return _placeholders(rest[j + 1])
        if a.startswith(("--command=", "--session-command=")) or (
                a.startswith("-c") and not a.startswith("--") and len(a) > 2):
            return _placeholders(a)
    return False


def _ssh_command(rest: list[str]) -> list[str]:
    """The words of the remote command in ssh's arguments (after options and host)."""
    j = 0
    while j < len(rest) and rest[j].startswith("-") and rest[j] != "-":
        opt = rest[j]
        j += 1
        if opt == "--":
            break
        for k, letter in enumerate(opt[1:], start=2):
            if letter in _SSH_ARG_OPTS:
                j += 0 if k < len(opt) else 1  # -p22 holds its value; -p 22 takes the next
                break
    return rest[j + 1:]


def shell_hook_warnings(factors: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, message) for each hook command that hands a level's value to a shell;
    ``factors`` as a scenario's (models, or the dicts a stored run keeps)."""
    out = []
    for name, factor in factors.items():
        hook = factor.get("hook") if isinstance(factor, Mapping) else getattr(factor, "hook", None)
        if hook is None:
            continue
        for key in ("run", "undo"):
            argv = hook.get(key) if isinstance(hook, Mapping) else getattr(hook, key, None)
            shell = shell_of(argv or ())
            if shell:
                how = "ssh: the remote shell" if shell == "ssh" else f"{shell} -c"
                out.append((f"factors.{name}.hook.{key}",
                            f"hands a level's value to a shell ({how}): the value, also "
                            "one given by --set, runs as shell code on the lab node; put "
                            "{value} in an argument of its own, without a shell, unless you "
                            "mean it (docs/lab-hooks.md)"))
    return out
