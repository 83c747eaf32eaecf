"""Compare two runs point by point: both values, the ratio, and whether the difference
is significant.

Significance: a two-sided Mann–Whitney U test on the trial values (SciPy; exact when
the samples are small and untied). With few trials the test cannot reach the
threshold at all — with 3 trials against 3 the smallest possible two-sided p-value is
2 / C(6, 3) = 0.1 — so then the 95 % confidence intervals are compared instead: the
difference is called significant when they do not overlap. With fewer than two
trials on a side there is no interval and the answer is "cannot tell".

Points are matched by their labels (factor → level), not by their index. What the runs
measured and where (scenario after ``--set``, overrides, lab) is compared too, so that a
difference in the figures is never read without the difference in the experiment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vbench.analysis.comparable import Comparability, compare_runs
from vbench.analysis.figures import FactDiff, RunFigures, better, fact_differences, present
from vbench.analysis.stats import Summary, summarize

DEFAULT_ALPHA = 0.05
MANN_WHITNEY = "mann-whitney"
CI_OVERLAP = "ci-overlap"
NO_TEST = "none"


@dataclass(frozen=True)
class Significance:
    significant: bool | None  # None: cannot tell
    method: str  # mann-whitney | ci-overlap | none
    p_value: float | None
    reason: str

    @property
    def text(self) -> str:
        if self.significant is None:
            return "cannot tell"
        return "significant" if self.significant else "not significant"


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p-value the exact U test can give for these sizes."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def significance(
    a: Sequence[float], b: Sequence[float], alpha: float = DEFAULT_ALPHA
) -> Significance:
    """Is the difference between samples ``a`` and ``b`` significant at ``alpha``?"""
    xa = [float(x) for x in a if x is not None and math.isfinite(x)]
    xb = [float(x) for x in b if x is not None and math.isfinite(x)]
    na, nb = len(xa), len(xb)
    if na < 2 or nb < 2:
        return Significance(None, NO_TEST, None, f"too few trials ({na} vs {nb}; need 2 each)")
    floor = min_p_value(na, nb)
    if floor <= alpha:
        if len(set(xa) | set(xb)) == 1:
            return Significance(False, MANN_WHITNEY, 1.0, "all trials identical")
        from scipy import stats as sp  # imported here: a second of start-up otherwise

        res = sp.mannwhitneyu(xa, xb, alternative="two-sided", method="auto")
        p = float(res.pvalue)
        if not math.isfinite(p):
            return Significance(False, MANN_WHITNEY, None, "U test undefined (ties)")
        return Significance(p <= alpha, MANN_WHITNEY, p, f"Mann–Whitney U p = {p:.3g}")
    sa, sb = summarize(xa), summarize(xb)
    assert sa.ci_low is not None and sa.ci_high is not None
    assert sb.ci_low is not None and sb.ci_high is not None
    disjoint = sa.ci_high < sb.ci_low or sb.ci_high < sa.ci_low
    why = (
        f"95 % CIs {'disjoint' if disjoint else 'overlap'} "
        f"(U test cannot reach α = {alpha:g} with {na} vs {nb} trials)"
    )
    return Significance(disjoint, CI_OVERLAP, None, why)


@dataclass(frozen=True)
class CompareRow:
    """One metric at one point of both runs (B against A)."""

    labels: Mapping[str, str]
    title: str
    metric: str
    unit: str
    better: str
    a: Summary
    b: Summary
    sig: Significance

    @property
    def ratio(self) -> float | None:
        if self.a.mean is None or self.b.mean is None or self.a.mean == 0:
            return None
        return self.b.mean / self.a.mean

    @property
    def change(self) -> float | None:
        r = self.ratio
        return None if r is None else r - 1.0

    @property
    def verdict(self) -> str:
        """``better``/``worse`` (significant), ``not significant`` or ``cannot tell``."""
        if self.a.n == 0 or self.b.n == 0:
            return "no data"
        if not self.sig.significant:
            return self.sig.text
        up = (self.b.mean or 0) > (self.a.mean or 0)
        return "better" if up == (self.better == "higher") else "worse"


@dataclass(frozen=True)
class CompareResult:
    run_a: Mapping[str, object]
    run_b: Mapping[str, object]
    factors: tuple[str, ...]
    rows: tuple[CompareRow, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    differences: tuple[FactDiff, ...]  # testbed, guest and version facts
    alpha: float
    # What each run measured and where: scenario (after --set), overrides, lab.
    comparability: Comparability | None = None

    @property
    def hardware_differs(self) -> bool:
        return any(d.hardware for d in self.differences)


def _key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def match_points(a: RunFigures, b: RunFigures) -> list[tuple[int, int]]:
    """(point in A, point in B) with equal labels, in A's order."""
    in_b = {_key(labels): p for p, labels in b.points.items()}
    return [
        (p, in_b[_key(labels)]) for p, labels in sorted(a.points.items()) if _key(labels) in in_b
    ]


def compare_figures(
    a: RunFigures,
    b: RunFigures,
    metrics: Sequence[str],
    *,
    alpha: float = DEFAULT_ALPHA,
    better_overrides: Mapping[str, str] | None = None,
) -> CompareResult:
    """Compare ``metrics`` (names present in either run) at every common point."""
    pairs = match_points(a, b)
    rows: list[CompareRow] = []
    for pa, pb in pairs:
        for m in metrics:
            va, vb = present(a.trial_values(pa, m)), present(b.trial_values(pb, m))
            if not va and not vb:
                continue
            unit = a.units.get(m) or b.units.get(m) or ""
            rows.append(CompareRow(
                labels=dict(a.points[pa]), title=a.title(pa), metric=m, unit=unit,
                better=better(m, unit, better_overrides), a=summarize(va), b=summarize(vb),
                sig=significance(va, vb, alpha),
            ))
    matched_a = {p for p, _ in pairs}
    matched_b = {p for _, p in pairs}
    return CompareResult(
        run_a=a.run,
        run_b=b.run,
        factors=a.factors or b.factors,
        rows=tuple(rows),
        only_a=tuple(a.title(p) for p in sorted(a.points) if p not in matched_a),
        only_b=tuple(b.title(p) for p in sorted(b.points) if p not in matched_b),
        # The lab is compared in full by the comparability check, not as facts.
        differences=tuple(d for d in fact_differences(a.run, b.run)
                          if not d.key.startswith("lab.")),
        alpha=alpha,
        comparability=compare_runs(a.run, b.run),
    )
