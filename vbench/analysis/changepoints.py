"""Change points of a nightly series: when did a figure move, by how much, how surely.

Pure: a sequence of nightly figures in (oldest first, None for a night without one), a
tuple of :class:`Change` out. Chosen by bench/changepoints.py (figures in
docs/performance.md): binary segmentation (ruptures' ``Binseg``, least-squares cost, a
BIC-like penalty scaled by the series' own robust noise; computed here from prefix sums,
see :class:`_Segmentation`) proposes candidates, then vbench keeps those that hold:

1. one-night outliers do not move a series: a value further than 4 robust σ from the
   median of the five nights around it is replaced by that median before detection
   (the last night by the median of itself and the two nights before it, so a step on
   the very last night waits for the next ones — the pairwise check sees it the first
   night — and a step three nights old, the fewest a change needs, is kept);
2. merge step: while some change is not significant (Welch's t-test between the
   segments on either side, at ``alpha``) or smaller than ``min_effect`` (relative to
   the mean before it), the weakest is dropped and its neighbours re-judged.

``min_effect`` is where lab noise comes in: a change smaller than the lab's measured
night-to-night noise is not reported (callers pass max(configured effect, noise)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    from scipy import special as _special
else:
    np = lazy_module("numpy")
    _special = lazy_module("scipy.special")

MIN_NIGHTS = 6  # fewer values than this: no change can be told from noise
MIN_SEGMENT = 3  # nights on each side of a change (two odd nights are no new level)
PENALTY = 3.0  # × log(n) × σ²: the cost of one more change
ALPHA = 0.0001  # significance of a change (bench/changepoints.py: 0.001 let 7.5 % false in)
OUTLIER_SIGMAS = 4.0


@dataclass(frozen=True)
class Change:
    """A change in the level of a series between ``index - 1`` and ``index``."""

    index: int  # position (in the series given, gaps counted) of the first value after it
    before: float  # mean of the segment before (since the previous change)
    after: float  # mean of the segment after (up to the next change)
    relative: float  # (after - before) / |before| (±inf when before is 0)
    p_value: float  # Welch's t-test between the two segments
    n_before: int
    n_after: int

    def worse(self, better: str) -> bool | None:
        """Is it a regression for a metric whose ``better`` is higher/lower (None: none)?"""
        if better == "higher":
            return self.after < self.before
        if better == "lower":
            return self.after > self.before
        return None


def _robust_sigma(x: np.ndarray) -> float:
    """Noise of a series with steps: the median absolute difference of neighbours
    (a step moves one difference only), scaled to σ for normal noise."""
    d = np.abs(np.diff(x))
    return float(np.median(d)) / 0.9539 if len(d) else 0.0


def _without_outliers(x: np.ndarray, sigma: float) -> np.ndarray:
    """A Hampel filter: one-night outliers replaced by the median of their neighbourhood
    (the five nights around; the last night: itself and the two before it)."""
    n = len(x)
    if sigma <= 0 or n < 5:
        return x.copy()
    padded = np.concatenate(([np.nan, np.nan], x, [np.nan, np.nan]))
    windows = np.lib.stride_tricks.sliding_window_view(padded, 5)  # centred on each night
    med = np.nanmedian(windows, axis=1)
    # The last night against itself and the two before: a step three nights old is
    # kept (the four before straddled it and clipped its third night), a step on the
    # last night alone or a last-night outlier is still replaced.
    med[-1] = float(np.median(x[-3:]))
    return np.where(np.abs(x - med) > OUTLIER_SIGMAS * sigma, med, x)


class _Segmentation:
    """Binary segmentation under the least-squares cost (ruptures' ``Binseg`` with
    ``model="l2"`` and ``pen``: the same greedy splits, ties to the later night), from
    prefix sums so that every candidate split of a segment is judged in one array
    operation. Importing ruptures costs about a second (scipy.stats) of the two that
    ``vbench history --changes`` may take; tests/unit/test_changepoints.py checks the
    splits against ruptures' own."""

    def __init__(self, x: np.ndarray, min_size: int) -> None:
        self.s1 = np.concatenate(([0.0], np.cumsum(x)))
        self.s2 = np.concatenate(([0.0], np.cumsum(x * x)))
        self.n, self.min_size = len(x), min_size

    def cost(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        total = self.s1[b] - self.s1[a]
        return np.maximum(0.0, (self.s2[b] - self.s2[a]) - total * total / (b - a))

    def best_split(self, a: int, b: int) -> tuple[int | None, float]:
        ks = np.arange(a + self.min_size, b - self.min_size + 1)
        if not len(ks):
            return None, 0.0
        gains = self.cost(a, b) - self.cost(a, ks) - self.cost(ks, b)
        k = len(gains) - 1 - int(np.argmax(gains[::-1]))  # ties: the later split
        return int(ks[k]), float(gains[k])

    def splits(self, pen: float) -> list[int]:
        cuts = [self.n]
        while True:
            found = [self.best_split(a, b) for a, b in zip([0, *cuts], cuts, strict=False)]
            cut, gain = max(found, key=lambda f: f[1])
            if cut is None or gain <= pen:
                return sorted(c for c in cuts if c < self.n)
            cuts = sorted([*cuts, cut])


def _candidates(x: np.ndarray, sigma: float) -> list[int]:
    if sigma <= 0:
        sigma = float(np.std(x)) or 1.0
    return _Segmentation(x, MIN_SEGMENT).splits(PENALTY * math.log(len(x)) * sigma**2)


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p of Welch's t-test (unequal variances); 1.0 when undefined."""
    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    se2 = va / len(a) + vb / len(b)
    if not se2 > 0:
        return 1.0
    t = (float(b.mean()) - float(a.mean())) / math.sqrt(se2)
    df = se2**2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    return float(2 * _special.stdtr(df, -abs(t)))


def _judge(x: np.ndarray, cuts: Sequence[int], k: int
           ) -> tuple[float, float, float, float, int, int]:
    """Change ``k`` between its neighbouring cuts: (p, relative, before, after, n_before,
    n_after); relative is infinite when the level before is 0."""
    lo = cuts[k - 1] if k > 0 else 0
    hi = cuts[k + 1] if k + 1 < len(cuts) else len(x)
    a, b = x[lo:cuts[k]], x[cuts[k]:hi]
    before, after = float(a.mean()), float(b.mean())
    rel = ((after - before) / abs(before) if before
           else math.copysign(math.inf, after - before) if after != before else 0.0)
    flat = np.ptp(a) == 0 and np.ptp(b) == 0  # no spread: any difference is certain
    p = (0.0 if a[0] != b[0] else 1.0) if flat else welch_p(a, b)
    return (p if math.isfinite(p) else 1.0), rel, before, after, len(a), len(b)


def _merge(x: np.ndarray, cuts: list[int], alpha: float, min_effect: float) -> list[int]:
    while cuts:
        judged = [_judge(x, cuts, k) for k in range(len(cuts))]
        failing = [k for k, (p, rel, *_) in enumerate(judged)
                   if p >= alpha or abs(rel) < min_effect]
        if not failing:
            return cuts
        weakest = max(failing, key=lambda k: (judged[k][0], -abs(judged[k][1])))
        del cuts[weakest]
    return cuts


def changes_of(
    values: Sequence[float | None], min_effect: float = 0.0, alpha: float = ALPHA
) -> tuple[Change, ...]:
    """The change points of ``values`` (oldest first; None or NaN: no figure that night)."""
    where = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if len(where) < MIN_NIGHTS:
        return ()
    raw = np.asarray([values[i] for i in where], dtype=float)
    x = _without_outliers(raw, _robust_sigma(raw))
    cuts = _merge(x, _candidates(x, _robust_sigma(x)), alpha, min_effect)
    out = []
    for k, cut in enumerate(cuts):
        p, rel, before, after, n_a, n_b = _judge(x, cuts, k)
        out.append(Change(where[cut], before, after, rel, p, n_a, n_b))
    return tuple(out)


def change_indexes(values: Sequence[float | None], min_effect: float = 0.0) -> list[int]:
    """Only where the changes are (the benchmark's view)."""
    return [c.index for c in changes_of(values, min_effect)]
