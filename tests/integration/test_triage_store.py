"""Nightly triage in the store (vbench/results/triage.py): acknowledgements with
who/when/why, alerts raised, lab noise — on SQLite and a real PostgreSQL server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vbench.errors import RunNotFound
from vbench.results import triage
from vbench.results.records import RunInfo
from vbench.results.store import Store

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = (f"sqlite:///{tmp_path}/vbench.db" if request.param == "sqlite"
           else str(request.getfixturevalue("fresh_postgresql_url")))
    s = Store.open(url, tmp_path)
    for night in range(3):
        s.create_run(RunInfo(run_id=f"2026110{night + 1}-0200-aaaa", scenario_name="nightly",
                             started=1000.0 + night * 86400))
    yield s
    s.close()


KEY = triage.SeriesKey("nightly", "0123456789abcdef", "total_iops",
                       triage.point_key({"bs": "4k", "rw": "randread"}))


def test_an_acknowledgement_keeps_who_when_and_why(store: Store) -> None:
    before = time.time()
    triage.add_ack(store, KEY, "20261102-0200-aaaa", "ana", "ESXi 8.0U3 patch, expected")
    other = triage.SeriesKey("nightly", "fedcba9876543210", "total_iops", KEY.point)
    triage.add_ack(store, other, "20261103-0200-aaaa", "bo", "other lab")
    (ack,) = triage.acks(store, "nightly", KEY.lab_fingerprint)
    assert (ack.series, ack.run_id, ack.who, ack.why) == (
        KEY, "20261102-0200-aaaa", "ana", "ESXi 8.0U3 patch, expected")
    assert before <= ack.at <= time.time()
    assert [a.who for a in triage.acks(store, "nightly")] == ["ana", "bo"]
    assert triage.acks(store, "other") == []
    assert KEY.point == '{"bs": "4k", "rw": "randread"}'


def test_an_acknowledgement_of_an_unknown_run_is_refused(store: Store) -> None:
    with pytest.raises(RunNotFound):
        triage.add_ack(store, KEY, "20991231-0000-none", "ana", "typo")
    assert triage.acks(store, "nightly") == []


def test_alerts_are_remembered_per_night(store: Store) -> None:
    triage.record_alerts(store, [(KEY, "20261102-0200-aaaa")], "20261103-0200-aaaa")
    triage.record_alerts(store, [], "20261103-0200-aaaa")  # nothing to write
    (alert,) = triage.alerts(store, "nightly", KEY.lab_fingerprint)
    assert (alert.series, alert.run_id, alert.alerted_run) == (
        KEY, "20261102-0200-aaaa", "20261103-0200-aaaa")


def test_lab_noise_is_kept_per_lab_and_the_newest_replaces(store: Store) -> None:
    runs = ("20261101-0200-aaaa", "20261102-0200-aaaa")
    first = triage.Noise(KEY.lab_fingerprint, "nightly", "total_iops", KEY.point, 0.04, 2,
                         runs, 1.0)
    triage.set_noise(store, [first])
    triage.set_noise(store, [first.__class__(**{**first.__dict__, "cv": 0.03,
                                                "measured_at": 2.0})])
    (found,) = triage.noise(store, KEY.lab_fingerprint, "nightly")
    assert (found.cv, found.runs, found.run_ids, found.measured_at) == (0.03, 2, runs, 2.0)
    assert triage.noise(store, "0000000000000000") == []
