"""fio options that reach beyond the benchmark: commands run in the guest, code loaded
into fio, files and devices other than the target read or written.

They are refused in ``workload.params`` (``extra``, ``ioengine``) and in a user's job
file unless the scenario opts in with ``allow_exec: true``; the list follows fio's HOWTO
(fio 3.33) and is explained in ``drivers/fio/README.md`` ("Commands and other files").
"""

from __future__ import annotations

EXEC_OPTIONS: dict[str, str] = {
    "exec_prerun": "runs a shell command (system(3)) before the job",
    "exec_postrun": "runs a shell command (system(3)) after the job",
    "program": "names the program ioengine=exec runs",
    "arguments": "passes arguments to the program ioengine=exec runs",
    "include": "reads further job options from another file",
    "read_iolog": "replays I/O read from another file",
    "replay_redirect": "sends replayed I/O to another device",
    "write_iolog": "writes a file at any path",
    "write_hist_log": "writes log files at any path",
    "merge_blktrace_file": "writes a file at any path",
    "opendir": "does I/O to every file below a directory",
    "filename_format": "places the data files at any path",
    "cgroup": "creates control groups",
}
# A part of these patterns in single quotes is a file fio reads (buffer_pattern='f').
PATTERN_OPTIONS = frozenset({"buffer_pattern", "verify_pattern"})
ALLOW_EXEC = "set workload.params.allow_exec: true to allow it (docs/labs.md)"


def exec_engine(ioengine: str) -> str | None:
    """Why an ioengine runs code in the guest beyond fio itself (None: it does not).
    fio dlopen()s an ``external:`` engine and any engine named by a path."""
    if ioengine == "exec":
        return "runs a program (fio's exec engine)"
    if ioengine.startswith("external") or "/" in ioengine:
        return "loads a shared object into fio"
    return None


def exec_option(key: str, value: object) -> str | None:
    """Why option ``key=value`` needs allow_exec (None: it does not). ``key`` may be a
    job file's ``include FILE`` line, which has no '='."""
    name = key.split()[0] if key.strip() else key
    if name in EXEC_OPTIONS:
        return f"{name} {EXEC_OPTIONS[name]}"
    if name == "ioengine":
        why = exec_engine(str(value))
        return f"ioengine={value} {why}" if why else None
    if name in PATTERN_OPTIONS and "'" in str(value):
        return f"{name} with a part in single quotes makes fio read that file"
    return None
