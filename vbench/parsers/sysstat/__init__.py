"""sysstat (and dstat) outputs → tidy records: time, object, instance, counter, value, unit.

Formats: ``sadf -j`` (any activity set, sysstat 11–12), ``iostat -o JSON``, ``mpstat -o
JSON``, ``sar`` text (12- or 24-hour clock), ``iostat`` text and ``dstat --output`` CSV;
:func:`parse_sysstat` tells them apart. Pure functions: no I/O.

Objects and counters keep the tool's own names (``cpu`` / ``usr``, ``disk`` / ``await``,
``net-dev`` / ``rxpck`` …) so that the sysstat manual explains them; the instance is the
CPU, device or interface (``all`` for the CPU total; mpstat's ``-1`` is mapped to it).
``time`` is epoch seconds (UTC); a sample the tool printed without a time stamp has
NaN, and ``sample`` numbers the samples in every case.
"""

from __future__ import annotations

import calendar
import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from vbench.errors import ParseError
from vbench.lazy import lazy_module
from vbench.parsers.base import ToolParser, register

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")

COLUMNS = ("sample", "time", "object", "instance", "counter", "value", "unit")
_CPU_FIELDS = {"usr", "user", "nice", "sys", "system", "iowait", "steal", "irq", "soft",
               "guest", "gnice", "idle", "hiq", "siq", "idl", "wai"}  # fmt: skip
_KB = {"memfree", "avail", "memused", "buffers", "cached", "commit", "active", "inactive",
       "dirty", "kbmemfree", "kbavail", "kbmemused", "kbbuffers", "kbcached", "kbcommit",
       "kbactive", "kbinact", "kbdirty", "swpfree", "swpused", "swpcad", "hugfree",
       "hugused", "hugrsvd", "hugsurp"}  # fmt: skip
_PER_SECOND = {"tps", "rtps", "wtps", "dtps", "rxpck", "txpck", "rxcmp", "txcmp", "rxmcst",
               "proc", "cswch", "intr", "pswpin", "pswpout", "fault", "majflt", "pgfree",
               "pgscank", "pgscand", "pgsteal", "rxerr", "txerr", "coll", "rxdrop", "txdrop",
               "txcarr", "rxfram", "rxfifo", "txfifo", "bread", "bwrtn", "bdscd"}  # fmt: skip
_KB_PER_SECOND = {"rkB", "wkB", "dkB", "rxkB", "txkB", "pgpgin", "pgpgout"}


def unit_of(obj: str, counter: str) -> str:
    """The unit of a sysstat counter ("" for counts, ratios and loads)."""
    c = counter
    if c.startswith("%") or c.endswith("-percent") or c in ("util", "percent-capacity"):
        return "%"
    if obj in ("cpu-load", "avg-cpu", "node-load", "cpu", "total cpu usage") and (
        c in _CPU_FIELDS or c.startswith("%")
    ):
        return "%"
    if c.endswith("await") or c.endswith("svctm"):
        return "ms"
    if (c.endswith("/s") and c.startswith(("kB", "rkB", "wkB", "dkB"))) or c in _KB_PER_SECOND:
        return "kB/s"
    if c.endswith("/s") and c.startswith("MB"):
        return "MB/s"
    if c.endswith("/s") or c in _PER_SECOND:
        return "/s"
    if c in _KB:
        return "kB"
    if c.startswith("MB"):
        return "MB"
    if c in ("areq-sz", "rareq-sz", "wareq-sz", "dareq-sz"):
        return "kB"
    if c == "frequency":
        return "MHz"
    return ""


@dataclass
class SysstatData:
    """The records of one file (of one host), and what was irregular in it."""

    host: str | None
    frame: pd.DataFrame
    tool: str
    notes: list[str] = field(default_factory=list)
    cpus: int | None = None  # "number-of-cpus" when the tool states it

    @property
    def samples(self) -> int:
        return int(self.frame["sample"].nunique()) if len(self.frame) else 0


class _Rows:
    def __init__(self) -> None:
        self.rows: list[tuple[int, float, str, str, str, float | None, str]] = []

    def add(self, sample: int, t: float, obj: str, inst: str, counter: str, v: Any) -> None:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return  # text fields (battery status …) are not figures
        value = float(v)
        self.rows.append((sample, t, obj, inst, counter,
                          None if math.isnan(value) else value, unit_of(obj, counter)))  # fmt: skip

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(COLUMNS))


# -- JSON (sadf -j, iostat -o JSON, mpstat -o JSON) ------------------------------------------


def _walk(rows: _Rows, sample: int, t: float, obj: str, value: Any, inst: str = "") -> None:
    """One activity of one sample: scalars are counters of ``obj``; nested objects are
    activities of their own; lists hold one instance per element (named by its first key)."""
    if isinstance(value, dict):
        for key, v in value.items():
            if isinstance(v, dict | list):
                _walk(rows, sample, t, key, v, inst)
            else:
                rows.add(sample, t, obj, inst, key, v)
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, dict) or not item:
                continue
            if set(item) == {"name", "value"}:  # mpstat interrupts: [{name, value}]
                rows.add(sample, t, obj, inst, str(item["name"]), item["value"])
                continue
            key = next(iter(item))
            name = str(item[key]).strip()
            name = "all" if name == "-1" else name
            rest = {k: v for k, v in item.items() if k != key}
            for k, v in rest.items():
                if isinstance(v, list):
                    _walk(rows, sample, t, obj, v, name)
                elif not isinstance(v, dict):
                    rows.add(sample, t, obj, name, k, v)


def _host_date(host: dict[str, Any]) -> tuple[int, int, int] | None:
    text = str(host.get("date") or host.get("file-date") or "")
    for fmt in ("%Y-%m-%d", "%m/%d/%y", "%m/%d/%Y", "%d/%m/%y"):
        try:
            d = datetime.strptime(text, fmt)
            return d.year, d.month, d.day
        except ValueError:
            continue
    return None


class _Clock:
    """Time-of-day stamps on a host date: seconds since the epoch, counting midnights."""

    def __init__(self, day: tuple[int, int, int] | None, notes: list[str]) -> None:
        self.base = calendar.timegm((*day, 0, 0, 0)) if day else None
        self.last = -1.0
        self.days = 0
        self.notes = notes

    def time_of_day(self, text: str) -> float:
        m = re.match(r"^(\d{1,2}):(\d{2}):(\d{2})\s*([AP]M)?$", text.strip(), re.I)
        if m is None or self.base is None:
            return math.nan
        h = int(m.group(1)) % 12 if m.group(4) else int(m.group(1))
        if (m.group(4) or "").upper() == "PM":
            h += 12
        tod = h * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        if self.last - tod > 12 * 3600:
            self.days += 1
        self.last = tod
        note = "time stamps carry no time zone: read as UTC"
        if note not in self.notes:
            self.notes.append(note)
        return self.base + self.days * 86400 + tod


def _stamp(stamp: Any, clock: _Clock) -> float:
    if isinstance(stamp, dict):  # sadf: {"date", "time", "utc": 1 | "tz": "UTC"}
        try:
            d = datetime.strptime(f"{stamp['date']} {stamp['time']}", "%Y-%m-%d %H:%M:%S")
        except (KeyError, ValueError):
            return math.nan
        if stamp.get("utc", 1) == 0 and str(stamp.get("tz", "UTC")) not in ("UTC", "GMT"):
            clock.notes.append("time stamps are local time of an unstated zone: read as UTC")
        return float(calendar.timegm(d.timetuple()))
    if isinstance(stamp, str) and stamp.strip():
        text = stamp.strip()
        for fmt in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%m/%d/%y %H:%M:%S"):
            try:
                d = datetime.strptime(text, fmt)
            except ValueError:
                continue
            return d.timestamp() if d.tzinfo else float(calendar.timegm(d.timetuple()))
        return clock.time_of_day(text)
    return math.nan


def parse_sysstat_json(text: str, source: str = "<json>") -> list[SysstatData]:
    """``sadf -j``, ``iostat -o JSON`` or ``mpstat -o JSON`` output: one entry per host."""
    try:
        doc = json.loads(text)
        hosts = doc["sysstat"]["hosts"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ParseError(f"{source}: not sysstat JSON ({exc})") from exc
    out = []
    for host in hosts:
        notes: list[str] = []
        clock = _Clock(_host_date(host), notes)
        rows = _Rows()
        stats = host.get("statistics") or []
        tool = "sadf"
        for i, entry in enumerate(stats):
            stamp = entry.get("timestamp")
            if not isinstance(stamp, dict):
                tool = "iostat" if "disk" in entry or "avg-cpu" in entry else "mpstat"
            t = _stamp(stamp, clock)
            for activity, value in entry.items():
                if activity != "timestamp":
                    _walk(rows, i, t, activity, value)
        if not stats:
            notes.append("no statistics in the file")
        cpus = host.get("number-of-cpus")
        out.append(SysstatData(host.get("nodename"), rows.frame(), tool, notes,
                               cpus if isinstance(cpus, int) else None))  # fmt: skip
    return out


# -- text (sar, iostat) -----------------------------------------------------------------------

_BANNER = re.compile(r"^Linux \S+ \((?P<host>[^)]*)\)\s+(?P<date>\S+)")
_SAR_ROW = re.compile(r"^(\d{1,2}:\d{2}:\d{2}(?:\s*[AP]M)?)\s+(.*)$", re.I)


def _banner(lines: list[str]) -> tuple[str | None, tuple[int, int, int] | None]:
    for line in lines[:3]:
        m = _BANNER.match(line)
        if m:
            return m.group("host"), _host_date({"date": m.group("date")})
    return None, None


def parse_sar_text(text: str, source: str = "<sar>") -> SysstatData:
    """``sar`` text: a header line per activity, rows stamped with the time of day
    (``Average:`` rows are left out: they are not samples)."""
    lines = text.splitlines()
    host, day = _banner(lines)
    notes: list[str] = []
    clock = _Clock(day, notes)
    rows = _Rows()
    header: list[str] | None = None
    samples: dict[float | str, int] = {}
    for line in lines:
        m = _SAR_ROW.match(line.strip())
        if m is None:
            header = None if not line.strip() else header
            continue
        fields = m.group(2).split()
        numeric = [_num(f) for f in fields]
        if header is None or all(x is None for x in numeric):
            header = fields  # a header line: time, [instance column], counters
            continue
        t = clock.time_of_day(m.group(1))
        sample = samples.setdefault(t if not math.isnan(t) else m.group(1), len(samples))
        has_inst = numeric[0] is None or (len(fields) == len(header) and header[0].isupper())
        inst = fields[0] if has_inst else ""
        obj = header[0].lower() if has_inst else "sar"
        for name, v in zip(header[1:] if has_inst else header, numeric[1:] if has_inst
                           else numeric, strict=False):  # fmt: skip
            rows.add(sample, t, obj, inst, name, v)
    if not rows.rows:
        raise ParseError(f"{source}: no sar rows found")
    return SysstatData(host, rows.frame(), "sar", notes)


def parse_iostat_text(text: str, source: str = "<iostat>") -> SysstatData:
    """``iostat`` text (``avg-cpu`` and ``Device`` blocks; a time line with -t)."""
    lines = text.splitlines()
    host, day = _banner(lines)
    notes: list[str] = []
    clock = _Clock(day, notes)
    rows = _Rows()
    sample, t = -1, math.nan
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("avg-cpu:"):
            sample += 1
            names = line.split()[1:]
            values = [_num(v) for v in lines[i + 1].split()]
            for n, v in zip(names, values, strict=False):
                rows.add(sample, t, "avg-cpu", "", n, v)
            i += 2
            continue
        if line.startswith("Device"):
            if sample < 0:
                sample = 0
            names = line.split()[1:]
            i += 1
            while i < len(lines) and lines[i].strip():
                parts = lines[i].split()
                for n, v in zip(names, parts[1:], strict=False):
                    rows.add(sample, t, "disk", parts[0], n, _num(v))
                i += 1
            continue
        if re.match(r"^\d{1,2}/\d{1,2}/\d{2,4} \d", line):
            t = _stamp(line, clock)
        i += 1
    if not rows.rows:
        raise ParseError(f"{source}: no iostat blocks found")
    if rows.frame()["time"].isna().all():
        notes.append("iostat printed no time stamps (run it with -t to get them)")
    return SysstatData(host, rows.frame(), "iostat", notes)


def _num(text: str) -> float | None:
    try:
        return float(text.replace(",", "."))
    except ValueError:
        return None


# -- dstat CSV --------------------------------------------------------------------------------


def parse_dstat_csv(text: str, source: str = "<dstat>") -> SysstatData:
    """``dstat --output`` CSV: preamble, a group row, a column row, then one row per sample
    (with ``--epoch`` the first column is the time)."""
    table = list(csv.reader(io.StringIO(text)))
    host = next((r[1] for r in table if len(r) > 1 and r[0] == "Host:"), None)
    head = next((i for i, r in enumerate(table) if r and r[0] in ("epoch", "time")
                 and i + 1 < len(table) and table[i + 1][:1] == r[:1]), None)  # fmt: skip
    if head is None:
        raise ParseError(f"{source}: no dstat column header found")
    groups, names = table[head], table[head + 1]
    group = ""
    objects = []
    for g in groups:
        group = g or group
        objects.append(group)
    rows = _Rows()
    notes: list[str] = []
    epoch = names[0] == "epoch"
    for sample, r in enumerate(table[head + 2 :]):
        if not r or not r[0].strip():
            continue
        t = float(r[0]) if epoch else math.nan
        for obj, name, cell in zip(objects[1:], names[1:], r[1:], strict=False):
            rows.add(sample, t, obj, "", name, _num(cell))
    if not epoch:
        notes.append("dstat ran without --epoch: samples have no time")
    return SysstatData(host, rows.frame(), "dstat", notes)


def parse_sysstat(text: str, source: str = "<input>") -> list[SysstatData]:
    """Any of the formats above, told apart by their content."""
    stripped = text.lstrip("\ufeff").lstrip()
    if stripped.startswith("{"):
        return parse_sysstat_json(stripped, source)
    if stripped.startswith('"') and "dstat" in stripped[:200].lower():
        return [parse_dstat_csv(stripped, source)]
    if "avg-cpu:" in text or re.search(r"^Device\s", text, re.M):
        return [parse_iostat_text(text, source)]
    if re.search(r"^\d{1,2}:\d{2}:\d{2}(\s*[AP]M)?\s+\S", text, re.M | re.I):
        return [parse_sar_text(text, source)]
    raise ParseError(f"{source}: not a sysstat, iostat, mpstat or dstat output vbench reads")


def _cli_rows(text: str, source: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for data in parse_sysstat(text, source=source):
        for rec in data.frame.to_dict("records"):
            rows.append({"host": data.host, "tool": data.tool, **rec})
    return rows


register(
    ToolParser(
        "sysstat",
        "sadf -j, sar, iostat (text or -o JSON), mpstat -o JSON or dstat --output CSV.",
        _cli_rows,
    )
)
