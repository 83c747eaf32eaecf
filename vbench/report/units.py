"""Units scaled for reading: one unit per table, column or chart, chosen from the values
it shows — 0.004 ms reads as 4.0 µs, 2,694,340,608 B as 2.51 GiB, 219,193 IO/s as
219.2 k IO/s. The store keeps what the tools reported; only the display changes.

Families: time (ns, µs, ms, s), bytes (B … TiB, binary; sysstat's kB is 1024 B), byte
rates (B/s … GiB/s), bit rates (bit/s … Gbit/s, decimal). Any other unit (IO/s, ops/s,
count, no unit) gets a k or M prefix once the typical value reaches 10,000; percentages
are never scaled. Units that are no unit to a reader are shown plainly (:func:`plain`):
a fraction as a percentage (0.05289 fraction → 5.289 %), a count or a ratio as a bare
number (``0``, not ``0 count``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from vbench.analysis.stats import Summary
from vbench.analysis.verdict import PLAIN_UNITS

_TIME = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))
_TIME_IN = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_BYTES = (("B", 1.0), ("KiB", 1024.0), ("MiB", 1024.0**2), ("GiB", 1024.0**3),
          ("TiB", 1024.0**4))  # fmt: skip
_BYTES_IN = {"B": 1.0, "KiB": 1024.0, "kB": 1024.0, "KB": 1024.0, "MiB": 1024.0**2,
             "GiB": 1024.0**3, "TiB": 1024.0**4}  # fmt: skip
_BITS = (("bit/s", 1.0), ("Kbit/s", 1e3), ("Mbit/s", 1e6), ("Gbit/s", 1e9))
_BITS_IN = dict(_BITS)
_NEVER = {"%", "MHz", "GHz", "°C"}
_PLAIN = PLAIN_UNITS  # stored units shown otherwise (fraction as %, count/ratio bare)
_PREFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "k"))
COUNT_FROM = 10_000.0  # a count gets its k prefix from here (9,999 reads fine as it is)


@dataclass(frozen=True)
class Scale:
    """How to show a figure: stored value × ``factor``, in ``unit``."""

    factor: float = 1.0
    unit: str = ""

    def value(self, x: float | None) -> float | None:
        return None if x is None else x * self.factor

    def summary(self, s: Summary | None) -> Summary | None:
        if s is None or self.factor == 1.0:
            return s
        f = self.factor
        return dataclasses.replace(
            s, **{k: (None if getattr(s, k) is None else getattr(s, k) * f)
                  for k in ("mean", "median", "stdev", "min", "max", "ci_low", "ci_high")},
        )


def identity(unit: str) -> Scale:
    return Scale(1.0, unit)


def typical(values: Iterable[float | None]) -> float | None:
    """The median magnitude of the non-zero finite values (None when there is none)."""
    mags = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    return statistics.median(mags) if mags else None


def _ladder(size: float, ladder: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The largest unit of ``ladder`` in which ``size`` (in base units) is still ≥ 1."""
    chosen = ladder[0]
    for name, mult in ladder:
        if size / mult >= 1 - 1e-12:
            chosen = (name, mult)
    return chosen


def plain(unit: str) -> Scale:
    """How a value stored in ``unit`` reads without a scale chosen from its values: a
    fraction as %, a count or ratio as a bare number, any other unit as itself."""
    factor, shown = _PLAIN.get(unit, (1.0, unit))
    return Scale(factor, shown)


def choose(unit: str, values: Iterable[float | None]) -> Scale:
    """The scale for showing ``values`` (all in ``unit``) together."""
    if unit in _PLAIN:
        base = plain(unit)
        if base.unit:  # a fraction: never prefixed once a percentage
            return base
        unit, values = "", list(values)
    t = typical(values)
    if t is None or unit in _NEVER:
        return identity(unit)
    for given, ladder, suffix in _families(unit):
        name, mult = _ladder(t * given, ladder)
        return Scale(given / mult, name + suffix)
    if t >= COUNT_FROM:
        bound, prefix = next((b, p) for b, p in _PREFIXES if t >= b)
        return Scale(1.0 / bound, f"{prefix} {unit}" if unit else prefix)
    return identity(unit)


def _families(unit: str) -> list[tuple[float, tuple[tuple[str, float], ...], str]]:
    """(the unit in base units, the ladder, a suffix) when ``unit`` belongs to a family."""
    if unit in _TIME_IN:
        return [(_TIME_IN[unit], _TIME, "")]
    if unit in _BYTES_IN:
        return [(_BYTES_IN[unit], _BYTES, "")]
    if unit.endswith("/s") and unit[:-2] in _BYTES_IN:
        return [(_BYTES_IN[unit[:-2]], _BYTES, "/s")]
    if unit in _BITS_IN:
        return [(_BITS_IN[unit], _BITS, "")]
    return []
