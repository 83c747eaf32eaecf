"""esxtop column names, selection patterns and named counter sets.

A column of ``esxtop -b`` output is named ``\\\\host\\Object(instance)\\Counter``; objects
without instances (``Memory``) have no parenthesis. Instances may themselves hold
parentheses and colons (``Vcpu(1:system:65537:idle1)``, ``Group Cpu(1234:vm (copy))``):
the instance runs from the first ``(`` after the object to the last ``)`` before the
counter, and the counter is everything after the last backslash.

A *pattern* selects columns: ``Object(instance)\\Counter`` with ``*`` and ``?`` wildcards
in every part, compared without regard to case, optionally led by ``\\\\host\\``. A
missing ``(instance)`` means any instance. A bare word (no backslash) names a counter
set (``cpu``, ``vcpu``, ``memory`` …; see :data:`COUNTER_SETS`).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from vbench.errors import ConfigError
from vbench.parsers.esxtop.catalog import KNOWN_COUNTERS

_CPU_STATES = (
    "% Used", "% Run", "% System", "% Wait", "% VmWait", "% Ready", "% Idle", "% Overlap",
    "% CoStop", "% Max Limited", "% Swap Wait", "% Demand",
)  # fmt: skip
_GROUP_MEMORY = (
    "Memory Size MBytes", "Memory Granted Size MBytes", "Memory Consumed Size MBytes",
    "Touched MBytes", "% Active Estimate", "Memctl MBytes", "Swapped MBytes",
    "Swap Read MBytes/sec", "Swap Written MBytes/sec", "Compressed Memory MBytes",
    "Shared MBytes", "Zero MBytes", "Overhead MBytes", "Numa % Local",
)  # fmt: skip

# Named sets a scenario or `--select` may use instead of patterns.
COUNTER_SETS: dict[str, tuple[str, ...]] = {
    "cpu": (
        "Physical Cpu(*)\\*",
        "Physical Cpu Load\\*",
        *(f"Group Cpu(*)\\{c}" for c in _CPU_STATES),
    ),
    "vcpu": tuple(f"Vcpu(*)\\{c}" for c in _CPU_STATES),
    "memory": ("Memory\\*", *(f"Group Memory(*)\\{c}" for c in _GROUP_MEMORY)),
    "disk-adapter": ("Physical Disk Adapter(*)\\*",),
    "disk-device": ("Physical Disk SCSI Device(*)\\*",),
    "virtual-disk": ("Virtual Disk(*)\\*",),
    "network": ("Network Port(*)\\*",),
    "power": ("Power(*)\\*", "PCPU Power State(*)\\*"),
}


@dataclass(frozen=True, slots=True)
class ColumnName:
    """One counter column: ``\\\\host\\object(instance)\\counter`` (instance "" if none)."""

    host: str
    object: str
    instance: str
    counter: str

    @property
    def name(self) -> str:
        """``Object(instance)\\Counter`` without the host, as esxtop users write it."""
        inst = f"({self.instance})" if self.instance else ""
        return f"{self.object}{inst}\\{self.counter}"

    @property
    def full(self) -> str:
        return f"\\\\{self.host}\\{self.name}"


def _split_object(text: str) -> tuple[str, str]:
    """``Group Cpu(1:vm (x))`` -> (``Group Cpu``, ``1:vm (x)``); ``Memory`` -> (Memory, "")."""
    if text.endswith(")") and "(" in text:
        cut = text.index("(")
        return text[:cut], text[cut + 1 : -1]
    return text, ""


def parse_column_name(text: str) -> ColumnName | None:
    """The parts of a header cell, or None when it is not ``\\\\host\\...\\counter``."""
    if not text.startswith("\\\\"):
        return None
    host, sep, rest = text[2:].partition("\\")
    if not sep or not host or "\\" not in rest:
        return None
    obj_inst, counter = rest.rsplit("\\", 1)
    obj, inst = _split_object(obj_inst)
    if not obj or not counter:
        return None
    return ColumnName(host, obj, inst, counter)


def unit_of(counter: str) -> str:
    """The unit esxtop's counter name implies ("" when it names none)."""
    c = counter.lower()
    rules = (
        (c.startswith("%") or "% " in c or c.endswith("%"), "%"),
        ("millisec" in c or "latency ms" in c, "ms"),
        ("mbits" in c, "Mbit/s"),
        ("mbytes" in c and "/sec" in c, "MB/s"),
        ("mbytes" in c, "MB"),
        ("watts" in c, "W"),
        ("mhz" in c, "MHz"),
        ("mb/s" in c, "Mbit/s"),
        ("(bytes)" in c, "B"),
        ("/sec" in c, "/s"),
    )
    return next((unit for hit, unit in rules if hit), "")


class _Glob:
    """A pattern with ``*`` and ``?`` wildcards, matched against whole names, case ignored.

    Only * and ? are wildcards: instance names hold brackets that fnmatch would eat. Not
    one regular expression: ``.*.*.*…`` backtracks exponentially in its stars (a pattern
    of 12 ``*?`` pairs took 7 s of validate). The pieces between stars have a fixed
    length, so the leftmost place of each, in order, decides: no backtracking."""

    def __init__(self, pattern: str) -> None:
        self._pieces = [
            re.compile("".join("." if ch == "?" else re.escape(ch) for ch in piece),
                       re.IGNORECASE | re.DOTALL)
            for piece in pattern.split("*")
        ]
        self._lengths = [len(piece) for piece in pattern.split("*")]

    def fullmatch(self, name: str) -> bool:
        first, *rest = self._pieces
        if not rest:
            return first.fullmatch(name) is not None
        if first.match(name) is None:
            return False
        pos, end = self._lengths[0], len(name) - self._lengths[-1]
        for piece in rest[:-1]:
            m = piece.search(name, pos, end)
            if m is None:
                return False
            pos = m.end()
        return pos <= end and rest[-1].fullmatch(name, end) is not None


@functools.lru_cache(maxsize=512)
def _glob(pattern: str) -> _Glob:
    return _Glob(pattern)


@dataclass(frozen=True)
class Pattern:
    """A compiled column pattern (see the module docstring)."""

    text: str
    host: str | None
    object: str
    instance: str | None
    counter: str

    @cached_property
    def _res(self) -> tuple[_Glob | None, _Glob, _Glob | None, _Glob]:
        return (
            _glob(self.host) if self.host is not None else None,
            _glob(self.object),
            _glob(self.instance) if self.instance is not None else None,
            _glob(self.counter),
        )

    @property
    def exact_key(self) -> tuple[str, str, str] | None:
        """(object, instance, counter) in lower case when no part has a wildcard."""
        parts = (self.object, self.instance, self.counter)
        if self.instance is None or any("*" in x or "?" in x for x in parts if x):
            return None
        return (self.object.lower(), self.instance.lower(), self.counter.lower())

    def matches_kind(self, obj: str, counter: str) -> bool:
        _, o, _, c = self._res
        return bool(o.fullmatch(obj) and c.fullmatch(counter))

    def matches(self, col: ColumnName) -> bool:
        h, o, i, c = self._res
        return bool(
            (h is None or h.fullmatch(col.host))
            and o.fullmatch(col.object)
            and (i is None or i.fullmatch(col.instance))
            and c.fullmatch(col.counter)
        )


def parse_pattern(text: str) -> Pattern:
    """``[\\\\host\\]Object[(instance)]\\Counter`` -> Pattern; ConfigError if malformed."""
    raw = text.strip()
    body, host = raw, None
    if raw.startswith("\\\\"):
        host, sep, body = raw[2:].partition("\\")
        if not sep or not host:
            raise ConfigError(f"esxtop pattern {text!r}: expected \\\\host\\Object\\Counter")
    if "\\" not in body:
        raise ConfigError(
            f"esxtop pattern {text!r}: expected Object(instance)\\Counter, e.g. "
            "Physical Cpu(_Total)\\% Util Time"
        )
    obj_inst, counter = body.rsplit("\\", 1)
    if obj_inst.endswith(")") and "(" in obj_inst:
        obj, inst = _split_object(obj_inst)
        instance: str | None = inst
    else:
        obj, instance = obj_inst, None
    if not obj.strip() or not counter.strip():
        raise ConfigError(f"esxtop pattern {text!r}: object and counter must not be empty")
    return Pattern(raw, host, obj.strip(), instance, counter.strip())


def _close(word: str, names: Iterable[str], n: int = 5) -> list[str]:
    by_lower = {x.lower(): x for x in names}
    hits = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.45)
    return [by_lower[h] for h in hits]


def _closest_text(word: str, names: Iterable[str]) -> str:
    hits = _close(word, names)
    return f" (closest: {', '.join(hits)})" if hits else ""


@dataclass(frozen=True)
class Selection:
    """The patterns of a selection, sets expanded; empty selects every column."""

    items: tuple[str, ...]
    patterns: tuple[Pattern, ...]

    @property
    def everything(self) -> bool:
        return not self.patterns

    def select(self, columns: Sequence[ColumnName]) -> list[int]:
        """Indexes of the columns any pattern matches, in file order."""
        return self.match(columns)[0]

    def match(self, columns: Sequence[ColumnName]) -> tuple[list[int], list[str]]:
        """(indexes of the matched columns, a message per pattern that matched none)."""
        if self.everything:
            return list(range(len(columns))), []
        # Exact names are looked up; other patterns are tried once per distinct
        # (object, counter), not once per column: a wide capture has ~20,000 columns
        # but only a few hundred distinct kinds.
        exact: dict[tuple[str, str, str], list[Pattern]] = {}
        globbed = []
        for p in self.patterns:
            key = p.exact_key
            if key is None:
                globbed.append(p)
            else:
                exact.setdefault(key, []).append(p)
        kinds: dict[tuple[str, str], list[Pattern]] = {}
        used: set[str] = set()
        out = []
        for i, col in enumerate(columns):
            pats = kinds.get((col.object, col.counter))
            if pats is None:
                pats = [p for p in globbed if p.matches_kind(col.object, col.counter)]
                kinds[(col.object, col.counter)] = pats
            if exact:
                key = (col.object.lower(), col.instance.lower(), col.counter.lower())
                pats = pats + exact.get(key, [])
            hit = False
            for p in pats:
                # Once the column is taken, only patterns not yet seen matching need a try.
                if (not hit or p.text not in used) and p.matches(col):
                    used.add(p.text)
                    hit = True
            if hit:
                out.append(i)
        objects = sorted({c.object for c in columns})
        missing = [
            f"{p.text!r} matches no column{_suggest(p, columns, objects)}"
            for p in self.patterns
            if p.text not in used
        ]
        return out, missing

    def unmatched(self, columns: Sequence[ColumnName]) -> list[str]:
        """A message for every pattern that matches no column, with the closest names."""
        return self.match(columns)[1]


def _suggest(p: Pattern, columns: Sequence[ColumnName], objects: list[str]) -> str:
    objs = [o for o in objects if _glob(p.object).fullmatch(o)]
    if not objs:
        return f": no object {p.object!r}{_closest_text(p.object, objects)}"
    counters = sorted({c.counter for c in columns if c.object in objs})
    if not any(_glob(p.counter).fullmatch(c) for c in counters):
        near = _closest_text(p.counter, counters)
        return f": no counter {p.counter!r} in {', '.join(objs)}{near}"
    instances = sorted({c.instance for c in columns if c.object in objs and c.instance})
    return f": no instance {p.instance!r}{_closest_text(p.instance or '', instances)}"


def compile_selection(items: Iterable[str]) -> Selection:
    """Patterns and set names -> Selection; ConfigError naming the closest set names."""
    items = tuple(i for i in items if i.strip())
    pats: list[Pattern] = []
    errors: list[str] = []
    for item in items:
        if "\\" in item:
            try:
                pats.append(parse_pattern(item))
            except ConfigError as exc:
                errors.append(str(exc))
        elif item.strip().lower() in COUNTER_SETS:
            pats.extend(parse_pattern(p) for p in COUNTER_SETS[item.strip().lower()])
        else:
            errors.append(
                f"unknown esxtop counter set {item!r} (sets: {', '.join(COUNTER_SETS)})"
                f"{_closest_text(item, COUNTER_SETS)}"
            )
    if errors:
        raise ConfigError("; ".join(errors))
    unique = {p.text.lower(): p for p in pats}
    return Selection(items, tuple(unique.values()))


def check_known(selection: Selection, allow_unknown_counters: bool = False) -> list[str]:
    """Messages for patterns naming objects (or counters) esxtop does not print.

    Used before a run, when no capture exists yet: objects are stable across ESXi
    builds, counters less so (``allow_unknown_counters`` skips that check).
    """
    out = []
    objects = list(KNOWN_COUNTERS)
    for p in selection.patterns:
        objs = [o for o in objects if _glob(p.object).fullmatch(o)]
        if not objs:
            out.append(
                f"esxtop pattern {p.text!r}: no object {p.object!r}"
                f"{_closest_text(p.object, objects)}"
            )
            continue
        if allow_unknown_counters:
            continue
        counters = sorted({c for o in objs for c in KNOWN_COUNTERS[o]})
        if not any(_glob(p.counter).fullmatch(c) for c in counters):
            out.append(
                f"esxtop pattern {p.text!r}: no counter {p.counter!r} in {', '.join(objs)}"
                f"{_closest_text(p.counter, counters)}"
            )
    return out
