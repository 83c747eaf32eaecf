"""The nightly check: tonight against its baseline (the pairwise rule of
:mod:`vbench.analysis.regression`) and tonight's position against the history's change
points, in this lab only, with the triage that makes an alert fire once.

- A series whose last change point is a regression, with tonight on the new level,
  alerts: it fails the night its check first sees it (the night stored in
  ``change_alerts``; re-rendering that night's report fails it again) and is listed,
  not failing, on later nights; once acknowledged (`vbench ack`) it is not listed again.
- A pairwise regression that a change point between the baseline and tonight explains
  takes that change's triage; one that no change point explains yet (a step one or two
  nights old) fails the first night and is listed the next ones (alerts within
  :data:`vbench.analysis.nightly.NEAR` runs).
- The lab's measured noise (`vbench run --aa`) is the floor of both minimum effects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from vbench.analysis.history import History, load_history
from vbench.analysis.nightly import (
    ACKNOWLEDGED,
    NEAR,
    SeriesChange,
    fingerprint_of,
    floor_of,
    history_changes,
    measured_noise,
    with_testbeds,
)
from vbench.analysis.regression import REGRESSION, RegressionCheck, RegressionResult
from vbench.results.store import RunRow, Store
from vbench.results.triage import Alert, SeriesKey, acks, alerts, point_key

HISTORY_RUNS = 120  # nights of this lab a nightly check looks back over


def noise_floor(store: Store, run: RunRow) -> Callable[[str, Mapping[str, str]], float | None]:
    """The lab's measured noise of each series of ``run`` (None: not measured)."""
    measured = measured_noise(store, fingerprint_of(run), run.scenario_name)
    return lambda metric, labels: measured.get((metric, point_key(labels)))


def _until(hist: History, run_id: str) -> History | None:
    """The history up to and including ``run_id`` (None: the run is not in it)."""
    ids = [r.run_id for r in hist.runs]
    if run_id not in ids:
        return None
    k = ids.index(run_id) + 1
    return dataclasses.replace(hist, runs=hist.runs[:k], series=tuple(
        dataclasses.replace(s, summaries=s.summaries[:k]) for s in hist.series))


def _on_new_level(c: SeriesChange, tonight: float | None) -> bool:
    if tonight is None:
        return False
    return abs(tonight - c.change.after) < abs(tonight - c.change.before)


def _last_regressions(hist: History, found: Sequence[SeriesChange], run_id: str
                      ) -> list[SeriesChange]:
    """Per series, its last change when it is a regression tonight still sits after."""
    out = []
    for s in hist.series:
        mine = [c for c in found if c.of_series(s.metric, s.labels)]
        if mine and mine[-1].regression and _on_new_level(mine[-1], s.means[-1]):
            out.append(mine[-1])
    return out


def _fails(c: SeriesChange, run_id: str) -> bool:
    return c.state != ACKNOWLEDGED and c.alerted_run in (None, run_id)


def _triage_of(c: SeriesChange) -> str:
    if c.ack is not None:
        return f"change {c.change_id} acknowledged by {c.ack.who}: {c.ack.why}"
    return f"change {c.change_id}, alerted by the check of run {c.alerted_run}"


def _beyond(c: SeriesChange, tonight: float | None) -> bool:
    """Tonight is worse than the change's level after it by more than the change's
    minimum effect: a further step, which that change (acknowledged or alerted) does not
    explain."""
    after = c.change.after
    if tonight is None or not after:
        return False
    worse = after - tonight if c.better == "higher" else tonight - after
    return worse / abs(after) > c.min_effect


def _pairwise(check: RegressionCheck, found: Sequence[SeriesChange], since: int,
              pos: Mapping[str, int], earlier: Sequence[Alert], key: SeriesKey) -> str:
    """The triage of a pairwise regression ("" : it fails tonight)."""
    explains = [c for c in found if c.of_series(check.metric, check.labels) and c.regression
                and pos[c.run_id] > since
                and not _beyond(c, check.current.mean)]
    if explains:
        c = explains[-1]
        return _triage_of(c) if c.state == ACKNOWLEDGED or c.alerted_run not in (
            None, list(pos)[-1]) else ""
    tonight = len(pos) - 1
    near = [a for a in earlier if a.series == key and a.run_id in pos
            and tonight - NEAR <= pos[a.run_id] < tonight]
    return f"alerted by the check of run {near[-1].alerted_run}" if near else ""


def nightly_check(store: Store, run: RunRow, result: RegressionResult,
                  metrics: Sequence[str]) -> RegressionResult:
    """``result`` (the pairwise check of ``run``) with the change points of this lab's
    history and the triage of each regression."""
    fp = fingerprint_of(run)
    hist = _until(load_history(store, run.scenario_name, metrics, limit=HISTORY_RUNS,
                               lab=fp), run.run_id) if fp else None
    if hist is None:
        return result
    floor = floor_of(store, run.scenario_name, run.scenario, result.min_effect)
    stored_alerts = alerts(store, run.scenario_name, fp)
    found = history_changes(hist, floor, acks(store, run.scenario_name, fp), stored_alerts)
    earlier = [a for a in stored_alerts if a.alerted_run != run.run_id]
    pos = {r.run_id: i for i, r in enumerate(hist.runs)}
    base = [pos.get(r, -1) for r in (result.baseline.run_ids if result.baseline else ())]
    since = min(base, default=-1)
    checks = tuple(
        dataclasses.replace(c, triage=_pairwise(
            c, found, since, pos, earlier,
            SeriesKey(run.scenario_name, fp, c.metric, point_key(c.labels))))
        if c.status == REGRESSION else c
        for c in result.checks)
    # Acknowledged: the new normal, never listed again (its pairwise echo says why above).
    listed = with_testbeds(store, [c for c in _last_regressions(hist, found, run.run_id)
                                   if c.state != ACKNOWLEDGED])
    return dataclasses.replace(result, checks=checks, changes=listed, history=hist,
                               failing_changes=tuple(c for c in listed
                                                     if _fails(c, run.run_id)))


def alerts_raised(result: RegressionResult, run: RunRow) -> list[tuple[SeriesKey, str]]:
    """What tonight's check alerted on (series, first run after), to remember."""
    fp = fingerprint_of(run)
    out = [(c.key, c.run_id) for c in result.failing_changes]
    out += [(SeriesKey(run.scenario_name, fp, c.metric, point_key(c.labels)), run.run_id)
            for c in result.regressions]
    return out
