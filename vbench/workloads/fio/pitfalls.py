"""fio driver: the pitfalls of a parameter set or a user's job file, found before the
run starts (errors stop it). Most are the FIO dedup study's: with dedupe/compression
options, fio's repeatable seeds, unaligned blocks or zeroed buffers make every VMDK
write the same data and the datastore's measured ratio meaningless."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vbench.config.localfiles import shown_path
from vbench.workloads.base import Finding
from vbench.workloads.fio.guard import ALLOW_EXEC, exec_engine, exec_option
from vbench.workloads.fio.jobs import (
    DATA_KEYS,
    KIB4,
    MIXED_RW,
    FioParams,
    JobOption,
    exec_lines,
    parse_size,
    scan_job_file,
)

_VARIABLE_BS = frozenset({"bsrange", "blocksize_range", "bssplit", "bs_unaligned"})

_RANDREPEAT_MSG = (
    "randrepeat is {state} while dedupe/compression options are set: with fio's "
    "predictable seeds every VMDK would get the same data stream and the datastore "
    "would report ~80% dedup for a 0% setting; {fix}"
)
_FIX_PARAM = "set randrepeat: false (fio randrepeat=0)"
_FIX_FILE = "add randrepeat=0 to the [global] section"
_NEVER_MSG = (
    "prepare is 'never' with dedupe/compression options: data written earlier with "
    "dd, zeros or random data gives meaningless dedup/compression ratios; let vbench "
    "prepare the target (prepare: auto) unless you prepared it with the same settings"
)
_ALIGN_MSG = (
    "{what} {value} is not a multiple of 4 KiB: fio lays out duplicate and compressible "
    "content per block, and blocks that do not line up with the datastore's 4 KiB dedup "
    "grain make the measured ratio meaningless"
)
_ZERO_MSG = (
    "zero_buffers with dedupe/compression options writes all-zero blocks, which every "
    "datastore dedups and compresses completely; remove zero_buffers"
)
_RANDSEED_MSG = (
    "randseed with dedupe/compression options gives every guest the same seed, hence "
    "the same data stream; remove randseed"
)


def findings(params: FioParams) -> list[Finding]:
    """Pitfalls of a parameter set (errors stop the run before it starts)."""
    out: list[Finding] = []
    data = params.has_data_target()
    if data and params.prepare == "never":
        out.append(Finding("warning", "prepare", _NEVER_MSG))
    if data and params.job_file is None:
        out += _data_findings(params)
    if params.rwmixread is not None and params.rw not in MIXED_RW:
        out.append(Finding("warning", "rwmixread", f"rwmixread is ignored with rw: {params.rw}"))
    if params.job_file is not None:
        out += _job_file_findings(params)
    if params.allow_exec:
        out.append(Finding("warning", "allow_exec", _allow_exec_note(params)))
    return out


def _allow_exec_note(params: FioParams) -> str:
    """What allow_exec lets through at this point: said in the plan and at the run's start."""
    used = [f"extra.{k}" for k, v in params.extra.items() if exec_option(k, v)]
    if exec_engine(params.ioengine):
        used.append(f"ioengine={params.ioengine}")
    if params.job_file is not None:
        used.append(f"whatever job file {params.job_file} holds")
    what = ", ".join(used) if used else "no such option is set at this point"
    return ("allow_exec is on: fio options that run commands in every target guest or "
            f"read or write other files are passed as written ({what})")


def _data_findings(params: FioParams) -> list[Finding]:
    out: list[Finding] = []
    if params.randrepeat is not False:
        state = "true" if params.randrepeat else "not set (fio's default is 1)"
        out.append(
            Finding("error", "randrepeat", _RANDREPEAT_MSG.format(state=state, fix=_FIX_PARAM))
        )
    for name in ("bs", "blockalign"):
        value = getattr(params, name)
        if value is not None and parse_size(value) % KIB4:
            out.append(Finding("error", name, _ALIGN_MSG.format(what=name, value=value)))
    if _flag_set(params.extra.get("zero_buffers")):
        out.append(Finding("error", "extra.zero_buffers", _ZERO_MSG))
    if "randseed" in params.extra:
        out.append(Finding("error", "extra.randseed", _RANDSEED_MSG))
    if _flag_set(params.extra.get("allrandrepeat")):
        out.append(Finding("error", "extra.allrandrepeat", _RANDREPEAT_MSG.format(
            state="forced on by allrandrepeat", fix="remove allrandrepeat")))
    for key in sorted(_VARIABLE_BS & params.extra.keys()):
        out.append(Finding("error", f"extra.{key}", _ALIGN_MSG.format(
            what=key, value=params.extra[key])))
    if not params.direct:
        out.append(Finding(
            "warning", "direct", "direct: false with dedupe/compression options: the guest "
            "page cache reshapes the writes the datastore sees"))
    return out


def _flag_set(value: Any) -> bool:
    if value is None:
        return False
    return str(value).strip().lower() not in {"0", "false", "no", "off"}


def _job_file_findings(params: FioParams) -> list[Finding]:
    path = Path(params.job_file or "").expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # the name once, cut if very long
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return [Finding("error", "job_file",
                        f"cannot read job file {shown_path(path)}: {reason}")]
    options = scan_job_file(text)
    where = f"job file {path}"
    out: list[Finding] = []
    ignored = sorted(params.model_fields_set & _MEASURE_ONLY)
    if ignored:
        out.append(Finding("warning", "job_file", f"{', '.join(ignored)} ignored: the job "
                           f"file {path} defines the measured job"))
    if any(o.key.startswith("include ") or o.key == "include" for o in options):
        out.append(Finding("warning", "job_file", f"{where} uses include: only the job "
                           "file itself is copied to the guests"))
    file_data = any(o.key in DATA_KEYS for o in options)
    if file_data and not params.has_data_target() and params.prepare != "never":
        out.append(Finding("warning", "job_file", f"{where} sets dedupe/compression options "
                           "but params do not: the prepare phase uses params, so set the "
                           "same dedupe_percentage/buffer_compress_percentage there"))
    if params.needs_prepare() and params.filename is None:
        out.append(Finding("error", "filename", "with a job_file the prepare phase cannot "
                           "know which file or device your jobs use: set filename to it"))
    if file_data or params.has_data_target():
        out += [Finding(lvl, "job_file", f"{where}: {msg}") for lvl, msg in _scan_data(options)]
    if not params.allow_exec:
        out += [Finding("error", "job_file", f"{where} line {o.line}: {why}; {ALLOW_EXEC}")
                for o, why in exec_lines(options)]
    return out


_MEASURE_ONLY = frozenset(
    {
        "rw", "rwmixread", "bs", "iodepth", "numjobs", "direct", "randrepeat", "blockalign",
        "norandommap", "random_distribution", "percentage_random", "rate_iops", "extra",
    }
)


def _scan_data(options: list[JobOption]) -> Iterable[tuple[str, str]]:
    repeats = [o for o in options if o.key == "randrepeat"]
    if not repeats or any(_flag_set(o.value) or o.value == "" for o in repeats):
        state = "not set to 0 everywhere" if repeats else "not set (fio's default is 1)"
        yield "error", _RANDREPEAT_MSG.format(state=state, fix=_FIX_FILE)
    for o in options:
        if o.key == "zero_buffers" and (o.value == "" or _flag_set(o.value)):
            yield "error", f"line {o.line}: {_ZERO_MSG}"
        elif o.key == "randseed":
            yield "error", f"line {o.line}: {_RANDSEED_MSG}"
        elif o.key in _VARIABLE_BS:
            yield "error", f"line {o.line}: " + _ALIGN_MSG.format(what=o.key, value=o.value)
        elif o.key in {"bs", "blocksize", "blockalign", "ba"}:
            for part in o.value.split(","):
                if _unaligned(part):
                    yield "error", f"line {o.line}: " + _ALIGN_MSG.format(
                        what=o.key, value=part)


def _unaligned(value: str) -> bool:
    try:
        return parse_size(value) % KIB4 != 0
    except ValueError:
        return False  # ${VAR} substitutions and ranges cannot be checked here
