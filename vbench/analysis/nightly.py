"""Change points over a scenario's history, with their triage: what moved, when, what
changed in the testbed then, and whether someone has acknowledged it.

Series are per lab fingerprint: runs in two testbeds are two series, never one (a
different host is not a regression). Each change is named ``RUN:METRIC`` (plus
``@POINT`` when the scenario has several points), RUN being the first run after it;
``vbench ack`` takes that name.

Detection moves a change by a night or two as nights are added, so a stored
acknowledgement or alert belongs to a detected change of the same series when its run
lies within :data:`NEAR` runs of the change's first run after.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from vbench.analysis.changepoints import Change, changes_of
from vbench.analysis.comparable import compare_runs
from vbench.analysis.figures import FactDiff, fact_differences
from vbench.analysis.history import History, HistoryRun, HistorySeries, RunWatch
from vbench.results.identity import identity_of
from vbench.results.store import RunRow, Store
from vbench.results.triage import Ack, Alert, SeriesKey, point_key

NEAR = 2  # runs: a stored ack or alert names the same change within this distance
NEW, ALERTED, ACKNOWLEDGED = "new", "alerted", "acknowledged"


@dataclass(frozen=True)
class SeriesChange:
    """A change point of one metric at one point, in one lab."""

    scenario: str
    lab: str
    lab_fingerprint: str
    metric: str
    unit: str
    better: str
    labels: Mapping[str, str]
    title: str  # the point, e.g. "bs=4k" ("all" for a single point)
    change: Change
    run_id: str  # the first run after the change
    run_before: str  # the last run before it
    started: float  # when run_id started
    min_effect: float  # the floor it had to pass (configured effect or lab noise)
    noise: float | None  # the lab's measured noise for this series (None: not measured)
    ack: Ack | None = None
    alerted_run: str | None = None  # the night whose check first alerted on it
    testbed: tuple[FactDiff, ...] = ()  # facts that differ between run_before and run_id
    change_id: str = ""
    # The scenario (after --set) differing between run_before and run_id, as diff lines
    # (empty: the same experiment).
    setup: tuple[str, ...] = ()
    # The first run after and the run before, as the lab's watch saw them: (role "after" |
    # "before", the run, its records), only runs with records (vbench/report/
    # history_watch.py says which of the point's trials were disturbed).
    watched: tuple[tuple[str, HistoryRun, RunWatch], ...] = ()

    @property
    def key(self) -> SeriesKey:
        return SeriesKey(self.scenario, self.lab_fingerprint, self.metric,
                         point_key(self.labels))

    @property
    def regression(self) -> bool | None:
        return self.change.worse(self.better)

    def of_series(self, metric: str, labels: Mapping[str, str]) -> bool:
        """Is it a change of this metric at the point with these labels?"""
        return self.metric == metric and dict(self.labels) == dict(labels)

    @property
    def state(self) -> str:
        if self.ack is not None:
            return ACKNOWLEDGED
        return ALERTED if self.alerted_run is not None else NEW

    def text(self) -> str:
        """One line: what moved, by how much, how surely."""
        c = self.change
        kind = {True: "regression", False: "improvement", None: "change"}[self.regression]
        size = f"{c.relative * 100:+.1f} %" if math.isfinite(c.relative) else "from 0"
        return (f"{self.metric} at {self.title}: {c.before:.4g} → {c.after:.4g} {self.unit} "
                f"({size}, {kind}, p={c.p_value:.1e}, "
                f"{c.n_before} runs before / {c.n_after} after)").replace("  ", " ")


def change_id(run_id: str, metric: str, labels: Mapping[str, str], several: bool) -> str:
    """``RUN:METRIC[@k=v,…]`` — the point only when the scenario has several."""
    point = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return f"{run_id}:{metric}" + (f"@{point}" if several and point else "")


def split_change_id(text: str) -> tuple[str, str, dict[str, str] | None]:
    """(run id or prefix, metric, point labels or None) of a change id."""
    run, sep, rest = text.partition(":")
    if not sep or not run or not rest:
        raise ValueError(f"{text!r} is no change id (RUN:METRIC or RUN:METRIC@k=v,…, as "
                         "`vbench history SCENARIO --changes` prints them)")
    metric, at, point = rest.partition("@")
    if not at:
        return run, metric, None
    labels = dict(p.split("=", 1) for p in point.split(",") if "=" in p)
    return run, metric, labels


def fingerprint_of(run: RunRow) -> str:
    """The lab fingerprint a stored run's series are keyed on."""
    return identity_of(dataclasses.asdict(run)).lab_fingerprint


def measured_noise(store: Store, fingerprint: str, scenario: str
                   ) -> dict[tuple[str, str], float]:
    """(metric, point key) -> the lab's measured noise (`vbench run --aa`)."""
    from vbench.results.triage import noise

    return {(n.metric, n.point): n.cv for n in noise(store, fingerprint, scenario)}


def lab_series(hist: History) -> dict[str, list[int]]:
    """Lab fingerprint -> positions of its runs in ``hist.runs`` (oldest first)."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(hist.runs):
        out.setdefault(r.lab_fingerprint, []).append(i)
    return out


Floor = Callable[[str, str, Mapping[str, str]], tuple[float, float | None]]


def _measured(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _near(stored_run: str, change_pos: int, positions: Mapping[str, int]) -> bool:
    pos = positions.get(stored_run)
    return pos is not None and abs(pos - change_pos) <= NEAR


def _one_series(
    hist: History, s: HistorySeries, where: Sequence[int], floor: Floor,
    acks: Sequence[Ack], alerts: Sequence[Alert], several: bool,
) -> list[SeriesChange]:
    runs: list[HistoryRun] = [hist.runs[i] for i in where]
    first = runs[0]
    means = s.means  # a list built per call: once
    values = [means[i] for i in where]
    effect, noise = floor(first.lab_fingerprint, s.metric, s.labels)
    key = SeriesKey(hist.scenario, first.lab_fingerprint, s.metric, point_key(s.labels))
    positions = {r.run_id: n for n, r in enumerate(runs)}
    mine = [a for a in acks if a.series == key]
    alerted = [a for a in alerts if a.series == key]
    out = []
    for c in changes_of(values, effect):
        # The last run measured before it: a night without a figure (a failed run) may
        # already be on the new testbed, and the diff must show what changed.
        after = runs[c.index]
        before = runs[max(j for j in range(c.index) if _measured(values[j]))]
        ack = next((a for a in reversed(mine) if _near(a.run_id, c.index, positions)), None)
        raised = next((a.alerted_run for a in alerted
                       if _near(a.run_id, c.index, positions)), None)
        out.append(SeriesChange(
            hist.scenario, after.lab, after.lab_fingerprint, s.metric, s.unit, s.better,
            dict(s.labels), s.title, c, after.run_id, before.run_id, after.started, effect,
            noise, ack, raised,
            change_id=change_id(after.run_id, s.metric, s.labels, several),
            watched=tuple((role, r, hist.watch[r.run_id]) for role, r in
                          (("after", after), ("before", before)) if r.run_id in hist.watch)))
    return out


def history_changes(
    hist: History, floor: Floor, acks: Sequence[Ack] = (), alerts: Sequence[Alert] = (),
) -> tuple[SeriesChange, ...]:
    """Every change point of every series of ``hist``, lab by lab, oldest first;
    ``floor(fingerprint, metric, labels)`` gives (minimum effect, measured noise)."""
    several = len({tuple(sorted(s.labels.items())) for s in hist.series}) > 1
    out: list[SeriesChange] = []
    for where in lab_series(hist).values():
        for s in hist.series:
            out += _one_series(hist, s, where, floor, acks, alerts, several)
    return tuple(sorted(out, key=lambda c: (c.started, c.metric, c.title)))


def with_testbeds(store: Store, found: Sequence[SeriesChange]) -> tuple[SeriesChange, ...]:
    """Each change with the testbed facts that differ between the runs either side."""
    rows: dict[str, dict[str, object]] = {}

    def row(run_id: str) -> dict[str, object]:
        if run_id not in rows:
            rows[run_id] = dataclasses.asdict(store.get_run(run_id))
        return rows[run_id]

    def setup(before: str, after: str) -> tuple[str, ...]:
        comp = compare_runs(row(before), row(after))
        if comp.same_scenario and comp.same_overrides:
            return ()
        return tuple(line for line in comp.lines(labels=("the run before", "the run after"))
                     if not line.startswith("lab: same"))

    return tuple(dataclasses.replace(c, testbed=tuple(
        d for d in fact_differences(row(c.run_before), row(c.run_id))
        if not d.key.startswith("lab.")), setup=setup(c.run_before, c.run_id))
        for c in found)


def floor_of(store: Store, scenario: str, stored_scenario: Mapping[str, object],
             default: float) -> Floor:
    """The minimum effect of a series: the scenario's (``report.min_effect`` per metric,
    else ``default``), raised to the lab's measured noise for the series when higher."""
    from vbench.analysis.compare import min_effects

    effects = min_effects(stored_scenario)
    measured: dict[str, dict[tuple[str, str], float]] = {}

    def floor(fingerprint: str, metric: str, labels: Mapping[str, str]
              ) -> tuple[float, float | None]:
        if fingerprint not in measured:
            measured[fingerprint] = measured_noise(store, fingerprint, scenario)
        cv = measured[fingerprint].get((metric, point_key(labels)))
        effect = effects.get(metric, default)
        return (max(effect, cv) if cv is not None else effect), cv

    return floor


def _regression_effect(stored_scenario: Mapping[str, object]) -> float:
    from vbench.config.scenario import RegressionSpec

    try:
        return RegressionSpec.model_validate(stored_scenario.get("regression") or {}).min_effect
    except ValueError:  # a shape another version stored: the default applies
        return RegressionSpec().min_effect


def find_changes(store: Store, hist: History) -> tuple[SeriesChange, ...]:
    """:func:`history_changes` of a loaded history with the store's acknowledgements,
    alerts and lab noise, and the testbed differences of each change."""
    from vbench.results.triage import acks, alerts

    if not hist.runs:
        return ()
    scenario = store.get_run(hist.runs[-1].run_id).scenario
    floor = floor_of(store, hist.scenario, scenario, _regression_effect(scenario))
    found = history_changes(hist, floor, acks(store, hist.scenario),
                            alerts(store, hist.scenario))
    return with_testbeds(store, found)


def acknowledge(store: Store, text: str, who: str, why: str) -> Ack:
    """`vbench ack CHANGE --why …`: the change id resolved against the store."""
    from vbench.errors import ConfigError
    from vbench.results.triage import add_ack

    try:
        run_id, metric, labels = split_change_id(text)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if not why.strip():
        raise ConfigError("--why: say why the change is expected")
    row = store.get_run(run_id)
    points = [p.labels for p in store.points(row.run_id)]
    if labels is None and len(points) > 1:
        raise ConfigError(f"run {row.run_id} has {len(points)} points: name one, e.g. "
                          f"{change_id(row.run_id, metric, points[0], True)}")
    chosen = points[0] if labels is None and points else labels or {}
    if points and chosen not in points:
        raise ConfigError(f"run {row.run_id} has no point {change_id('', '', chosen, True)[2:]}")
    derived = {str(d.get("name")) for d in row.scenario.get("derived") or ()
               if isinstance(d, Mapping)}
    if metric not in derived and store.aggregate_frame([row.run_id], [metric]).empty:
        raise ConfigError(f"run {row.run_id} has no figure of metric {metric!r}")
    key = SeriesKey(row.scenario_name, fingerprint_of(row), metric, point_key(chosen))
    return add_ack(store, key, row.run_id, who, why.strip())


def change_of(store: Store, ack: Ack, limit: int = 120) -> SeriesChange | None:
    """The detected change point an acknowledgement names (None: none near its run yet)."""
    from vbench.analysis.history import load_history

    hist = load_history(store, ack.series.scenario, [ack.series.metric], limit=limit,
                        lab=ack.series.lab_fingerprint or None)
    return next((c for c in find_changes(store, hist)
                 if c.key == ack.series and c.ack is not None and c.ack.at == ack.at), None)
