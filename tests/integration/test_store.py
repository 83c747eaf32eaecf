"""The results store, one suite on both engines: SQLite (a file) and a real, throwaway
PostgreSQL server (tests/pg.py). Every behaviour a user relies on runs on both; what only
one engine has (SQLite's default file and WAL, PostgreSQL's JSONB and authentication)
follows, named by engine."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.pg import PASSWORD, PASSWORD_USER, PgServer
from vbench.errors import RunNotFound, StoreError
from vbench.results import migrations, store_schema
from vbench.results.records import PhaseTimes, RunInfo, Sample, TrialResult
from vbench.results.store import Store, display_url, resolve_url

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
samples = tuple(
    Sample("m", float(i), "ms", "test", guest=f"g{i % 3}", labels=(("i", str(i)),))
    for i in range(n_samples)
)
for t in range(n_trials):
    store.record_trial(run_id, TrialResult(t % 4, t, "ok", PhaseTimes(1, 2, 3, 4), samples))
    if t == 0:  # one trial written: wait until the other writer has one too
        first = time.time()
        print("first", flush=True)
        sys.stdin.readline()
last = time.time()
store.finish_run(run_id, "ok", time.time())
store.close()
print(f"done {first} {last}", flush=True)
"""


# -- the two engines ------------------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store of each engine (PostgreSQL only started when asked for)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/vbench.db"
    return str(request.getfixturevalue("fresh_postgresql_url"))


@pytest.fixture()
def store(url: str, tmp_path: Path) -> Iterator[Store]:
    s = Store.open(url, tmp_path)
    yield s
    s.close()


def sa_engine(url: str) -> sa.Engine:
    """A plain SQLAlchemy engine on the store's database, to look under the hood."""
    return sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))


def run_info(run_id: str, started: float = 1000.0, **kw: object) -> RunInfo:
    return RunInfo(run_id=run_id, scenario_name=kw.pop("scenario_name", "fio-basic"),
                   started=started, **kw)  # type: ignore[arg-type]


def trial(point: int, trial_no: int, n: int = 3, status: str = "ok") -> TrialResult:
    samples = tuple(
        Sample(f"metric{i}", float(i) * 1.5, "MB/s", "fio", guest="g1", labels=(("z", "1"),
               ("a", str(i))))
        for i in range(n)
    )
    phases = PhaseTimes(prepare_start=10.0, warmup_start=11.0, steady_start=12.0,
                        steady_end=42.0, cooldown_end=45.0)
    return TrialResult(point, trial_no, status, phases, samples)


def run_concurrent_writers(url: str, results: Path, n_trials: int, n_samples: int) -> list[str]:
    """Two real OS processes write one store at once; returns their run ids."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    ids = [f"20260101-000000-conc{i:02d}" for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(results), rid, str(n_trials),
             str(n_samples)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env,
        )
        for rid in ids
    ]
    for p in procs:  # both imported and waiting, so they open and write together
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for step in ("ready", "first"):  # open and migrate together, then write together
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        if step == "ready":
            for p in procs:
                assert p.stdout is not None and p.stdout.readline().strip() == "first"
    spans = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        _, first, last = out.split()
        spans.append((float(first), float(last)))
    # The writes interleaved in time (by construction: each wrote its first trial before
    # either went on), else this test would prove nothing.
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1], spans
    return ids


# -- on both engines ------------------------------------------------------------------------
def test_round_trip_run_points_trials_samples(store: Store) -> None:
    info = run_info("20260101-120000-aaaaaa", tags=("nightly", "fio", "nightly"),
                    scenario={"vcenter": {"user": "u", "password": "hunter2"}},
                    lab={"ssh": {"passphrase": "x", "user": "root"}},
                    lab_fingerprint="sha256:abc", environment={"python": "3.11"},
                    run_dir="/r/20260101-120000-aaaaaa")
    store.create_run(info)
    store.add_points(info.run_id, [(0, {"vms": "1", "bs": "4k"}), (1, {"vms": "2", "bs": "4k"})])
    store.record_trial(info.run_id, trial(0, 0))
    store.record_trial(info.run_id, trial(1, 0, n=2))
    store.record_trial(info.run_id, TrialResult(1, 1, "failed", PhaseTimes(), error="boom"))
    store.set_testbed(info.run_id, {"hosts": [{"name": "esx1"}], "token": "t0k"})
    store.finish_run(info.run_id, "ok", 2000.0)

    row = store.get_run("20260101")
    assert row.tags == ("nightly", "fio")
    assert row.scenario == {"vcenter": {"user": "u", "password": "***"}}
    assert row.lab == {"ssh": {"passphrase": "***", "user": "root"}}
    assert row.testbed == {"hosts": [{"name": "esx1"}], "token": "***"}
    assert (row.status, row.ended, row.lab_fingerprint) == ("ok", 2000.0, "sha256:abc")
    assert row.environment == {"python": "3.11"} and row.run_dir.endswith("aaaaaa")
    assert (row.n_points, row.n_trials, row.n_samples) == (2, 3, 5)
    assert row.vbench_version

    assert [(p.point, p.labels) for p in store.points(info.run_id)] == [
        (0, {"bs": "4k", "vms": "1"}), (1, {"bs": "4k", "vms": "2"})]
    trials = store.trials(info.run_id)
    assert [(t.point, t.trial, t.status, t.error) for t in trials] == [
        (0, 0, "ok", None), (1, 0, "ok", None), (1, 1, "failed", "boom")]
    assert (trials[0].started, trials[0].ended) == (10.0, 45.0)
    assert trials[0].phases["steady_end"] == 42.0 and trials[0].phases["teardown_end"] is None
    assert trials[2].started is None and trials[2].ended is None

    frame = store.samples_frame(info.run_id)
    assert list(frame.columns) == ["point", "trial", "guest", "metric", "value", "unit",
                                   "source", "labels", "window_start", "window_end"]
    assert len(frame) == 5
    first = frame.iloc[0]
    assert (first.metric, first.value, first.unit, first.guest) == ("metric0", 0.0, "MB/s", "g1")
    assert frame.labels.tolist()[:2] == ['{"a": "0", "z": "1"}', '{"a": "1", "z": "1"}']
    assert (first.window_start, first.window_end) == (12.0, 42.0)
    assert [r.run_id for r in store.list_runs(scenario="fio-basic", tag="nightly")] == [
        row.run_id]


def test_missing_value_stays_missing(store: Store) -> None:
    store.create_run(run_info("r1"))
    samples = (Sample("lat", None, "ms", "fio"), Sample("iops", math.nan, "1/s", "fio"),
               Sample("zero", 0.0, "1/s", "fio"))
    store.record_trial("r1", TrialResult(0, 0, "ok", PhaseTimes(), samples))
    frame = store.samples_frame("r1")
    assert frame.value.isna().tolist() == [True, True, False]
    assert frame.value.iloc[2] == 0.0
    assert frame.window_start.isna().all() and frame.guest.isna().all()
    assert frame.labels.tolist() == ["{}", "{}", "{}"]


def test_recording_a_trial_again_replaces_it(store: Store) -> None:
    store.create_run(run_info("r1"))
    store.record_trial("r1", trial(0, 0, n=4))
    store.record_trial("r1", trial(0, 0, n=2, status="failed"))
    assert store.get_run("r1").n_samples == 2
    assert [t.status for t in store.trials("r1")] == ["failed"]


def test_thousands_of_samples_in_one_trial(store: Store) -> None:
    store.create_run(run_info("big"))
    store.record_trial("big", trial(0, 0, n=5000))
    frame = store.samples_frame("big")
    assert len(frame) == 5000 and frame.value.iloc[-1] == 4999 * 1.5


def test_empty_run_gives_empty_frame_with_columns(store: Store) -> None:
    store.create_run(run_info("r1"))
    frame = store.samples_frame("r1")
    assert frame.empty and "metric" in frame.columns and str(frame.value.dtype) == "float64"


def test_list_runs_newest_first_by_scenario_and_tag(store: Store) -> None:
    store.create_run(run_info("a", started=1.0, tags=("nightly",)))
    store.create_run(run_info("b", started=3.0, tags=("nightly",), scenario_name="other"))
    store.create_run(run_info("c", started=2.0, tags=("adhoc", "nightly")))
    store.create_run(run_info("d", started=4.0))
    assert [r.run_id for r in store.list_runs()] == ["d", "b", "c", "a"]
    assert [r.run_id for r in store.list_runs(tag="nightly")] == ["b", "c", "a"]
    assert [r.run_id for r in store.list_runs(scenario="fio-basic", tag="nightly")] == ["c", "a"]
    assert [r.run_id for r in store.list_runs(limit=2)] == ["d", "b"]
    assert store.list_runs(tag="nope") == []


def test_get_run_by_unique_prefix(store: Store) -> None:
    store.create_run(run_info("20260101-120000-aaaaaa"))
    store.create_run(run_info("20260101-120000-abbbbb"))
    store.create_run(run_info("20260102-090000-cccccc"))
    assert store.get_run("20260102").run_id == "20260102-090000-cccccc"
    assert store.get_run("20260101-120000-aa").run_id == "20260101-120000-aaaaaa"
    assert store.points("20260102") == []
    with pytest.raises(RunNotFound, match="is ambiguous: ") as info:
        store.get_run("20260101-120000-a")
    assert "-aaaaaa" in str(info.value) and "-abbbbb" in str(info.value)
    # LIKE wildcards in the prefix are literal
    with pytest.raises(RunNotFound):
        store.get_run("2026010_")


def test_missing_run_suggests_close_ids(store: Store) -> None:
    store.create_run(run_info("20260101-120000-aaaaaa"))
    with pytest.raises(RunNotFound, match="did you mean 20260101-120000-aaaaaa"):
        store.get_run("20260101-120000-aaaaab")
    with pytest.raises(RunNotFound, match="no run 'zzz'") as info:
        store.get_run("zzz")
    assert "did you mean" not in str(info.value)
    for call in (lambda: store.finish_run("zzz", "ok", 1.0),
                 lambda: store.record_trial("zzz", trial(0, 0)),
                 lambda: store.add_points("zzz", [(0, {})]),
                 lambda: store.set_testbed("zzz", {})):
        with pytest.raises(RunNotFound):
            call()


def test_duplicate_run_id_is_refused(store: Store) -> None:
    store.create_run(run_info("r1"))
    with pytest.raises(StoreError, match="r1 already exists"):
        store.create_run(run_info("r1"))


def test_what_makes_runs_comparable_is_stored_with_the_run(store: Store) -> None:
    store.create_run(run_info("r-set", scenario_hash="3f2a1b0c9d8e", base_scenario_hash="aa11",
                              overrides=("workload.params.rate_iops=2000", "repeat=5")))
    store.create_run(run_info("r-plain", started=2000.0, scenario_hash="aa11",
                              base_scenario_hash="aa11"))
    row = store.get_run("r-set")
    assert (row.scenario_hash, row.base_scenario_hash) == ("3f2a1b0c9d8e", "aa11")
    assert row.overrides == ("workload.params.rate_iops=2000", "repeat=5")
    assert store.get_run("r-plain").overrides == ()


def test_a_run_stored_before_schema_4_reads_without_the_comparison_keys(
    url: str, tmp_path: Path
) -> None:
    engine = sa_engine(url)
    try:
        with engine.begin() as conn:
            migrations.migrate(conn, "here", migrations.MIGRATIONS[:3])
            # The runs table as schema 3 left it (the current table has more columns).
            conn.execute(sa.text(
                "INSERT INTO runs (run_id, scenario_name, status, started, tags, scenario, "
                "lab, environment, vbench_version) VALUES ('old', 's', 'ok', 1.0, '[]', "
                "'{\"name\": \"s\"}', '{\"name\": \"l\"}', '{}', '0.1')"))
    finally:
        engine.dispose()
    with Store.open(url, tmp_path) as s:  # migrates 3 -> latest
        row = s.get_run("old")
    assert (row.scenario_hash, row.base_scenario_hash, row.overrides) == (None, None, ())
    assert row.scenario == {"name": "s"}
    assert row.metrics is None  # no catalogue: directions are guessed for such a run


def test_the_metric_catalogue_is_stored_with_the_run(store: Store) -> None:
    catalogue = [{"pattern": "client_cpu", "unit": "fraction", "better": "none", "choices": {}},
                 {"pattern": "<op>_rt", "unit": "ms", "better": "lower",
                  "choices": {"op": ["get", "set"]}}]
    store.create_run(run_info("r-cat", metrics=catalogue))
    store.create_run(run_info("r-none", started=2000.0))
    assert store.get_run("r-cat").metrics == catalogue
    assert store.get_run("r-none").metrics is None


def test_schema_matches_migrations_and_reopen_is_idempotent(url: str, tmp_path: Path) -> None:
    Store.open(url, tmp_path).close()
    Store.open(url, tmp_path).close()
    engine = sa_engine(url)
    try:
        with engine.connect() as conn:
            versions = conn.execute(sa.text("SELECT version FROM schema_version")).scalars()
            assert list(versions) == [v.version for v in migrations.MIGRATIONS]
            inspector = sa.inspect(conn)
            for table in store_schema.METADATA.sorted_tables:
                cols = [(c["name"], c["nullable"]) for c in inspector.get_columns(table.name)]
                assert cols == [(c.name, c.nullable) for c in table.columns], table.name
                indexes = {i["name"] for i in inspector.get_indexes(table.name)}
                assert indexes == {i.name for i in table.indexes}, table.name
    finally:
        engine.dispose()


def test_new_migration_step_is_applied_once_and_a_newer_store_refused(
    url: str, tmp_path: Path
) -> None:
    Store.open(url, tmp_path).close()
    extra = migrations.Migration(
        migrations.LATEST_VERSION + 1, "test: add notes",
        lambda conn: conn.exec_driver_sql("CREATE TABLE notes (run_id TEXT, note TEXT)"),
    )
    steps = (*migrations.MIGRATIONS, extra)
    engine = sa_engine(url)
    try:
        with engine.begin() as conn:
            assert migrations.migrate(conn, "here", steps) == [extra.version]
        with engine.begin() as conn:
            assert migrations.migrate(conn, "here", steps) == []
            assert migrations.current_version(conn) == extra.version
    finally:
        engine.dispose()
    # This vbench knows fewer steps than the store has: it must refuse, not guess.
    newer, known = migrations.LATEST_VERSION + 1, migrations.LATEST_VERSION
    with pytest.raises(StoreError, match=rf"schema version {newer} is newer .*knows \({known}\)"):
        Store.open(url, tmp_path)


def test_two_processes_write_one_store_concurrently(url: str, tmp_path: Path) -> None:
    # A fresh store: both processes also migrate at the same moment, then write.
    ids = run_concurrent_writers(url, tmp_path, n_trials=40, n_samples=150)
    with Store.open(url, tmp_path) as s:
        rows = {r.run_id: r for r in s.list_runs()}
        assert set(rows) == set(ids)
        for rid in ids:
            assert (rows[rid].status, rows[rid].n_points) == ("ok", 4)
            assert (rows[rid].n_trials, rows[rid].n_samples) == (40, 40 * 150)
            assert len(s.samples_frame(rid)) == 40 * 150


def test_schema_version_row_written_at_open_time(url: str, tmp_path: Path) -> None:
    """Each applied step records when: a store's history can be read back."""
    before = time.time()
    Store.open(url, tmp_path).close()
    engine = sa_engine(url)
    try:
        with engine.connect() as conn:
            applied = conn.execute(sa.text("SELECT applied FROM schema_version")).scalars()
            assert all(before - 1 <= a <= time.time() + 1 for a in applied)
    finally:
        engine.dispose()


# -- SQLite only ----------------------------------------------------------------------------
def test_sqlite_default_url_is_a_file_in_the_results_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("VBENCH_STORE", raising=False)
    with Store.open(None, tmp_path / "res") as s:
        assert s.url_display == f"sqlite:///{tmp_path}/res/vbench.db"
        assert s.dialect == "sqlite"
    assert (tmp_path / "res" / "vbench.db").is_file()


def test_sqlite_env_var_names_the_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VBENCH_STORE", f"sqlite:///{tmp_path}/other.db")
    with Store.open(None, tmp_path / "res") as s:
        assert s.url_display.endswith("/other.db")
    assert (tmp_path / "other.db").is_file()
    assert resolve_url("x.db", tmp_path) == f"sqlite:///{Path('x.db').absolute()}"


def test_sqlite_wal_mode_and_busy_timeout(tmp_path: Path) -> None:
    with Store.open(None, tmp_path) as s, s._engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_sqlite_unopenable_locations_raise_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create") as info:
        Store.open(None, blocker / "results")
    assert "\n" not in str(info.value)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"garbage\.db: open: file is not a database") as info:
        Store.open(str(garbage), tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(StoreError, match="unsupported store URL scheme 'mysql'"):
        Store.open("mysql://u:p@h/db", tmp_path)


def test_url_display_hides_passwords() -> None:
    assert display_url("postgresql://bob:hunter2@db:5432/vb") == "postgresql://bob:***@db:5432/vb"
    assert "hunter2" not in display_url("postgresql://bob@db/vb?password=hunter2")
    assert display_url("sqlite:////x/vbench.db") == "sqlite:////x/vbench.db"


# -- PostgreSQL only ------------------------------------------------------------------------
def test_postgresql_opens_from_a_plain_url(fresh_postgresql_url: str, tmp_path: Path) -> None:
    with Store.open(fresh_postgresql_url, tmp_path) as s:
        assert s.dialect == "postgresql"
        assert s.url_display == fresh_postgresql_url  # no password: shown as given


def test_postgresql_scheme_alias_and_password_user(
    postgresql_server: PgServer, tmp_path: Path
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


def test_postgresql_labels_are_jsonb_and_values_double(
    fresh_postgresql_url: str, tmp_path: Path
) -> None:
    with Store.open(fresh_postgresql_url, tmp_path) as s:
        s.create_run(run_info("r1"))
        s.record_trial("r1", trial(0, 0, n=3))
        with s._engine.connect() as conn:
            got = conn.exec_driver_sql(
                "SELECT value FROM samples WHERE labels->>'a' = '2'").scalars().all()
            types = {c["name"]: str(c["type"]) for c in sa.inspect(conn).get_columns("samples")}
    assert got == [3.0]
    assert (types["labels"], types["value"]) == ("JSONB", "DOUBLE PRECISION")


def test_postgresql_unreachable_server_is_a_store_error(tmp_path: Path) -> None:
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

