"""fio driver, pure part: parameters, reading and rendering job files (the pitfall
checks of a parameter set are :mod:`vbench.workloads.fio.pitfalls`).

Nothing here touches a guest, so all of it is unit-tested. The execution part is
:mod:`vbench.workloads.fio`. User documentation: ``drivers/fio/README.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from vbench.errors import ConfigError
from vbench.templates import Templates, has_control, render_value
from vbench.workloads.base import Params
from vbench.workloads.fio.disks import check_filename
from vbench.workloads.fio.engines import engine_problem
from vbench.workloads.fio.guard import ALLOW_EXEC, EXEC_OPTIONS, exec_engine, exec_option
from vbench.workloads.fio.precondition import Precondition

KIB4 = 4096
PREPARE_IODEPTH = 32
DEFAULT_SIZE = "1g"
MIXED_RW = frozenset({"rw", "readwrite", "randrw"})
DATA_KEYS = ("dedupe_percentage", "buffer_compress_percentage", "buffer_compress_chunk")
# Extra options that shape buffer contents: the prepare job must write the same data.
_DATA_PREFIXES = ("dedupe_", "buffer_")
_DATA_FLAGS = frozenset({"scramble_buffers"})
# Options vbench sets itself, or aliases of parameters (fio accepts both spellings).
_MANAGED = frozenset(
    {
        "runtime", "ramp_time", "time_based", "name", "group_reporting", "output",
        "output-format", "blocksize", "ba", "readwrite", "rwmixwrite", "directory",
        "write_iops_log", "write_bw_log", "write_lat_log",
    }
)
_SIZE_RE = re.compile(r"^(\d+)([kmgtpe]?)(i?b)?$", re.IGNORECASE)
_PERCENT_RE = re.compile(r"^(\d{1,3})%$")
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:,/%+-]+$")
_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50, "e": 1 << 60}

RW = Literal[
    "read", "write", "randread", "randwrite", "rw", "readwrite", "randrw",
    "trim", "randtrim", "trimwrite",
]


# ----------------------------------------------------------------------------- values


def parse_size(text: str | int) -> int:
    """Bytes of a fio size such as ``4k``, ``64KiB``, ``1m``, ``4096`` (1024-based)."""
    m = _SIZE_RE.match(str(text).strip())
    if not m:
        raise ValueError(f"{text!r} is not a fio size (e.g. 4k, 64k, 1m, 4096)")
    return int(m.group(1)) * _SCALE[m.group(2).lower()]


def fio_time(seconds: float) -> str:
    """A duration as fio reads it: whole seconds, else milliseconds."""
    if seconds < 0:
        raise ConfigError(f"negative duration {seconds} s")
    if float(seconds).is_integer():
        return str(int(seconds))
    return f"{round(seconds * 1000)}ms"


def check_value(value: str, what: str) -> str:
    """A value safe to write on one job-file line (no newline or control character)."""
    if has_control(value):
        raise ValueError(f"{what}: control characters (newline, tab …) are not allowed")
    if value != value.strip():
        raise ValueError(f"{what}: leading or trailing spaces are not allowed")
    return value


def job_value(value: str, what: str) -> str:
    """A value for a job file line: :func:`check_value`, and no ';' or '#' (fio cuts a
    value at an inline comment, so the rest would be lost without a word)."""
    check_value(value, what)
    if ";" in value or "#" in value:
        raise ValueError(f"{what}: ';' and '#' start a comment in a fio job file")
    return value


def _size_field(value: Any, allow_percent: bool) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError("expected a fio size such as 4k, 64k, 1m or 10g")
    text = str(value).strip()
    if allow_percent and _PERCENT_RE.match(text):
        if not 1 <= int(text[:-1]) <= 100:
            raise ValueError("a percentage size must be 1%..100%")
        return text
    if parse_size(text) <= 0:
        raise ValueError("size must be greater than 0")
    return text


def _flag(value: bool) -> str:
    return "1" if value else "0"


def _extra_key(key: str, info: ValidationInfo) -> str:
    """One ``extra`` option name, checked where it stands (file:line:column of the key)."""
    if not _KEY_RE.match(key):
        raise ValueError(f"{key!r} is not a fio option name (lower case, digits, _)")
    if key in FioParams.model_fields or key in _MANAGED:
        raise ValueError(
            f"{key!r} is set by vbench or is a parameter of its own; "
            "use the parameter (or the scenario's phases for times)"
        )
    if key in EXEC_OPTIONS and not info.data.get("allow_exec"):
        raise ValueError(f"{key} {EXEC_OPTIONS[key]}; {ALLOW_EXEC}")
    return key


# ----------------------------------------------------------------------------- params


class FioParams(Params):
    """Parameters of the ``fio`` workload (``workload.params`` in a scenario)."""

    rw: RW = Field("randread", description="I/O pattern (fio rw=)")
    rwmixread: int | None = Field(None, ge=0, le=100, description="% reads in a mixed rw")
    bs: str = Field("4k", description="block size, e.g. 4k, 64k, 1m")
    iodepth: int = Field(1, ge=1, le=65536, description="outstanding I/Os per job (OIO)")
    numjobs: int = Field(1, ge=1, le=4096, description="jobs (threads of I/O) per guest")
    size: str | None = Field(
        None, description=f"bytes of the target to use (default {DEFAULT_SIZE} for vbench's "
        "own data file, the whole device for a named filename); also 10%"
    )
    direct: bool = Field(True, description="O_DIRECT I/O, bypassing the guest page cache")
    # Before ioengine and extra: their validators read it.
    allow_exec: bool = Field(
        False, description="allow fio options that run commands in the guests or read or "
        "write other files (exec_prerun, exec_postrun, ioengine=exec or external, "
        "write_iolog …) in extra, ioengine and job_file; shown in the plan and the report"
    )
    ioengine: str = Field(
        "libaio", description="fio I/O engine: one fio documents (libaio, io_uring, psync …)"
    )
    filename: str | None = Field(
        None, description="absolute target path in the guest, e.g. /dev/sdb, or disk:N, the "
        "N-th data disk of vm.disks (or of the lab node's disks), found in each guest; "
        "several separated by ':' (disk:1:disk:2) (default: a data file in the guest's run "
        "directory)"
    )
    dedupe_percentage: int | None = Field(None, ge=0, le=100, description="% dedupable blocks")
    buffer_compress_percentage: int | None = Field(
        None, ge=0, le=100, description="% compressibility of each block"
    )
    buffer_compress_chunk: str | None = Field(None, description="compressible chunk size")
    randrepeat: bool | None = Field(
        None, description="seed the random generators predictably (fio's default is true)"
    )
    blockalign: str | None = Field(None, description="alignment of random I/O offsets")
    norandommap: bool | None = Field(None, description="do not track random block coverage")
    random_distribution: str | None = Field(None, description="e.g. zipf:1.2, pareto:0.9")
    percentage_random: int | None = Field(None, ge=0, le=100, description="% random I/O")
    rate_iops: int | None = Field(None, ge=1, description="cap IOPS per job")
    extra: dict[Annotated[str, AfterValidator(_extra_key)], str | int | float | bool] = Field(
        default_factory=dict, description="further fio options (key: value); options that "
        "run commands or touch other files need allow_exec"
    )
    job_file: str | None = Field(
        None, description="your own fio job file (path on the controller); replaces the "
        "generated measure job, vbench only sets runtime/ramp_time/time_based"
    )
    prepare: Literal["auto", "always", "never"] = Field(
        "auto", description="run the prepare (fill) phase; auto = when dedupe or "
        "compression options are given"
    )
    prepare_size: str | None = Field(None, description="bytes the prepare phase fills "
                                     "(default: size)")
    precondition: Precondition | None = Field(
        None, description="SNIA PTS preconditioning of the named target before the run's "
        "first trial (point 1, trial 1): {rw: write, bs: 128k, passes: 2} writes it whole "
        "passes times (docs/storage.md)",
    )
    per_second_logs: bool = Field(
        False, description="fio's per-second IOPS and latency logs (write_iops_log, "
        "write_lat_log, log_avg_msec=1000): kept whole per guest as a time series, "
        "trimmed to the steady window for the iops_ts_*/lat_ts_* figures"
    )

    @field_validator("bs", "buffer_compress_chunk", "blockalign", mode="before")
    @classmethod
    def _block_sizes(cls, v: Any) -> Any:
        return _size_field(v, allow_percent=False)

    @field_validator("size", "prepare_size", mode="before")
    @classmethod
    def _sizes(cls, v: Any) -> Any:
        return _size_field(v, allow_percent=True)

    @field_validator("ioengine")
    @classmethod
    def _engine(cls, v: str) -> str:
        problem = engine_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("ioengine", "random_distribution")
    @classmethod
    def _tokens(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and not _TOKEN_RE.match(v):
            raise ValueError("only letters, digits and _ . : , / % + - are allowed")
        if info.field_name == "ioengine" and v is not None and not info.data.get("allow_exec"):
            why = exec_engine(v)
            if why:
                raise ValueError(f"ioengine={v} {why}; {ALLOW_EXEC}")
        return v

    @field_validator("filename")
    @classmethod
    def _filename(cls, v: str | None) -> str | None:
        if v is None:
            return v
        job_value(v, "filename")
        return check_filename(v)

    @field_validator("job_file")
    @classmethod
    def _job_file(cls, v: str | None) -> str | None:
        return check_value(v, "job_file") if v is not None else v

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        for key, value in v.items():
            if isinstance(value, str):
                job_value(value, f"extra.{key}")
                why = exec_option(key, value)
                if why and not info.data.get("allow_exec"):
                    raise ValueError(f"extra.{key}: {why}; {ALLOW_EXEC}")
        return v

    @model_validator(mode="after")
    def _precondition_needs_a_named_target(self) -> FioParams:
        if self.precondition is not None and self.filename is None:
            raise ValueError("precondition conditions the device or file you name: set "
                             "filename (vbench's own data file is new in every trial)")
        return self

    @model_validator(mode="after")
    def _prepare_size_needs_prepare(self) -> FioParams:
        if self.prepare_size is not None and self.prepare == "never":
            raise ValueError("prepare_size is set but prepare is 'never'")
        return self

    # -- derived -------------------------------------------------------------------

    def has_data_target(self) -> bool:
        """Are dedupe or compression settings given (in params)?"""
        return any(getattr(self, k) is not None for k in DATA_KEYS)

    def needs_prepare(self) -> bool:
        if self.prepare == "always":
            return True
        return self.prepare == "auto" and self.has_data_target()

    def needs_layout(self) -> bool:
        """Create vbench's own data file before the run (when nothing else fills it)."""
        return self.filename is None and self.job_file is None and not self.needs_prepare()

    def extra_options(self) -> list[tuple[str, str]]:
        return [(k, _render_extra(v)) for k, v in self.extra.items()]

    def data_options(self) -> list[tuple[str, str]]:
        """Options shaping buffer contents, which the prepare job must repeat."""
        opts = [(k, str(getattr(self, k))) for k in DATA_KEYS if getattr(self, k) is not None]
        if opts:
            # Fresh buffer contents for every I/O, else every block would be identical.
            opts.append(("refill_buffers", "1"))
        opts += [
            (k, v) for k, v in self.extra_options()
            if k.startswith(_DATA_PREFIXES) or k in _DATA_FLAGS
        ]
        return opts


def _render_extra(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return _flag(value)
    return str(value)


# ----------------------------------------------------------------------------- job files


@dataclass(frozen=True)
class JobOption:
    section: str
    key: str
    value: str  # "" for a bare flag
    line: int


def scan_job_file(text: str) -> list[JobOption]:
    """The options of a fio job file, in order (comments and blank lines skipped)."""
    out: list[JobOption] = []
    section = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, _, value = line.partition("=")
        out.append(JobOption(section, key.strip(), value.strip(), number))
    return out


def exec_lines(options: Iterable[JobOption]) -> Iterable[tuple[JobOption, str]]:
    """The options of a job file that run commands or touch other files, with why."""
    for o in options:
        why = exec_option(o.key, o.value)
        if why:
            yield o, why


# ----------------------------------------------------------------------------- rendering


# Job files are read line by line by fio: the renderer refuses a control character.
_TEMPLATES = Templates.for_driver("fio")


def _render(template: str, **values: Any) -> str:
    return _TEMPLATES.render(template, **values)


def target_size(params: FioParams, own_file: bool) -> str | None:
    """``size=`` of the measured job: the default applies only to vbench's own file."""
    if params.size is not None:
        return params.size
    return DEFAULT_SIZE if own_file else None


def render_measure(
    params: FioParams, warmup: float, steady: float, filename: str, *, header: str = "",
    log_prefix: str | None = None,
) -> str:
    """The measured job (time based: warm-up = ramp_time, steady state = runtime).
    ``log_prefix``: where the per-second logs go when ``per_second_logs`` is on."""
    if steady <= 0:
        raise ConfigError("the fio workload needs a steady phase longer than 0 s")
    check_value(filename, "filename")
    p = params
    options: list[tuple[str, str]] = [("rw", p.rw)]
    if p.rwmixread is not None and p.rw in MIXED_RW:
        options.append(("rwmixread", str(p.rwmixread)))
    options += [("bs", p.bs), ("iodepth", str(p.iodepth)), ("numjobs", str(p.numjobs))]
    for key in ("randrepeat", "norandommap"):
        value = getattr(p, key)
        if value is not None:
            options.append((key, _flag(value)))
    for key in ("blockalign", "random_distribution", "percentage_random", "rate_iops"):
        value = getattr(p, key)
        if value is not None:
            options.append((key, str(value)))
    data = p.data_options()
    data_keys = {k for k, _ in data}
    options += data
    options += [(k, v) for k, v in p.extra_options() if k not in data_keys]
    if p.per_second_logs and log_prefix is not None:
        check_value(log_prefix, "log directory")
        # Epoch time stamps: the series lines up with the run's phase marks.
        options += [("write_iops_log", log_prefix), ("write_lat_log", log_prefix),
                    ("log_avg_msec", "1000"), ("log_unix_epoch", "1")]
    return _render(
        "measure.fio.j2",
        header=header,
        ioengine=p.ioengine,
        direct=_flag(p.direct),
        filename=filename,
        size=target_size(p, own_file=p.filename is None),
        ramp_time=fio_time(warmup) if warmup > 0 else None,
        runtime=fio_time(steady),
        options=options,
    )


def render_prepare(params: FioParams, filename: str, *, header: str = "") -> str:
    """The fill job: 100 % sequential 4 KiB writes over the whole target (the storage
    studies' fill, see docs/storage.md)."""
    check_value(filename, "filename")
    size = params.prepare_size or target_size(params, own_file=params.filename is None)
    return _render(
        "prepare.fio.j2",
        header=header,
        ioengine=params.ioengine,
        filename=filename,
        size=size,
        iodepth=PREPARE_IODEPTH,
        options=params.data_options(),
    )


def render_layout(params: FioParams, filename: str, *, header: str = "") -> str:
    """Create vbench's own data file before the measured run, so that fio's file
    layout does not eat into the warm-up window."""
    check_value(filename, "filename")
    return _render(
        "layout.fio.j2",
        header=header,
        filename=filename,
        size=target_size(params, own_file=True),
    )


def adapt_user_job(
    text: str, warmup: float, steady: float, directory: str, *, header: str = "",
    allow_exec: bool = False, no_ramp: bool = False,
) -> str:
    """A user's job file with vbench's timing appended to every section.

    fio applies the last value of a key in a section, so appending ``runtime`` etc.
    at the end of each section (global and jobs) makes the scenario's phases win.
    A default ``directory`` is added only when the file names no file or directory
    itself: fio would otherwise prefix even an absolute filename with it. The file is
    read again when the trial starts, so its options are checked again here.
    ``no_ramp``: ``ramp_time=0`` even without a warm-up (``phases.warmup: auto``: the
    warm-up is a fio of its own, so a ramp_time of the file must not run again).
    """
    if steady <= 0:
        raise ConfigError("the fio workload needs a steady phase longer than 0 s")
    directory = render_value(directory, "fio", "fio job file directory")
    timing = ["time_based=1", f"runtime={fio_time(steady)}"]
    if warmup > 0 or no_ramp:
        timing.append(f"ramp_time={fio_time(warmup)}")
    options = scan_job_file(text)
    if not allow_exec:
        for o, why in exec_lines(options):
            raise ConfigError(f"fio job file line {o.line}: {why}; {ALLOW_EXEC}")
    keys = {o.key for o in options}
    out = [f"; {render_value(header, 'line', 'fio job file header')}"] if header else []
    if not keys & {"filename", "directory", "filename_format"}:
        out += ["[global]", f"directory={directory}", ""]
    in_section = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            if in_section:
                out += [*timing, ""]
            in_section = True
        out.append(raw)
    if in_section:
        out += [*timing]
    return "\n".join(out) + "\n"
