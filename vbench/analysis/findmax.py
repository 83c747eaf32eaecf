"""Find-max: the largest level of one factor that passes every QoS criterion.

The search is pure: it asks for a level and a number of trials (:meth:`FindMax.next`)
and is told, once they have run, every trial verdict at that level so far and the
verdict over all of them (:meth:`FindMax.record`). It never sees a clock; the caller
passes the elapsed time. Given the same verdicts it asks for the same levels, so a
stored run can be replayed to rebuild its search (the report and ``--resume`` do).

1. **Ramp.** From ``start`` (default ``min``), each pass moves up by ``step``, and the
   step doubles, until the first failure or ``max``.
2. **Bracket.** Between the highest pass and the lowest fail, the next level is the
   middle (the step halves each time it would cross a known pass or fail); before
   any pass is known the lower end is ``min``, run last.
3. **Stop** when lowest fail − highest pass ≤ ``gap`` % of the lowest fail (or ≤ the
   levels' resolution: 1 for whole numbers, a millionth of max − min otherwise, so a
   bracket at 0 ends too), after ``max_levels`` distinct levels, or after ``max_time``.
4. **Verify.** Before converging, the highest pass and the lowest fail each get
   ``verify_trials`` more trials; a level whose verdict turns is moved to the other
   side of the bracket and the bracketing goes on.

A level whose trials disagree (some pass, some fail) is *noisy*: it runs ``trials``
more trials, ``noisy_retries`` times at most, and is then decided over all its trials
(the criteria's ``stat``) and reported noisy — never decided by one trial.

With an adaptive ``repeat: {min, max, target}`` (``decide_by_ci``) a level is decided
when its verdict is *certain* instead: after its first ``trials`` it takes one more
trial at a time while a criterion's confidence interval still holds the threshold
(vbench/analysis/findmax_qos.py, ``level_certainty``: the caller reports it with each
verdict), up to ``max_trials`` trials at that level; a level still uncertain there is
decided over all its trials and reported noisy.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

RAMP, BRACKET, RETRY, VERIFY = "ramp", "bracket", "retry", "verify"
# Why a search ended.
CONVERGED, MAX_PASSES, MIN_FAILS = "converged", "max passes", "min fails"
MAX_LEVELS, MAX_TIME, RUNNING = "max levels", "max time", "running"


@dataclass(frozen=True)
class SearchParams:
    min: float
    max: float
    start: float | None = None
    step: float | None = None
    integer: bool = True
    trials: int = 1
    noisy_retries: int = 2
    verify_trials: int = 2
    gap: float = 1.0  # percent of the lowest fail
    max_levels: int | None = None
    max_time: float | None = None
    # An adaptive repeat: more trials at a level while its verdict is uncertain (see the
    # module docstring), up to max_trials, judged at ci_confidence.
    decide_by_ci: bool = False
    max_trials: int = 0
    ci_confidence: float = 0.95


@dataclass(frozen=True)
class Request:
    """Run ``trials`` more trials at ``level`` (for ``reason``)."""

    level: float
    trials: int
    reason: str


@dataclass(frozen=True)
class Outlook:
    """What a search may still run, as (fewest, most): new levels, and trials (those left
    of the request under way included)."""

    levels: tuple[int, int]
    trials: tuple[int, int]

    def __add__(self, other: Outlook) -> Outlook:
        return Outlook(_sum(self.levels, other.levels), _sum(self.trials, other.trials))


NOTHING_LEFT = Outlook((0, 0), (0, 0))
PLAYOUTS = 2000  # at most, per FindMax.outlook (~0.3 s; a search of 14 levels needs < 100)


def _sum(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


@dataclass
class Level:
    """What is known about one level."""

    level: float
    order: int  # 0 for the first level run
    reason: str  # why it was first run: ramp or bracket
    step: float | None  # distance from the level run before it (None for the first)
    verdicts: list[bool] = field(default_factory=list)
    passed: bool | None = None
    noisy: bool = False
    retries: int = 0
    verified: bool = False
    certain: bool | None = None  # decide_by_ci: the verdict's certainty (None: not told)


@dataclass(frozen=True)
class SearchOutcome:
    status: str
    highest_pass: float | None
    lowest_fail: float | None
    levels: tuple[Level, ...]  # in the order they were first run

    @property
    def gap(self) -> float | None:
        if self.highest_pass is None or self.lowest_fail is None:
            return None
        return self.lowest_fail - self.highest_pass

    @property
    def gap_percent(self) -> float | None:
        if self.gap is None or not self.lowest_fail:
            return None
        return 100.0 * self.gap / abs(self.lowest_fail)

    @property
    def trials(self) -> int:
        return sum(len(lv.verdicts) for lv in self.levels)

    @property
    def noisy(self) -> list[float]:
        return [lv.level for lv in self.levels if lv.noisy]


class FindMax:
    """The search state machine (see the module docstring)."""

    def __init__(self, params: SearchParams) -> None:
        self.p = params
        first_step = params.step or (params.max - params.min) / 8
        self._step = max(self._round_step(first_step), self._resolution())
        self.levels: dict[float, Level] = {}
        self._pending: Request | None = None
        self._last: float | None = None
        self.status = RUNNING

    # -- the protocol --------------------------------------------------------------------
    def next(self, elapsed: float = 0.0) -> Request | None:
        """The next trials to run, or None when the search has ended (see ``status``)."""
        if self.status != RUNNING:
            return None
        if self._pending is not None:
            return self._pending
        if self.p.max_time is not None and elapsed >= self.p.max_time:
            return self._end(MAX_TIME)
        req = self._decide()
        if req is None:
            return None
        if req.level not in self.levels:
            if self.p.max_levels is not None and len(self.levels) >= self.p.max_levels:
                return self._end(MAX_LEVELS)
            step = None if self._last is None else req.level - self._last
            self.levels[req.level] = Level(req.level, len(self.levels), req.reason, step)
        self._last = req.level
        self._pending = req
        return req

    def record(self, level: float, verdicts: Sequence[bool], passed: bool,
               certain: bool | None = None) -> None:
        """Every trial verdict at ``level`` so far and the verdict over all of them;
        ``certain``: whether that verdict is certain under the confidence interval (read
        only with ``decide_by_ci``)."""
        req = self._pending
        if req is None or req.level != level:
            raise ValueError(f"no trials were asked for at level {level:g}")
        self._pending = None
        lv = self.levels[level]
        lv.verdicts = list(verdicts)
        lv.passed = passed
        if req.reason == VERIFY:
            lv.verified = True
        lv.certain = certain
        if len(set(lv.verdicts)) > 1:
            lv.noisy = True
        if self.p.decide_by_ci and certain is False and len(lv.verdicts) >= self.p.max_trials:
            lv.noisy = True  # still uncertain at the most trials a level may take

    def outlook(self, ran: int = 0) -> Outlook:
        """How many levels and trials this search may still run, ``ran`` trials of the
        request under way being done: every way it can go on, played out on a copy —
        the boundary between pass and fail anywhere in today's bracket, no level noisy,
        no verdict turned by verification. Boundaries are tried beside every level some
        play-out runs until no play-out runs a new one, so each distinct path is seen (a
        very wide search, past PLAYOUTS play-outs, is read from paths spread over its
        bracket). The bisection part of a path is about ⌈log2(bracket / gap)⌉ levels."""
        if self.status != RUNNING:
            return NOTHING_LEFT
        hp, lf = self._bracket()
        lo = self.p.min - 1 if hp is None else hp
        hi = self.p.max + 1 if lf is None else lf
        eps = 0.5 if self.p.integer else (self.p.max - self.p.min) * 5e-7  # half a step
        played: dict[float, Outlook] = {}
        todo = {(lo + hi) / 2, *_beside([*self.levels, self.p.min, self.p.max], eps, lo, hi)}
        while todo and len(played) < PLAYOUTS:
            ran_levels: set[float] = set()
            for boundary in _spread(sorted(todo), PLAYOUTS - len(played)):
                played[boundary], levels = self._played(boundary, ran)
                ran_levels |= levels
            todo = _beside(ran_levels, eps, lo, hi) - played.keys()
        outs = list(played.values())
        return Outlook((min(o.levels[0] for o in outs), max(o.levels[0] for o in outs)),
                       (min(o.trials[0] for o in outs), max(o.trials[1] for o in outs)))

    def _played(self, boundary: float, ran: int) -> tuple[Outlook, set[float]]:
        """The levels and trials to come when every level up to ``boundary`` passes, and
        the levels that run."""
        search = copy.deepcopy(self)
        known, trials, extra = len(search.levels), -ran, 0
        while (req := search.next()) is not None:
            trials += req.trials
            if self.p.decide_by_ci and req.reason in (RAMP, BRACKET):
                extra += max(0, self.p.max_trials - req.trials)  # if it stays uncertain
            verdict = req.level <= boundary
            lv = search.levels[req.level]
            search.record(req.level, [*lv.verdicts, *[verdict] * req.trials], verdict)
        new, trials = len(search.levels) - known, max(0, trials)
        return Outlook((new, new), (trials, trials + extra)), set(search.levels)

    def outcome(self) -> SearchOutcome:
        hp, lf = self._bracket()
        ordered = tuple(sorted(self.levels.values(), key=lambda lv: lv.order))
        return SearchOutcome(self.status, hp, lf, ordered)

    # -- decisions -----------------------------------------------------------------------
    def _decide(self) -> Request | None:
        p = self.p
        if not self.levels:
            return Request(self._clamp(p.start if p.start is not None else p.min), p.trials, RAMP)
        last = self.levels[self._last] if self._last is not None else None
        if last is not None and p.decide_by_ci:
            if last.certain is False and len(last.verdicts) < p.max_trials:
                last.retries += 1
                return Request(last.level, 1, RETRY)  # one more while it is uncertain
        elif last is not None and self._disagrees(last) and last.retries < p.noisy_retries:
            last.retries += 1
            return Request(last.level, p.trials, RETRY)
        hp, lf = self._bracket()
        if lf is None:  # ramp: no failure yet
            assert hp is not None
            if hp >= p.max:
                return self._verify_or_end(hp, None, MAX_PASSES)
            nxt = self._clamp(hp + self._step) if self._last == hp else self._clamp(hp)
            if nxt in self.levels:  # rounding met a level already run: the max
                nxt = self._clamp(p.max)
            self._step = self._step * 2
            return Request(nxt, p.trials, RAMP)
        if hp is None:
            if lf <= p.min:
                return self._verify_or_end(None, lf, MIN_FAILS)
            nxt = self._between(p.min, lf, low_tested=False)
            if self._converged(p.min, lf) or nxt in self.levels:
                nxt = self._clamp(p.min)  # within the gap of min (or its resolution): min
            return Request(nxt, p.trials, BRACKET)
        if self._converged(hp, lf):
            return self._verify_or_end(hp, lf, CONVERGED)
        nxt = self._between(hp, lf, low_tested=True)
        if nxt in (hp, lf):  # no level lies between at the levels' resolution (6 digits)
            return self._verify_or_end(hp, lf, CONVERGED)
        return Request(nxt, p.trials, BRACKET)

    def _verify_or_end(self, hp: float | None, lf: float | None, status: str) -> Request | None:
        if self.p.verify_trials:
            for level in (hp, lf):
                if level is not None and not self.levels[level].verified:
                    return Request(level, self.p.verify_trials, VERIFY)
        return self._end(status)

    def _end(self, status: str) -> None:
        self.status = status
        return None

    def _bracket(self) -> tuple[float | None, float | None]:
        """Highest pass below the lowest fail, and the lowest fail."""
        fails = [lv.level for lv in self.levels.values() if lv.passed is False]
        lf = min(fails) if fails else None
        passes = [
            lv.level for lv in self.levels.values()
            if lv.passed and (lf is None or lv.level < lf)
        ]
        return (max(passes) if passes else None), lf

    def _disagrees(self, lv: Level) -> bool:
        return len(set(lv.verdicts)) > 1

    def _converged(self, hp: float, lf: float) -> bool:
        gap = lf - hp
        if gap <= self._resolution():  # 1 for whole numbers; a millionth of the range
            return True  # (a bracket at 0 has no relative gap to shrink below)
        return gap <= self.p.gap / 100.0 * abs(lf)

    # -- levels --------------------------------------------------------------------------
    def _between(self, lo: float, hi: float, *, low_tested: bool) -> float:
        """The middle of (lo, hi); when ``lo`` is untested and nothing lies between, lo."""
        mid = (lo + hi) / 2
        if lo > 0 and hi / lo > 4:  # a wide bracket: the geometric middle halves the ratio
            mid = math.sqrt(lo * hi)
        if self.p.integer:
            mid = float(math.floor(mid))
            if mid <= lo:
                mid = lo if not low_tested else lo + 1
            if mid >= hi:
                mid = hi - 1
        elif not lo < mid < hi:
            mid = lo
        if not low_tested and mid <= lo:
            return self._clamp(lo)
        return self._clamp(mid)

    def _clamp(self, level: float) -> float:
        level = min(max(level, self.p.min), self.p.max)
        if self.p.integer:
            return float(round(level))
        return float(f"{level:.6g}")

    def _resolution(self) -> float:
        return 1.0 if self.p.integer else (self.p.max - self.p.min) * 1e-6

    def _round_step(self, step: float) -> float:
        return float(max(1, round(step))) if self.p.integer else step


def _spread(items: Sequence[float], most: int) -> Sequence[float]:
    """At most ``most`` of ``items``, evenly spread over them."""
    if len(items) <= most:
        return items
    return [items[i * len(items) // most] for i in range(most)]


def _beside(levels: Iterable[float], eps: float, lo: float, hi: float) -> set[float]:
    """Boundaries just below and above each level, strictly inside (lo, hi)."""
    return {t for lv in levels for t in (lv - eps, lv + eps) if lo < t < hi}


def level_label(level: float, integer: bool) -> str:
    """The label a level has in the store and in reports."""
    return str(int(level)) if integer else f"{level:g}"


def replay(
    params: SearchParams,
    outcomes: Mapping[float, Sequence[tuple[bool, ...]]],
) -> tuple[FindMax, Request | None, int]:
    """Rebuild a search from stored results: ``outcomes[level]`` holds, per trial in the
    order run, (trial verdict, verdict over the trials up to and including it[, whether
    that verdict is certain: ``decide_by_ci``]).

    Returns the search, the request it stopped at (None when it ended) and how many of
    that request's trials are already stored (they are fed in as they complete)."""
    search = FindMax(params)
    used: dict[float, int] = {}
    while True:
        req = search.next()
        if req is None:
            return search, None, 0
        have = list(outcomes.get(req.level, ()))
        start = used.get(req.level, 0)
        stored = have[start : start + req.trials]
        if len(stored) < req.trials:
            return search, req, len(stored)
        used[req.level] = start + req.trials
        upto = have[: start + req.trials]
        search.record(req.level, [v[0] for v in upto], upto[-1][1],
                      upto[-1][2] if len(upto[-1]) > 2 else None)
