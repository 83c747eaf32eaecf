"""netperf driver end to end against a *replay of recorded netperf output*
(tests/tools/netperf_replay.py installed on the loopback guest as `netperf` and
`netserver`: netperf is not in Debian's main archive). The replayed netserver really
listens and the replayed netperf really connects to it, waits the -l seconds it is given
and prints a recorded PerfKitBenchmarker capture (TCP STREAM) unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LocalGuests
from tests.corpus import SHARED, need
from tests.integration.test_iperf3_workload import free_base, scenario, totals
from tests.integration.test_redis_scaleout import live_groups, run
from tests.integration.test_redis_scaleout import write_lab as redis_lab
from vbench.errors import GuestError
from vbench.guest.ssh import Guest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "tests" / "tools" / "netperf_replay.py"
CAPTURES = (SHARED / "netperf_iperf3"
            / "GoogleCloudPlatform_PerfKitBenchmarker__netperf_results.json")


def install_replay(guests: LocalGuests, folder: str, capture: int) -> str:
    """The replay as netperf and netserver, with one recorded capture to print."""
    lines = json.loads(need(CAPTURES).read_text())[capture]
    remote = f"{guests.sshd.workdir}/{folder}"
    with Guest(guests[0]) as g:
        for name in ("netperf", "netserver"):
            g.put(REPLAY, f"{remote}/{name}")
            g.run(["chmod", "+x", f"{remote}/{name}"])
        g.put_text("\n".join(lines) + "\n", f"{remote}/recording.txt")
    return remote


def test_netperf_replay_stream_with_warmup_run_and_message_sizes(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    remote = install_replay(local_guests, "netperf-replay", capture=4)  # TCP STREAM
    port = free_base(local_guests, 2)
    s = scenario(tmp_path / "s.yaml", {
        "port": port, "instances": 2, "netperf": f"{remote}/netperf",
        "netserver": f"{remote}/netserver"},
        {"message_size": ["256", "16K"]}, warmup="1s", steady="2s")
    s.write_text(s.read_text().replace("driver: iperf3", "driver: netperf"))
    done = run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
    assert done.outcome.status == "ok", done.outcome
    # The recording says 1187.94 10^6bits/s per instance; two instances per point.
    gbps = totals(done, "gbps")
    assert gbps == {0: pytest.approx(2 * 1.18794), 1: pytest.approx(2 * 1.18794)}
    assert totals(done, "p99_latency_us_max")[0] == 3374
    # Each instance ran a warm-up netperf of -l 1 and then the measured one of -l 2,
    # with the asked-for message size, against its own netserver port.
    calls = (Path(remote) / "calls.log").read_text().splitlines()
    clients = [c.split() for c in calls if c.startswith("netperf -H ")]
    assert len(clients) == 8
    assert sorted(c[c.index("-l") + 1] for c in clients) == ["1"] * 4 + ["2"] * 4
    assert {c[c.index("-m") + 1] for c in clients} == {"256", "16K"}
    assert {c[c.index("-p") + 1] for c in clients} == {str(port), str(port + 1)}
    servers = [c for c in calls if c.startswith("netserver -D ")]
    assert len(servers) == 4
    # Both steps of the trial are marked, the measured run after the warm-up run.
    marks = [e["mark"] for e in done.events("phase_mark") if e.get("point") == 0]
    assert marks[:3] == ["warmup_start", "steady_start", "steady_end"]
    # The servers (which never exit by themselves) were stopped.
    started = done.events("netperf_started")
    pids = {pid for e in started for pid in e["servers"].values()}
    assert len(pids) == 4 and not live_groups(pids)


def test_netperf_missing_server_fails_with_the_guest_named(
    tmp_path: Path, local_guests: LocalGuests, vbench_home: Path
) -> None:
    port = free_base(local_guests, 1)
    s = scenario(tmp_path / "s.yaml", {"port": port, "netserver": "/nonexistent/netserver"},
                 {}, warmup="0s")
    s.write_text(s.read_text().replace("driver: iperf3", "driver: netperf"))
    # Refused by the preflight check, before anything starts in the guests.
    with pytest.raises(GuestError, match="guest1: /nonexistent/netserver not found"):
        run(tmp_path, s, redis_lab(tmp_path / "lab.yaml", local_guests))
