"""Provisioning overhead: clone N VMs, C at a time, against vcsim with a slow CloneVM_Task.

vcsim delays every CloneVM_Task call by DELAY ms, so the ideal wall time is
ceil(N / C) × DELAY. The same run measures

- vbench: the real provisioning path (Provisioner: clone, mark/reconfigure, guest
  customization from an address pool, power on, wait for the IP), every task awaited
  through one PropertyCollector filter; in a child process, whose peak RSS is reported;
- govc: N ``govc vm.clone`` processes (which clone and power on), C at a time;
- the simulator's floor: the N clones alone (no reconfigure, customize, power-on or IP
  wait), C at a time from one process, each task awaited through vbench's watcher. vcsim
  runs the clones of one template one at a time after their delay, so this is the
  best any client can do here.

Each side gets a fresh simulator; the three alternate within each of REPEAT rounds.
Report: median and min–max wall time and ratio to ideal, vbench over floor per round,
peak memory.

    .venv/bin/python -m bench.vsphere_clone [--vms 64] [--parallel 16] [--delay 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.clone_lab import PASSWORD, TEMPLATE, USER, clone_lab, make_template, start_slow_clones


def vbench_child(url_file: str, vms: int, parallel: int) -> None:
    """Runs in a fresh process: provision ``vms`` clones, print JSON figures."""
    from vbench.config.scenario import VmSpec
    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.journal import Journal
    from vbench.vsphere.provision import Provisioner
    from vbench.vsphere.specs import plan_requests

    info = json.loads(Path(url_file).read_text())
    from vbench.vsphere.simulator import VcsimProcess

    proc = VcsimProcess(info["pid"], info["address"], info["port"], Path(info["log"]))
    lab = clone_lab(proc, vms, "10.50")
    guests = {"web": [f"web-{i + 1}" for i in range(vms)]}
    spec = VmSpec(template=TEMPLATE, ip_timeout=120)
    requests = plan_requests("bench", {"web": spec}, guests, {"web": "vc"}, "20250101-000000-bench")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with (
        tempfile.TemporaryDirectory() as tmp,
        SessionPool.for_lab(lab, pool_size=parallel + 4) as sessions,
    ):
        journal = Journal(Path(tmp) / "journal.jsonl")
        prov = Provisioner(sessions, lab, journal, "20250101-000000-bench", parallel=parallel)
        prov.state("vc")  # connect and read the inventory before the clock starts
        t0 = time.perf_counter()
        done = prov.provision(requests)
        elapsed = time.perf_counter() - t0
        updates = prov.watchers()["vc"].updates
        prov.close()
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "vms": len(done),
                "wait_updates": updates,
                "rss_before_mib": rss_before / 1024,
                "rss_peak_mib": rss_peak / 1024,
            }
        )
    )


def measure_vbench(tmp: Path, vms: int, parallel: int, delay: int) -> dict[str, Any]:
    proc = start_slow_clones(tmp / "vb", delay)
    try:
        make_template(clone_lab(proc, vms, "10.50"))
        info = tmp / "vcsim.json"
        info.write_text(
            json.dumps(
                {"pid": proc.pid, "address": proc.address, "port": proc.port, "log": str(proc.log)}
            )
        )
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.vsphere_clone",
                "--child",
                str(info),
                "--vms",
                str(vms),
                "--parallel",
                str(parallel),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        proc.stop()


def measure_floor(tmp: Path, vms: int, parallel: int, delay: int) -> dict[str, Any]:
    from pyVmomi import vim

    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.inventory import Inventory
    from vbench.vsphere.tasks import Watcher

    proc = start_slow_clones(tmp / "floor", delay)
    try:
        lab = clone_lab(proc, vms, "10.50")
        make_template(lab)
        with SessionPool.for_lab(lab, pool_size=parallel + 4) as pool:
            session = pool.get("vc")
            inv = Inventory.load(session)
            tmpl = inv.find("template", TEMPLATE)
            src = inv.find("vm", "DC0_C0_RP0_VM0")
            spec = vim.vm.CloneSpec(location=vim.vm.RelocateSpec(pool=src.get("resourcePool")))
            with Watcher(session) as watcher:

                def clone(i: int) -> Any:
                    task = tmpl.ref.CloneVM_Task(folder=src.get("parent"), name=f"f-{i}", spec=spec)
                    return watcher.wait_task(task, f"f-{i}", "clone", timeout=600)

                t0 = time.perf_counter()
                with ThreadPoolExecutor(parallel) as ex:
                    done = list(ex.map(clone, range(vms)))
                elapsed = time.perf_counter() - t0
        return {"seconds": elapsed, "vms": len(done)}
    finally:
        proc.stop()


def measure_govc(tmp: Path, vms: int, parallel: int, delay: int) -> dict[str, Any]:
    from vbench.vsphere.simulator import find_tool

    govc = find_tool("govc")
    proc = start_slow_clones(tmp / "govc", delay)
    try:
        make_template(clone_lab(proc, vms, "10.50"))
        env = {
            **os.environ,
            "GOVC_URL": f"https://{USER}:{PASSWORD}@{proc.address}:{proc.port}/sdk",
            "GOVC_INSECURE": "1",
            "HOME": str(tmp / "govc-home"),
        }
        # One login first, so the processes share a persisted session like a user's shell.
        subprocess.run([govc, "about"], env=env, check=True, capture_output=True, timeout=60)

        def clone(i: int) -> int:
            argv = [govc, "vm.clone", "-vm", TEMPLATE, "-pool", "DC0_C0/Resources", f"g-{i}"]
            return subprocess.run(argv, env=env, capture_output=True, timeout=600).returncode

        t0 = time.perf_counter()
        with ThreadPoolExecutor(parallel) as pool:
            codes = list(pool.map(clone, range(vms)))
        elapsed = time.perf_counter() - t0
        return {"seconds": elapsed, "vms": codes.count(0)}
    finally:
        proc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vms", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--delay", type=int, default=500, help="CloneVM_Task delay in ms")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (vbench, govc, floor each)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        vbench_child(args.child, args.vms, args.parallel)
        return
    ideal = math.ceil(args.vms / args.parallel) * args.delay / 1000
    rounds: list[dict[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            # The three sides alternate within a round, so a noisy neighbour hits them alike.
            base = Path(tmp) / str(i)
            rounds.append(
                {
                    "vbench": measure_vbench(base, args.vms, args.parallel, args.delay),
                    "govc": measure_govc(base, args.vms, args.parallel, args.delay),
                    "floor": measure_floor(base, args.vms, args.parallel, args.delay),
                }
            )
    print(
        f"clone {args.vms} VMs, {args.parallel} at a time, CloneVM_Task +{args.delay} ms: "
        f"ideal {ideal:.2f} s; {len(rounds)} rounds, median (min–max)"
    )
    for name in ("vbench", "govc", "floor"):
        secs = [r[name]["seconds"] for r in rounds]
        vms = {r[name]["vms"] for r in rounds}
        line = f"  {name:6s} {statistics.median(secs):6.2f} s ({min(secs):.2f}–{max(secs):.2f})"
        if ideal:  # with --delay 0 there is no ideal: the run measures the simulator's cost
            ratios = [x / ideal for x in secs]
            line += (
                f"  {statistics.median(ratios):4.2f}x ideal ({min(ratios):.2f}–{max(ratios):.2f})"
            )
        print(f"{line}  ({'/'.join(map(str, sorted(vms)))} VMs)")
    per_round = [r["vbench"]["seconds"] / r["floor"]["seconds"] for r in rounds]
    print(
        f"  vbench / floor, per round: {min(per_round):.2f}–{max(per_round):.2f}"
        "  (floor: the clones alone, no other step: what the simulator allows)"
    )
    vb = rounds[-1]["vbench"]
    print(f"  vbench: {vb['wait_updates']} WaitForUpdatesEx answers for all tasks and IPs")
    peak = max(r["vbench"]["rss_peak_mib"] for r in rounds)
    print(
        f"  vbench controller peak RSS {peak:.0f} MiB "
        f"({vb['rss_before_mib']:.0f} MiB before provisioning)"
    )


if __name__ == "__main__":
    main()
