"""Benchmark: the cloudstone driver's load generator against wrk, and the SUT's set-up.

On this machine's loopback guests (a private sshd, as the tests use), in one run:

- **deploy + load** — :func:`vbench.workloads.cloudstone.sut.deploy` of one instance
  sized for 500 users (MariaDB bootstrap, schema, the data loader, PHP-FPM and nginx up
  and answering), the load timed apart, median of ``--repeat``;
- **static page** — the same 2 KB static file (``/static/site.css``) served by that nginx,
  loaded closed-loop (no think time) for ``--seconds`` by the vbench-driven Locust
  (the driver's locustfile and records, one Locust process, ``--users`` users) and by
  ``wrk -t1 -c<users>``: requests/s and requests/s per client core (requests ÷ CPU
  seconds of the load generator's process: Locust's own, wrk's from rusage);
- **added latency** — one user / one connection, closed loop, on the same file: the
  mean time per request (seconds / requests: with one request outstanding, Little's
  law) of Locust minus wrk's, i.e. what the driver adds per request; Locust's own
  recorded mean response time is printed beside it;
- **Olio operations** — the driver's Olio profile (the matrix, page + images) for
  ``--seconds`` with 0.2 s think time: CPU seconds of Locust per operation, from which
  the client cores the study's 7,500 users need (7,500 users / (5 s think time +
  response time) operations per second).

    .venv/bin/python -m bench.web_driver [--seconds 15] [--users 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from vbench.guest.host import Guest
from vbench.guest.locallab import lab_down, lab_guest_specs, lab_up
from vbench.workloads.cloudstone import loadgen, metrics
from vbench.workloads.cloudstone import sut as sutmod
from vbench.workloads.cloudstone.params import CloudstoneParams

ROOT = Path(__file__).resolve().parents[1]
ADDRESS = "127.0.0.2"
STUDY_USERS, STUDY_THINK = 7500, 5.0


def locust_run(guest: Guest, cmd: str, d: str, cfg: dict[str, object]) -> dict[str, float]:
    """One Locust run through the driver's own start path; figures from its records."""
    gen = loadgen.LoadGen(1, d, [guest])
    guest.run(["rm", "-rf", d])
    up, steady = float(cfg["ramp_up"]), float(cfg["steady"])  # type: ignore[arg-type]
    seconds = up + steady + float(cfg["ramp_down"])  # type: ignore[arg-type]
    loadgen.start(gen, [cmd], cfg, 0, seconds + 120)
    gen.procs[0].wait(timeout=seconds + 120)
    text = "".join(guest.read_text(f"{d}/{n}")
                   for n in guest.run_script(f"cd {d} && ls records.*").stdout.split())  # fmt: skip
    rec = metrics.parse_records(text, "bench", 0.0)
    assert rec.start is not None
    start, end = rec.start + up, rec.start + up + steady
    ops = [r for r in rec.ops if start <= r.end < end and r.ok]
    cpu = [c for c in rec.cpu if start <= c.when <= end]
    share = (cpu[-1].cpu - cpu[0].cpu) / (cpu[-1].when - cpu[0].when)
    rate = len(ops) / (end - start)
    return {"rps": rate, "cpu": share, "per_core": rate / share,
            "mean_ms": statistics.fmean(r.ms for r in ops)}  # fmt: skip


def wrk_run(url: str, conns: int, seconds: float) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{int(seconds)}s", url],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    # Mean latency by Little's law (connections / throughput): wrk's own "Latency Avg"
    # was seen far above it on this busy machine (1.1 ms at 31,000 req/s on 1 connection).
    mean_ms = 1000.0 * conns * seconds / total
    return {"rps": total / seconds, "cpu": cpu / seconds, "per_core": total / cpu,
            "mean_ms": mean_ms}  # fmt: skip


def static_cfg(p: CloudstoneParams, url: str, d: str, users: int,
               seconds: float) -> dict[str, object]:  # fmt: skip
    cfg = loadgen.config(p, url, f"{d}/records", 1.0, seconds, 0.0,
                         {"persons": 1, "events": 1, "tags": 1})  # fmt: skip
    # Closed loop: a rate no user can reach makes the pacing zero.
    cfg.update(profile="rate", users=users, rate=1e9, static_path="/static/site.css",
               fetch_images=False)  # fmt: skip
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--users", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="vbench-webbench-"))
    port = 2522
    lab_up([ADDRESS], port, home=home)
    (spec,) = lab_guest_specs([ADDRESS], port, home=home, workdir=str(home / "work"))
    guest = Guest(spec)
    cancel = threading.Event()
    results: dict[str, object] = {}
    try:
        p = CloudstoneParams(users=500, php_children=16, port=23080,
                             wheelhouse=str(ROOT / ".tools" / "wheelhouse"))  # fmt: skip
        t = time.monotonic()
        cmd = loadgen.ensure_locust(guest, p, f"{home}/work/run")
        results["locust_install_s"] = time.monotonic() - t
        deploys, loads = [], []
        sut = None
        for i in range(args.repeat):
            if sut is not None:
                sut.stop()
            sut = sutmod.deploy(guest, i + 1, f"{home}/work/run", p.port + 10 * i, p, 3600,
                                cancel)  # fmt: skip
            deploys.append(sut.deploy_seconds)
            loads.append(sut.load_seconds)
        assert sut is not None
        results["deploy_s"], results["load_s"] = deploys, loads
        d = f"{home}/work/run/bench"
        url = f"{sut.url}/static/site.css"
        rounds = []
        for _ in range(args.repeat):
            cfg = static_cfg(p, sut.url, d, args.users, args.seconds)
            rounds.append({"locust": locust_run(guest, cmd, d, cfg),
                           "wrk": wrk_run(url, args.users, args.seconds)})  # fmt: skip
        results["static"] = rounds
        one = static_cfg(p, sut.url, d, 1, args.seconds)
        results["latency"] = {"locust": locust_run(guest, cmd, d, one),
                              "wrk": wrk_run(url, 1, args.seconds)}  # fmt: skip
        sizes = {k: v for k, v in sutmod.sizes(p).items() if k != "images"}
        olio_p = CloudstoneParams(users=20, think={"mean": 0.2})  # type: ignore[arg-type]
        olio = loadgen.config(olio_p, sut.url, f"{d}/records", 2.0, args.seconds, 0.0, sizes)
        results["olio"] = locust_run(guest, cmd, d, olio)
        sut.stop()
    finally:
        guest.kill_all()
        guest.close()
        lab_down(home=home)
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps(results, indent=1))
    summarize(results)


def summarize(r: dict) -> None:  # type: ignore[type-arg]
    med = statistics.median
    loc = [x["locust"]["per_core"] for x in r["static"]]
    wrk = [x["wrk"]["per_core"] for x in r["static"]]
    print(f"deploy (without load) median {med(r['deploy_s']):.2f} s, load (500 users) "
          f"median {med(r['load_s']):.2f} s, Locust venv install {r['locust_install_s']:.1f} s")
    print(f"static page, req/s per client core: Locust {med(loc):,.0f} "
          f"(min {min(loc):,.0f}, max {max(loc):,.0f}), wrk {med(wrk):,.0f} "
          f"(min {min(wrk):,.0f}, max {max(wrk):,.0f}); wrk/Locust {med(wrk) / med(loc):.1f}x")
    lat = r["latency"]
    cycle = 1000.0 / lat["locust"]["rps"]
    added = cycle - lat["wrk"]["mean_ms"]
    print(f"one user closed loop, ms per request: Locust {cycle:.3f} (its recorded response "
          f"time {lat['locust']['mean_ms']:.3f}), wrk {lat['wrk']['mean_ms']:.3f}: "
          f"added {added:.3f} ms")
    olio = r["olio"]
    cpu_per_op = olio["cpu"] / olio["rps"]
    ops = STUDY_USERS / (STUDY_THINK + olio["mean_ms"] / 1000)
    print(f"Olio profile: {olio['rps']:.1f} ops/s at {olio['cpu']:.0%} of a core = "
          f"{cpu_per_op * 1000:.2f} ms CPU per operation; {STUDY_USERS} users at "
          f"{STUDY_THINK:g} s think time = {ops:,.0f} ops/s -> {ops * cpu_per_op:.1f} client cores")


if __name__ == "__main__":
    main()
