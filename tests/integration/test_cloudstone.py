"""cloudstone end to end on the loopback guests: the real nginx, PHP-FPM and MariaDB
serving the Olio-shaped app, driven by the real Locust (installed in the client guest
from a wheelhouse built from PyPI on this controller)."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import LocalGuests, missing_peer
from tests.e2e.helpers import logged, wait_for
from vbench.analysis.run_analysis import load_analysis
from vbench.engine.session import RunRequest, RunSession, execute
from vbench.errors import GuestError
from vbench.guest.ssh import Guest
from vbench.results.rundir import RunDir
from vbench.results.store import Store
from vbench.workloads.base import TrialContext
from vbench.workloads.cloudstone import Cloudstone
from vbench.workloads.cloudstone.loadgen import ensure_locust
from vbench.workloads.cloudstone.params import OLIO_MATRIX, CloudstoneParams, stationary_mix

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / ".tools" / "wheelhouse"
TOOLS = ("nginx", "php-fpm8.2", "mariadbd", "mariadb-install-db", "mariadb", "curl")
SERVER_NAMES = ("mariadbd", "php-fpm", "nginx: ", "locust")


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None and not Path(f"/usr/sbin/{t}").exists()]
    if missing:
        missing_peer(f"not installed: {', '.join(missing)} (make test installs them)")


@pytest.fixture(autouse=True)
def _wheelhouse(monkeypatch: pytest.MonkeyPatch) -> None:
    # One wheelhouse for every test (each test has its own VBENCH_HOME): `make wheelhouse`
    # fills it, else the driver builds it from PyPI on first use.
    monkeypatch.setenv("VBENCH_WHEELHOUSE", str(WHEELHOUSE))


def free_base(guests: LocalGuests) -> int:
    """A port base whose 2 instances' ports (base..base+16) are free on both guests."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 60000, 20)
        if all(_bindable(g.address, base + d) for g in guests for d in range(20)):
            return base
    raise RuntimeError("no free port range")


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def write_lab(path: Path, guests: LocalGuests) -> Path:
    sshd = guests.sshd
    lab = {
        "version": 1, "name": "cloudstone-it",
        "defaults": {"port": sshd.port, "key_file": str(sshd.key_file),
                     "known_hosts": str(sshd.known_hosts), "workdir": str(sshd.workdir)},
        "nodes": {g.name: {"address": g.address, "roles": ["web"]} for g in guests},
    }  # fmt: skip
    path.write_text(yaml.safe_dump(lab, sort_keys=False))
    return path


def scenario(path: Path, params: dict[str, Any], *, steady: str = "12s", warmup: str = "3s",
             cooldown: str = "1s", qos: list[dict[str, Any]] | None = None) -> Path:  # fmt: skip
    doc = {
        "version": 1, "name": "cloudstone-it",
        "topology": {"servers": {"nodes": ["guest1"]}, "clients": {"nodes": ["guest2"]}},
        "workload": {"driver": "cloudstone", "params": params},
        "repeat": 1,
        "phases": {"warmup": warmup, "steady": steady, "cooldown": cooldown},
        "qos": qos or [],
    }  # fmt: skip
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class Done:
    def __init__(self, outcome: Any, rundir: RunDir, store: Store) -> None:
        self.outcome, self.rundir, self.store = outcome, rundir, store
        self.samples = store.samples_frame(outcome.run_id)
        self.trials = store.trials(outcome.run_id)
        self.log = [json.loads(ln) for ln in (rundir.path / "log.jsonl").read_text().splitlines()]

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.log if e["event"] == name]

    def value(self, metric: str, *, guest: str | None = None, **labels: str) -> float | None:
        df = self.samples
        rows = df[(df.metric == metric) & (df.guest.isna() if guest is None else df.guest == guest)]
        for r in rows.itertuples():
            got = _labels(r.labels)
            if got == labels:
                return r.value
        raise KeyError((metric, guest, labels))


def _labels(raw: Any) -> dict[str, str]:
    if not raw or raw in ("{}", "[]"):
        return {}
    data = json.loads(raw) if isinstance(raw, str) else raw
    return dict(data) if isinstance(data, dict) else {k: v for k, v in data}


def run(tmp: Path, scenario_file: Path, lab: Path, cancel: threading.Event | None = None) -> Done:
    session = RunSession.load(RunRequest(scenario_file, lab, ()))
    store = Store.open(None, tmp / "results")
    outcome, rundir = execute(session, store, tmp / "results", cancel=cancel)
    return Done(outcome, rundir, store)


def left_running(workdir: Path) -> list[str]:
    """Processes on this machine whose command line names the guests' workdir."""
    out = subprocess.run(["ps", "-e", "-ww", "-o", "pid=,stat=,args="], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    return [ln for ln in out.splitlines()
            if str(workdir) in ln and not ln.split()[1].startswith("Z")]  # fmt: skip


BASE = {"users": 12, "think": {"kind": "negexp", "mean": 0.1}, "sub_window": 3,
        "php_children": 4, "mix_tolerance": 5}  # fmt: skip


@pytest.fixture(scope="module")
def locust(local_guests: LocalGuests, tmp_path_factory: pytest.TempPathFactory) -> str:
    """One Locust for the module's runs, as a lab's own (``locust_command``): installing
    the private venv costs each run ~15 s. The ``two`` run still installs its own, so the
    default path (wheelhouse pushed, venv made, removed with the run) stays tested."""
    base = str(tmp_path_factory.mktemp("locust"))
    params = CloudstoneParams.model_validate({**BASE, "wheelhouse": str(WHEELHOUSE)})
    with Guest(dataclasses.replace(local_guests[1], workdir=base)) as client:
        return ensure_locust(client, params, base)


@pytest.fixture(scope="module")
def two(local_guests: LocalGuests, tmp_path_factory: pytest.TempPathFactory) -> Done:
    """A short Olio run with 2 instances (both servers on guest1, clients on guest2)."""
    tmp = tmp_path_factory.mktemp("cloudstone-two")
    lab = write_lab(tmp / "lab.yaml", local_guests)
    params = {**BASE, "instances": 2, "port": free_base(local_guests)}
    qos = [{"metric": "rt_avg", "where": {"operation": ["HomePage", "TagSearch"]},
            "op": "<=", "threshold": 250, "unit": "ms"}]  # fmt: skip
    done = run(tmp, scenario(tmp / "s.yaml", params, qos=qos), lab)
    done.workdir = local_guests.sshd.workdir  # type: ignore[attr-defined]
    return done


def test_two_instances_produce_every_figure(two: Done) -> None:
    assert two.outcome.status == "ok", [t.error for t in two.trials]
    ops = list(OLIO_MATRIX)
    for metric in ("ops_per_sec", "rt_avg", "rt_p90", "rt_p95", "rt_p99", "rt_max", "errors",
                   "ops_per_sec_subwindow_sd", "rt_avg_subwindow_sd"):  # fmt: skip
        assert two.value(metric) is not None, metric  # overall, across instances
        for op in ("HomePage", "TagSearch", "EventDetail"):
            assert two.value(metric, operation=op) is not None, (metric, op)
    for op in ops:
        assert two.value("mix_required", operation=op) == pytest.approx(
            100 * stationary_mix(OLIO_MATRIX)[op])
    # Across instances throughput is summed; each instance keeps its own figures.
    per = [two.value("ops_per_sec", guest="guest1", instance=str(k), operation="all")
           for k in (1, 2)]  # fmt: skip
    assert all(v and v > 0 for v in per)
    assert two.value("ops_per_sec") == pytest.approx(sum(per))
    avg = [two.value("rt_avg", guest="guest1", instance=str(k), operation="all") for k in (1, 2)]
    assert two.value("rt_avg") == pytest.approx(sum(avg) / 2)
    assert two.value("errors") == 0
    assert two.value("instances") == 2
    for k in (1, 2):
        assert two.value("sut_load_seconds", guest="guest1", instance=str(k)) > 0
        assert two.value("sut_deploy_seconds", guest="guest1", instance=str(k)) > 0
    assert two.value("client_saturated") == 0
    # The QoS criteria see the per-operation figures across instances.
    checks = load_analysis(two.store, two.outcome.run_id).qos.checks
    assert {c.subject["operation"] for c in checks} == {"HomePage", "TagSearch"}
    assert all(c.value == pytest.approx(two.value("rt_avg", **c.subject)) for c in checks)


def test_achieved_mix_follows_the_matrix(two: Done) -> None:
    # Documented tolerance: |achieved − required| ≤ 5 points here (widened to 3 binomial
    # standard errors when there are too few operations to judge).
    for op in OLIO_MATRIX:
        assert two.value("mix_outside_tolerance", operation=op) == 0, op
    home = two.value("mix", operation="HomePage")
    assert home is not None and abs(home - 26.15) < 8


def test_the_answer_is_fabans_validity_read_from_the_run(two: Done) -> None:
    """The driver's answer over the real run's stored figures: the mix verdict, the
    per-operation QoS and the load generator's, as the figures above have them."""
    from vbench.engine.verdict import verdict_of, with_verdict
    from vbench.report.build import report_data

    answer = verdict_of(with_verdict(report_data(two.store, two.outcome.run_id))).answer
    assert answer is not None and answer.kind == "cloudstone"
    checks = load_analysis(two.store, two.outcome.run_id).qos.checks
    passed = sum(c.passed for c in checks)
    qos = f"QoS {'pass' if passed == len(checks) else 'FAIL'} {passed}/{len(checks)}"
    assert f"mix valid: {len(OLIO_MATRIX)} operations within ±5 pp · {qos}" in answer.text
    assert "load generator kept up" in answer.text
    assert answer.ok is (passed == len(checks))
    assert [c.metric for c in answer.charts] == ["mix", "rt_avg"]


def test_writes_really_write_and_nothing_is_left(two: Done) -> None:
    assert two.value("operations", operation="AddPerson") is not None
    assert left_running(two.workdir) == []  # type: ignore[attr-defined]
    raw = list((two.rundir.path / "raw").rglob("records.*"))
    assert raw, "the Locust records are kept in the run directory"


def test_failing_limit_fails_the_point(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, **BASE, "users": 4, "port": free_base(local_guests)}
    qos = [{"metric": "rt_avg", "where": {"operation": "HomePage"}, "op": "<=",
            "threshold": 0.001, "unit": "ms"}]  # fmt: skip
    done = run(tmp_path, scenario(tmp_path / "s.yaml", params, steady="4s", warmup="1s",
                                  qos=qos), lab)  # fmt: skip
    assert [t.status for t in done.trials] == ["ok"], [t.error for t in done.trials]
    qos = load_analysis(done.store, done.outcome.run_id).qos
    assert not qos.passed
    (check,) = qos.checks
    assert check.status == "fail" and check.subject == {"operation": "HomePage"}
    assert check.value is not None and check.value > 0.001


Started = tuple[threading.Thread, dict[str, Done]]


def _run_in_thread(tmp: Path, path: Path, lab: Path,
                   cancel: threading.Event | None = None) -> Started:  # fmt: skip
    result: dict[str, Done] = {}
    worker = threading.Thread(target=lambda: result.setdefault(
        "done", run(tmp, path, lab, cancel=cancel)))  # fmt: skip
    worker.start()
    return worker, result


def _kill_php_fpm(workdir: Path, trial_dir: str) -> int:
    """SIGKILL the PHP-FPM master of one trial's instance (found by its config path)."""
    for line in left_running(workdir):
        pid, _stat, args = line.split(None, 2)
        if args.startswith("php-fpm: master") and f"/{trial_dir}/" in args:
            subprocess.run(["kill", "-9", pid], check=True)
            return int(pid)
    raise AssertionError(f"no PHP-FPM master of {trial_dir} in {left_running(workdir)}")


def test_killed_php_fpm_fails_that_trial_and_the_run_completes(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, **BASE, "users": 4, "port": free_base(local_guests)}
    path = scenario(tmp_path / "s.yaml", params, steady="6s", warmup="1s")
    doc = yaml.safe_load(path.read_text())
    doc["repeat"] = 2
    path.write_text(yaml.safe_dump(doc))
    worker, result = _run_in_thread(tmp_path, path, lab)
    home = tmp_path  # the run directories are under tmp_path/results
    wait_for(logged(home, "phase_mark", mark="steady_start", trial=1), 180, "trial 1 steady")
    _kill_php_fpm(local_guests.sshd.workdir, "cs0-1")
    worker.join(timeout=300)
    assert not worker.is_alive()
    done = result["done"]
    assert [t.status for t in done.trials] == ["failed", "ok"]
    error = done.trials[0].error or ""
    assert "guest1" in error and "instance 1: php-fpm exited during the trial" in error, error
    # What the failed trial measured before the failure is kept.
    assert any(r.trial == 1 and r.metric == "operations" for r in done.samples.itertuples())
    assert left_running(local_guests.sshd.workdir) == []


def test_interrupt_mid_trial_leaves_nothing_running(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, **BASE, "users": 4, "port": free_base(local_guests)}
    path = scenario(tmp_path / "s.yaml", params, steady="120s", warmup="1s")
    cancel = threading.Event()
    worker, result = _run_in_thread(tmp_path, path, lab, cancel)
    home = tmp_path  # the run directories are under tmp_path/results
    steady = logged(home, "phase_mark", mark="steady_start")

    def steady_or_ended() -> bool:
        if steady():
            return True
        if not worker.is_alive():  # the trial failed before steady state: say why
            done = result.get("done")
            why = [t.error for t in done.trials] if done else "no result"
            raise AssertionError(f"the run ended before its steady phase: {why}")
        return False

    wait_for(steady_or_ended, 180, "the steady phase")
    assert any("mariadbd" in ln for ln in left_running(local_guests.sshd.workdir))
    cancel.set()
    worker.join(timeout=120)
    assert not worker.is_alive()
    done = result["done"]
    assert done.outcome.status == "interrupted"
    assert left_running(local_guests.sshd.workdir) == []


def test_saturated_client_fails_the_trial_when_asked(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    # A CPU limit no Locust process can stay under: the real CPU figures trip it.
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, **BASE, "users": 4, "port": free_base(local_guests),
              "cpu_limit": 0.0001, "saturation": "fail"}  # fmt: skip
    done = run(tmp_path, scenario(tmp_path / "s.yaml", params, steady="4s", warmup="1s"), lab)
    (trial,) = done.trials
    assert trial.status == "failed"
    assert "load generator saturated: instance 1: Locust CPU" in (trial.error or "")
    assert done.value("client_saturated") == 1
    assert done.value("client_cpu") > 0.0001


def test_fixed_rate_profile_serves_the_asked_rate_of_static_pages(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, "profile": "rate", "rate": 25,
              "port": free_base(local_guests), "php_children": 2, "users": 1}  # fmt: skip
    done = run(tmp_path, scenario(tmp_path / "s.yaml", params, steady="6s", warmup="2s"), lab)
    assert done.outcome.status == "ok", [t.error for t in done.trials]
    rate = done.value("ops_per_sec", operation="StaticPage")
    assert rate is not None and 0.9 * 25 <= rate <= 1.2 * 25
    # p95 per server (instance) and overall; each request is the ~100 KB page.
    assert done.value("rt_p95", guest="guest1", instance="1", operation="StaticPage") > 0
    assert done.value("rt_p95") > 0
    assert done.value("client_saturated") == 0
    raw = next((done.rundir.path / "raw").rglob("records.*")).read_text()
    sizes = {int(ln.split()[5]) for ln in raw.splitlines() if ln.startswith("R ")}
    assert sizes and all(100_000 < s < 110_000 for s in sizes)


def test_distributed_mode_master_and_workers_share_the_users(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, **BASE, "users": 6, "clients_per_instance": 2,
              "port": free_base(local_guests)}  # fmt: skip
    done = run(tmp_path, scenario(tmp_path / "s.yaml", params, steady="6s", warmup="2s"), lab)
    assert done.outcome.status == "ok", [t.error for t in done.trials]
    logs = sorted(p.name for p in (done.rundir.path / "raw").rglob("locust-*.log"))
    assert logs == ["locust-master.log", "locust-worker0.log", "locust-worker1.log"]
    files = list((done.rundir.path / "raw").rglob("records.*"))
    with_ops = [f for f in files if "\nR " in f.read_text()]
    assert len(files) == 3 and len(with_ops) == 2  # the master runs no users itself
    assert done.value("client_users_min", guest="guest1", instance="1") == 6
    assert done.value("ops_per_sec") > 0 and done.value("client_saturated") == 0


def test_an_instance_failing_to_deploy_leaves_no_server_of_any_instance(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    """Instance 2's nginx port is taken: prepare fails naming it, and teardown (the
    guest connections still open, so nothing is killed by closing them) leaves neither
    instance 1's servers nor the servers instance 2 had already started."""
    base = free_base(local_guests)
    params = CloudstoneParams.model_validate({**BASE, "users": 4, "instances": 2, "port": base})
    server_spec, client_spec = local_guests
    with Guest(server_spec) as server, Guest(client_spec) as client, socket.socket() as held:
        held.bind((server_spec.address, base + 10))  # instance 2's nginx port
        held.listen()
        ctx = TrialContext(
            run_id="cs-deploy-fail", point=0, trial=1, labels={}, warmup=1.0, steady=1.0,
            cooldown=0.0, guests={"servers": [server], "clients": [client]},
            raw_dir=tmp_path / "raw", cancel=threading.Event(), mark=lambda _m: None,
            log=lambda *_a, **_k: None,
        )  # fmt: skip
        wl = Cloudstone(params)
        with pytest.raises(GuestError) as err:
            wl.prepare(ctx)
        assert "guest1" in str(err.value)
        assert "instance 2: nginx exited while starting" in str(err.value), str(err.value)
        wl.teardown(ctx)
        assert server.connected  # what follows is teardown's doing, not the link closing
        assert left_running(local_guests.sshd.workdir) == []


def test_records_lost_for_one_instance_fail_the_trial_and_keep_the_others_figures(
    local_guests: LocalGuests, tmp_path: Path, locust: str
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"locust_command": locust, **BASE, "users": 4, "instances": 2,
              "port": free_base(local_guests)}  # fmt: skip
    path = scenario(tmp_path / "s.yaml", params, steady="5s", warmup="1s")
    worker, result = _run_in_thread(tmp_path, path, lab)
    wait_for(logged(tmp_path, "phase_mark", mark="steady_start", trial=1), 180, "steady")
    # Instance 2's records directory vanishes from the client guest (Locust keeps writing
    # to its open, now unlinked, file): vbench cannot fetch them at collect.
    (gone,) = local_guests.sshd.workdir.glob("*/cs0-1/load2")
    shutil.rmtree(gone)
    worker.join(timeout=300)
    assert not worker.is_alive()
    done = result["done"]
    (trial,) = done.trials
    assert trial.status == "failed"
    assert "guest2" in (trial.error or "") and "load2" in (trial.error or ""), trial.error
    assert done.value("operations", guest="guest1", instance="1", operation="all") > 0
    with pytest.raises(KeyError):
        done.value("operations", guest="guest1", instance="2", operation="all")
    assert done.value("instances") == 1  # the aggregate says how many instances it holds
    assert left_running(local_guests.sshd.workdir) == []
