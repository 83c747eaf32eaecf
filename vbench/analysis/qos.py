"""QoS criteria: pass/fail per point and overall.

A criterion names a metric (or a derived figure), optionally the sample labels that
select one operation (``where: {operation: HomePage}``; a list of values makes one
check per value), the points it applies to (``at``), how the trials of a point are
combined (``stat``: mean, median, min, max or a percentile over trials such as
``p90``), a comparison and a threshold. Each (criterion, subject, point) is one check.

A check without data is ``missing`` and a threshold whose unit cannot be converted to
the data's is an ``error``: neither is a pass, because a figure that is not there
cannot show that the criterion holds.
"""

from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.analysis.figures import RunFigures, convert, present
from vbench.config.scenario import QosCriterion, Scenario
from vbench.config.tiles import within_tiles
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

PASS, FAIL, MISSING, ERROR = "pass", "fail", "missing", "error"
OP_TEXT = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}


@dataclass(frozen=True)
class QosCheck:
    """One criterion, for one subject (label selection), at one point."""

    criterion: str
    index: int  # position of the criterion in the scenario's qos list
    metric: str
    subject: Mapping[str, str]
    stat: str
    op: str
    threshold: float
    unit: str
    point: int
    point_title: str
    value: float | None  # the stat over trials, in `unit`
    n: int
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def why(self) -> str:
        """Why there is no verdict, in a word or two (empty for pass and fail)."""
        if self.status == ERROR:
            return "unit mismatch"
        if self.status == MISSING:
            return "no metric" if self.message.startswith("no metric") else "no data"
        return ""

    @property
    def subject_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.subject.items())


@dataclass(frozen=True)
class QosResult:
    checks: tuple[QosCheck, ...]
    criteria: tuple[str, ...]  # display names, in scenario order
    problems: tuple[str, ...] = ()

    @property
    def declared(self) -> bool:
        return bool(self.criteria)

    @property
    def passed(self) -> bool:
        """True when every check passed (and trivially when none is declared)."""
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[QosCheck]:
        return [c for c in self.checks if not c.passed]

    def by_criterion(self) -> dict[str, list[QosCheck]]:
        out: dict[str, list[QosCheck]] = {name: [] for name in self.criteria}
        for c in self.checks:
            out.setdefault(c.criterion, []).append(c)
        return out

    def verdict(self) -> str:
        if not self.declared:
            return "no QoS criteria declared"
        bad = self.failures
        if not bad:
            n = len(self.criteria)
            return (f"QoS pass: {len(self.checks)} checks of {n} "
                    f"criteri{'on' if n == 1 else 'a'}")
        return f"QoS FAIL: {len(bad)} of {len(self.checks)} checks did not pass"


def parse_criteria(scenario: Mapping[str, Any]) -> tuple[list[QosCriterion], list[str]]:
    out, problems = [], []
    for i, raw in enumerate(scenario.get("qos") or []):
        try:
            out.append(QosCriterion.model_validate(raw))
        except ValueError as exc:
            problems.append(f"qos[{i}] ignored: {exc}".splitlines()[0])
    if scenario.get("workloads"):  # each workload's own criteria, per tile
        from vbench.analysis.tiles import tile_criteria

        more, why = tile_criteria(scenario)
        out, problems = [*out, *more], [*problems, *why]
    return out, problems


def criterion_name(c: QosCriterion) -> str:
    if c.name:
        return c.name
    where = ""
    if c.where:
        parts = [
            f"{k}={'|'.join(v) if isinstance(v, list) else v}" for k, v in c.where.items()
        ]
        where = f" [{', '.join(parts)}]"
    unit = f" {c.unit}" if c.unit else ""
    return f"{c.metric}{where} {c.stat} {OP_TEXT[c.op]} {c.threshold:g}{unit}"


def combine(xs: Sequence[float], stat: str) -> float:
    """The trials of one point combined as ``stat`` (``xs`` not empty)."""
    if stat == "mean":
        return math.fsum(xs) / len(xs)
    if stat == "median":
        return float(np.median(xs))
    if stat == "min":
        return min(xs)
    if stat == "max":
        return max(xs)
    return float(np.percentile(xs, float(stat[1:])))  # "p90": linear interpolation


def holds(value: float, op: str, threshold: float) -> bool:
    return {
        "<=": value <= threshold,
        ">=": value >= threshold,
        "<": value < threshold,
        ">": value > threshold,
    }[op]


def _subjects(where: Mapping[str, str | list[str]]) -> list[dict[str, str]]:
    keys = list(where)
    options = [v if isinstance(v, list) else [v] for v in where.values()]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*options)]


def _applies(labels: Mapping[str, str], at: Mapping[str, str | list[str]]) -> bool:
    for k, v in at.items():
        allowed = [str(x) for x in v] if isinstance(v, list) else [str(v)]
        if labels.get(k) not in allowed:
            return False
    return True


def missing_reason(metric: str, subject: Mapping[str, str], known: set[str]) -> str:
    """Why a check has no data: the metric is not in the run at all (with the closest
    name the run has), or not for this subject, or no trial of the point reported it."""
    if metric not in known:
        close = difflib.get_close_matches(metric, sorted(known), n=1)
        return f"no metric {metric} in this run" + (f"; did you mean {close[0]}?" if close
                                                      else "")  # fmt: skip
    if subject:
        where = ", ".join(f"{k}={v}" for k, v in subject.items())
        return f"no data: no {metric} with {where} at this point"
    return f"no data: no successful trial of this point reported {metric}"


def _check(
    figures: RunFigures, c: QosCriterion, index: int, subject: dict[str, str], point: int,
    known: set[str],
) -> QosCheck:
    name = criterion_name(c)
    data_unit = figures.units.get(c.metric, "")
    unit = c.unit if c.unit is not None else data_unit
    xs = present(figures.labelled(point, c.metric, subject))

    def make(status: str, message: str, value: float | None = None) -> QosCheck:
        return QosCheck(
            criterion=name, index=index, metric=c.metric, subject=subject, stat=c.stat,
            op=c.op, threshold=c.threshold, unit=unit, point=point,
            point_title=figures.title(point), value=value, n=len(xs), status=status,
            message=message,
        )

    if not xs:
        return make(MISSING, missing_reason(c.metric, subject, known))
    raw = combine(xs, c.stat)
    value = convert(raw, data_unit, unit)
    if value is None:
        return make(ERROR, f"unit mismatch: data in {data_unit or 'no unit'}, "
                           f"threshold in {unit}")
    ok = holds(value, c.op, c.threshold)
    text = (
        f"{c.stat} over {len(xs)} trial{'s' if len(xs) != 1 else ''} = {value:.6g} {unit} "
        f"{OP_TEXT[c.op]} {c.threshold:g} {unit}"
    ).replace("  ", " ")
    return make(PASS if ok else FAIL, text if ok else f"{text} does not hold", value)


def evaluate_qos(figures: RunFigures, criteria: Sequence[QosCriterion]) -> QosResult:
    """Every criterion at every point it applies to (``figures`` should include the
    derived figures, so that a criterion may name one)."""
    checks: list[QosCheck] = []
    problems: list[str] = []
    known = {m for _, m in figures.values} | set(figures.units)
    for i, c in enumerate(criteria):
        if c.metric not in known:
            problems.append(f"QoS {criterion_name(c)}: no metric {c.metric!r} in this run")
        points = [p for p in sorted(figures.points) if _applies(figures.points[p], c.at)]
        for subject in _subjects(c.where):
            checks.extend(_check(figures, c, i, subject, p, known) for p in points
                          if within_tiles(figures.points[p], subject))
    names = tuple(dict.fromkeys(criterion_name(c) for c in criteria))
    return QosResult(tuple(checks), names, tuple(problems))


def check_qos(scenario: Scenario) -> list[tuple[tuple[Any, ...], str]]:
    """Mistakes in ``qos`` found before a run: (path in the scenario, message)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    for i, c in enumerate(scenario.qos):
        for factor, level in c.at.items():
            here = ("qos", i, "at", factor)
            if factor not in scenario.factors:
                out.append((here, f"no factor {factor!r} (factors: "
                                  f"{', '.join(scenario.factors) or 'none'})"))
                continue
            labels = scenario.factors[factor].level_labels()
            for w in level if isinstance(level, list) else [level]:
                if str(w) not in labels:
                    out.append((here, f"factor {factor!r} has no level {w!r}"))
        for key, value in c.where.items():
            if isinstance(value, list) and not value:
                out.append((("qos", i, "where", key), "an empty list selects nothing"))
    return out
