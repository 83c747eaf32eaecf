"""iperf3 driver end to end: the real iperf3 from Debian between the loopback guests,
through the run session (plan → run → store), message size as a factor."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import LocalGuests, missing_peer
from tests.e2e.helpers import logged, wait_for
from tests.integration.test_redis_scaleout import Done, _bindable, live_groups, run
from tests.integration.test_redis_scaleout import write_lab as redis_lab

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    if shutil.which("iperf3") is None:
        missing_peer("iperf3 is not installed (make test installs it)")


def free_base(guests: LocalGuests, count: int) -> int:
    import random

    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 60000, 10)
        if all(_bindable(g.address, p) for g in guests for p in range(base, base + count)):
            return base
    raise RuntimeError("no free port range")


def scenario(path: Path, params: dict[str, Any], factors: dict[str, Any], *,
             steady: str = "2s", warmup: str = "1s", extra: dict[str, Any] | None = None) -> Path:
    doc = {
        "version": 1,
        "name": "iperf3-it",
        "topology": {"servers": {"nodes": ["guest1"]}, "clients": {"nodes": ["guest2"]}},
        "workload": {"driver": "iperf3", "params": params},
        "factors": factors,
        "repeat": 1,
        "phases": {"warmup": warmup, "steady": steady},
        **(extra or {}),
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def totals(done: Done, metric: str) -> dict[int, float]:
    df = done.samples
    rows = df[(df.metric == metric) & df.guest.isna()]
    rows = rows[rows.labels.map(lambda v: not v or v in ("{}", "[]"))]
    return {int(r.point): r.value for r in rows.itertuples()}


def test_iperf3_message_sizes_streams_and_cpu_efficiency(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    port = free_base(local_guests, 4)
    s = scenario(tmp_path / "s.yaml", {"port": port, "instances": 2},
                 {"length": {"path": "workload.params.length", "levels": ["256", "64K"]}})
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    gbps = totals(done, "gbps")
    assert set(gbps) == {0, 1} and all(v > 0 for v in gbps.values())
    # Per instance figures add up to the total.
    df = done.samples
    inst = df[(df.metric == "gbps") & (df.guest == "guest2") & ~df.labels.str.contains("direction")]
    assert len(inst) == 4
    for point in (0, 1):
        assert sum(inst[inst.point == point].value) == pytest.approx(gbps[point])
    cores = totals(done, "iperf3_cores_used")
    eff = totals(done, "gbps_per_core")
    assert eff[0] == pytest.approx(gbps[0] / cores[0])
    # The raw JSON is kept and says what was asked for.
    raws = sorted(done.rundir.path.glob("**/guest2/client-*.json"))
    assert len(raws) == 4
    blksizes = {json.loads(p.read_text())["start"]["test_start"]["blksize"] for p in raws}
    assert blksizes == {256, 65536}
    omit = {json.loads(p.read_text())["start"]["test_start"]["omit"] for p in raws}
    assert omit == {1}
    # Nothing left behind: the per-trial directories are gone from the guests.
    assert not list((Path(local_guests.sshd.workdir)).glob("*/iperf3-*-p*-t*"))


def test_iperf3_udp_bidir_reverse_directions(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    port = free_base(local_guests, 2)
    s = scenario(tmp_path / "s.yaml", {"port": port, "protocol": "udp", "bitrate": "20M",
                                        "length": "1400"},
                 {"dir": {"path": "workload.params.direction", "levels": ["reverse", "bidir"]}},
                 warmup="0s")
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    df = done.samples
    by_dir = df[(df.metric == "gbps") & df.guest.isna() & df.labels.str.contains("direction")]
    assert sorted(by_dir[by_dir.point == 0].labels) == ['{"direction": "reverse"}']
    assert len(by_dir[by_dir.point == 1]) == 2
    size = totals(done, "avg_packet_bytes")
    assert size[0] == pytest.approx(1400, rel=0.01)
    assert totals(done, "packet_rate")[1] > 0


def test_iperf3_ctrl_c_stops_clients_and_servers(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    port = free_base(local_guests, 1)
    s = scenario(tmp_path / "s.yaml", {"port": port}, {}, steady="120s", warmup="0s")
    cancel = threading.Event()
    result: dict[str, Done] = {}
    t = threading.Thread(target=lambda: result.setdefault(
        "done", run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests), cancel=cancel)))
    t.start()
    wait_for(logged(tmp_path, "phase_mark", mark="steady_start"), 120, "the steady phase")
    cancel.set()
    t.join(timeout=120)
    done = result["done"]
    assert done.outcome.status == "interrupted"
    [started] = done.events("iperf3_started")
    pids = {*started["servers"].values(), *started["clients"].values()}
    assert len(pids) == 2
    assert not live_groups(pids)
