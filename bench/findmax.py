"""Benchmark: how many levels the find-max search runs, and how close its answer is.

A synthetic system with a known boundary stands in for the lab (no guests: this
measures the search, vbench/analysis/findmax.py, not a workload). Its response time at
load ``x`` follows a single queue, ``R(x) = S / (1 − x / C)``, and the criterion is
``mean R ≤ L`` over a level's trials, so the true maximum is ``B = C (1 − S / L)``.
Each trial's R is multiplied by ``1 + N(0, noise)``.

Measured, over ``--searches`` boundaries drawn log-uniformly in the searched range:

- **noise-free**: distinct levels run until the stopping gap (1 % of the lowest fail) is
  reached, against the *ideal* binary search from the same bounds (assumes min passes
  and max fails without running them, halves the bracket until the same gap), and
  the error of the found maximum (B − highest pass) / B;
- **noisy**: the share of searches whose answer (highest pass) lies within the
  stopping gap of B, and the levels and trials they took;
- with ``--adaptive MAX``, the same noisy searches (same boundaries, same noise seed)
  with an adaptive repeat ``{min: trials, max: MAX}``: a level decided when its verdict
  is certain under the interval (vbench/analysis/findmax_qos.py, ``mean_certain``, at
  the adaptive repeat's decision confidence) instead of a fixed count plus 2 retries
  of disagreeing trials.

    .venv/bin/python -m bench.findmax [--searches 200] [--noise 0.05] [--seed 1]
        [--adaptive 12]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from dataclasses import dataclass

from vbench.analysis.adaptive import ALPHA
from vbench.analysis.findmax import FindMax, SearchParams
from vbench.analysis.findmax_qos import mean_certain

LO, HI = 1.0, 1000.0
SERVICE, LIMIT = 1.0, 10.0  # S and L: the boundary sits at 90 % of the capacity


@dataclass(frozen=True)
class Result:
    levels: int
    trials: int
    answer: float | None
    boundary: float
    ideal_levels: int

    @property
    def error(self) -> float:
        return math.inf if self.answer is None else (self.boundary - self.answer) / self.boundary


def response(
    level: float, capacity: float, noise: float, rng: random.Random, curve: str = "queue"
) -> float:
    """``queue``: R = S / (1 − x/C); ``linear``: R = L · x / B (a figure proportional to
    the load, e.g. CPU, crossing the limit L at the boundary B = 0.9 C)."""
    if curve == "linear":
        r = LIMIT * level / (capacity * (1 - SERVICE / LIMIT))
    elif level >= capacity:
        return math.inf
    else:
        r = SERVICE / (1 - level / capacity)
    return r * (1 + rng.gauss(0, noise)) if noise else r


def search(
    boundary: float, noise: float, gap: float, trials: int, rng: random.Random,
    curve: str = "queue", most: int | None = None,
) -> Result:
    """``most``: an adaptive repeat's max (levels decided by the interval)."""
    capacity = boundary / (1 - SERVICE / LIMIT)
    confidence = 1 - ALPHA / max(1, (most or trials) - trials + 1)
    params = SearchParams(min=LO, max=HI, integer=False, gap=gap, trials=trials,
                          verify_trials=trials, noisy_retries=2, decide_by_ci=most is not None,
                          max_trials=most or 0, ci_confidence=confidence)
    fm = FindMax(params)
    measured: dict[float, list[float]] = {}
    while (req := fm.next()) is not None:
        xs = measured.setdefault(req.level, [])
        xs += [response(req.level, capacity, noise, rng, curve) for _ in range(req.trials)]
        finite = [x for x in xs if math.isfinite(x)]
        certain = len(finite) < len(xs) or mean_certain(finite, LIMIT, confidence)
        fm.record(req.level, [x <= LIMIT for x in xs], statistics.fmean(xs) <= LIMIT,
                  certain)
    out = fm.outcome()
    return Result(len(out.levels), out.trials, out.highest_pass, boundary,
                  ideal(boundary, gap))


def ideal(boundary: float, gap: float) -> int:
    """Plain bisection between the bounds with a perfect oracle, to the same gap."""
    hp, lf, n = LO, HI, 0
    while lf - hp > gap / 100 * lf:
        mid = (hp + lf) / 2
        n += 1
        if mid <= boundary:
            hp = mid
        else:
            lf = mid
    return n


def boundaries(n: int, rng: random.Random) -> list[float]:
    # Log-uniform inside the range, away from the very ends (answers there are the bounds).
    return [math.exp(rng.uniform(math.log(LO * 2), math.log(HI * 0.95))) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--gap", type=float, default=1.0, help="stopping gap, percent")
    ap.add_argument("--trials", type=int, default=3, help="trials per level (noisy runs)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--curve", choices=["queue", "linear"], default="queue",
                    help="how the criterion's figure grows with the load (noisy runs)")
    ap.add_argument("--adaptive", type=int, default=None, metavar="MAX",
                    help="also run the noisy searches with an adaptive repeat up to MAX")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    bs = boundaries(a.searches, rng)

    clean = [search(b, 0.0, a.gap, 1, rng) for b in bs]
    ratios = [r.levels / r.ideal_levels for r in clean]
    within = sum(1 for r in clean if 0 <= r.error <= a.gap / 100)
    print(f"noise-free, {a.searches} searches, gap {a.gap:g} % (levels: distinct levels run)")
    print("| | mean | median | max |")
    print("|---|---|---|---|")
    print(f"| levels | {statistics.fmean(r.levels for r in clean):.1f} | "
          f"{statistics.median(r.levels for r in clean):.0f} | {max(r.levels for r in clean)} |")
    print(f"| ideal binary search | {statistics.fmean(r.ideal_levels for r in clean):.1f} | "
          f"{statistics.median(r.ideal_levels for r in clean):.0f} | "
          f"{max(r.ideal_levels for r in clean)} |")
    print(f"| levels / ideal | {statistics.fmean(ratios):.2f}x | "
          f"{statistics.median(ratios):.2f}x | {max(ratios):.2f}x |")
    errs = [100 * r.error for r in clean]
    print(f"| error of the max (%) | {statistics.fmean(errs):.2f} | "
          f"{statistics.median(errs):.2f} | {max(errs):.2f} |")
    print(f"answers within the gap below B: {within}/{a.searches}")
    print()

    seed = rng.randrange(2**31)  # both noisy variants see the same noise stream
    noisy = [search(b, a.noise, a.gap, a.trials, r, a.curve)
             for b, r in zip(bs, _streams(seed, len(bs)), strict=True)]
    _noisy_table(a, noisy, f"{a.trials} trials per level (+2 retries if they disagree)")
    if a.adaptive is not None:
        print()
        adaptive = [search(b, a.noise, a.gap, a.trials, r, a.curve, a.adaptive)
                    for b, r in zip(bs, _streams(seed, len(bs)), strict=True)]
        _noisy_table(a, adaptive, f"adaptive repeat {{min: {a.trials}, max: {a.adaptive}}}"
                     ": a level decided when certain")
        ratio = (statistics.fmean(r.trials for r in adaptive)
                 / statistics.fmean(r.trials for r in noisy))
        print(f"trials, adaptive / fixed (mean): {ratio:.2f}x")


def _streams(seed: int, n: int) -> list[random.Random]:
    return [random.Random(seed * 1_000_003 + i) for i in range(n)]


def _noisy_table(a: argparse.Namespace, noisy: list[Result], how: str) -> None:
    ok = [r for r in noisy if abs(r.error) <= a.gap / 100]
    errs = sorted(abs(100 * r.error) for r in noisy)
    print(f"{a.curve} curve, noise {100 * a.noise:g} % per trial, {how}, gap {a.gap:g} %")
    print(f"| answers within the gap of B | {len(ok)}/{a.searches} "
          f"({100 * len(ok) / a.searches:.1f} %) |")
    print("|---|---|")
    print(f"| |error| median / p95 / max (%) | {statistics.median(errs):.2f} / "
          f"{errs[int(0.95 * (len(errs) - 1))]:.2f} / {errs[-1]:.2f} |")
    print(f"| levels mean / max | {statistics.fmean(r.levels for r in noisy):.1f} / "
          f"{max(r.levels for r in noisy)} |")
    print(f"| trials mean / max | {statistics.fmean(r.trials for r in noisy):.1f} / "
          f"{max(r.trials for r in noisy)} |")


if __name__ == "__main__":
    main()
