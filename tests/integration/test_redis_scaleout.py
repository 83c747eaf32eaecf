"""redis_scaleout end to end on the loopback guests with the real redis-server,
nutcracker, HAProxy and redis-benchmark from Debian's packages."""

from __future__ import annotations

import csv
import json
import random
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import LocalGuests, missing_peer
from tests.e2e.helpers import logged, wait_for
from vbench.engine.session import RunRequest, RunSession, execute
from vbench.results.rundir import RunDir
from vbench.results.store import Store

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("redis-server", "redis-benchmark", "redis-cli", "nutcracker", "haproxy")


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None and not Path(f"/usr/sbin/{t}").exists()]
    if missing:
        missing_peer(f"not installed: {', '.join(missing)} (make test installs them)")


def free_ports(guests: LocalGuests) -> dict[str, Any]:
    """Port parameters free on both guests (other test runs may share this machine)."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 60000, 10)
        wanted = [*range(base, base + 5), *range(base + 5, base + 8), base + 105, base + 106,
                  base + 107, base + 9]
        if all(_bindable(g.address, p) for g in guests for p in wanted):
            return {"server_ports": f"{base}-{base + 4}",
                    "twemproxy_ports": f"{base + 5}-{base + 7}", "haproxy_port": base + 9}
    raise RuntimeError("no free port range")


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


def port_sets(ports: dict[str, Any]) -> tuple[str, ...]:
    return tuple(f"workload.params.{k}={v}" for k, v in ports.items())


def write_lab(path: Path, guests: LocalGuests) -> Path:
    sshd = guests.sshd
    lab = {
        "version": 1,
        "name": "redis-it",
        "defaults": {
            "port": sshd.port,
            "key_file": str(sshd.key_file),
            "known_hosts": str(sshd.known_hosts),
            "workdir": str(sshd.workdir),
        },
        "nodes": {g.name: {"address": g.address, "roles": ["storage"]} for g in guests},
    }
    path.write_text(yaml.safe_dump(lab, sort_keys=False))
    return path


def scenario(path: Path, params: dict[str, Any], *, factors: dict[str, Any] | None = None,
             steady: str = "2s", warmup: str = "0s", repeat: int = 1) -> Path:
    doc = {
        "version": 1,
        "name": "redis-it",
        "topology": {
            "servers": {"nodes": ["guest1"]},
            "proxies": {"nodes": ["guest2"]},
            "clients": {"nodes": ["guest2"]},
        },
        "workload": {"driver": "redis_scaleout", "params": params},
        "factors": factors or {},
        "repeat": repeat,
        "phases": {"warmup": warmup, "steady": steady},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class Done:
    """A finished run: outcome, run directory, samples and the JSON-lines log."""

    def __init__(self, outcome: Any, rundir: RunDir, store: Store) -> None:
        self.outcome, self.rundir = outcome, rundir
        self.ports: dict[str, Any] = {}
        self.samples = store.samples_frame(outcome.run_id)
        self.trials = store.trials(outcome.run_id)
        self.store = store
        self.log = [json.loads(ln) for ln in (rundir.path / "log.jsonl").read_text().splitlines()]

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.log if e["event"] == name]

    def aggregate(self, metric: str) -> dict[tuple[int, int], float]:
        df = self.samples
        rows = df[(df.metric == metric) & df.guest.isna()]
        rows = rows[rows.labels.map(lambda v: not v or v in ("{}", "[]"))]
        return {(int(r.point), int(r.trial)): r.value for r in rows.itertuples()}


def run(tmp: Path, scenario_file: Path, lab: Path, cancel: threading.Event | None = None,
        sets: tuple[str, ...] = ()) -> Done:
    session = RunSession.load(RunRequest(scenario_file, lab, sets))
    store = Store.open(None, tmp / "results")
    outcome, rundir = execute(session, store, tmp / "results", cancel=cancel)
    return Done(outcome, rundir, store)


def live_groups(pgids: set[int]) -> list[str]:
    """Live (non-zombie) processes on this machine whose group is one of ``pgids``."""
    out = subprocess.run(["ps", "-e", "-o", "pgid=,stat=,args="], capture_output=True,
                         text=True).stdout
    left = []
    for line in out.splitlines():
        pgid, stat, _args = line.split(None, 2)
        if int(pgid) in pgids and not stat.startswith("Z"):
            left.append(line)
    return left


def started_groups(done: Done) -> set[int]:
    pgids = {e["pid"] for e in done.events("redis_started")}
    for e in done.events("redis_clients"):
        pgids.update(e["pids"].values())
    return pgids


def raw_rows(path: Path) -> list[float]:
    """rps of every CSV row of a raw client output, read without vbench's parser."""
    lines = [ln for ln in path.read_text().splitlines() if ln.startswith('"')]
    rows = list(csv.reader(lines))
    return [float(r[1]) for r in rows if r[0] != "test" and len(r) == 8]


# ----------------------------------------------------------------------------- the example


@pytest.fixture(scope="module")
def example(local_guests: LocalGuests, tmp_path_factory: pytest.TempPathFactory) -> Done:
    """examples/redis-local.yaml as shipped: 2 layouts × 3 trials."""
    tmp = tmp_path_factory.mktemp("redis-example")
    lab = write_lab(tmp / "lab.yaml", local_guests)
    ports = free_ports(local_guests)
    done = run(tmp, ROOT / "examples" / "redis-local.yaml", lab, sets=port_sets(ports))
    done.ports = ports
    return done


def test_example_runs_baseline_and_scale_out(example: Done) -> None:
    assert example.outcome.status == "ok", [t.error for t in example.trials]
    assert [(t.point, t.status) for t in example.trials] == [
        (0, "ok"), (0, "ok"), (0, "ok"), (1, "ok"), (1, "ok"), (1, "ok"),
    ]  # fmt: skip
    ops = example.aggregate("ops_per_sec")
    assert len(ops) == 6 and all(v > 0 for v in ops.values())
    layouts = [e["entry"] for e in example.events("redis_layout")]
    first = int(example.ports["server_ports"].split("-")[0])
    hap = example.ports["haproxy_port"]
    assert layouts[0] == [f"127.0.0.2:{first}"] and layouts[-1] == [f"127.0.0.3:{hap}"]


def test_example_stores_redis_benchmark_figures_per_process(example: Done) -> None:
    # Duration mode: a process's figure is its iterations' total requests / total time.
    ops = example.aggregate("ops_per_sec")
    for (point, trial), stored in ops.items():
        files = sorted((example.rundir.path / "raw" / f"{point}-{trial}").glob("*/c*.csv"))
        assert files, "raw client outputs are kept"
        expected = 0.0
        for f in files:
            rps = raw_rows(f)
            assert rps, f"{f} has no finished iteration"
            expected += len(rps) / sum(1 / r for r in rps)
        assert stored == pytest.approx(expected, rel=1e-9)


def test_example_window_is_redis_benchmarks_own_time(example: Done) -> None:
    """The trial's window is the longest client's own time over its finished iterations
    (requests ÷ rps each, as redis-benchmark timed them), not the controller's marks."""
    loop = yaml.safe_load((ROOT / "examples" / "redis-local.yaml").read_text())
    requests = loop["workload"]["params"]["loop_requests"]
    for t in example.trials:
        files = sorted((example.rundir.path / "raw" / f"{t.point}-{t.trial}").glob("*/c*.csv"))
        own = max(sum(requests / r for r in raw_rows(f)) for f in files)
        ph = t.phases
        assert ph["workload_end"] - ph["workload_start"] == pytest.approx(own, abs=1e-6)
        # It starts when the clients were started (just before the steady_start mark).
        assert ph["workload_start"] <= ph["steady_start"]
        rows = example.samples[(example.samples.point == t.point)
                               & (example.samples.trial == t.trial)]
        assert (rows.window_end - rows.window_start - own).abs().max() < 1e-6


def test_example_keys_land_on_both_servers_through_the_proxies(example: Done) -> None:
    df = example.samples
    sizes = df[(df.metric == "dbsize") & (df.point == 1)]
    assert len(sizes) == 6  # 2 servers × 3 trials
    assert (sizes.value > 0).all() and set(sizes.guest) == {"guest1"}
    assert all(v == 10000 for v in example.aggregate("keys_total").values())  # preloaded


def test_example_report_and_speedup_inputs(example: Done) -> None:
    from vbench.report.build import render_run_report

    out = render_run_report(example.store, example.outcome.run_id,
                            example.rundir.path / "again.html")
    html = Path(out).read_text()
    assert "ops_per_sec" in html and "scale-out" in html
    ops = example.aggregate("ops_per_sec")
    # The speedup is derived from these: one aggregate per trial and point.
    assert {p for p, _ in ops} == {0, 1} and all(n == 3 for n in
                                                 [sum(1 for p, _ in ops if p == q) for q in (0, 1)])


def test_example_leaves_no_process_behind(example: Done) -> None:
    groups = started_groups(example)
    assert len(groups) > 10
    assert live_groups(groups) == []


# ----------------------------------------------------------------------------- requests mode


@pytest.fixture(scope="module")
def through_proxies(local_guests: LocalGuests, tmp_path_factory: pytest.TempPathFactory) -> Done:
    """No preload: every key on a server was written by a client through HAProxy and
    twemproxy; fixed request counts, so each process reports one rps line."""
    tmp = tmp_path_factory.mktemp("redis-proxies")
    lab = write_lab(tmp / "lab.yaml", local_guests)
    ports = free_ports(local_guests)
    params = {"servers": 3, "clients": 4, "mix": {"get": 50, "set": 50}, "connections": 4,
              "pipeline": 4, "requests": 4000, "keyspace": 3000, "preload": False, **ports}
    done = run(tmp, scenario(tmp / "s.yaml", params), lab)
    done.ports = ports
    return done


def test_keys_land_on_every_server_through_both_proxy_tiers(through_proxies: Done) -> None:
    assert through_proxies.outcome.status == "ok", [t.error for t in through_proxies.trials]
    (layout,) = through_proxies.events("redis_layout")
    ports = through_proxies.ports
    assert layout["entry"] == [f"127.0.0.3:{ports['haproxy_port']}"]  # clients only know HAProxy
    assert layout["twemproxy"] == [f"127.0.0.3:{ports['twemproxy_ports'].split('-')[0]}"]
    df = through_proxies.samples
    sizes = dict(zip(df[df.metric == "dbsize"].labels, df[df.metric == "dbsize"].value,
                     strict=True))
    assert len(sizes) == 3 and all(v > 100 for v in sizes.values()), sizes


def test_stored_ops_equal_redis_benchmark_totals(through_proxies: Done) -> None:
    files = sorted((through_proxies.rundir.path / "raw" / "0-1" / "guest2").glob("c*.csv"))
    assert [f.name for f in files] == ["c01-get.csv", "c02-set.csv", "c03-get.csv",
                                       "c04-set.csv"]
    per_file = [raw_rows(f) for f in files]
    assert all(len(r) == 1 for r in per_file)
    total = sum(r[0] for r in per_file)
    assert through_proxies.aggregate("ops_per_sec") == {(0, 1): pytest.approx(total, abs=1e-6)}
    gets = sum(r[0] for f, r in zip(files, per_file, strict=True) if "get" in f.name)
    assert through_proxies.aggregate("get_ops_per_sec")[(0, 1)] == pytest.approx(gets)


# ----------------------------------------------------------------------------- pinned


def test_pinned_servers_run_on_the_cpu_list(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"servers": 2, "clients": 1, "twemproxy": False, "haproxy": False,
              "requests": 2000, "keyspace": 100, "connections": 4,
              "pin": {"cpus": "0-1", "spread": True, "irqs": True, "nic": "lo"},
              **free_ports(local_guests)}
    done = run(tmp_path, scenario(tmp_path / "s.yaml", params), lab)
    assert done.outcome.status == "ok", [t.error for t in done.trials]
    pinned = done.events("redis_pinned")
    affinity = [v for e in pinned for k, v in e["affinity"].items() if "redis-server" in k]
    assert affinity == ["0", "1"]  # spread: one CPU per instance
    (irqbalance,) = done.events("redis_pin_irqbalance")
    if shutil.which("irqbalance") is None:
        assert irqbalance["action"] == "skipped" and "not installed" in irqbalance["reason"]
    (irqs,) = done.events("redis_pin_irqs")
    assert irqs["action"] == "skipped" and "no interrupts found for lo" in irqs["reason"]
    (restored,) = done.events("redis_pin_restored")
    assert restored["errors"] == []


# ----------------------------------------------------------------------------- failures


@pytest.fixture
def busy_port(local_guests: LocalGuests) -> Iterator[int]:
    with socket.socket() as s:
        s.bind((local_guests[0].address, 0))
        s.listen()
        yield s.getsockname()[1]


def test_start_failures_name_the_guest_and_show_the_log(
    local_guests: LocalGuests, tmp_path: Path, busy_port: int
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    ports = free_ports(local_guests)
    base = {"servers": 1, "clients": 1, "twemproxy": False, "haproxy": False,
            "requests": 1000, "keyspace": 10, **ports}
    factors = {"case": {"levels": [
        {"label": "busy", "set": {"workload.params.server_ports": str(busy_port),
                                  "workload.params.pin": {"cpus": "0"}}},
        {"label": "badconf", "set": {"workload.params.redis_conf": {"maxmemory-policy": "x"}}},
        {"label": "docker", "set": {"workload.params.deployment": "docker"}},
    ]}}
    done = run(tmp_path, scenario(tmp_path / "s.yaml", base, factors=factors), lab)
    errors = {t.point: t.error or "" for t in done.trials}
    assert all(t.status == "failed" for t in done.trials)
    assert "guest1" in errors[0] and f"127.0.0.2:{busy_port}" in errors[0]
    assert "already listening" in errors[0]
    assert done.events("redis_pin_restored"), "pinning restored after the failed trial"
    first = ports["server_ports"].split("-")[0]
    assert f"redis-server on 127.0.0.2:{first} did not start" in errors[1]
    assert "guest1" in errors[1]
    assert "maxmemory-policy" in errors[1]  # a line of redis-server's own log
    assert "no Docker engine answers in guest guest1" in errors[2]
    assert live_groups(started_groups(done)) == []


def test_interrupt_mid_trial_leaves_no_process_behind(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    params = {"servers": 2, "clients": 2, "connections": 4, "keyspace": 1000,
              "loop_requests": 2000, **free_ports(local_guests)}
    path = scenario(tmp_path / "s.yaml", params, steady="60s", warmup="1s", repeat=2)
    cancel = threading.Event()
    result: dict[str, Done] = {}
    worker = threading.Thread(target=lambda: result.setdefault(
        "done", run(tmp_path, path, lab, cancel=cancel)))
    worker.start()
    # Interrupt once the steady phase has begun (the run log says so), not after a guess.
    wait_for(logged(tmp_path, "phase_mark", mark="steady_start"), 120, "the steady phase")
    cancel.set()
    worker.join(timeout=60)
    assert not worker.is_alive()
    done = result["done"]
    assert done.outcome.status == "interrupted"
    assert [t.status for t in done.trials] == ["interrupted"]
    groups = started_groups(done)
    kinds = {e["what"] for e in done.events("redis_started")}
    assert kinds == {"redis-server", "nutcracker", "haproxy"} and len(groups) >= 6
    assert live_groups(groups) == []


def test_a_client_that_measured_nothing_keeps_every_raw_output(
    local_guests: LocalGuests, tmp_path: Path
) -> None:
    # No iteration of 10^9 requests ends in a 1 s steady phase: the first client's CSV
    # fails the collect. It stopped there, so the other client's CSV and the server's
    # log, what a reviewer reads to see why, were not fetched.
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    base = {"servers": 1, "clients": 1, "twemproxy": False, "haproxy": False,
            "keyspace": 10, "loop_requests": 10**9, **free_ports(local_guests)}
    done = run(tmp_path, scenario(tmp_path / "s.yaml", base, steady="1s"), lab)
    (trial,) = done.trials
    assert trial.status == "failed" and "no iteration" in (trial.error or ""), trial.error
    raw = done.rundir.path / "raw" / "0-1"
    names = {p.name for p in raw.rglob("*") if p.is_file()}
    assert {"c01-get.csv", "c01-set.csv"} <= names, names
    assert [n for n in names if n.startswith("redis-") and n.endswith(".log")], names
