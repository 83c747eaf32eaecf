"""The results store on a real, throwaway PostgreSQL server (see tests/pg.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.pg import (  # noqa: F401 - fixtures
    PASSWORD,
    PASSWORD_USER,
    PgServer,
    fresh_postgresql_url,
    postgresql_server,
    postgresql_url,
)
from vbench.errors import RunNotFound, StoreError
from vbench.results import migrations, store_schema
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]

# Opens the store when told "go" on stdin, then writes one run of TRIALS x SAMPLES.
WRITER = r"""
import sys, time
from pathlib import Path
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store
url, results, run_id, n_trials, n_samples = sys.argv[1:6]
n_trials, n_samples = int(n_trials), int(n_samples)
print("ready", flush=True)
sys.stdin.readline()
store = Store.open(url, Path(results))
store.create_run(RunInfo(run_id=run_id, scenario_name="concurrent", started=time.time()))
store.add_points(run_id, [(p, {"p": str(p)}) for p in range(4)])
first = time.time()
for t in range(n_trials):
    samples = tuple(
        Sample("m", float(i), "ms", "test", guest=f"g{i % 3}", labels=(("i", str(i)),))
        for i in range(n_samples)
    )
    store.record_trial(run_id, TrialResult(t % 4, t, "ok", PhaseTimes(1, 2, 3, 4), samples))
last = time.time()
store.finish_run(run_id, "ok", time.time())
store.close()
print(f"done {first} {last}", flush=True)
"""


def _trial(point: int, trial_no: int, n: int = 3) -> TrialResult:
    samples = tuple(
        Sample(f"metric{i}", float(i), "MB/s", "fio", guest="g1", labels=(("z", "1"),
               ("a", str(i))))
        for i in range(n)
    )
    return TrialResult(point, trial_no, "ok", PhaseTimes(10.0, 11.0, 12.0, 42.0), samples)


@pytest.fixture()
def store(fresh_postgresql_url: str, tmp_path: Path) -> Iterator[Store]:  # noqa: F811
    s = Store.open(fresh_postgresql_url, tmp_path)
    yield s
    s.close()


def test_opens_postgresql_from_plain_url(store: Store, fresh_postgresql_url: str) -> None:  # noqa: F811
    assert store.dialect == "postgresql"
    assert store.url_display == fresh_postgresql_url  # no password: shown as given


def test_postgres_scheme_alias_and_password_user(
    postgresql_server: PgServer, tmp_path: Path  # noqa: F811
) -> None:
    db = postgresql_server.create_database(owner=PASSWORD_USER)
    url = postgresql_server.url(db, PASSWORD_USER, PASSWORD).replace("postgresql://", "postgres://")
    with Store.open(url, tmp_path) as s:
        assert PASSWORD not in s.url_display
        assert s.url_display.startswith(f"postgres://{PASSWORD_USER}:***@127.0.0.1:")
        s.create_run(RunInfo("r1", "fio", 1.0))
        assert s.get_run("r1").scenario_name == "fio"
    wrong = postgresql_server.url(db, PASSWORD_USER, "not-the-password")
    with pytest.raises(StoreError, match="password authentication failed") as info:
        Store.open(wrong, tmp_path)
    assert "not-the-password" not in str(info.value) and "\n" not in str(info.value)


def test_round_trip(store: Store) -> None:
    store.create_run(RunInfo("20260101-120000-aaaaaa", "fio", 5.0, tags=("nightly",),
                             scenario={"vc": {"password": "p"}}, environment={"os": "x"}))
    store.add_points("20260101-120000-aaaaaa", [(0, {"bs": "4k"}), (1, {"bs": "64k"})])
    store.record_trial("20260101-120000-aaaaaa", _trial(0, 0))
    store.record_trial("20260101-120000-aaaaaa", _trial(1, 0, n=1))
    store.set_testbed("20260101-120000-aaaaaa", {"hosts": ["esx1"]})
    store.finish_run("20260101-120000-aaaaaa", "ok", 9.0)
    row = store.get_run("20260101")
    assert (row.status, row.ended, row.tags) == ("ok", 9.0, ("nightly",))
    assert row.scenario == {"vc": {"password": "***"}} and row.testbed == {"hosts": ["esx1"]}
    assert (row.n_points, row.n_trials, row.n_samples) == (2, 2, 4)
    assert [p.labels for p in store.points(row.run_id)] == [{"bs": "4k"}, {"bs": "64k"}]
    assert [t.started for t in store.trials(row.run_id)] == [10.0, 10.0]
    frame = store.samples_frame(row.run_id)
    assert frame.labels.tolist()[:2] == ['{"a": "0", "z": "1"}', '{"a": "1", "z": "1"}']
    assert frame.window_end.tolist() == [42.0] * 4
    assert [r.run_id for r in store.list_runs(scenario="fio", tag="nightly")] == [row.run_id]


def test_labels_are_queryable_as_jsonb(store: Store) -> None:
    store.create_run(RunInfo("r1", "fio", 1.0))
    store.record_trial("r1", _trial(0, 0, n=3))
    with store._engine.connect() as conn:
        got = conn.exec_driver_sql(
            "SELECT value FROM samples WHERE labels->>'a' = '2'").scalars().all()
    assert got == [2.0]


def test_get_run_prefix_and_missing(store: Store) -> None:
    store.create_run(RunInfo("20260101-120000-aaaaaa", "fio", 1.0))
    store.create_run(RunInfo("20260101-120000-abbbbb", "fio", 2.0))
    assert store.get_run("20260101-120000-ab").run_id == "20260101-120000-abbbbb"
    with pytest.raises(RunNotFound, match="ambiguous"):
        store.get_run("20260101-120000-a")
    with pytest.raises(RunNotFound, match="did you mean 20260101-120000-aaaaaa"):
        store.get_run("20260101-120000-aaaaac")
    with pytest.raises(RunNotFound):
        store.finish_run("nope", "ok", 1.0)


def test_migrations_idempotent_and_match_schema(
    fresh_postgresql_url: str, tmp_path: Path  # noqa: F811
) -> None:
    Store.open(fresh_postgresql_url, tmp_path).close()
    Store.open(fresh_postgresql_url, tmp_path).close()
    engine = sa.create_engine(fresh_postgresql_url.replace("postgresql://",
                                                           "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            versions = conn.exec_driver_sql("SELECT version FROM schema_version").scalars()
            assert list(versions) == [m.version for m in migrations.MIGRATIONS]
            inspector = sa.inspect(conn)
            for table in store_schema.METADATA.sorted_tables:
                cols = [(c["name"], c["nullable"]) for c in inspector.get_columns(table.name)]
                assert cols == [(c.name, c.nullable) for c in table.columns], table.name
                indexes = {i["name"] for i in inspector.get_indexes(table.name)}
                assert indexes == {i.name for i in table.indexes}, table.name
            types = {c["name"]: str(c["type"]) for c in inspector.get_columns("samples")}
            assert (types["labels"], types["value"]) == ("JSONB", "DOUBLE PRECISION")
    finally:
        engine.dispose()


def test_newer_schema_is_refused(fresh_postgresql_url: str, tmp_path: Path) -> None:  # noqa: F811
    Store.open(fresh_postgresql_url, tmp_path).close()
    engine = sa.create_engine(fresh_postgresql_url.replace("postgresql://",
                                                           "postgresql+psycopg://"))
    with engine.begin() as conn:
        conn.execute(store_schema.schema_version.insert().values(
            version=migrations.LATEST_VERSION + 5, applied=time.time(), description="future"))
    engine.dispose()
    with pytest.raises(StoreError, match="is newer than this vbench knows"):
        Store.open(fresh_postgresql_url, tmp_path)


def test_unreachable_server_is_a_store_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://vbench:topsecret@127.0.0.1:{port}/x"
    with pytest.raises(StoreError) as info:
        Store.open(url, tmp_path)
    message = str(info.value)
    assert message.startswith(f"postgresql://vbench:***@127.0.0.1:{port}/x: ")
    assert "Connection refused" in message
    assert "topsecret" not in message and "\n" not in message


def test_two_processes_write_concurrently(fresh_postgresql_url: str, tmp_path: Path) -> None:  # noqa: F811
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    ids = ["20260101-000000-pgcon0", "20260101-000000-pgcon1"]
    n_trials, n_samples = 40, 150
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, fresh_postgresql_url, str(tmp_path), rid,
             str(n_trials), str(n_samples)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env,
        )
        for rid in ids
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:  # fresh database: both migrate at the same moment, then write
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    spans = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        _, first, last = out.split()
        spans.append((float(first), float(last)))
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1], spans
    with Store.open(fresh_postgresql_url, tmp_path) as s:
        rows = {r.run_id: r for r in s.list_runs()}
        assert set(rows) == set(ids)
        for rid in ids:
            assert (rows[rid].n_trials, rows[rid].n_samples) == (n_trials, n_trials * n_samples)
            assert rows[rid].status == "ok"
