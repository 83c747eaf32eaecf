"""The change-point libraries compared by bench/changepoints.py, each behind one function
``detect(means) -> list[int]`` (indexes of the first night after each change).

Only ruptures is a vbench dependency; the others are tried when installed (in a scratch
environment: signal-processing-algorithms pins numpy < 2, apache-otava pulls BigQuery,
Slack and Graphite clients):

    python3 -m venv /tmp/cp && /tmp/cp/bin/pip install numpy scipy pandas ruptures \
        signal-processing-algorithms apache-otava
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import numpy as np

NOISE = 0.05  # the floor vbench uses: the night-to-night noise an A/A run would measure
Detector = Callable[[Sequence[float]], list[int]]


def _ruptures_pelt(means: Sequence[float]) -> list[int]:
    import ruptures as rpt

    x = np.asarray(means, dtype=float)
    sigma = float(np.median(np.abs(np.diff(x)))) / 0.9539 or 1e-9  # MAD of differences
    algo = rpt.Pelt(model="l2", min_size=2, jump=1).fit(x)
    # BIC-like penalty for a mean shift: 2 log n in units of the noise variance.
    return [i for i in algo.predict(pen=3 * np.log(len(x)) * sigma**2) if i < len(x)]


def _ruptures_binseg(means: Sequence[float]) -> list[int]:
    import ruptures as rpt

    x = np.asarray(means, dtype=float)
    sigma = float(np.median(np.abs(np.diff(x)))) / 0.9539 or 1e-9
    algo = rpt.Binseg(model="l2", min_size=2, jump=1).fit(x)
    return [i for i in algo.predict(pen=3 * np.log(len(x)) * sigma**2) if i < len(x)]


def _mongodb_e_divisive(means: Sequence[float]) -> list[int]:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return sorted(int(i) for i in e_divisive(np.asarray(means, dtype=float), pvalue=0.01,
                                              permutations=100))


def _otava(means: Sequence[float]) -> list[int]:
    from otava.analysis import compute_change_points

    points, _ = compute_change_points(list(map(float, means)), window_len=30,
                                      max_pvalue=0.001)
    return sorted(int(cp.index) for cp in points)


def _vbench(means: Sequence[float]) -> list[int]:
    from vbench.analysis.changepoints import change_indexes

    return change_indexes(means, NOISE)


CANDIDATES: dict[str, tuple[str, Detector]] = {
    "ruptures PELT (l2, BIC penalty)": ("ruptures", _ruptures_pelt),
    "ruptures BinSeg (l2, BIC penalty)": ("ruptures", _ruptures_binseg),
    "MongoDB e-divisive (p 0.01, 100 perm.)": ("signal_processing_algorithms", _mongodb_e_divisive),
    "Apache Otava (window 30, p 0.001)": ("otava", _otava),
    "vbench changes_of (BinSeg + merge, floor 5 %)": ("vbench", _vbench),
}


def available() -> dict[str, Detector]:
    """The candidates whose library is importable here."""
    return {name: fn for name, (module, fn) in CANDIDATES.items()
            if importlib.util.find_spec(module) is not None}
