"""Compare two runs point by point: both values, the ratio, and whether the difference
is significant.

Significance: a two-sided Mann–Whitney U test on the trial values (SciPy; exact when
the samples are small and untied). With few trials the test cannot reach the
threshold at all — with 3 trials against 3 the smallest possible two-sided p-value is
2 / C(6, 3) = 0.1 — so then the 95 % confidence intervals are compared instead: the
difference is called significant when they do not overlap. With fewer than two
trials on a side there is no interval and the answer is "cannot tell".

Better or worse also needs a difference larger than a minimum effect: a relative change
of :data:`DEFAULT_MIN_EFFECT` (3 %) unless the scenario's ``report.min_effect`` sets
another for the metric. Within it the runs are the "same", whatever the test says:
with many trials a 0.1 % difference is significant and still no change worth a word. A
metric without a direction of improvement (vbench/analysis/direction.py) is "changed"
at most, never better or worse; a metric the scenario's QoS caps in its better direction
(``total_iops <= 400``: a rate limit), or one a driver parameter the run sets caps
(fio's ``rate_iops``, as its catalogue declares), is "capped", not compared as a
performance figure.

Points are matched by their labels (factor → level), not by their index. What the runs
measured and where (scenario after ``--set``, overrides, lab) is compared too, so that a
difference in the figures is never read without the difference in the experiment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.analysis.comparable import Comparability, compare_runs
from vbench.analysis.direction import Directions, DirectionSource, directions_with
from vbench.analysis.figures import FactDiff, RunFigures, better, fact_differences, present
from vbench.analysis.stats import Summary, summarize

DEFAULT_ALPHA = 0.05
# The smallest relative change called better or worse: below it, trial-to-trial noise of
# a few percent is usual on shared labs and no reader acts on it.
DEFAULT_MIN_EFFECT = 0.03
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
    min_effect: float = DEFAULT_MIN_EFFECT  # relative change below which it is "same"
    capped: str | None = None  # why the metric is no performance figure here (QoS cap)

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
        """``better``/``worse`` (significant and beyond the minimum effect), ``same``
        (within it), ``changed`` (no direction), ``capped``, ``not significant``,
        ``cannot tell`` or ``no data``."""
        if self.a.n == 0 or self.b.n == 0:
            return "no data"
        if self.capped:
            return "capped"
        change = self.change
        if change is not None and abs(change) <= self.min_effect:
            return "same"
        if not self.sig.significant:
            return self.sig.text
        if self.better not in ("higher", "lower"):
            return "changed"
        up = (self.b.mean or 0) > (self.a.mean or 0)
        return "better" if up == (self.better == "higher") else "worse"

    @property
    def reason(self) -> str:
        """Why the verdict: the test, and the minimum effect or the cap when they decide."""
        if self.capped and self.a.n and self.b.n:
            return f"capped: {self.capped}"
        if self.verdict == "same":
            return f"within ±{self.min_effect * 100:g} % ({self.sig.reason})"
        return self.sig.reason


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
    min_effect: float = DEFAULT_MIN_EFFECT  # the default; a row holds its metric's own

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
    better_overrides: Mapping[str, str] | DirectionSource | None = None,
    min_effect: float | None = None,
) -> CompareResult:
    """Compare ``metrics`` (names present in either run) at every common point, in the
    directions of run A (its stored catalogue; ``better_overrides`` on top) with A's
    scenario's minimum effects (``min_effect``: the default for metrics it does not
    name) and QoS caps."""
    pairs = match_points(a, b)
    rows: list[CompareRow] = []
    directions = directions_with(a.run, better_overrides)
    scenario = a.scenario
    default = DEFAULT_MIN_EFFECT if min_effect is None else min_effect
    effects = min_effects(scenario)
    caps = capped_metrics(scenario, directions, metrics, others=[b.scenario])
    for pa, pb in pairs:
        for m in metrics:
            va, vb = present(a.trial_values(pa, m)), present(b.trial_values(pb, m))
            if not va and not vb:
                continue
            unit = a.units.get(m) or b.units.get(m) or ""
            rows.append(CompareRow(
                labels=dict(a.points[pa]), title=a.title(pa), metric=m, unit=unit,
                better=better(m, unit, directions), a=summarize(va), b=summarize(vb),
                sig=significance(va, vb, alpha), min_effect=effects.get(m, default),
                capped=caps.get(m),
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
        min_effect=default,
    )


def min_effects(scenario: Mapping[str, Any]) -> dict[str, float]:
    """``report.min_effect`` of a stored scenario: metric -> smallest relative change."""
    report = scenario.get("report") if isinstance(scenario.get("report"), Mapping) else {}
    raw = report.get("min_effect") if isinstance(report.get("min_effect"), Mapping) else {}
    return {str(k): float(v) for k, v in raw.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0}  # fmt: skip


_CAPS = {"higher": ("<=", "<"), "lower": (">=", ">")}


def capped_metrics(
    scenario: Mapping[str, Any], directions: Directions, metrics: Sequence[str],
    others: Sequence[Mapping[str, Any]] = (),
) -> dict[str, str]:
    """Metric -> why it is capped: :func:`qos_caps`, and a driver parameter its catalogue
    says caps it that the scenario sets (in ``workload.params``, a factor or a search) —
    and every one of ``others`` (the runs it is compared with) too: a cap set on one side
    only is a difference in the experiment (the comparison prints it), and the figure it
    changes is compared."""
    out = qos_caps(scenario, directions)
    set_params = _set_params(scenario)
    for other in others:
        theirs = _set_params(other)
        set_params = {k: v for k, v in set_params.items() if k in theirs}
    for m in metrics:
        params = [p for p in directions.capped_by(m) if p in set_params]
        if params and m not in out:
            out[m] = f"{', '.join(params)} caps it ({set_params[params[0]]})"
    return out


def _set_params(scenario: Mapping[str, Any]) -> dict[str, str]:
    """Driver parameter name -> where the scenario sets it (any depth of the workload's
    parameters, a factor's path, a search's path or factor)."""
    out: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if v is not None and not isinstance(v, Mapping | list):
                    out.setdefault(str(k), f"workload.params: {k}={v}")
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    workload = scenario.get("workload") if isinstance(scenario.get("workload"), Mapping) else {}
    walk(workload.get("params"))
    for name, f in (scenario.get("factors") or {}).items():
        path = str(f.get("path") or "") if isinstance(f, Mapping) else ""
        out[path.rsplit(".", 1)[-1] or str(name)] = f"factor {name}"
    search = scenario.get("search") if isinstance(scenario.get("search"), Mapping) else {}
    if search.get("factor"):
        path = str(search.get("path") or f"workload.params.{search['factor']}")
        out[path.rsplit(".", 1)[-1]] = f"searched factor {search['factor']}"
    return out


def qos_caps(scenario: Mapping[str, Any], directions: DirectionSource) -> dict[str, str]:
    """Metric -> the QoS criterion that bounds it in its better direction (a higher-is-
    better rate held ``<= 400``): its value follows the cap, so a difference in it is no
    difference in performance."""
    out: dict[str, str] = {}
    for c in scenario.get("qos") or ():
        if not isinstance(c, Mapping) or not c.get("metric"):
            continue
        m, op = str(c["metric"]), str(c.get("op") or "")
        if op in _CAPS.get(str(directions.of(m, str(c.get("unit") or ""))), ()):
            name = f"QoS {c['name']!r}: " if c.get("name") else "QoS "
            out.setdefault(m, f"{name}{m} {op} {c.get('threshold')}")
    return out
