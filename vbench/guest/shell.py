"""The small POSIX sh scripts vbench sends to guests, built only from quoted parts.

Every value that may come from a scenario (arguments, paths, environment values) goes
through :func:`shlex.quote`; environment names are checked against the sh grammar.
The scripts use only POSIX sh and dash-compatible ``kill -SIG -PGID`` (dash has no ``--``).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence

from vbench.errors import ConfigError

PID_MARKER = "__vbench_pid="
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def argv_text(argv: Sequence[str | os.PathLike[str]]) -> str:
    """The argv as one sh-safe command line."""
    if not argv:
        raise ConfigError("empty command")
    return shlex.join(os.fspath(a) for a in argv)


def prelude(cwd: str | None, env: Mapping[str, str] | None) -> list[str]:
    """Lines that change directory and export variables before a command."""
    lines: list[str] = []
    if cwd is not None:
        lines.append(f"cd -- {shlex.quote(cwd)} || exit 125")
    for name, value in (env or {}).items():
        if not _ENV_NAME.match(name):
            raise ConfigError(f"invalid environment variable name {name!r}")
        lines.append(f"export {name}={shlex.quote(str(value))}")
    return lines


def foreground(
    body: str, cwd: str | None, env: Mapping[str, str] | None, *, stdin: bool = False
) -> str:
    """The exec request for a foreground command.

    sshd starts each session command in a new session, so the shell's pid is its process
    group id: the first stdout line reports it so a timeout can kill the whole group.
    ``exec`` keeps that pid whatever the login shell is. Without ``stdin`` the command
    reads /dev/null, so the controller never has to send EOF on the channel (paramiko can
    send that EOF after the channel's CLOSE when a command ends at once, and sshd then
    drops the whole connection). With ``stdin`` the shell reads its input to the end
    before it exits, whatever the command read: the channel cannot close before the
    controller's EOF has arrived, so nothing the controller sends can follow the CLOSE.
    """
    drain = "trap 'cat >/dev/null' EXIT" if stdin else "exec </dev/null"
    lines = [f"echo {PID_MARKER}$$", drain]
    script = "\n".join([*lines, *prelude(cwd, env), body])
    return f"exec /bin/sh -c {shlex.quote(script)}"


def background(
    argv: Sequence[str | os.PathLike[str]],
    log: str,
    cwd: str | None,
    env: Mapping[str, str] | None,
) -> str:
    """Start argv under setsid with output to ``log``; print the new process group id
    and, where the guest has /proc, its leader's start time (see :mod:`vbench.guest.ledger`).

    The inner shell records the exit status in ``log.rc`` (written then renamed, so a
    reader never sees half a number).
    """
    rc = log + ".rc"
    inner = "\n".join(
        [
            "{",
            *prelude(cwd, env),
            argv_text(argv),
            f"}} >{shlex.quote(log)} 2>&1 </dev/null",
            "s=$?",
            f"echo $s >{shlex.quote(rc + '.tmp')} && mv -f {shlex.quote(rc + '.tmp')} "
            f"{shlex.quote(rc)}",
        ]
    )
    parent = os.path.dirname(log)
    lines = []
    if parent:
        lines.append(f"mkdir -p -- {shlex.quote(parent)} || exit 1")
    lines += [
        f"rm -f -- {shlex.quote(rc)}",
        "command -v setsid >/dev/null 2>&1 || { echo 'setsid not found' >&2; exit 127; }",
        # The background job is not a group leader, so setsid(1) does not fork: $! is
        # the new session's leader, i.e. the process group to signal later.
        f"setsid /bin/sh -c {shlex.quote(inner)} >/dev/null 2>&1 </dev/null &",
        "p=$!",
        # Until the child has made its own group (setsid(2) runs a moment after the
        # fork): a probe in between would find no group -p and no exit status, and
        # report a process that has not even started as gone. Bounded: ~5 s.
        "i=0",
        "while [ $i -lt 500 ] && ! kill -0 -$p 2>/dev/null && kill -0 $p 2>/dev/null; do",
        "  sleep 0.01 2>/dev/null || sleep 1; i=$((i + 1))",
        "done",
        # Field 22 of /proc/PID/stat is ${20} once "pid (comm) " is cut off (comm may
        # hold spaces). It does not change when the process execs, so reading it late is
        # fine; a process already gone reports no start time.
        's=$(cat /proc/$p/stat 2>/dev/null) && s=${s##*) } && set -- $s && '
        'echo "$p ${20}" || echo "$p"',
    ]
    return "\n".join(lines)


def probe(pgid: int, log: str) -> str:
    """Print ``rc N alive|done``, ``run`` or ``gone`` for a background process group."""
    rc = shlex.quote(log + ".rc")
    grp = f"kill -0 -{pgid} 2>/dev/null"
    return "\n".join(
        [
            f"if [ -f {rc} ]; then s=$(cat {rc}); if {grp}; then echo \"rc $s alive\"; "
            'else echo "rc $s done"; fi',
            f"elif {grp}; then echo run",
            f"elif [ -f {rc} ]; then echo \"rc $(cat {rc}) done\"",
            "else echo gone; fi",
        ]
    )


def kill_groups(pgids: Sequence[int], grace: float) -> str:
    """TERM each process group, KILL what is left after ``grace`` seconds.

    Prints ``none`` (nothing was running), ``term`` or ``kill``. Falls back to the single
    pid when it is not a group leader. Where ps can list process groups, a group whose
    members are all zombies counts as ended: they only wait for init to reap them.
    """
    ps = " ".join(str(int(p)) for p in pgids)
    ticks = max(1, round(grace * 10))
    return "\n".join(
        [
            "live() {",
            "  [ -z \"$has_ps\" ] && return 0",
            "  n=$(ps -e -o pgid= -o stat= 2>/dev/null | "
            "awk -v g=\"$1\" '$1 == g && $2 !~ /^Z/ { n++ } END { print n + 0 }')",
            "  [ \"${n:-1}\" -gt 0 ]",
            "}",
            "alive() {",
            f"  for p in {ps}; do",
            "    { kill -0 -$p 2>/dev/null || kill -0 $p 2>/dev/null; } && live $p && return 0",
            "  done",
            "  return 1",
            "}",
            "has_ps=; ps -e -o pgid= -o stat= >/dev/null 2>&1 && has_ps=1",
            "alive || { echo none; exit 0; }",
            f"for p in {ps}; do kill -TERM -$p 2>/dev/null || kill -TERM $p 2>/dev/null; done",
            "i=0",
            "while alive; do",
            f"  if [ $i -ge {ticks} ]; then",
            f"    for p in {ps}; do kill -KILL -$p 2>/dev/null || kill -KILL $p 2>/dev/null; done",
            "    echo kill; exit 0",
            "  fi",
            "  sleep 0.1; i=$((i+1))",
            "done",
            "echo term",
        ]
    )
