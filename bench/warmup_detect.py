"""Benchmark: the MSER-5 warm-up detector (vbench/analysis/warmup.py) on synthetic
per-second series whose settling point is known.

Kinds (each series 120–600 s long, level 1,000, AR(1) noise so neighbouring seconds are
correlated as IOPS are):

- ``exponential``: ``level * (1 - a * exp(-t / tau))``, a in 0.3–0.9, tau 5–40 s, noise
  cv 5 %;
- ``step``: 40–70 % of the level until a step at 5–40 % of the length, noise cv 5 %;
- ``none``: stationary from the first second (truth 0), noise cv 5 %;
- ``noisy``: ``exponential`` with noise cv 20 % and stronger correlation (phi 0.6);
- ``drifting``: a linear drift of 20–50 % over the whole series: the truth is "never
  settles".

The true settling point of an exponential is the first second its remaining bias falls
under the standard error of one batch mean (sd / sqrt(5)): a smaller bias cannot be told
from noise by any batch-based rule. Error = |found - truth| / length; a series called
"not settled" that has a truth counts as an error of 100 %. The baseline is what a user
does without the detector: a fixed warm-up guess of 10 % of the length. "false late": on
the stationary kind, how often a warm-up configured at 10 % of the length would be flagged
as ended too early (the series "settled" more than one batch after it).

With ``--online`` the same kinds go through the live rule of ``phases.warmup: auto``
(``warmup_end``: fed one observation at a time, as the fio driver does, with a cap at
half the series): where it ended against the truth, how often it ended before the
series settled, how often it ran to the cap, and the bias that reaches the measurement —
the mean of the 60 s after the end against the settled level.

    .venv/bin/python -m bench.warmup_detect [--series 400] [--seed 25] [--online]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from vbench.analysis.warmup import BATCH, mser, warmup_end

LEVEL = 1000.0
Made = tuple[np.ndarray, int | None]  # the series and its true settling second


def _noise(rng: np.random.Generator, n: int, cv: float, phi: float) -> np.ndarray:
    e = rng.normal(0.0, 1.0, n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + np.sqrt(1 - phi * phi) * e[i]
    return LEVEL * cv * x


def _exponential(rng: np.random.Generator, n: int, cv: float = 0.05, phi: float = 0.3
                 ) -> Made:
    a, tau = rng.uniform(0.3, 0.9), rng.uniform(5, 40)
    t = np.arange(n, dtype=float)
    bias = LEVEL * a * np.exp(-t / tau)
    under = np.flatnonzero(bias < LEVEL * cv / np.sqrt(BATCH))
    return LEVEL - bias + _noise(rng, n, cv, phi), int(under[0]) if len(under) else n


def _step(rng: np.random.Generator, n: int) -> Made:
    at = int(rng.uniform(0.05, 0.4) * n)
    y = np.full(n, LEVEL)
    y[:at] *= rng.uniform(0.4, 0.7)
    return y + _noise(rng, n, 0.05, 0.3), at


def _none(rng: np.random.Generator, n: int) -> Made:
    return LEVEL + _noise(rng, n, 0.05, 0.3), 0


def _noisy(rng: np.random.Generator, n: int) -> Made:
    return _exponential(rng, n, cv=0.20, phi=0.6)


def _drifting(rng: np.random.Generator, n: int) -> Made:
    slope = rng.uniform(0.2, 0.5) * LEVEL / n
    return LEVEL + slope * np.arange(n) + _noise(rng, n, 0.05, 0.3), None


KINDS: dict[str, Callable[[np.random.Generator, int], Made]] = {
    "exponential": _exponential, "step": _step, "none": _none, "noisy": _noisy,
    "drifting": _drifting,
}  # fmt: skip


def _error(found: int | None, truth: int | None, n: int) -> float:
    if truth is None:
        return 0.0 if found is None else 1.0
    if found is None:
        return 1.0
    return abs(found - truth) / n


def run(series: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"{series} series per kind, seed {seed}, lengths 120-600 s")
    print(f"{'kind':<12} {'median err':>10} {'p90 err':>8} {'not settled':>12} "
          f"{'baseline med err':>17} {'false late':>10} {'µs/series':>10}")
    all_err, all_base = [], []
    for name, make in KINDS.items():
        errs, base, unsettled, late, spent = [], [], 0, 0, 0.0
        for _ in range(series):
            n = int(rng.integers(120, 601))
            y, truth = make(rng, n)
            t0 = time.perf_counter()
            found = mser(y)
            spent += time.perf_counter() - t0
            unsettled += found.index is None
            # A warm-up configured at 10 % of the length, flagged as the engine does.
            late += truth == 0 and found.index is not None and found.index > 0.1 * n + BATCH
            errs.append(_error(found.index, truth, n))
            base.append(_error(int(0.1 * n), truth, n))
        all_err += errs
        all_base += base
        print(f"{name:<12} {statistics.median(errs) * 100:>9.1f}% "
              f"{np.percentile(errs, 90) * 100:>7.1f}% {unsettled / series * 100:>11.1f}% "
              f"{statistics.median(base) * 100:>16.1f}% "
              f"{f'{late / series * 100:.1f}%' if name == 'none' else '—':>10} "
              f"{spent / series * 1e6:>10.0f}")
    print(f"{'all':<12} {statistics.median(all_err) * 100:>9.1f}% "
          f"{np.percentile(all_err, 90) * 100:>7.1f}% {'':>12} "
          f"{statistics.median(all_base) * 100:>16.1f}%")


def _online_end(y: np.ndarray, cap: int) -> tuple[int, bool]:
    """Where the live rule ends the warm-up of ``y`` (observations), and whether at the cap."""
    for n in range(1, len(y) + 1):
        answer = warmup_end(y[:n], n >= cap)
        if answer.end:
            return n, answer.settled_at is None
    return len(y), True


def run_online(series: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"live rule (phases.warmup: auto), {series} series per kind, seed {seed}, "
          "cap at half the length")
    print(f"{'kind':<12} {'at cap':>7} {'before truth':>13} {'end - truth med':>16} "
          f"{'bias after med':>15} {'bias p90':>9} {'ms/series':>10}")
    for name, make in KINDS.items():
        capped, early, late, bias, spent = 0, 0, [], [], 0.0
        for _ in range(series):
            n = int(rng.integers(120, 601))
            y, truth = make(rng, n)
            t0 = time.perf_counter()
            end, at_cap = _online_end(y, n // 2)
            spent += time.perf_counter() - t0
            capped += at_cap
            if truth is not None:
                early += end < truth
                late.append(end - truth)
                # The settled level without noise: LEVEL (every kind settles there).
                bias.append(abs(float(np.mean(y[end:end + 60])) - LEVEL) / LEVEL)
        med = f"{statistics.median(late):.0f} s" if late else "—"
        bmed = f"{statistics.median(bias) * 100:.2f}%" if bias else "—"
        b90 = f"{np.percentile(bias, 90) * 100:.2f}%" if bias else "—"
        print(f"{name:<12} {capped / series * 100:>6.1f}% {early / series * 100:>12.1f}% "
              f"{med:>16} {bmed:>15} {b90:>9} {spent / series * 1e3:>10.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=400, help="series per kind")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--online", action="store_true", help="the live rule of warmup: auto")
    args = ap.parse_args()
    if args.online:
        run_online(args.series, args.seed)
    else:
        run(args.series, args.seed)


if __name__ == "__main__":
    main()
