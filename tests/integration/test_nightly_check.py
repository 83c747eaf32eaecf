"""The nightly check over a month of nights (bench/nightly_store.py: one injected
ESXi-like change at night 15, figures −30 %): change points per lab, an alert that fails
one night only, an acknowledgement that silences it, lab noise as the floor — on a real
SQLite store, and the triage tables on PostgreSQL too."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from bench.nightly_store import Nights, add_night
from vbench.analysis.history import load_history
from vbench.analysis.nightly import acknowledge, find_changes
from vbench.analysis.regression import RegressionResult
from vbench.engine.finish import remember_alerts
from vbench.report.build import check_regression_of, report_data_of, write_run_report
from vbench.report.exports import regression_json, to_junit, to_markdown
from vbench.results import triage
from vbench.results.store import Store
from vbench.results.stored import StoredRun

pytestmark = pytest.mark.integration


def _night(store: Store, n: Nights, night: int, rng: random.Random) -> RegressionResult:
    """Store a night and run its check as `vbench run --check-regression last:3` does."""
    rid = add_night(store, n, night, rng)
    data = report_data_of(StoredRun.load(store, rid))
    reg = check_regression_of(store, data.stored, data.analyzed().figures, "last:3")
    remember_alerts(store, data, reg)
    return reg


def _junit_failures(store: Store, run_id: str) -> int:
    data = report_data_of(StoredRun.load(store, run_id))
    reg = check_regression_of(store, data.stored, data.analyzed().figures, "last:3")
    xml = to_junit([dataclasses.replace(data, regression=reg)])
    return int(xml.split('failures="', 1)[1].split('"', 1)[0])


def _report(store: Store, run_id: str, path: Path) -> str:
    data = report_data_of(StoredRun.load(store, run_id))
    reg = check_regression_of(store, data.stored, data.analyzed().figures, "last:3")
    write_run_report(dataclasses.replace(data, regression=reg), path)
    return path.read_text()


def _markdown(store: Store, run_id: str) -> str:
    data = report_data_of(StoredRun.load(store, run_id))
    reg = check_regression_of(store, data.stored, data.analyzed().figures, "last:3")
    return to_markdown([dataclasses.replace(data, regression=reg)])


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/vbench.db"
    return str(request.getfixturevalue("fresh_postgresql_url"))


def test_a_regression_alerts_once_is_listed_after_and_never_again_once_acknowledged(
    url: str, tmp_path: Path
) -> None:
    n = Nights(nights=26, change_at=15)
    rng = random.Random(n.seed)
    with Store.open(url, tmp_path) as store:
        results = [_night(store, n, night, rng) for night in range(22)]
        assert [r.regressed for r in results].count(True) == 1
        assert results[15].regressed and "REGRESSION in 1 of 1" in results[15].verdict()
        # The change point shows once three nights after it confirm it; it was the
        # alert of night 15, so it is listed without failing.
        listed = [i for i, r in enumerate(results) if r.changes]
        assert listed and listed[0] <= 19 and listed[-1] == 21
        change = results[21].changes[0]
        assert change.run_id == n.run_id(15) and change.alerted_run == n.run_id(15)
        assert change.testbed[0].key == "testbed.hosts[esx01].esxi_build"
        # JUnit: the first night fails (also when re-rendered later), later nights do not.
        assert _junit_failures(store, n.run_id(15)) == 1
        assert _junit_failures(store, n.run_id(21)) == 0
        # The report lists the alert with its series chart (the change marked) and the
        # testbed diff; the JSON says it is not new.
        html = _report(store, n.run_id(21), tmp_path / "r21.html")
        assert 'id="change-points"' in html and change.change_id in html
        assert 'class="change"' in html and "8.0.3-24280767" in html
        assert regression_json(results[21])["changes"][0]["new"] is False
        md = _markdown(store, n.run_id(21))
        assert f"`{change.change_id}` (alerted before)" in md and "esxi_build" in md
        acknowledge(store, change.change_id, "ana", "ESXi 8.0U3 patch, expected")
        after = [_night(store, n, night, rng) for night in range(22, 26)]
        assert not any(r.regressed or r.changes for r in after)
        (found,) = find_changes(store, load_history(store, "nightly", [], limit=60))
        assert found.state == "acknowledged" and found.ack is not None
        assert (found.ack.who, found.ack.why) == ("ana", "ESXi 8.0U3 patch, expected")


def test_without_the_alert_store_every_night_would_fail(tmp_path: Path) -> None:
    """What the alert table changes: the same nights with alerts forgotten each night
    fail on every night the change is visible (the check that cannot fail otherwise)."""
    n = Nights(nights=20, change_at=12)
    rng = random.Random(n.seed)
    with Store.open(f"sqlite:///{tmp_path}/vbench.db", tmp_path) as store:
        failed = []
        for night in range(n.nights):
            rid = add_night(store, n, night, rng)
            data = report_data_of(StoredRun.load(store, rid))
            failed.append(check_regression_of(store, data.stored, data.analyzed().figures,
                                              "last:3").regressed)
        assert failed.count(True) >= 2


def test_series_never_span_two_labs(tmp_path: Path) -> None:
    fast = Nights(nights=16, change_at=None, seed=1)
    slow = Nights(nights=16, change_at=0, factor=0.7, seed=2,
                  lab={"name": "other", "local": {"addresses": ["127.0.0.3"]}})
    rng = random.Random(0)
    with Store.open(f"sqlite:///{tmp_path}/vbench.db", tmp_path) as store:
        for night in range(16):  # alternate labs: one series each, 30 % apart
            add_night(store, fast if night % 2 else slow, night, rng)
        hist = load_history(store, "nightly", [], limit=60)
        assert len({r.lab_fingerprint for r in hist.runs}) == 2
        assert find_changes(store, hist) == ()


def test_the_pairwise_check_pools_only_nights_of_its_own_lab(tmp_path: Path) -> None:
    """Two labs run the same scenario into one store, 30 % apart and each flat: every
    night of each lab is checked against its own lab's last three nights (the other
    lab's nights made each a 'regression' or an 'improvement' of ±30 %)."""
    fast = Nights(nights=12, change_at=None, seed=1)
    slow = Nights(nights=12, change_at=0, factor=0.7, seed=2,
                  lab={"name": "other", "local": {"addresses": ["127.0.0.3"]}})
    rng = random.Random(0)
    with Store.open(f"sqlite:///{tmp_path}/vbench.db", tmp_path) as store:
        for night in range(12):
            for n in (fast, slow):
                reg = _night(store, n, night, rng)
                assert reg.baseline is None or set(reg.baseline.run_ids) <= {
                    n.run_id(k) for k in range(night)}, (night, n.seed)
                assert not any(c.status in ("regression", "improved") and abs(c.change) > 0.2
                               for c in reg.checks), (night, n.seed, reg.verdict())


def test_an_acknowledged_change_does_not_explain_a_further_drop(tmp_path: Path) -> None:
    """A fixed baseline (vbench baseline set), a step acknowledged, then a second step
    down: the acknowledged change explained every pairwise regression against the old
    baseline, so the new one did not fail until its own change point was confirmed three
    nights later. It fails the night it happens, once."""
    first = Nights(change_at=10, factor=0.7)
    second = Nights(change_at=0, factor=0.5)  # the same runs, from night 18 on 50 %
    rng = random.Random(3)
    failed = []
    with Store.open(f"sqlite:///{tmp_path}/vbench.db", tmp_path) as store:
        for night in range(24):
            rid = add_night(store, first if night < 18 else second, night, rng)
            if night == 3:
                store.set_baseline(rid)
            if night == 15:
                acknowledge(store, f"{first.run_id(10)}:total_iops", "ana", "ESXi patch")
            data = report_data_of(StoredRun.load(store, rid))
            reg = check_regression_of(store, data.stored, data.analyzed().figures, "auto")
            remember_alerts(store, data, reg)
            failed.append(reg.regressed)
            if 15 <= night < 18:  # on the acknowledged level: known, not failing
                assert reg.checks[0].triage.startswith("change "), night
    assert [i for i, f in enumerate(failed) if f] == [10, 18]


def test_measured_lab_noise_is_the_floor_of_the_minimum_effect(tmp_path: Path) -> None:
    n = Nights(nights=24, change_at=12, factor=0.9)  # a 10 % step
    rng = random.Random(n.seed)
    with Store.open(f"sqlite:///{tmp_path}/vbench.db", tmp_path) as store:
        for night in range(n.nights):
            add_night(store, n, night, rng)
        hist = load_history(store, "nightly", [], limit=60)
        (found,) = find_changes(store, hist)
        assert found.noise is None and found.min_effect == 0.05
        fp = hist.runs[0].lab_fingerprint
        point = triage.point_key({"bs": "4k"})
        triage.set_noise(store, [triage.Noise(fp, "nightly", "total_iops", point, 0.12, 5,
                                              ("a",), 1.0)])
        assert find_changes(store, hist) == ()  # 10 % on a lab whose noise is 12 %
        data = report_data_of(StoredRun.load(store, n.run_id(12)))
        reg = check_regression_of(store, data.stored, data.analyzed().figures, "last:3")
        assert not reg.regressed and reg.checks[0].status == "ok"


def test_ack_refuses_what_names_no_change(tmp_path: Path) -> None:
    """`vbench ack` answers a bad id with one line and exit 2, storing nothing."""
    import subprocess

    from bench.nightly_store import build
    from tests.e2e.helpers import vbench

    n = Nights(nights=22, change_at=None, points=({"bs": "4k"}, {"bs": "64k"}))
    build(tmp_path, n)
    run = n.run_id(1)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:  # in process: the same CLI
        return vbench(*args, "--results", str(tmp_path),
                      env={"VBENCH_HOME": str(tmp_path), "VBENCH_STORE": ""})

    def ack(change: str) -> subprocess.CompletedProcess[str]:
        return cli("ack", change, "--why", "x")

    # --changes looks back over the nightly check's 120 runs unless told (history: 20).
    assert "22 runs in 1 lab" in cli("history", "nightly", "--changes").stdout
    assert "5 runs in 1 lab" in cli("history", "nightly", "--changes", "--limit", "5").stdout

    cases = {
        run: "is no change id",
        f"{run}:total_iops": f"has 2 points: name one, e.g. {run}:total_iops@bs=4k",
        f"{run}:total_iops@bs=1m": "has no point bs=1m",
        f"{run}:nope@bs=4k": "has no figure of metric 'nope'",
        "20990101:total_iops": "no run",
    }
    for change, said in cases.items():
        done = ack(change)
        assert done.returncode == 2 and said in done.stderr, (change, done.stderr)
        assert "Traceback" not in done.stderr
    ok = ack(f"{run[:8]}:total_iops@bs=64k")  # a unique prefix of the run id will do
    assert ok.returncode == 0, ok.stderr
    assert "no change point of this series lies within 2 runs" in ok.stderr  # flat nights
    with Store.open(None, tmp_path) as store:
        (kept,) = triage.acks(store, "nightly")
        assert kept.run_id == run and kept.series.point == '{"bs": "64k"}'
