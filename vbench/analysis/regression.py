"""Regression checks for nightly jobs: a run against its baseline.

The baseline is chosen by a spec:

- ``auto`` (default): the baseline set with ``vbench baseline set`` for the scenario in
  this lab, else ``last``;
- ``last``: the newest earlier run of the same scenario that completed (status ok) and
  is *compatible*; ``last:K``: the newest K such runs, their trials pooled;
- ``tag:NAME``: the newest earlier run of the scenario carrying the tag;
- a run id (or unique prefix); a bare word that is no run id is tried as a tag.

"Earlier" means started before the run being checked, so re-checking an old run later
gives the same answer. Compatible: the same measured experiment (the scenario's
topology, workload, factors and phases hash alike) and no hardware difference in the
testbed facts (host or CPU model, memory, vCPUs, NICs …) and the same kind of lab
(simulated, throttled, local or real: see :mod:`vbench.results.identity`); a new ESXi
build or guest kernel is what a nightly check is meant to catch, so versions do not
break compatibility. When the baseline differs from the run in its scenario (after
``--set``), its overrides or its lab, the result carries the differences, printed as a
diff with the verdict.

A check (one metric at one point) is a regression when the run is worse than the
baseline by more than ``min_effect`` (relative to the baseline mean, in the metric's
direction of improvement; the scenario's ``report.min_effect`` sets it per metric)
*and* the difference is significant (see :func:`vbench.analysis.compare.significance`).
A metric without a direction of improvement (vbench/analysis/direction.py), or one the
scenario's QoS caps in its better direction (a rate limit), is never a regression: its
check says why it was not judged.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vbench.analysis.comparable import Comparability, compare_runs
from vbench.analysis.compare import (
    Significance,
    capped_metrics,
    match_points,
    min_effects,
    significance,
)
from vbench.analysis.direction import directions_with
from vbench.analysis.figures import (
    RunFigures,
    better,
    fact_differences,
    measurement_hash,
    present,
)
from vbench.analysis.stats import Summary, summarize
from vbench.errors import ConfigError, RunNotFound
from vbench.results.store import RunRow, Store, baseline_scope

REGRESSION, IMPROVED, OK, MISSING = "regression", "improved", "ok", "missing"
_LAST = re.compile(r"^last(?::(\d+))?$")
CANDIDATES = 500  # earlier runs of the scenario looked at for last / last:K


@dataclass(frozen=True)
class BaselineChoice:
    spec: str
    run_ids: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class RegressionCheck:
    title: str
    labels: Mapping[str, str]
    metric: str
    unit: str
    better: str
    baseline: Summary
    current: Summary
    sig: Significance
    worse_by: float | None  # relative, > 0 when worse than the baseline
    status: str  # regression | improved | ok | missing
    note: str = ""  # why the check was not judged (no direction, a QoS cap)
    # A regression a change point explains that was acknowledged or alerted on an earlier
    # night (vbench/analysis/nightly_check.py): listed, no longer failing.
    triage: str = ""

    @property
    def change(self) -> float | None:
        b, c = self.baseline.mean, self.current.mean
        if b is None or c is None or b == 0:
            return None
        return (c - b) / abs(b)

    @property
    def message(self) -> str:
        if self.status == MISSING:
            return "no data on one side"
        change = self.change
        pct = f"{change * 100:+.1f} %" if change is not None else "n/a"
        if self.note:
            return f"{pct}; not judged: {self.note}"
        known = f"; known: {self.triage}" if self.triage else ""
        return f"{pct} ({self.better} is better); {self.sig.reason}{known}"


@dataclass(frozen=True)
class RegressionResult:
    baseline: BaselineChoice | None
    checks: tuple[RegressionCheck, ...]
    min_effect: float
    alpha: float
    note: str = ""  # why the check was skipped, when it was
    # The (first) baseline run against the run checked: scenario, --set, lab.
    comparability: Comparability | None = None
    # Change points (vbench/analysis/nightly.py SeriesChange): the regressions tonight
    # sits after, per series of this lab, and which of them fail tonight (new ones).
    changes: tuple[Any, ...] = ()
    failing_changes: tuple[Any, ...] = ()
    history: Any = None  # the lab's History up to this run (the alerts' charts draw it)

    @property
    def skipped(self) -> bool:
        return self.baseline is None and not self.changes

    @property
    def regressions(self) -> list[RegressionCheck]:
        """The failing ones: a known change's (triage) are listed, not failing."""
        return [c for c in self.checks if c.status == REGRESSION and not c.triage]

    @property
    def regressed(self) -> bool:
        return bool(self.regressions) or bool(self.failing_changes)

    def verdict(self) -> str:
        known = [c for c in self.checks if c.status == REGRESSION and c.triage]
        tail = (f"; {len(known)} known regression{'s' if len(known) != 1 else ''} not "
                "failing" if known else "") + _changes_text(self)
        if self.baseline is None:
            return f"regression check skipped: {self.note}{tail}"
        bad = self.regressions
        head = f"against {self.baseline.description}"
        if bad:
            return f"REGRESSION in {len(bad)} of {len(self.checks)} checks {head}{tail}"
        return f"no regression in {len(self.checks)} checks {head}{tail}"


def _changes_text(result: RegressionResult) -> str:
    if not result.changes:
        return ""
    new = len(result.failing_changes)
    known = len(result.changes) - new
    return (f"; unacknowledged regression change points: {new} new tonight, {known} "
            "alerted on an earlier night")


# ------------------------------------------------------------- baseline choice


def incompatibility(run: RunRow, other: RunRow) -> str | None:
    """Why ``other`` cannot serve as a baseline for ``run`` (None: it can), naming what
    differs."""
    if other.scenario_name != run.scenario_name:
        return f"scenario {other.scenario_name} is not {run.scenario_name}"
    comp = compare_runs(_as_dict(other), _as_dict(run))
    if measurement_hash(other.scenario) != measurement_hash(run.scenario):
        measured = comp.measurement_changes()
        what = measured[0].text if measured else "topology, workload, factors or phases"
        more = f" (+{len(measured) - 1} more)" if len(measured) > 1 else ""
        return f"the scenario measures something else: {what}{more}"
    if comp.a.lab_kind != comp.b.lab_kind:
        # A simulated or throttled lab is no reference for a real one, and the reverse.
        return f"the lab differs: {comp.a.lab_kind.text} → {comp.b.lab_kind.text}"
    if baseline_scope(other.lab) != baseline_scope(run.lab):
        # Two labs of one store are two series: another lab's nights are no baseline.
        theirs, mine = baseline_scope(other.lab) or "-", baseline_scope(run.lab) or "-"
        return f"another lab: {theirs} (this run: {mine})"
    hw = [d for d in fact_differences(_as_dict(other), _as_dict(run)) if d.hardware]
    if hw:
        d = hw[0]
        return f"hardware differs: {d.key} {d.a} → {d.b}" + (
            f" (+{len(hw) - 1} more)" if len(hw) > 1 else ""
        )
    return None


def _as_dict(run: RunRow) -> dict[str, Any]:
    return dataclasses.asdict(run)


def _earlier(store: Store, run: RunRow, tag: str | None = None) -> list[RunRow]:
    rows = store.list_runs(scenario=run.scenario_name, tag=tag, limit=CANDIDATES)
    return [r for r in rows if r.run_id != run.run_id and r.started < run.started]


def _last(store: Store, run: RunRow, k: int) -> BaselineChoice | None:
    found = [
        r for r in _earlier(store, run) if r.status == "ok" and incompatibility(run, r) is None
    ][:k]
    if not found:
        return None
    ids = tuple(r.run_id for r in found)
    if k == 1:
        return BaselineChoice("last", ids, f"the last compatible run {ids[0]}")
    return BaselineChoice(f"last:{k}", ids, f"the last {len(ids)} compatible runs, pooled")


def _tagged(store: Store, run: RunRow, tag: str) -> BaselineChoice | None:
    found = [r for r in _earlier(store, run, tag) if r.status == "ok"]
    if not found:
        return None
    why = incompatibility(run, found[0])
    return BaselineChoice(f"tag:{tag}", (found[0].run_id,),
                          f"run {found[0].run_id} (tag {tag})" + _caveat(why))


def _caveat(why: str | None) -> str:
    # A baseline named explicitly is used even when it is not compatible; say so.
    return f" — note: {why}" if why else ""


def resolve_baseline(store: Store, run: RunRow, spec: str = "auto") -> BaselineChoice | None:
    """The baseline run(s) for ``run`` (None when there is none yet: first nightly run)."""
    spec = spec.strip() or "auto"
    if spec == "auto":
        scope = baseline_scope(run.lab)
        for b in store.baselines(run.scenario_name):
            if b.scope == scope and b.run_id != run.run_id:
                note = f" ({b.note})" if b.note else ""
                return BaselineChoice("auto", (b.run_id,), f"the baseline run {b.run_id}{note}")
        return _last(store, run, 1)
    m = _LAST.match(spec)
    if m:
        k = int(m.group(1) or 1)
        if k < 1:
            raise ConfigError(f"baseline {spec!r}: K must be at least 1")
        return _last(store, run, k)
    if spec.startswith("tag:"):
        return _tagged(store, run, spec[4:])
    run_id = spec[4:] if spec.startswith("run:") else spec
    try:
        other = store.get_run(run_id)
    except RunNotFound:
        if spec.startswith("run:"):
            raise
        tagged = _tagged(store, run, spec)
        if tagged is None:
            raise ConfigError(
                f"baseline {spec!r}: no such run id, and no earlier run of "
                f"{run.scenario_name} tagged {spec!r}"
            ) from None
        return tagged
    if other.run_id == run.run_id:
        raise ConfigError(f"baseline {spec!r} is the run being checked")
    why = incompatibility(run, other)
    return BaselineChoice("run", (other.run_id,), f"run {other.run_id}" + _caveat(why))


# ------------------------------------------------------------------ checking


def _pooled(baselines: Sequence[RunFigures], labels: Mapping[str, str], metric: str) -> list[float]:
    key = sorted(labels.items())
    out: list[float] = []
    for f in baselines:
        for p, lab in f.points.items():
            if sorted(lab.items()) == key:
                out += present(f.trial_values(p, metric))
    return out


def check_regression(
    current: RunFigures,
    baselines: Sequence[RunFigures],
    metrics: Sequence[str],
    *,
    min_effect: float = 0.05,
    alpha: float = 0.05,
    better_overrides: Mapping[str, str] | None = None,
    floor: Callable[[str, Mapping[str, str]], float | None] | None = None,
) -> list[RegressionCheck]:
    """One check per metric and point the current run shares with the baseline(s);
    ``floor(metric, labels)``: the lab's measured noise, the least minimum effect."""
    checks: list[RegressionCheck] = []
    directions = directions_with(current.run, better_overrides)
    effects = min_effects(current.scenario)
    caps = capped_metrics(current.scenario, directions, metrics,
                          others=[b.scenario for b in baselines])
    shared = set()
    for base in baselines:
        shared |= {p for p, _ in match_points(current, base)}
    for p in sorted(shared):
        labels = current.points[p]
        for m in metrics:
            cur = present(current.trial_values(p, m))
            base = _pooled(baselines, labels, m)
            if not cur and not base:
                continue
            unit = current.units.get(m) or next(
                (b.units[m] for b in baselines if m in b.units), ""
            )
            direction = better(m, unit, directions)
            noise = floor(m, labels) if floor is not None else None
            effect = max(effects.get(m, min_effect), noise or 0.0)
            check = _judge(current.title(p), labels, m, unit, direction, base, cur, effect,
                           alpha)
            note = (f"capped by {caps[m]}" if m in caps else
                    "no direction of improvement" if direction not in ("higher", "lower")
                    else "")  # fmt: skip
            if note and check.status != MISSING:
                check = dataclasses.replace(check, status=OK, worse_by=None, note=note)
            checks.append(check)
    return checks


def _judge(
    title: str, labels: Mapping[str, str], metric: str, unit: str, direction: str,
    base: list[float], cur: list[float], min_effect: float, alpha: float,
) -> RegressionCheck:
    sb, sc = summarize(base), summarize(cur)
    sig = significance(base, cur, alpha)
    worse_by: float | None = None
    status = MISSING
    if sb.mean is not None and sc.mean is not None and sb.mean != 0:
        delta = (sc.mean - sb.mean) / abs(sb.mean)
        worse_by = -delta if direction == "higher" else delta
        status = OK
        if sig.significant and worse_by > min_effect:
            status = REGRESSION
        elif sig.significant and -worse_by > min_effect:
            status = IMPROVED
    return RegressionCheck(title, dict(labels), metric, unit, direction, sb, sc, sig,
                           worse_by, status)


def run_regression(
    store: Store,
    run: RunRow,
    load: Callable[[str], RunFigures],
    metrics: Sequence[str],
    *,
    spec: str = "auto",
    min_effect: float = 0.05,
    alpha: float = 0.05,
    better_overrides: Mapping[str, str] | None = None,
    floor: Callable[[str, Mapping[str, str]], float | None] | None = None,
) -> RegressionResult:
    """Resolve the baseline of the stored ``run`` and check it; ``load`` gives a run's
    figures (derived figures included, so that they can be checked too)."""
    choice = resolve_baseline(store, run, spec)
    if choice is None:
        note = (f"no earlier compatible run of {run.scenario_name} completed"
                if spec in ("auto", "last") or _LAST.match(spec) else
                f"no run matches baseline {spec!r}")
        return RegressionResult(None, (), min_effect, alpha, note)
    current = load(run.run_id)
    bases = [load(r) for r in choice.run_ids]
    checks = check_regression(current, bases, metrics, min_effect=min_effect, alpha=alpha,
                              better_overrides=better_overrides, floor=floor)
    comp = compare_runs(bases[0].run, current.run) if bases else None
    return RegressionResult(choice, tuple(checks), min_effect, alpha, comparability=comp)
