"""DVD Store driver console output → periodic stats and the Final summary (pure).

The ds2/ds3 drivers (``ds2webdriver``, ``ds3mysqldriver`` …) print, every ``log_freq``
seconds, a line ``et= n_overall= opm= rt_tot_lastn_max_msec= rt_tot_avg_msec=
[rt_tot_sampled=] rollbacks: n= %=``; ``Stats reset`` once the warm-up is over (``et``
and the counters restart from zero there); ``Run over``; then a ``Final`` line that
accumulates everything between the reset and the end (per-operation counts and average
times, rollbacks, rollback rate), and ``n_purchase_from_start= n_rollbacks_from_start=``.

Console captures are often hard-wrapped (the Final line spans several lines, sometimes
split inside a token). A record that is not complete yet (a periodic line ends with the
rollback percentage, a Final line with ``rollback_rate = x%``) takes the following lines
until it is, unless such a line starts a record of its own.

A capture often holds more than the driver's output: its legend of the output fields, a
shell prompt, a note pasted after it. What is not the driver's own output (a line
beginning ``et=`` or ``Final`` without the figures such a record has included) is
ignored and counted (``DsResult.ignored``); only a capture without any figure is refused.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from vbench.errors import ParseError
from vbench.parsers.base import ToolParser, register

SOURCE = "dvdstore"
_NUM = r"-?\d+(?:\.\d+)?"
_PAIR = re.compile(rf"([A-Za-z_%][\w%]*)\s*=\s*({_NUM})")
_PERIODIC_DONE = re.compile(rf"%=\s*{_NUM}\s*$")
_FINAL_DONE = re.compile(rf"rollback_rate\s*=\s*{_NUM}\s*%")
_FINAL_HEAD = re.compile(r"^Final(?:\s*\([^)]*\))?\s*:\s*")
# Lines that begin something else: never glued onto an unfinished record.
_STARTS = re.compile(
    r"^\s*(?:$|et=|Final\b|Stats reset|Run over|Thread\b|Controller\b|host\b|Using\b|"
    r"Performance\b|target=|pct_new|[A-Za-z]:\\|-{5,})"
)
# The driver's own lines besides its records (settings, threads, the controller's news).
_DRIVER = re.compile(r"^(?:Thread\b|Controller\b|host\b|Using\b|Performance\b|"
                     r"db_size=|n_threads=)")
_FROM_START = re.compile(r"(n_purchase_from_start|n_rollbacks_from_start)\s*=\s*(\d+)")
_HOST_CPU = re.compile(rf"host\s+(\S+)\s+CPU%\s*=\s*({_NUM})")


@dataclass(frozen=True)
class DsInterval:
    """One periodic line. ``steady`` is True after ``Stats reset`` (the measured part)."""

    et: float
    n_overall: int
    opm: float
    rt_tot_lastn_max_ms: float | None
    rt_tot_avg_ms: float | None
    rollbacks: int | None
    rollback_pct: float | None
    steady: bool


@dataclass(frozen=True)
class DsFinal:
    """The Final line: everything between Stats reset and Run over."""

    et: float | None
    n_overall: int | None
    opm: float | None
    rt_tot_lastn_max_ms: float | None
    rt_tot_avg_ms: float | None
    n_rollbacks: int | None
    rollback_rate_pct: float | None
    counts: dict[str, int] = field(default_factory=dict)  # "login" → n_login_overall
    avg_ms: dict[str, float] = field(default_factory=dict)  # "purchase" → rt_purchase_avg_msec


@dataclass(frozen=True)
class DsResult:
    intervals: tuple[DsInterval, ...]
    stats_reset: bool
    run_over: bool
    final: DsFinal | None
    purchases_from_start: int | None = None
    rollbacks_from_start: int | None = None
    host_cpu_pct: dict[str, float] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)  # the echoed settings
    ignored: int = 0  # lines that are not the driver's output (a legend, a prompt, a note)

    @property
    def steady(self) -> tuple[DsInterval, ...]:
        return tuple(i for i in self.intervals if i.steady)

    def opm(self) -> float | None:
        """Orders per minute over the steady window: Final's, else the last steady line's."""
        if self.final is not None and self.final.opm is not None:
            return self.final.opm
        steady = self.steady
        return steady[-1].opm if steady else None

    def rt_avg_ms(self) -> float | None:
        if self.final is not None and self.final.rt_tot_avg_ms is not None:
            return self.final.rt_tot_avg_ms
        steady = self.steady
        return steady[-1].rt_tot_avg_ms if steady else None

    def rt_max_ms(self) -> float | None:
        """Largest ``rt_tot_lastn_max`` seen in the steady window (the driver keeps only
        the last 100 orders' maximum at each line)."""
        values = [i.rt_tot_lastn_max_ms for i in self.steady if i.rt_tot_lastn_max_ms is not None]
        if self.final is not None and self.final.rt_tot_lastn_max_ms is not None:
            values.append(self.final.rt_tot_lastn_max_ms)
        return max(values) if values else None

    def rollback_rate_pct(self) -> float | None:
        if self.final is not None and self.final.rollback_rate_pct is not None:
            return self.final.rollback_rate_pct
        steady = self.steady
        return steady[-1].rollback_pct if steady else None


def unwrap(text: str) -> list[str]:
    """Lines with hard-wrapped periodic and Final records joined back."""
    return [line for line, _n in _unwrapped(text)]


def _unwrapped(text: str) -> list[tuple[str, int]]:
    """:func:`unwrap`'s lines, each with the number of physical lines it was made of."""
    out: list[tuple[str, int]] = []
    pending: str | None = None
    joined = 0
    for raw in re.split(r"\r\n|\r|\n", text.replace("\ufeff", "")):
        line = raw.rstrip("\n")
        if pending is not None:
            if _complete(pending) or _STARTS.match(line):
                out.append((pending, joined))
                pending = None
            else:
                pending = _glue(pending, line)
                joined += 1
                continue
        stripped = line.strip()
        if stripped.startswith("et=") or _is_final(stripped):
            pending, joined = line, 1
        else:
            out.append((line, 1))
    if pending is not None:
        out.append((pending, joined))
    return out


def _is_final(line: str) -> bool:
    # "Final (6/30/2005 9:25:52 PM): et= …", not the doc's "Final (all stats …):" heading.
    return bool(_FINAL_HEAD.match(line)) and _FINAL_HEAD.sub("", line).startswith("et=")


def _complete(record: str) -> bool:
    if _FINAL_HEAD.match(record.strip()):
        return bool(_FINAL_DONE.search(record))
    return bool(_PERIODIC_DONE.search(record))


def _glue(head: str, tail: str) -> str:
    if head[-1:].isspace() or tail[:1].isspace():
        return head + tail
    # No space at the wrap: a value that ended right before a key ("=29" + "n_browse…")
    # lost its separator; anything else was split inside a token ("opm=13" + "6 …",
    # "rt_tot_a" + "vg_msec=182") and is glued back whole.
    if re.search(rf"={_NUM}$", head) and re.match(r"[A-Za-z_][\w%]*\s*=", tail):
        return head + " " + tail
    return head + tail


def parse_dvdstore(text: str, source: str = "<text>") -> DsResult:
    lines = _unwrapped(text)
    intervals: list[DsInterval] = []
    final: DsFinal | None = None
    reset = over = False
    from_start: dict[str, int] = {}
    cpu: dict[str, float] = {}
    params: dict[str, str] = {}
    ignored = 0
    for line, physical in lines:
        s = line.strip()
        if s.startswith("et="):
            interval = _interval(s, reset)
            if interval is None:
                ignored += physical
            else:
                intervals.append(interval)
        elif s == "Stats reset":
            reset = True
        elif s == "Run over":
            over = True
        elif _is_final(s):
            body = _final(_FINAL_HEAD.sub("", s))
            if body.opm is None and body.n_overall is None:
                ignored += physical  # "Final: et= …" in a note: not the driver's Final
            else:
                final = body
        elif s.startswith(("target=", "pct_newcustomers=")):
            params.update(re.findall(r"(\w+)=\s*(\S+)", s))
        elif s and not _DRIVER.match(s) and not _FROM_START.search(s):
            ignored += 1
        for key, value in _FROM_START.findall(s):
            from_start[key] = int(value)
        for host, value in _HOST_CPU.findall(s):
            cpu[host] = float(value)
    if not intervals and final is None:
        raise ParseError(f"{source}: no 'et= n_overall= opm=' lines and no Final line "
                         "(not DVD Store driver output?)")
    return DsResult(
        tuple(intervals), reset, over, final,
        from_start.get("n_purchase_from_start"), from_start.get("n_rollbacks_from_start"),
        cpu, params, ignored,
    )


def _pairs(text: str) -> dict[str, float]:
    text = re.sub(r"rollbacks:\s*n=", "n_rollbacks=", text)
    text = re.sub(r"(^|\s)%=", r"\1pct_rollbacks=", text)
    return {k: float(v) for k, v in _PAIR.findall(text)}


def _interval(line: str, steady: bool) -> DsInterval | None:
    """A periodic line, or None for a line that only begins like one (a legend's
    ``et= elapsed time``, a note): it lacks the figures every periodic line has."""
    v = _pairs(line)
    if any(k not in v for k in ("et", "n_overall", "opm")):
        return None
    return DsInterval(
        et=v["et"], n_overall=int(v["n_overall"]), opm=v["opm"],
        rt_tot_lastn_max_ms=v.get("rt_tot_lastn_max_msec"),
        rt_tot_avg_ms=v.get("rt_tot_avg_msec"),
        rollbacks=_int(v.get("n_rollbacks")), rollback_pct=v.get("pct_rollbacks"),
        steady=steady,
    )


def _final(body: str) -> DsFinal:
    v = _pairs(body)
    counts: dict[str, int] = {}
    avgs: dict[str, float] = {}
    for key, value in v.items():
        m = re.fullmatch(r"n_(\w+?)(?:_overall)?", key)
        if m and m.group(1) not in ("rollbacks", "overall", "rollback"):
            counts[m.group(1)] = int(value)
        m = re.fullmatch(r"rt_(\w+?)(?:_avg)?(?:_msec)?", key)
        if m and not m.group(1).startswith("tot"):
            avgs[m.group(1)] = value
    return DsFinal(
        et=v.get("et"), n_overall=_int(v.get("n_overall")), opm=v.get("opm"),
        rt_tot_lastn_max_ms=v.get("rt_tot_lastn_max", v.get("rt_tot_lastn_max_msec")),
        rt_tot_avg_ms=v.get("rt_tot_avg", v.get("rt_tot_avg_msec")),
        n_rollbacks=_int(v.get("n_rollbacks_overall", v.get("n_rollback_overall"))),
        rollback_rate_pct=v.get("rollback_rate"),
        counts=counts, avg_ms=avgs,
    )


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def result_rows(result: DsResult) -> list[dict[str, object]]:
    """One row per periodic line, then one ``final`` row (``vbench parse dvdstore``)."""
    rows: list[dict[str, object]] = [
        {"record": "interval", **asdict(i)} for i in result.intervals
    ]
    if result.final is not None:
        d = asdict(result.final)
        counts, avgs = d.pop("counts"), d.pop("avg_ms")
        row: dict[str, object] = {"record": "final", **d}
        row.update({f"n_{k}": n for k, n in counts.items()})
        row.update({f"rt_{k}_avg_ms": ms for k, ms in avgs.items()})
        row["purchases_from_start"] = result.purchases_from_start
        row["rollbacks_from_start"] = result.rollbacks_from_start
        row["ignored_lines"] = result.ignored
        rows.append(row)
    return rows


def _cli_rows(text: str, source: str) -> list[dict[str, object]]:
    return result_rows(parse_dvdstore(text, source=source))


register(ToolParser(
    "dvdstore",
    "DVD Store ds2/ds3 driver console output (periodic et=/opm= lines, Stats reset, Final).",
    _cli_rows))  # fmt: skip
