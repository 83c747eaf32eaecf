"""Ordered, append-only schema migrations for the results store.

Every open runs :func:`migrate` inside one write transaction that first takes a lock
(``pg_advisory_xact_lock`` on PostgreSQL; ``BEGIN IMMEDIATE`` on SQLite, taken by the
caller), so concurrent openers of a fresh store serialise: the first applies the steps,
the others find them applied. DDL is transactional on both engines, so a failed step
leaves the store as it was.

A released step is never edited: it describes history. A schema change is a new step
appended to ``MIGRATIONS`` plus the matching change in ``store_schema.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from vbench.errors import StoreError
from vbench.results.store_schema import id_type, json_type, schema_version

# Any fixed 64-bit number works; this one spells "vbenchsv" so a DBA can recognise it
# in pg_locks.
ADVISORY_LOCK_KEY = 0x7662656E63687376


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _v1_initial(conn: Connection) -> None:
    """Schema version 1, frozen: runs, run_tags, points, trials, samples."""
    md = sa.MetaData()
    fk_run = lambda: sa.ForeignKey("runs.run_id", ondelete="CASCADE")  # noqa: E731
    sa.Table(
        "runs", md,
        sa.Column("run_id", sa.Text, primary_key=True),
        sa.Column("scenario_name", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("started", sa.Double, nullable=False),
        sa.Column("ended", sa.Double),
        sa.Column("tags", json_type(), nullable=False),
        sa.Column("scenario", json_type(), nullable=False),
        sa.Column("lab", json_type(), nullable=False),
        sa.Column("lab_fingerprint", sa.Text),
        sa.Column("environment", json_type(), nullable=False),
        sa.Column("testbed", json_type()),
        sa.Column("run_dir", sa.Text),
        sa.Column("vbench_version", sa.Text, nullable=False),
        sa.Index("ix_runs_scenario_started", "scenario_name", "started"),
        sa.Index("ix_runs_started", "started"),
    )
    sa.Table(
        "run_tags", md,
        sa.Column("run_id", sa.Text, fk_run(), primary_key=True),
        sa.Column("tag", sa.Text, primary_key=True),
        sa.Index("ix_run_tags_tag", "tag", "run_id"),
    )
    sa.Table(
        "points", md,
        sa.Column("run_id", sa.Text, fk_run(), primary_key=True),
        sa.Column("point", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("labels", json_type(), nullable=False),
    )
    sa.Table(
        "trials", md,
        sa.Column("run_id", sa.Text, fk_run(), primary_key=True),
        sa.Column("point", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("trial", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("phases", json_type(), nullable=False),
        sa.Column("started", sa.Double),
        sa.Column("ended", sa.Double),
    )
    sa.Table(
        "samples", md,
        sa.Column("id", id_type(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("point", sa.Integer, nullable=False),
        sa.Column("trial", sa.Integer, nullable=False),
        sa.Column("guest", sa.Text),
        sa.Column("metric", sa.Text, nullable=False),
        sa.Column("value", sa.Double),
        sa.Column("unit", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("labels", json_type(), nullable=False),
        sa.Column("window_start", sa.Double),
        sa.Column("window_end", sa.Double),
        sa.ForeignKeyConstraint(
            ["run_id", "point", "trial"],
            ["trials.run_id", "trials.point", "trials.trial"],
            ondelete="CASCADE",
        ),
        sa.Index("ix_samples_trial", "run_id", "point", "trial"),
        sa.Index("ix_samples_metric", "run_id", "metric"),
    )
    md.create_all(conn)


def _v2_baselines(conn: Connection) -> None:
    """Schema version 2, frozen: the reference run of a scenario (per lab) for
    regression checks, set with `vbench baseline set`."""
    md = sa.MetaData()
    sa.Table("runs", md, sa.Column("run_id", sa.Text, primary_key=True))
    sa.Table(
        "baselines", md,
        sa.Column("scenario_name", sa.Text, primary_key=True),
        sa.Column("scope", sa.Text, primary_key=True),
        sa.Column(
            "run_id", sa.Text, sa.ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("set_at", sa.Double, nullable=False),
        sa.Column("note", sa.Text),
    )
    md.tables["baselines"].create(conn)


def _v3_headline(conn: Connection) -> None:
    """Schema version 3, frozen: the headline metrics a run's report leads with, stored
    when the run starts (the scenario's ``report.headline``, else the driver's), so a
    report never needs the driver's code."""
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN headline TEXT"))


def _v4_comparable(conn: Connection) -> None:
    """Schema version 4, frozen: what makes runs comparable, recorded when a run starts —
    the hash of the resolved scenario after ``--set``, the hash of the scenario file
    without them, and the ``--set`` arguments (a JSON list as text). NULL for runs stored
    before it (readers compute the scenario hash from the stored scenario)."""
    for column in ("scenario_hash", "base_scenario_hash", "overrides"):
        conn.execute(sa.text(f"ALTER TABLE runs ADD COLUMN {column} TEXT"))


def _v5_metrics(conn: Connection) -> None:
    """Schema version 5, frozen: the metric catalogues of a run (each entry's name or
    pattern, unit and direction of improvement), stored when the run starts, so that
    what is ranked higher- or lower-is-better never needs the driver's code. A JSON list
    as text; NULL for runs stored before it."""
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN metrics TEXT"))


def _v6_triage(conn: Connection) -> None:
    """Schema version 6, frozen: nightly triage and lab noise.

    - ``change_acks``: a change point acknowledged (who, when, why), keyed by scenario,
      lab fingerprint, metric, point (its labels as sorted JSON text) and the first run
      after the change;
    - ``change_alerts``: the night (run) whose check first alerted on a change, so that an
      unacknowledged regression fails one night only;
    - ``lab_noise``: night-to-night noise (relative standard deviation of run means) per
      lab fingerprint, scenario, metric and point, measured by ``vbench run --aa``.
    """
    md = sa.MetaData()
    sa.Table("runs", md, sa.Column("run_id", sa.Text, primary_key=True))
    fk_run = lambda: sa.ForeignKey("runs.run_id", ondelete="CASCADE")  # noqa: E731

    def key_columns() -> list[sa.Column[object]]:
        return [sa.Column("scenario_name", sa.Text, nullable=False),
                sa.Column("lab_fingerprint", sa.Text, nullable=False),
                sa.Column("metric", sa.Text, nullable=False),
                sa.Column("point", sa.Text, nullable=False)]

    sa.Table(
        "change_acks", md,
        sa.Column("id", id_type(), primary_key=True, autoincrement=True),
        *key_columns(),
        sa.Column("run_id", sa.Text, fk_run(), nullable=False),
        sa.Column("who", sa.Text, nullable=False),
        sa.Column("at", sa.Double, nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Index("ix_change_acks_series", "scenario_name", "lab_fingerprint"),
    )
    sa.Table(
        "change_alerts", md,
        sa.Column("id", id_type(), primary_key=True, autoincrement=True),
        *key_columns(),
        sa.Column("run_id", sa.Text, fk_run(), nullable=False),
        sa.Column("alerted_run", sa.Text, fk_run(), nullable=False),
        sa.Column("at", sa.Double, nullable=False),
        sa.Index("ix_change_alerts_series", "scenario_name", "lab_fingerprint"),
    )
    sa.Table(
        "lab_noise", md,
        sa.Column("lab_fingerprint", sa.Text, primary_key=True),
        sa.Column("scenario_name", sa.Text, primary_key=True),
        sa.Column("metric", sa.Text, primary_key=True),
        sa.Column("point", sa.Text, primary_key=True),
        sa.Column("cv", sa.Double, nullable=False),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("run_ids", sa.Text, nullable=False),
        sa.Column("measured_at", sa.Double, nullable=False),
    )
    for name in ("change_acks", "change_alerts", "lab_noise"):
        md.tables[name].create(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema: runs, run_tags, points, trials, samples", _v1_initial),
    Migration(2, "baselines: the reference run of a scenario per lab", _v2_baselines),
    Migration(3, "runs.headline: the metrics a report leads with", _v3_headline),
    Migration(4, "runs.scenario_hash, base_scenario_hash, overrides: what makes runs "
              "comparable", _v4_comparable),
    Migration(5, "runs.metrics: the run's metric catalogues with their directions",
              _v5_metrics),
    Migration(6, "change_acks, change_alerts, lab_noise: nightly triage and measured lab "
              "noise", _v6_triage),
)
LATEST_VERSION = MIGRATIONS[-1].version


def current_version(conn: Connection) -> int:
    """The highest applied step, 0 for an empty database."""
    if not sa.inspect(conn).has_table(schema_version.name):
        return 0
    found = conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar()
    return int(found or 0)


def migrate(
    conn: Connection, where: str, migrations: Sequence[Migration] = MIGRATIONS
) -> list[int]:
    """Bring the store up to the last of ``migrations``; return the versions applied.

    ``conn`` must be inside a write transaction. ``where`` names the store in errors.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(ADVISORY_LOCK_KEY)))
    schema_version.create(conn, checkfirst=True)
    have = current_version(conn)
    latest = migrations[-1].version if migrations else 0
    if have > latest:
        raise StoreError(
            f"{where}: store schema version {have} is newer than this vbench knows "
            f"({latest}); upgrade vbench to use this store"
        )
    applied = []
    for step in migrations:
        if step.version <= have:
            continue
        step.apply(conn)
        conn.execute(
            schema_version.insert().values(
                version=step.version, applied=time.time(), description=step.description
            )
        )
        applied.append(step.version)
    return applied
