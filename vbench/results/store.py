"""The results store: runs, points, trials and samples in SQLite or PostgreSQL.

One SQLAlchemy Core code path serves both engines. SQLite (the default, a file in the
results directory) runs in WAL mode with a 30 s busy timeout and takes its write lock
at the start of each write transaction (``BEGIN IMMEDIATE``), so several ``vbench run``
processes can write one file at once. PostgreSQL is reached with psycopg 3 from a
``postgresql://`` URL (engines and URLs: ``store_engine.py``). The schema is versioned;
see ``migrations.py``.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from vbench import __version__
from vbench.errors import RunNotFound, StoreError
from vbench.lazy import lazy_module
from vbench.results import store_schema as db
from vbench.results.migrations import migrate
from vbench.results.records import RunInfo, TrialResult
from vbench.results.rundir import redact
from vbench.results.store_engine import (  # URL helpers re-exported: callers import them here
    PG_CONNECT_TIMEOUT_S,
    SQLITE_BUSY_TIMEOUT_MS,
    create_engine,
    display_url,
    one_line,
    resolve_url,
)

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")

__all__ = [
    "PG_CONNECT_TIMEOUT_S", "SAMPLE_COLUMNS", "SQLITE_BUSY_TIMEOUT_MS", "UNFINISHED_STATUSES",
    "BaselineRow", "PointRow", "RunRow", "Store", "TrialRow", "baseline_scope",
    "display_url", "resolve_url",
]
# A run is stored when it starts (provisioning: its VMs and guests are being set up),
# runs its trials (running) and ends ok, failed or interrupted. Only a controller killed
# outright leaves one of these behind, which `vbench cleanup RUN` then settles.
UNFINISHED_STATUSES = ("provisioning", "running")
SAMPLE_COLUMNS = (
    "point", "trial", "guest", "metric", "value", "unit", "source", "labels",
    "window_start", "window_end",
)


@dataclass(frozen=True)
class RunRow:
    run_id: str
    scenario_name: str
    status: str
    started: float
    ended: float | None
    tags: tuple[str, ...]
    scenario: dict[str, Any]
    lab: dict[str, Any]
    lab_fingerprint: str | None
    environment: dict[str, Any]
    testbed: dict[str, Any] | None
    run_dir: str | None
    vbench_version: str
    n_points: int
    n_trials: int
    n_samples: int
    headline: tuple[str, ...] = ()
    scenario_hash: str | None = None  # NULL for runs stored before schema 4
    base_scenario_hash: str | None = None
    overrides: tuple[str, ...] = ()  # the run's --set arguments
    # The run's metric catalogues with their directions (schema 5; None before it).
    metrics: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class PointRow:
    point: int
    labels: dict[str, str]


@dataclass(frozen=True)
class TrialRow:
    point: int
    trial: int
    status: str
    error: str | None
    phases: dict[str, float | None]
    started: float | None
    ended: float | None


@dataclass(frozen=True)
class BaselineRow:
    scenario_name: str
    scope: str  # the lab's name ("" when the run has none)
    run_id: str
    set_at: float
    note: str | None


# --- rows -----------------------------------------------------------------------------

def _finite(value: float | None) -> float | None:
    """NaN is a missing figure: store NULL, as SQLite would anyway."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _trial_bounds(phases: Mapping[str, float | None]) -> tuple[float | None, float | None]:
    known = [v for v in phases.values() if v is not None]
    return (min(known), max(known)) if known else (None, None)


def _run_select() -> sa.Select[Any]:
    def count(table: sa.Table) -> sa.ScalarSelect[Any]:
        return (
            sa.select(sa.func.count())
            .select_from(table)
            .where(table.c.run_id == db.runs.c.run_id)
            .scalar_subquery()
        )

    return sa.select(
        db.runs,
        count(db.points).label("n_points"),
        count(db.trials).label("n_trials"),
        count(db.samples).label("n_samples"),
    ).order_by(db.runs.c.started.desc(), db.runs.c.run_id.desc())


def _run_row(m: Mapping[str, Any]) -> RunRow:
    return RunRow(
        run_id=m["run_id"],
        scenario_name=m["scenario_name"],
        status=m["status"],
        started=m["started"],
        ended=m["ended"],
        tags=tuple(m["tags"] or ()),
        scenario=m["scenario"] or {},
        lab=m["lab"] or {},
        lab_fingerprint=m["lab_fingerprint"],
        environment=m["environment"] or {},
        testbed=m["testbed"],
        run_dir=m["run_dir"],
        vbench_version=m["vbench_version"],
        n_points=int(m["n_points"]),
        n_trials=int(m["n_trials"]),
        n_samples=int(m["n_samples"]),
        headline=tuple(json.loads(m["headline"])) if m.get("headline") else (),
        scenario_hash=m.get("scenario_hash"),
        base_scenario_hash=m.get("base_scenario_hash"),
        overrides=tuple(json.loads(m["overrides"])) if m.get("overrides") else (),
        metrics=json.loads(m["metrics"]) if m.get("metrics") else None,
    )


# --- the store ------------------------------------------------------------------------

class Store:
    """A results store. Open with :meth:`open`; usable as a context manager."""

    def __init__(self, engine: Engine, url_display: str, password: str | None) -> None:
        self._engine = engine
        self._writer = engine.execution_options(vbench_write=True)
        self._password = password
        self.url_display = url_display

    @classmethod
    def open(cls, url: str | None, results_dir: Path) -> Store:
        """Open (creating and migrating as needed) the store at ``url``.

        ``None`` means ``$VBENCH_STORE`` if set, else ``sqlite:///<results_dir>/vbench.db``.
        """
        engine, shown, password = create_engine(url, results_dir)
        store = cls(engine, shown, password)
        try:
            with store._write("open") as conn:
                migrate(conn, shown)
        except BaseException:
            engine.dispose()
            raise
        return store

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (a lab's lease sits beside it: vbench/results/lease.py)."""
        return self._engine

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # transactions that turn driver errors into one-line StoreErrors

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            yield
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(
                f"{self.url_display}: {action}: {one_line(exc, self._password)}"
            ) from None

    @contextmanager
    def _write(self, action: str) -> Iterator[Connection]:
        with self._guard(action), self._writer.begin() as conn:
            yield conn

    @contextmanager
    def _read(self, action: str) -> Iterator[Connection]:
        with self._guard(action), self._engine.connect() as conn:
            yield conn

    def _require_run(self, conn: Connection, run_id: str) -> None:
        query = sa.select(db.runs.c.run_id).where(db.runs.c.run_id == run_id)
        found = conn.execute(query).first()
        if found is None:
            raise RunNotFound(f"no run {run_id!r} in {self.url_display}")

    # writes

    def create_run(self, info: RunInfo) -> None:
        tags = list(dict.fromkeys(info.tags))
        with self._write(f"create run {info.run_id}") as conn:
            exists = conn.execute(
                sa.select(db.runs.c.run_id).where(db.runs.c.run_id == info.run_id)
            ).first()
            if exists is not None:
                raise StoreError(f"{self.url_display}: run {info.run_id} already exists")
            conn.execute(db.runs.insert().values(
                run_id=info.run_id,
                scenario_name=info.scenario_name,
                status=info.status,
                started=info.started,
                ended=info.ended,
                tags=tags,
                scenario=redact(dict(info.scenario)),
                lab=redact(dict(info.lab)),
                lab_fingerprint=info.lab_fingerprint,
                environment=redact(dict(info.environment)),
                testbed=None,
                run_dir=info.run_dir,
                vbench_version=__version__,
                headline=json.dumps(list(info.headline)),
                scenario_hash=info.scenario_hash,
                base_scenario_hash=info.base_scenario_hash,
                overrides=json.dumps(list(info.overrides)),
                metrics=None if info.metrics is None else json.dumps(info.metrics),
            ))
            if tags:
                conn.execute(
                    db.run_tags.insert(), [{"run_id": info.run_id, "tag": t} for t in tags]
                )

    def add_points(self, run_id: str, points: Sequence[tuple[int, Mapping[str, str]]]) -> None:
        """Record the points of a run; adding a point again replaces its labels."""
        rows = [
            {"run_id": run_id, "point": int(p), "labels": dict(sorted(labels.items()))}
            for p, labels in points
        ]
        with self._write(f"add points to run {run_id}") as conn:
            self._require_run(conn, run_id)
            if not rows:
                return
            conn.execute(db.points.delete().where(
                db.points.c.run_id == run_id, db.points.c.point.in_([r["point"] for r in rows])
            ))
            conn.execute(db.points.insert(), rows)

    def record_trial(self, run_id: str, result: TrialResult) -> None:
        """The trial row and all its samples, in one transaction. Recording a trial again
        replaces it (and its samples) whole."""
        phases = result.phases.as_dict()
        started, ended = _trial_bounds(phases)
        steady = result.phases.steady
        w_start, w_end = (steady.start, steady.end) if steady else (None, None)
        rows = [
            {
                "run_id": run_id, "point": result.point, "trial": result.trial,
                "guest": s.guest, "metric": s.metric, "value": _finite(s.value),
                "unit": s.unit, "source": s.source, "labels": dict(sorted(s.labels)),
                "window_start": w_start, "window_end": w_end,
            }
            for s in result.samples
        ]
        key = (
            (db.trials.c.run_id == run_id)
            & (db.trials.c.point == result.point)
            & (db.trials.c.trial == result.trial)
        )
        action = f"record trial {result.point}-{result.trial} of run {run_id}"
        with self._write(action) as conn:
            self._require_run(conn, run_id)
            conn.execute(db.samples.delete().where(
                db.samples.c.run_id == run_id,
                db.samples.c.point == result.point,
                db.samples.c.trial == result.trial,
            ))
            conn.execute(db.trials.delete().where(key))
            conn.execute(db.trials.insert().values(
                run_id=run_id, point=result.point, trial=result.trial, status=result.status,
                error=result.error, phases=phases, started=started, ended=ended,
            ))
            if rows:
                conn.execute(db.samples.insert(), rows)  # executemany

    def finish_run(self, run_id: str, status: str, ended: float) -> None:
        self._update_run(run_id, "finish run", status=status, ended=ended)

    def set_status(self, run_id: str, status: str) -> None:
        """Move a run on (a resumed run is provisioning again, then running)."""
        self._update_run(run_id, f"set status {status} of run", status=status, ended=None)

    def set_running(self, run_id: str, environment: Mapping[str, Any]) -> None:
        """The run's guests are ready: its trials start, in this environment."""
        self._update_run(run_id, "start run", status="running",
                         environment=redact(dict(environment)))

    def settle_unfinished(self, run_id: str, status: str, ended: float) -> bool:
        """Give a run whose controller is gone (still provisioning or running in the
        store) its final ``status``; False, changing nothing, when it already had one."""
        with self._write(f"settle run {run_id}") as conn:
            self._require_run(conn, run_id)
            query = db.runs.update().where(
                db.runs.c.run_id == run_id, db.runs.c.status.in_(UNFINISHED_STATUSES)
            ).values(status=status, ended=ended)
            return bool(conn.execute(query).rowcount)

    def set_testbed(self, run_id: str, testbed: Mapping[str, Any]) -> None:
        self._update_run(run_id, "set testbed of run", testbed=redact(dict(testbed)))

    def _update_run(self, run_id: str, action: str, **values: Any) -> None:
        with self._write(f"{action} {run_id}") as conn:
            query = db.runs.update().where(db.runs.c.run_id == run_id).values(**values)
            done = conn.execute(query)
            if done.rowcount == 0:
                raise RunNotFound(f"no run {run_id!r} in {self.url_display}")

    # reads

    def list_runs(
        self, scenario: str | None = None, tag: str | None = None, limit: int | None = None
    ) -> list[RunRow]:
        """Runs, newest first, optionally of one scenario and/or carrying one tag."""
        query = _run_select()
        if scenario is not None:
            query = query.where(db.runs.c.scenario_name == scenario)
        if tag is not None:
            tagged = sa.select(db.run_tags.c.run_id).where(db.run_tags.c.tag == tag)
            query = query.where(db.runs.c.run_id.in_(tagged))
        if limit is not None:
            query = query.limit(limit)
        with self._read("list runs") as conn:
            return [_run_row(m) for m in conn.execute(query).mappings()]

    def get_run(self, run_id: str) -> RunRow:
        """The run with this id or unique id prefix; RunNotFound (with close ids) else."""
        with self._read(f"get run {run_id}") as conn:
            return _run_row(self._find_run(conn, run_id))

    def _find_run(self, conn: Connection, run_id: str) -> Mapping[str, Any]:
        if not run_id:
            raise RunNotFound("an empty run id names no run")
        exact = conn.execute(_run_select().where(db.runs.c.run_id == run_id)).mappings().first()
        if exact is not None:
            return exact
        query = _run_select().where(db.runs.c.run_id.startswith(run_id, autoescape=True))
        found = conn.execute(query.limit(6)).mappings().all()
        if len(found) == 1:
            return found[0]
        if found:
            ids = ", ".join(m["run_id"] for m in found[:5])
            more = ", …" if len(found) > 5 else ""
            raise RunNotFound(f"run id prefix {run_id!r} is ambiguous: {ids}{more}")
        all_ids = list(conn.execute(sa.select(db.runs.c.run_id)).scalars())
        close = difflib.get_close_matches(run_id, all_ids, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise RunNotFound(f"no run {run_id!r} in {self.url_display}{hint}")

    def _full_id(self, conn: Connection, run_id: str) -> str:
        return str(self._find_run(conn, run_id)["run_id"])

    def points(self, run_id: str) -> list[PointRow]:
        with self._read(f"read points of run {run_id}") as conn:
            full = self._full_id(conn, run_id)
            query = sa.select(db.points.c.point, db.points.c.labels).where(
                db.points.c.run_id == full
            ).order_by(db.points.c.point)
            return [PointRow(int(p), dict(labels)) for p, labels in conn.execute(query)]

    def trials(self, run_id: str) -> list[TrialRow]:
        with self._read(f"read trials of run {run_id}") as conn:
            full = self._full_id(conn, run_id)
            query = sa.select(db.trials).where(db.trials.c.run_id == full).order_by(
                db.trials.c.point, db.trials.c.trial
            )
            return [
                TrialRow(
                    point=int(m["point"]), trial=int(m["trial"]), status=m["status"],
                    error=m["error"], phases=dict(m["phases"]), started=m["started"],
                    ended=m["ended"],
                )
                for m in conn.execute(query).mappings()
            ]

    def samples_frame(self, run_id: str) -> pd.DataFrame:
        """One row per sample; ``labels`` as a JSON string with sorted keys, a missing
        value as NaN."""
        with self._read(f"read samples of run {run_id}") as conn:
            full = self._full_id(conn, run_id)
            query = sa.select(*(db.samples.c[name] for name in SAMPLE_COLUMNS)).where(
                db.samples.c.run_id == full
            ).order_by(db.samples.c.point, db.samples.c.trial, db.samples.c.id)
            rows = conn.execute(query).all()
        columns: dict[str, list[Any]] = {name: [] for name in SAMPLE_COLUMNS}
        for row in rows:
            for name, value in zip(SAMPLE_COLUMNS, row, strict=True):
                columns[name].append(value)
        columns["labels"] = [json.dumps(v, sort_keys=True) for v in columns["labels"]]
        return pd.DataFrame({
            "point": pd.Series(columns["point"], dtype="int64"),
            "trial": pd.Series(columns["trial"], dtype="int64"),
            "guest": pd.Series(columns["guest"], dtype="object"),
            "metric": pd.Series(columns["metric"], dtype="object"),
            "value": pd.Series(columns["value"], dtype="float64"),
            "unit": pd.Series(columns["unit"], dtype="object"),
            "source": pd.Series(columns["source"], dtype="object"),
            "labels": pd.Series(columns["labels"], dtype="object"),
            "window_start": pd.Series(columns["window_start"], dtype="float64"),
            "window_end": pd.Series(columns["window_end"], dtype="float64"),
        })

    # baselines (regression checks)

    def set_baseline(self, run_id: str, note: str | None = None) -> BaselineRow:
        """Make ``run_id`` the baseline of its scenario in its lab (replacing any)."""
        import time

        with self._write(f"set baseline {run_id}") as conn:
            m = self._find_run(conn, run_id)
            row = BaselineRow(
                m["scenario_name"], baseline_scope(m["lab"]), m["run_id"], time.time(), note
            )
            key = (db.baselines.c.scenario_name == row.scenario_name) & (
                db.baselines.c.scope == row.scope
            )
            conn.execute(db.baselines.delete().where(key))
            conn.execute(db.baselines.insert().values(
                scenario_name=row.scenario_name, scope=row.scope, run_id=row.run_id,
                set_at=row.set_at, note=note,
            ))
        return row

    def baselines(self, scenario: str | None = None) -> list[BaselineRow]:
        query = sa.select(db.baselines).order_by(
            db.baselines.c.scenario_name, db.baselines.c.scope
        )
        if scenario is not None:
            query = query.where(db.baselines.c.scenario_name == scenario)
        with self._read("read baselines") as conn:
            return [
                BaselineRow(m["scenario_name"], m["scope"], m["run_id"], m["set_at"], m["note"])
                for m in conn.execute(query).mappings()
            ]

    def clear_baseline(self, scenario: str, scope: str | None = None) -> int:
        """Forget the baseline(s) of ``scenario`` (one lab's, or all); returns how many."""
        query = db.baselines.delete().where(db.baselines.c.scenario_name == scenario)
        if scope is not None:
            query = query.where(db.baselines.c.scope == scope)
        with self._write(f"clear baseline of {scenario}") as conn:
            return int(conn.execute(query).rowcount or 0)

    # bulk reads (history over many runs)

    def aggregate_frame(
        self, run_ids: Sequence[str], metrics: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Aggregate samples (guest NULL) of many runs in few queries: columns run_id,
        point, trial, metric, value, unit, labelled (the sample has labels) and the
        trial's status; only the given metrics (default: all)."""
        cols = ["run_id", "point", "trial", "metric", "value", "unit", "labels", "status"]
        s, t = db.samples, db.trials
        join = s.join(t, (s.c.run_id == t.c.run_id) & (s.c.point == t.c.point)
                      & (s.c.trial == t.c.trial))
        rows: list[Any] = []
        with self._read("read samples of many runs") as conn:
            for i in range(0, len(run_ids), 500):  # keep the IN list short
                query = sa.select(
                    s.c.run_id, s.c.point, s.c.trial, s.c.metric, s.c.value, s.c.unit,
                    # Raw labels: parsing 10^5 JSON objects only to test for {} is slow.
                    sa.type_coerce(s.c.labels, sa.Text), t.c.status,
                ).select_from(join).where(
                    s.c.run_id.in_(list(run_ids[i:i + 500])), s.c.guest.is_(None)
                )
                if metrics is not None:
                    query = query.where(s.c.metric.in_(list(metrics)))
                rows += conn.execute(query).all()
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in cols]
        frame = pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in zip(cols, columns,
                                                                             strict=True)})
        frame["labelled"] = ~frame["labels"].map(_no_labels).astype(bool)
        frame["value"] = pd.to_numeric(frame["value"], errors="coerce").astype("float64")
        return frame.drop(columns=["labels"])

    def runs_of(self, run_ids: Sequence[str]) -> dict[str, RunRow]:
        """The records of many runs by exact id (one query per 500; unknown ids left out)."""
        found: dict[str, RunRow] = {}
        with self._read("read many runs") as conn:
            for i in range(0, len(run_ids), 500):
                query = _run_select().where(db.runs.c.run_id.in_(list(run_ids[i:i + 500])))
                found.update((m["run_id"], _run_row(m)) for m in conn.execute(query).mappings())
        return found

    def points_of_runs(self, run_ids: Sequence[str]) -> dict[str, list[PointRow]]:
        """The points of many runs, by run id."""
        found: dict[str, list[PointRow]] = {r: [] for r in run_ids}
        with self._read("read points of many runs") as conn:
            for i in range(0, len(run_ids), 500):
                query = sa.select(db.points).where(
                    db.points.c.run_id.in_(list(run_ids[i:i + 500]))
                ).order_by(db.points.c.run_id, db.points.c.point)
                for m in conn.execute(query).mappings():
                    found[m["run_id"]].append(PointRow(int(m["point"]), dict(m["labels"])))
        return found


def _no_labels(raw: Any) -> bool:
    """``{}`` as stored: JSON text on SQLite, already decoded by psycopg on PostgreSQL."""
    if raw is None or raw == {}:
        return True
    return isinstance(raw, str) and raw.replace(" ", "") in ("{}", "null")


def baseline_scope(lab: Mapping[str, Any] | None) -> str:
    """Baselines are kept per scenario and lab name."""
    return str((lab or {}).get("name") or "")
