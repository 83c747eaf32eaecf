"""Nightly triage in the store: acknowledged change points, alerts raised, lab noise.

A change point is named by its series — scenario, lab fingerprint ("" when the run has
none), metric, point (the point's labels as sorted JSON text) — and the first run after
it. Detection moves a change by a night or two as nights are added, so readers match a
stored row to a detected change by series and nearness (vbench/analysis/nightly.py),
not by equality of the run id.

These functions use the store's own transactions (``Store._write`` / ``_read``): they
are the store's methods, kept in their own module so that store.py stays readable.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from vbench.results import store_schema as db
from vbench.results.store import Store


def point_key(labels: Mapping[str, str]) -> str:
    """A point's labels as the text the triage tables key on."""
    return json.dumps({str(k): str(v) for k, v in sorted(labels.items())}, sort_keys=True)


@dataclass(frozen=True)
class SeriesKey:
    scenario: str
    lab_fingerprint: str
    metric: str
    point: str  # point_key(labels)

    def where(self, table: sa.Table) -> sa.ColumnElement[bool]:
        return sa.and_(table.c.scenario_name == self.scenario,
                       table.c.lab_fingerprint == self.lab_fingerprint,
                       table.c.metric == self.metric, table.c.point == self.point)


@dataclass(frozen=True)
class Ack:
    series: SeriesKey
    run_id: str  # the first run after the change
    who: str
    at: float
    why: str


@dataclass(frozen=True)
class Alert:
    series: SeriesKey
    run_id: str  # the first run after the change
    alerted_run: str  # the night whose check raised it
    at: float


@dataclass(frozen=True)
class Noise:
    lab_fingerprint: str
    scenario: str
    metric: str
    point: str
    cv: float  # relative standard deviation of the run means
    runs: int
    run_ids: tuple[str, ...]
    measured_at: float


def _key(m: Mapping[str, object]) -> SeriesKey:
    return SeriesKey(str(m["scenario_name"]), str(m["lab_fingerprint"]), str(m["metric"]),
                     str(m["point"]))


def _values(key: SeriesKey) -> dict[str, str]:
    return {"scenario_name": key.scenario, "lab_fingerprint": key.lab_fingerprint,
            "metric": key.metric, "point": key.point}


def add_ack(store: Store, key: SeriesKey, run_id: str, who: str, why: str) -> Ack:
    """Acknowledge the change of ``key`` whose first run after it is ``run_id``."""
    ack = Ack(key, run_id, who, time.time(), why)
    with store._write(f"acknowledge change at {run_id}") as conn:
        store._require_run(conn, run_id)
        conn.execute(db.change_acks.insert().values(**_values(key), run_id=run_id, who=who,
                                                    at=ack.at, why=why))
    return ack


def _series_rows(store: Store, table: sa.Table, scenario: str, lab_fingerprint: str | None,
                 what: str) -> list[Mapping[str, object]]:
    """The rows of a triage table for a scenario (one lab's, or every lab's), oldest first."""
    query = sa.select(table).where(table.c.scenario_name == scenario).order_by(
        table.c.at, table.c.id)
    if lab_fingerprint is not None:
        query = query.where(table.c.lab_fingerprint == lab_fingerprint)
    with store._read(f"read {what}") as conn:
        return list(conn.execute(query).mappings())


def acks(store: Store, scenario: str, lab_fingerprint: str | None = None) -> list[Ack]:
    """The acknowledgements of a scenario's series (one lab's, or every lab's), oldest first."""
    return [Ack(_key(m), str(m["run_id"]), str(m["who"]), float(m["at"]), str(m["why"]))
            for m in _series_rows(store, db.change_acks, scenario, lab_fingerprint,
                                  "acknowledgements")]


def record_alerts(store: Store, alerts: Iterable[tuple[SeriesKey, str]], alerted_run: str) -> None:
    """Remember that ``alerted_run``'s check alerted on these changes (series, first run
    after): later nights list them without failing."""
    rows = [_values(key) | {"run_id": run_id, "alerted_run": alerted_run, "at": time.time()}
            for key, run_id in alerts]
    if not rows:
        return
    with store._write(f"record alerts of {alerted_run}") as conn:
        conn.execute(db.change_alerts.insert(), rows)


def alerts(store: Store, scenario: str, lab_fingerprint: str | None = None) -> list[Alert]:
    """The alerts nightly checks raised on a scenario's series, oldest first."""
    return [Alert(_key(m), str(m["run_id"]), str(m["alerted_run"]), float(m["at"]))
            for m in _series_rows(store, db.change_alerts, scenario, lab_fingerprint,
                                  "alerts")]


def set_noise(store: Store, rows: Sequence[Noise]) -> None:
    """Store noise measurements (each replaces the one of its lab, scenario, metric, point)."""
    t = db.lab_noise
    with store._write("store lab noise") as conn:
        for n in rows:
            conn.execute(t.delete().where(
                (t.c.lab_fingerprint == n.lab_fingerprint) & (t.c.scenario_name == n.scenario)
                & (t.c.metric == n.metric) & (t.c.point == n.point)))
            conn.execute(t.insert().values(
                lab_fingerprint=n.lab_fingerprint, scenario_name=n.scenario, metric=n.metric,
                point=n.point, cv=n.cv, runs=n.runs, run_ids=json.dumps(list(n.run_ids)),
                measured_at=n.measured_at))


def noise(store: Store, lab_fingerprint: str, scenario: str | None = None) -> list[Noise]:
    """The noise measured on a lab (for one scenario, or all)."""
    t = db.lab_noise
    query = sa.select(t).where(t.c.lab_fingerprint == lab_fingerprint).order_by(
        t.c.scenario_name, t.c.metric, t.c.point)
    if scenario is not None:
        query = query.where(t.c.scenario_name == scenario)
    with store._read("read lab noise") as conn:
        return [Noise(m["lab_fingerprint"], m["scenario_name"], m["metric"], m["point"],
                      float(m["cv"]), int(m["runs"]), tuple(json.loads(m["run_ids"])),
                      float(m["measured_at"]))
                for m in conn.execute(query).mappings()]
