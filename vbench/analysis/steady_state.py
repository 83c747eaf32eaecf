"""Steady state the way the SNIA Solid State Storage Performance Test Specification
(PTS) judges it: rounds of the same measurement until the last ``window`` rounds agree.

A point's rounds are its trials, in order; each round's value is the trial's figure of
the scenario's ``steady_state.metric``. The window of the last ``window`` rounds is in
steady state when both hold:

- **data excursion**: the window's range, its highest round minus its lowest, is at
  most ``max_excursion`` of the window's mean (the PTS: 20 %). This is the PTS's
  "Max(y) − Min(y) within the measurement window ≤ 20 % of Ave(y)", not "every round
  within ±20 % of the mean", which would let the range reach 40 %;
- **slope excursion**: the least-squares line through the window changes, from its
  first round to its last, by no more than ``max_slope`` of the mean
  (``|slope| × (window − 1)``; the PTS: 10 %).

The first window that passes ends the rounds ("reached at round 7"); a point that has
run ``max_rounds`` without one is "steady state not reached". :func:`judge` is the
pure rule; the engine's schedule (vbench/engine/steady.py) asks it after every round,
and the verdict and the report read it back from the stored trials.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.config.steady import (
    PTS_EXCURSION,
    PTS_MAX_ROUNDS,
    PTS_SLOPE,
    PTS_WINDOW,
    SteadyStateSpec,
)


@dataclass(frozen=True)
class SteadyRule:
    """``steady_state: {metric, window, max_excursion, max_slope, max_rounds}``."""

    metric: str
    window: int = PTS_WINDOW
    max_excursion: float = PTS_EXCURSION
    max_slope: float = PTS_SLOPE
    max_rounds: int = PTS_MAX_ROUNDS
    at: tuple[tuple[str, str], ...] = ()  # factor levels of the deciding point(s)

    def decides(self, labels: Mapping[str, Any]) -> bool:
        """The point with these factor levels is one whose rounds decide."""
        return all(_level(labels.get(k)) == v for k, v in self.at)


def _level(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def at_issues(at: Mapping[str, Any], labels: Sequence[Mapping[str, Any]]
              ) -> list[tuple[tuple[str, ...], str]]:
    """``steady_state.at`` held against the run's points (their factor labels): every
    key a factor, every value one of its levels' labels, and at least one point with
    all of them (else no round would decide and the rounds would stop at ``window``
    claiming steady state). (path under ``steady_state``, message) pairs."""
    known: dict[str, list[str]] = {}
    for point in labels:
        for key, value in point.items():
            known.setdefault(key, [])
            if _level(value) not in known[key]:
                known[key].append(_level(value))
    out: list[tuple[tuple[str, ...], str]] = []
    for key, value in at.items():
        if key not in known:
            out.append((("at", key), f"no factor {key!r}{_did_you_mean(key, list(known))} "
                        f"(the factors: {', '.join(known) or 'none'})"))
        elif _level(value) not in known[key]:
            out.append((("at", key), f"{key} has no level {_level(value)!r}"
                        f"{_did_you_mean(_level(value), known[key])} "
                        f"(its levels: {', '.join(known[key])})"))
    wanted = tuple((k, _level(v)) for k, v in at.items())
    if not out and not any(SteadyRule("", at=wanted).decides(p) for p in labels):
        out.append((("at",), "no point of the run has all of "
                    f"{', '.join(f'{k}={v}' for k, v in wanted)} (an excluded combination?)"))
    return out


def _did_you_mean(word: str, choices: list[str]) -> str:
    same = [c for c in choices if c.lower() == word.lower()]
    close = same or difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]}?" if close else ""


def rule_of(spec: SteadyStateSpec | Mapping[str, Any] | None) -> SteadyRule | None:
    """The rule of a scenario's ``steady_state`` (the model, or the mapping stored with
    the run, "20%" strings and all); None when the scenario has none."""
    if spec is None:
        return None
    if not isinstance(spec, SteadyStateSpec):
        spec = SteadyStateSpec.model_validate(dict(spec))
    return SteadyRule(spec.metric, spec.window, spec.max_excursion, spec.max_slope,
                      spec.max_rounds, tuple((k, _level(v)) for k, v in spec.at.items()))


def rounds_of(values: Mapping[int, float | None], count: int | None = None
              ) -> list[float | None]:
    """A point's ``count`` rounds in order (default: up to its last trial with a value)
    from its per-trial values (trial number -> value): a trial without a value (failed)
    is a round without a figure."""
    last = count if count is not None else max(values, default=0)
    return [values.get(t) for t in range(1, last + 1)]


@dataclass(frozen=True)
class Window:
    """One measurement window: rounds ``first``..``last`` (1-based, inclusive)."""

    first: int
    last: int
    mean: float
    excursion: float  # the window's range (highest - lowest round) / |mean|
    slope: float  # of the least-squares line, per round
    intercept: float  # the line's value at round ``first``
    fit_change: float  # |slope| × (window - 1) / mean

    def passes(self, rule: SteadyRule) -> bool:
        return self.excursion <= rule.max_excursion and self.fit_change <= rule.max_slope


@dataclass(frozen=True)
class SteadyState:
    """The rule's reading of a point's rounds."""

    rule: SteadyRule
    rounds: tuple[float | None, ...]
    window: Window | None  # the first passing window, else the last one examined
    reached: bool
    done: bool  # no more rounds are wanted (reached, or the cap is hit)
    reason: str

    @property
    def at_round(self) -> int | None:
        return self.window.last if self.reached and self.window else None

    @property
    def warning(self) -> str | None:
        """Steady because every round of the window measured 0: seldom the figure meant."""
        w = self.window
        if self.reached and w is not None and w.mean == 0:
            return (f"steady at zero: every round {w.first}–{w.last} measured 0 "
                    f"{self.rule.metric}")
        return None

    def text(self) -> str:
        w = self.window
        if self.reached and w is not None:
            if self.warning is not None:
                return f"steady state reached at round {w.last} (warning: {self.warning})"
            return (f"steady state reached at round {w.last} (rounds {w.first}–{w.last}: "
                    f"range {w.excursion * 100:.1f} % of their mean, the fit changes "
                    f"{w.fit_change * 100:.1f} %)")
        return self.reason


def window_of(values: Sequence[float], first: int) -> Window:
    """The window statistics of ``values`` (rounds ``first``.. in order)."""
    n = len(values)
    mean = sum(values) / n
    xm = (n - 1) / 2
    sxx = sum((i - xm) ** 2 for i in range(n))
    slope = sum((i - xm) * (v - mean) for i, v in enumerate(values)) / sxx if sxx else 0.0
    if mean == 0:
        # Relative to a zero mean: a window of zeros is steady (at zero: warned), one
        # that swings around zero ([-5, 5, -5, 5, 0]) is not.
        off = 0.0 if all(v == 0 for v in values) else float("inf")
        return Window(first, first + n - 1, mean, off, slope, mean - slope * xm, off)
    scale = abs(mean)
    excursion = (max(values) - min(values)) / scale
    return Window(first, first + n - 1, mean, excursion, slope, mean - slope * xm,
                  abs(slope) * (n - 1) / scale)


def judge(rounds: Sequence[float | None], rule: SteadyRule) -> SteadyState:
    """Where ``rounds`` (one value per round, None for a round without a figure) first
    reach steady state under ``rule``, or why not (yet)."""
    vals = tuple(rounds)
    last: Window | None = None
    for end in range(rule.window, len(vals) + 1):
        part = vals[end - rule.window:end]
        if any(v is None for v in part):
            continue  # a failed round breaks the window: the next full one is judged
        last = window_of([float(v) for v in part if v is not None], end - rule.window + 1)
        if last.passes(rule):
            return SteadyState(rule, vals, last, True, True, "")
    capped = len(vals) >= rule.max_rounds
    if last is None:
        why = (f"steady state not reached: fewer than {rule.window} rounds with a figure "
               f"of {rule.metric} in {len(vals)}")
    else:
        broke = []
        if last.mean == 0:  # relative limits mean nothing around a zero mean
            broke.append("the rounds differ around a mean of 0")
        elif last.excursion > rule.max_excursion:
            broke.append(f"the rounds range over {last.excursion * 100:.1f} % of their "
                         f"mean (limit {rule.max_excursion * 100:.0f} %)")
        if last.mean != 0 and last.fit_change > rule.max_slope:
            broke.append(f"the fit changes {last.fit_change * 100:.1f} % "
                         f"(limit {rule.max_slope * 100:.0f} %)")
        why = (f"steady state not reached in {len(vals)} rounds: in the last window "
               f"(rounds {last.first}–{last.last}) {' and '.join(broke)}")
    if capped:
        why += f"; stopped at the cap of {rule.max_rounds} rounds"
    return SteadyState(rule, vals, last, False, capped, why)
