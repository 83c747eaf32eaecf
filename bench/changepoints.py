"""Benchmark: change points over nightly histories against a pairwise check (issue 24).

Synthetic histories, seeded: 200 series × 60 nights around 100, night-to-night noise 5 %
(one σ), each night 5 trials (2 % more noise between trials). 100 series shift by 1–5 σ
(20 each, up or down) at a known night in 10..50; 20 of those and 20 of 60 flat series
drift slowly (1 % a week); 40 series have a one-night outlier (4–6 σ) away from any shift;
40 series are flat with nothing else.

For each method: recall per shift size (a detection within ±2 nights of the shift counts),
false alerts (detections within ±2 nights of no shift, outliers included, over all
detections; drift-only series left out and reported apart) and time.

- change-point methods see each night's mean and run once over the whole history;
- the pairwise check is vbench's `--check-regression last:3` rule each night from night 3:
  that night's 5 trials against the 15 of the three nights before, Mann–Whitney U at 0.05
  and a 5 % minimum effect; alerts on the three nights after a shift count as that
  shift's (never as false), only the first one as its detection.

A detection of a 1–2 σ shift more than 2 nights off counts as a false alert (the strict
reading); the column "in series without a shift" shows how many were on series that never
moved (flat, outliers).

    .venv/bin/python -m bench.changepoints [--seed 1] [--series 200]
    .venv/bin/python -m bench.changepoints --history-runs 1000 [--metrics 30] [--repeat 3]
    # every candidate library: run it from a scratch venv (see bench/changepoints_libs.py)
    PYTHONPATH=. /tmp/cp/bin/python -m bench.changepoints
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.changepoints_libs import available

NIGHTS = 60
TRIALS = 5
SIGMA = 0.05


@dataclass(frozen=True)
class Series:
    trials: np.ndarray  # nights × trials
    shift_at: int | None  # first night after the shift
    sigmas: int  # the shift's size in σ (0: none)
    drift: bool
    outlier_at: int | None

    @property
    def means(self) -> np.ndarray:
        return self.trials.mean(axis=1)


def _series(rng: np.random.Generator, sigmas: int, drift: bool, outlier: bool) -> Series:
    nights = np.arange(NIGHTS)
    level = np.full(NIGHTS, 100.0)
    shift_at = None
    if sigmas:
        shift_at = int(rng.integers(10, 51))
        level[shift_at:] *= 1 + rng.choice([-1, 1]) * sigmas * SIGMA
    if drift:
        level *= 1 + rng.choice([-1, 1]) * 0.01 / 7 * nights
    night = level * (1 + rng.normal(0, SIGMA, NIGHTS))
    outlier_at = None
    if outlier:
        far = [n for n in range(3, NIGHTS) if shift_at is None or abs(n - shift_at) > 4]
        outlier_at = int(rng.choice(far))
        night[outlier_at] *= 1 + rng.choice([-1, 1]) * rng.uniform(4, 6) * SIGMA
    trials = night[:, None] * (1 + rng.normal(0, 0.02, (NIGHTS, TRIALS)))
    return Series(trials, shift_at, sigmas, drift, outlier_at)


def histories(seed: int, count: int = 200) -> list[Series]:
    rng = np.random.default_rng(seed)
    scale = count / 200
    out = []
    for sigmas in range(1, 6):
        for i in range(round(20 * scale)):
            out.append(_series(rng, sigmas, drift=i < 4, outlier=False))
    for i in range(round(60 * scale)):
        out.append(_series(rng, 0, drift=i < 20, outlier=20 <= i < 60))
    for _ in range(round(40 * scale)):
        out.append(_series(rng, 0, drift=False, outlier=False))
    return out


def pairwise_last3(s: Series) -> list[int]:
    """Nights the pairwise check against the last three nights alerts on."""
    from scipy.stats import mannwhitneyu

    alerts = []
    for n in range(3, NIGHTS):
        base = s.trials[n - 3:n].ravel()
        tonight = s.trials[n]
        effect = abs(tonight.mean() - base.mean()) / base.mean()
        if effect > 0.05 and mannwhitneyu(tonight, base).pvalue < 0.05:
            alerts.append(n)
    return alerts


@dataclass
class Score:
    hits: dict[int, int]
    shifts: dict[int, int]
    true: int = 0
    false: int = 0
    false_unshifted: int = 0  # of false: in series without any shift
    drift_flagged: int = 0
    drift_series: int = 0
    seconds: float = 0.0

    def recall(self, sizes: Sequence[int]) -> float:
        return sum(self.hits[k] for k in sizes) / max(1, sum(self.shifts[k] for k in sizes))

    @property
    def false_share(self) -> float:
        return self.false / max(1, self.true + self.false)


def score(series: Sequence[Series], detect: Callable[[Series], list[int]],
          pairwise: bool = False) -> Score:
    sc = Score({k: 0 for k in range(1, 6)}, {k: 0 for k in range(1, 6)})
    for s in series:
        t0 = time.perf_counter()
        found = detect(s)
        sc.seconds += time.perf_counter() - t0
        if s.shift_at is None and s.drift:
            sc.drift_series += 1
            sc.drift_flagged += bool(found)
            continue
        late = 3 if pairwise else 2  # a pairwise check alerts for nights after a shift
        near = [n for n in found if s.shift_at is not None and -2 <= n - s.shift_at <= late]
        if s.shift_at is not None:
            sc.shifts[s.sigmas] += 1
            sc.hits[s.sigmas] += bool(near)
        sc.true += min(1, len(near))
        sc.false += len(found) - len(near)
        sc.false_unshifted += len(found) if s.shift_at is None else 0
    return sc


def row(name: str, sc: Score) -> str:
    recalls = " | ".join(f"{sc.recall([k]):.2f}" for k in range(1, 6))
    return (f"| {name} | {recalls} | **{sc.recall([3, 4, 5]):.2f}** | {sc.true + sc.false} | "
            f"**{sc.false_share:.1%}** | {sc.false_unshifted} | "
            f"{sc.drift_flagged}/{sc.drift_series} | {sc.seconds:.2f} s |")


def _cli_seconds(args: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of the command in a fresh process:
    on a shared machine the wall time is mostly waiting for a core."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "vbench", *args], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def history_timing(runs: int, metrics: int, repeat: int) -> None:
    """`vbench history --changes` over ``runs`` stored runs × ``metrics`` metrics in a
    fresh process, beside `vbench history` of the same runs and `vbench --version`."""
    from bench.nightly_store import Nights, build

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        build(root, Nights(nights=runs, metrics=tuple(f"metric_{i:02d}" for i in
                                                      range(metrics)), change_at=runs // 2))
        print(f"store: {runs} runs × {metrics} metrics × 3 trials, built in "
              f"{time.perf_counter() - t0:.0f} s")
        env = {**os.environ, "VBENCH_HOME": tmp, "VBENCH_STORE": "", "VBENCH_RESULTS": ""}
        common = ["--results", tmp, "--limit", str(runs)]
        for name, args in (("vbench --version", ["--version"]),
                           ("vbench history", ["history", "nightly", *common]),
                           ("vbench history --changes", ["history", "nightly", "--changes",
                                                         *common])):
            wall, cpu = _cli_seconds(args, env, repeat)
            print(f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU (medians of {repeat}; "
                  f"load average {os.getloadavg()[0]:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--history-runs", type=int, default=0,
                    help="time `vbench history --changes` over this many stored runs instead")
    ap.add_argument("--metrics", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.history_runs:
        history_timing(args.history_runs, args.metrics, args.repeat)
        return
    series = histories(args.seed, args.series)
    print(f"{len(series)} series × {NIGHTS} nights, seed {args.seed}\n")
    print("| method | recall 1σ | 2σ | 3σ | 4σ | 5σ | recall ≥3σ | detections | false "
          "alerts | of which in series without a shift | drift-only flagged | time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(row("pairwise vs last:3 (vbench's rule)", score(series, pairwise_last3, True)))
    for name, fn in available().items():
        print(row(name, score(series, lambda s, fn=fn: fn(s.means))), flush=True)


if __name__ == "__main__":
    main()
