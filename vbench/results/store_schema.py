"""The current results-store schema, as SQLAlchemy Core tables used by the queries.

The tables are created and altered only by the ordered steps in ``migrations.py``;
this module describes what the newest step leaves behind. A test compares the two,
so a change here without a migration step (or the reverse) fails.

Times are epoch seconds (double precision, controller clock). JSON columns are
``jsonb`` on PostgreSQL (so ``labels->>'job'`` works in SQL) and JSON text on SQLite.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeEngine


def json_type() -> TypeEngine[object]:
    """JSON that stores Python ``None`` as SQL NULL, jsonb on PostgreSQL."""
    return sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


def id_type() -> TypeEngine[int]:
    """A 64-bit surrogate key; plain INTEGER on SQLite so it aliases the rowid."""
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _fk_run() -> sa.ForeignKey:
    return sa.ForeignKey("runs.run_id", ondelete="CASCADE")


METADATA = sa.MetaData()

schema_version = sa.Table(
    "schema_version",
    METADATA,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("applied", sa.Double, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
)

runs = sa.Table(
    "runs",
    METADATA,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("scenario_name", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("started", sa.Double, nullable=False),
    sa.Column("ended", sa.Double, nullable=True),
    sa.Column("tags", json_type(), nullable=False),
    sa.Column("scenario", json_type(), nullable=False),
    sa.Column("lab", json_type(), nullable=False),
    sa.Column("lab_fingerprint", sa.Text, nullable=True),
    sa.Column("environment", json_type(), nullable=False),
    sa.Column("testbed", json_type(), nullable=True),
    sa.Column("run_dir", sa.Text, nullable=True),
    sa.Column("vbench_version", sa.Text, nullable=False),
    # JSON list as text (added by migration 3; NULL for runs stored before it).
    sa.Column("headline", sa.Text, nullable=True),
    # Added by migration 4 (NULL for runs stored before it): the resolved scenario's
    # hash after --set, the scenario file's hash without them, the --set arguments as a
    # JSON list as text.
    sa.Column("scenario_hash", sa.Text, nullable=True),
    sa.Column("base_scenario_hash", sa.Text, nullable=True),
    sa.Column("overrides", sa.Text, nullable=True),
    # Added by migration 5 (NULL for runs stored before it): the run's metric catalogues
    # (pattern, unit, direction of improvement) as a JSON list as text.
    sa.Column("metrics", sa.Text, nullable=True),
    sa.Index("ix_runs_scenario_started", "scenario_name", "started"),
    sa.Index("ix_runs_started", "started"),
)

# Tags are kept twice on purpose: runs.tags keeps the user's order for display,
# run_tags makes "runs with tag X" an indexed lookup.
run_tags = sa.Table(
    "run_tags",
    METADATA,
    sa.Column("run_id", sa.Text, _fk_run(), primary_key=True),
    sa.Column("tag", sa.Text, primary_key=True),
    sa.Index("ix_run_tags_tag", "tag", "run_id"),
)

points = sa.Table(
    "points",
    METADATA,
    sa.Column("run_id", sa.Text, _fk_run(), primary_key=True),
    sa.Column("point", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("labels", json_type(), nullable=False),
)

trials = sa.Table(
    "trials",
    METADATA,
    sa.Column("run_id", sa.Text, _fk_run(), primary_key=True),
    sa.Column("point", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("trial", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("phases", json_type(), nullable=False),
    sa.Column("started", sa.Double, nullable=True),
    sa.Column("ended", sa.Double, nullable=True),
)

samples = sa.Table(
    "samples",
    METADATA,
    sa.Column("id", id_type(), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, nullable=False),
    sa.Column("point", sa.Integer, nullable=False),
    sa.Column("trial", sa.Integer, nullable=False),
    sa.Column("guest", sa.Text, nullable=True),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("value", sa.Double, nullable=True),
    sa.Column("unit", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("labels", json_type(), nullable=False),
    sa.Column("window_start", sa.Double, nullable=True),
    sa.Column("window_end", sa.Double, nullable=True),
    sa.ForeignKeyConstraint(
        ["run_id", "point", "trial"],
        ["trials.run_id", "trials.point", "trials.trial"],
        ondelete="CASCADE",
    ),
    sa.Index("ix_samples_trial", "run_id", "point", "trial"),
    sa.Index("ix_samples_metric", "run_id", "metric"),
)

# The reference run of a scenario for regression checks; scope is the lab's name
# ("" for a run without one), so labs sharing a store keep their own baselines.
baselines = sa.Table(
    "baselines",
    METADATA,
    sa.Column("scenario_name", sa.Text, primary_key=True),
    sa.Column("scope", sa.Text, primary_key=True),
    sa.Column("run_id", sa.Text, _fk_run(), nullable=False),
    sa.Column("set_at", sa.Double, nullable=False),
    sa.Column("note", sa.Text, nullable=True),
)


# Added by migration 6: nightly triage (vbench/results/triage.py). A change point is keyed
# by scenario, lab fingerprint ("" without one), metric, point (its labels as sorted JSON
# text) and the first run after it.


def _change_key() -> list[sa.Column[object]]:
    return [sa.Column("scenario_name", sa.Text, nullable=False),
            sa.Column("lab_fingerprint", sa.Text, nullable=False),
            sa.Column("metric", sa.Text, nullable=False),
            sa.Column("point", sa.Text, nullable=False)]


change_acks = sa.Table(
    "change_acks",
    METADATA,
    sa.Column("id", id_type(), primary_key=True, autoincrement=True),
    *_change_key(),
    sa.Column("run_id", sa.Text, _fk_run(), nullable=False),
    sa.Column("who", sa.Text, nullable=False),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("why", sa.Text, nullable=False),
    sa.Index("ix_change_acks_series", "scenario_name", "lab_fingerprint"),
)

# The run whose nightly check first alerted on a change (an alert fails one night only).
change_alerts = sa.Table(
    "change_alerts",
    METADATA,
    sa.Column("id", id_type(), primary_key=True, autoincrement=True),
    *_change_key(),
    sa.Column("run_id", sa.Text, _fk_run(), nullable=False),
    sa.Column("alerted_run", sa.Text, _fk_run(), nullable=False),
    sa.Column("at", sa.Double, nullable=False),
    sa.Index("ix_change_alerts_series", "scenario_name", "lab_fingerprint"),
)

# Night-to-night noise measured by `vbench run --aa`: the relative standard deviation of
# the run means of back-to-back runs of one point; the newest measurement replaces.
lab_noise = sa.Table(
    "lab_noise",
    METADATA,
    sa.Column("lab_fingerprint", sa.Text, primary_key=True),
    sa.Column("scenario_name", sa.Text, primary_key=True),
    sa.Column("metric", sa.Text, primary_key=True),
    sa.Column("point", sa.Text, primary_key=True),
    sa.Column("cv", sa.Double, nullable=False),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("run_ids", sa.Text, nullable=False),  # JSON list as text
    sa.Column("measured_at", sa.Double, nullable=False),
)
