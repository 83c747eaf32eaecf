"""Statistics of repeated trials: mean, spread, 95 % confidence interval, noise flag.

The unit of repetition is the trial: each value handed to :func:`summarize` is one
trial's figure. Missing figures (``None``/NaN) are skipped, so ``n`` counts only the
trials that actually reported a value; a summary of nothing has ``n == 0`` and every
figure ``None`` (never 0.0).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.lazy import lazy_module

# scipy.special, not scipy.stats: the same quantile functions (stats.t.ppf calls
# special.stdtrit) without a second of import time for every command that summarises.
if TYPE_CHECKING:
    from scipy import special as _special
else:
    _special = lazy_module("scipy.special")

CONFIDENCE = 0.95
DEFAULT_CV_THRESHOLD = 0.05
# Beyond this a trial count is not advice any more, just "far too noisy".
_MAX_TRIALS_ESTIMATE = 1_000_000


@dataclass(frozen=True)
class Summary:
    """Summary of one figure over the trials of one point."""

    n: int
    mean: float | None
    median: float | None
    stdev: float | None  # sample standard deviation (ddof=1); None when n < 2
    min: float | None
    max: float | None
    cv: float | None  # stdev / |mean|; None when n < 2 or mean == 0
    ci_low: float | None  # 95 % Student-t interval of the mean; None when n < 2
    ci_high: float | None
    noisy: bool  # cv above the threshold the summary was made with
    trials_needed: int | None  # trials for a CI half-width of `threshold` x mean

    @property
    def ci_half(self) -> float | None:
        """Half-width of the confidence interval (None when there is none)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2.0

    @property
    def ci_half_rel(self) -> float | None:
        """CI half-width as a fraction of |mean| (None when undefined)."""
        half = self.ci_half
        if half is None or not self.mean:
            return None
        return half / abs(self.mean)


def _clean(values: Iterable[float | None]) -> list[float]:
    """Real, finite values only: None, NaN and ±inf are all 'no figure'."""
    out: list[float] = []
    for v in values:
        if v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


@functools.lru_cache(maxsize=4096)  # called per point and metric: thousands of times
def t_quantile(n: int, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t critical value for a sample of ``n`` (n >= 2)."""
    return float(_special.stdtrit(n - 1, 0.5 + confidence / 2.0))


@functools.lru_cache(maxsize=16)
def _z_quantile(confidence: float) -> float:
    return float(_special.ndtri(0.5 + confidence / 2.0))


def trials_needed(cv: float, threshold: float, confidence: float = CONFIDENCE) -> int | None:
    """Smallest n with t(n-1) * cv / sqrt(n) <= threshold, i.e. a CI half-width of at
    most ``threshold`` of the mean, assuming the observed cv holds.

    None when the question has no answer (threshold <= 0, cv not finite, or more than
    a million trials would be needed).
    """
    if threshold <= 0 or not math.isfinite(cv) or cv < 0:
        return None
    if cv == 0:
        return 2  # the smallest sample that has an interval at all
    # The normal quantile is a lower bound for t, so this start never overshoots;
    # the walk up is short because t(n-1) approaches z quickly.
    z = _z_quantile(confidence)
    n = max(2, math.ceil((z * cv / threshold) ** 2))
    if n > _MAX_TRIALS_ESTIMATE:
        return None
    while t_quantile(n, confidence) * cv / math.sqrt(n) > threshold:
        n += 1
    return n


def summarize(
    values: Iterable[float | None],
    cv_threshold: float = DEFAULT_CV_THRESHOLD,
    confidence: float = CONFIDENCE,
) -> Summary:
    """Summarise one figure over trials (see :class:`Summary`)."""
    xs = _clean(values)
    n = len(xs)
    if n == 0:
        return Summary(0, None, None, None, None, None, None, None, None, False, None)
    mean = math.fsum(xs) / n
    median, lo, hi = _median(xs), min(xs), max(xs)
    if n < 2:
        return Summary(1, mean, median, None, lo, hi, None, None, None, False, None)
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(n, confidence) * stdev / math.sqrt(n)
    cv = stdev / abs(mean) if mean != 0 else None
    noisy = cv is not None and cv > cv_threshold
    needed = trials_needed(cv, cv_threshold, confidence) if cv is not None else None
    return Summary(
        n=n,
        mean=mean,
        median=median,
        stdev=stdev,
        min=lo,
        max=hi,
        cv=cv,
        ci_low=mean - half,
        ci_high=mean + half,
        noisy=noisy,
        trials_needed=needed,
    )
