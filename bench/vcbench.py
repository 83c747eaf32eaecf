"""vCenter operation throughput: vbench's vcbench against the Little's-law ideal, and the
same mix driven by concurrent govc processes, on vcsim with ~1 s per operation.

vcsim holds every task of the mix for DELAY ms (``-method-delay`` on the task names:
PowerOn, PowerOff, CloneVm, RelocateVm, ReconfigVm, RegisterVm, CreateSnapshot,
RemoveSnapshot, RevertToSnapshot, Destroy; UnregisterVM, which is not a task, on its
SOAP method; not CreateVm, see ``_start``), with ``LockHandoff:0`` so that the entity
lock is not held during the delay. With N sessions in a closed loop and no think time,
throughput is bounded by Little's law: N ÷ mean latency (the target: achieved ops/s
against it). Beside it, N ÷ vCenter's own mean task time (queueTime → completeTime, read
back from the tasks): what a client adding no latency of its own would reach; the gap
is split into call → queued and completed → noticed by the shared watcher.

Each sessions level gets a fresh simulator and a child process (its CPU time over the
steady window and its peak RSS are the controller's cost). ``--govc N,…`` runs the same
mix (same operation chooser and VM-state rules) with one ``govc`` process per
operation, N at a time. ``--profile`` samples the vbench child with py-spy over the
steady window and prints where its CPU went.

    .venv/bin/python -m bench.vcbench [--sessions 64,256,512] [--delay 1000]
        [--warmup 5] [--steady 20] [--govc 64] [--profile]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

USER, PASSWORD = "bench", "bench-pw"
TEMPLATE = "DC0_C0_RP0_VM0"
TASKS = (
    "PowerOn", "PowerOff", "CloneVm", "RelocateVm", "ReconfigVm", "RegisterVm",
    "CreateSnapshot", "RemoveSnapshot", "RevertToSnapshot", "Destroy",
)  # fmt: skip


def _start(tmp: Path, delay: int) -> Any:
    from vbench.vsphere.simulator import VcsimOptions, start_vcsim

    # CreateVm stays 0: vcsim's clone runs an inner CreateVM task while it holds the
    # source VM's lock, so a delay there would clone a template's copies one at a time.
    delays = (*((t, delay) for t in TASKS), ("UnregisterVM", delay), ("LockHandoff", 0))
    opts = VcsimOptions(
        username=USER, password=PASSWORD, datastores=2, method_delay_ms=delays
    )
    return start_vcsim(opts, tmp / "vcsim.log")


def _lab(url: str, host: str, port: int) -> Any:
    from vbench.config.lab import Lab
    from vbench.vsphere.connection import server_thumbprint

    os.environ["VBENCH_BENCH_VC_PASSWORD"] = PASSWORD
    vc = {
        "url": url,
        "user": USER,
        "password": "${env:VBENCH_BENCH_VC_PASSWORD}",
        "thumbprint": server_thumbprint(host, port),
    }
    return Lab.model_validate({"version": 1, "name": "bench", "vcenters": {"vc": vc}})


# --- vbench side (child process) ----------------------------------------------------------


def vbench_child(info_file: str, sessions: int, warmup: float, steady: float) -> None:
    """Runs in a fresh process: one vcbench trial, figures as JSON on stdout."""
    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.journal import Journal
    from vbench.vsphere.resources import ProfilePlacement, RunResources
    from vbench.vsphere.tasks import Watcher
    from vbench.workloads.base import TrialContext
    from vbench.workloads.vcbench import VcbenchWorkload
    from vbench.workloads.vcbench.params import VcbenchParams

    info = json.loads(Path(info_file).read_text())
    lab = _lab(info["url"], info["address"], info["port"])
    run_id = "20250101-000000-vcb"
    marks: dict[str, float] = {}
    cpu: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[name] = time.time()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        cpu[name] = ru.ru_utime + ru.ru_stime
        cpu["vcsim_" + name] = _proc_cpu(info["pid"])
        if name == "steady_start" and info.get("ready"):
            Path(info["ready"]).write_text(str(os.getpid()))

    with tempfile.TemporaryDirectory() as tmp, SessionPool.for_lab(lab, pool_size=32) as pool:
        watchers: dict[str, Watcher] = {}
        lock = threading.Lock()

        def watcher_for(vc: str) -> Watcher:
            with lock:
                if vc not in watchers:
                    watchers[vc] = Watcher(pool.get(vc))
                return watchers[vc]

        journal = Journal(Path(tmp) / "journal.jsonl")
        journal.open(run_id)
        res = RunResources(lab, pool, watcher_for, journal, run_id).for_point(
            ProfilePlacement("vc")
        )
        params = VcbenchParams(
            sessions=sessions, template=TEMPLATE, pool_parallel=64, drain=30.0
        )
        wl = VcbenchWorkload(params)
        ctx = TrialContext(
            run_id=run_id, point=1, trial=1, labels={}, warmup=warmup, steady=steady,
            cooldown=0.0, guests={}, raw_dir=Path(tmp) / "raw", cancel=threading.Event(),
            mark=mark, log=lambda *_a, **_k: None, vsphere=res,
        )  # fmt: skip
        t0 = time.time()
        wl.prepare(ctx)
        prepared = time.time() - t0
        try:
            wl.run(ctx)
            samples = wl.collect(ctx)
            split = _server_split(res.session("vc"), wl, marks)
        finally:
            t1 = time.time()
            wl.teardown(ctx)
            teardown = time.time() - t1
        for w in watchers.values():
            w.close()
    window = marks["steady_end"] - marks["steady_start"]
    figures = {
        s.metric: s.value for s in samples if not s.labels and s.value is not None
    }
    per_op = collections.defaultdict(dict)
    for s in samples:
        d = s.label_dict()
        if "op" in d and "fault" not in d:
            per_op[d["op"]][s.metric.removeprefix("vcbench.")] = s.value
    failures = [
        {**s.label_dict(), "n": s.value} for s in samples if s.metric == "vcbench.failures"
    ]
    print(json.dumps({
        "sessions": sessions,
        "window_s": window,
        "figures": figures,
        "per_op": per_op,
        "failures": failures,
        "controller_cpu_cores": (cpu["steady_end"] - cpu["steady_start"]) / window,
        "vcsim_cpu_cores": (cpu["vcsim_steady_end"] - cpu["vcsim_steady_start"]) / window,
        "loadavg": os.getloadavg()[0],
        "rss_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "split": split,
        "prepare_s": prepared,
        "teardown_s": teardown,
    }))  # fmt: skip


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_split(session: Any, wl: Any, marks: dict[str, float]) -> dict[str, float]:
    """Where an operation's latency went, for tasks that ended in the steady window:
    vCenter's own time (task queueTime → completeTime) and the time from completeTime
    until the client knew (the shared watcher's notice), means in seconds."""
    from pyVmomi import vim

    from vbench.vsphere.inventory import retrieve_refs

    recs = [
        r for r in wl._trial.load.snapshot()
        if r.task and marks["steady_start"] <= r.end <= marks["steady_end"]
    ][-2000:]
    refs = [vim.Task(r.task, session.stub) for r in recs]
    props = {vim.Task: ["info.queueTime", "info.completeTime"]}
    info = {o.moid: o for o in retrieve_refs(session, refs, props)}
    server, notice, call = [], [], []
    for r in recs:
        o = info.get(r.task or "")
        if o is None or o.get("info.completeTime") is None:
            continue
        q, c = o.get("info.queueTime").timestamp(), o.get("info.completeTime").timestamp()
        server.append(c - q)
        notice.append(r.end - c)
        call.append(q - r.start)
    if not server:
        return {}
    return {
        "tasks": len(server),
        "start_to_queued_s": sum(call) / len(call),
        "server_s": sum(server) / len(server),
        "complete_to_notified_s": sum(notice) / len(notice),
    }


def _profile(pid: int, seconds: float, out: Path) -> dict[str, Any]:
    """py-spy over the steady window: share of samples per leaf area (active threads)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    subprocess.run(
        [spy, "record", "-p", str(pid), "-d", str(int(seconds)), "-r", "50",
         "-f", "raw", "-o", str(out), "--nonblocking"],
        check=False, capture_output=True,
    )  # fmt: skip
    if not out.exists():
        return {"error": "py-spy produced nothing (is ptrace allowed?)"}
    areas: collections.Counter[str] = collections.Counter()
    funcs: collections.Counter[str] = collections.Counter()
    total = 0
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        count = int(n)
        total += count
        frames = stack.split(";")
        areas[_area(frames)] += count
        funcs[frames[-1]] += count
    return {
        "samples": total,
        "areas": {k: round(100 * v / total, 1) for k, v in areas.most_common()},
        "top_leaf_functions": [(f, round(100 * v / total, 1)) for f, v in funcs.most_common(12)],
    }


def _area(frames: list[str]) -> str:
    """Which part of the client a sampled stack is busy in."""
    text = ";".join(frames)
    leaf = frames[-1]
    if "ssl.py" in leaf or "socket.py" in leaf or "SSLSocket" in leaf:
        return "TLS/socket I/O"
    if "expat" in text.split(";")[-1] or "SoapAdapter.py" in leaf or "_Deserialize" in text[-400:]:
        return "SOAP parse/serialise (pyVmomi)"
    if "SoapAdapter.py" in text and ("Serialize" in leaf or "Deserialize" in leaf):
        return "SOAP parse/serialise (pyVmomi)"
    if "pyVmomi" in leaf:
        return "pyVmomi other"
    if "http/client.py" in leaf:
        return "HTTP (http.client)"
    if "vbench" in leaf:
        return "vbench code"
    if "threading.py" in leaf or "queue.py" in leaf:
        return "thread handoff"
    return "other: " + leaf.split(" (")[-1].split(":")[0].rsplit("/", 1)[-1]


def measure_vbench(
    tmp: Path, sessions: int, delay: int, warmup: float, steady: float, profile: bool
) -> dict[str, Any]:
    proc = _start(tmp / f"vb{sessions}", delay)
    try:
        ready = tmp / f"ready{sessions}"
        info = tmp / f"vcsim{sessions}.json"
        info.write_text(json.dumps({
            "url": proc.url, "address": proc.address, "port": proc.port, "pid": proc.pid,
            "ready": str(ready) if profile else None,
        }))  # fmt: skip
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.vcbench", "--child", str(info), "--sessions",
             str(sessions), "--warmup", str(warmup), "--steady", str(steady)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        prof: dict[str, Any] | None = None
        if profile:
            while not ready.exists() and child.poll() is None:
                time.sleep(0.1)
            if ready.exists():
                prof = _profile(child.pid, steady * 0.9, tmp / f"prof{sessions}.txt")
        out, _ = child.communicate()
        result = json.loads(out.strip().splitlines()[-1])
        if prof is not None:
            result["profile"] = prof
        return result
    finally:
        proc.stop()


# --- govc side --------------------------------------------------------------------------


class GovcOperator:
    """The mix's operations as one ``govc`` process each (same VM-state rules)."""

    def __init__(self, index: int, env: dict[str, str], site: Any, hosts: list[str],
                 datastores: list[str], pool: str) -> None:
        self.index, self.env, self.site = index, env, site
        self.hosts, self.datastores, self.pool = hosts, datastores, pool
        self.vc = "vc"
        self.govc = str(Path(__file__).resolve().parents[1] / ".tools" / "bin" / "govc")

    def _govc(self, op: str, vm: str, *args: str) -> Any:
        from vbench.vsphere.operations import OpRecord

        start = time.time()
        p = subprocess.run([self.govc, *args], env=self.env, capture_output=True, text=True)
        end = time.time()
        ok = p.returncode == 0
        fault = None if ok else (p.stderr.strip().splitlines() or ["?"])[-1][:200]
        return OpRecord(op, self.index, "vc", vm, start, end, ok, None if ok else "govc", fault)

    def run(self, op: str, lease: Any) -> Any:
        from vbench.vsphere.operations import VmState

        home = lease.home
        h = home.name
        if op == "power_on":
            r = self._govc(op, h, "vm.power", "-on", h)
            home.powered_on = home.powered_on or r.ok
        elif op == "power_off":
            r = self._govc(op, h, "vm.power", "-off", "-force", h)
            home.powered_on = home.powered_on and not r.ok
        elif op in ("clone_full", "clone_linked", "create"):
            lease.created += 1
            name = f"gv-{self.index}-{lease.created}"
            if op == "create":
                args = ["vm.create", "-on=false", "-ds", self.datastores[0], "-pool",
                        self.pool, name]  # fmt: skip
            else:
                args = ["vm.clone", "-vm", h, "-on=false", "-pool", self.pool,
                        "-ds", self.datastores[0]]
                if op == "clone_linked":
                    args += ["-link", "-snapshot", home.snapshots[-1]]
                args.append(name)
            r = self._govc(op, name, *args)
            if r.ok:
                lease.spares.append(VmState(name, None))
        elif op == "destroy":
            vm = lease.spares[0]
            r = self._govc(op, vm.name, "vm.destroy", vm.name)
            if r.ok:
                lease.spares.pop(0)
        elif op == "unregister":
            vm = lease.spares[0]
            r = self._govc(op, vm.name, "vm.unregister", vm.name)
            if r.ok:
                lease.spares.pop(0)
                vm.vmx = f"[{self.datastores[0]}] {vm.name}/{vm.name}.vmx"
                lease.unregistered.append(vm)
        elif op == "register":
            vm = lease.unregistered[0]
            r = self._govc(op, vm.name, "vm.register", "-pool", self.pool, "-name", vm.name,
                           "-ds", self.datastores[0], f"{vm.name}/{vm.name}.vmx")
            if r.ok:
                lease.spares.append(lease.unregistered.pop(0))
        elif op == "relocate_host":
            target = self.hosts[(self.index + lease.created + int(time.time())) % len(self.hosts)]
            r = self._govc(op, h, "vm.migrate", "-host", target, h)
        elif op == "relocate_datastore":
            ds = self.datastores[(lease.created + int(time.time())) % len(self.datastores)]
            r = self._govc(op, h, "vm.migrate", "-ds", ds, h)
        elif op == "reconfigure_cpu":
            home.cpus = 2 if home.cpus == 1 else 1
            r = self._govc(op, h, "vm.change", "-vm", h, "-c", str(home.cpus))
        elif op == "reconfigure_memory":
            home.memory_mb = 512 if home.memory_mb == 256 else 256
            r = self._govc(op, h, "vm.change", "-vm", h, "-m", str(home.memory_mb))
        elif op == "reconfigure_annotation":
            r = self._govc(op, h, "vm.change", "-vm", h, "-annotation", f"govc {time.time()}")
        elif op == "snapshot_create":
            name = f"s{len(home.snapshots) + 1}"
            r = self._govc(op, h, "snapshot.create", "-vm", h, name)
            if r.ok:
                home.snapshots.append(name)
        elif op == "snapshot_remove":
            r = self._govc(op, h, "snapshot.remove", "-vm", h, home.snapshots[-1])
            if r.ok:
                home.snapshots.pop()
        elif op == "snapshot_revert":
            r = self._govc(op, h, "snapshot.revert", "-vm", h, home.snapshots[-1])
            if r.ok:
                home.powered_on = False  # govc reverts without memory: the VM is off
        else:
            raise ValueError(op)
        return r


def measure_govc(tmp: Path, sessions: int, delay: int, warmup: float, steady: float) -> dict:
    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.inventory import Inventory
    from vbench.vsphere.journal import Journal
    from vbench.vsphere.operations import Lease
    from vbench.vsphere.oppool import create_pool, find_template, resolve_site
    from vbench.vsphere.tasks import Watcher
    from vbench.workloads.vcbench import metrics
    from vbench.workloads.vcbench.loop import LoadRun, Session
    from vbench.workloads.vcbench.params import DEFAULT_MIX

    proc = _start(tmp / f"gv{sessions}", delay)
    try:
        lab = _lab(proc.url, proc.address, proc.port)
        with SessionPool.for_lab(lab, pool_size=32) as pool:
            s = pool.get("vc")
            inv = Inventory.load(s)
            site = resolve_site(inv, "vc", None)
            with Watcher(s) as w:
                vms = create_pool(
                    s, w, site, Journal(tmp / f"gv{sessions}.jsonl"), "gv",
                    find_template(inv, None, TEMPLATE), TEMPLATE,
                    [f"gvh-{i}" for i in range(sessions)], parallel=64,
                )  # fmt: skip
            hosts = ["/" + inv.path(inv.get(h)).lstrip("/") for h in site.hosts]
            dss = [n for n, _ in site.datastores]
            pool_path = "/" + inv.path(inv.get(site.pool)).lstrip("/")
        env = {**os.environ, "GOVC_URL": proc.url, "GOVC_USERNAME": USER,
               "GOVC_PASSWORD": PASSWORD, "GOVC_INSECURE": "1",
               "HOME": str(tmp / "govc-home")}  # fmt: skip
        ops = [GovcOperator(i, env, site, hosts, dss, pool_path) for i in range(sessions)]
        load = LoadRun([Session(o, Lease(vm)) for o, vm in zip(ops, vms, strict=True)], DEFAULT_MIX)
        load.start()
        time.sleep(warmup)
        start = time.time()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        time.sleep(steady)
        end = time.time()
        load.stop(60)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [metrics.Row(r.op, r.session, r.vcenter, r.vm, r.start, r.end, r.ok,
                            r.fault_type, r.fault) for r in load.snapshot()]  # fmt: skip
        samples = metrics.steady_samples(
            rows, start, end, sessions=sessions, think_time=0, mix=DEFAULT_MIX
        )
        figures = {x.metric: x.value for x in samples if not x.labels}
        faults = metrics.fault_messages(metrics.in_window(rows, start, end))
        return {
            "sessions": sessions,
            "figures": figures,
            "govc_cpu_cores": (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime)
            / (end - start),
            "faults": {k: v[:3] for k, v in faults.items()},
        }
    finally:
        proc.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", default="64,256,512")
    ap.add_argument("--delay", type=int, default=1000)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--steady", type=float, default=20.0)
    ap.add_argument("--govc", default="64")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        vbench_child(a.child, int(a.sessions), a.warmup, a.steady)
        return
    levels = [int(x) for x in a.sessions.split(",") if x]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"vcsim task delay {a.delay} ms; warm-up {a.warmup:g}s, steady {a.steady:g}s")
        print("sessions  ops/s  Little N/lat  ratio  N/vCenter time  ratio  "
              "mean lat  p99 lat  failed  ctl CPU  peak RSS")
        results = []
        for n in levels:
            r = measure_vbench(tmp, n, a.delay, a.warmup, a.steady, a.profile)
            results.append(r)
            Path(f"/tmp/vcbench-bench-{n}.json").write_text(json.dumps(r, indent=1))
            f = r["figures"]
            if f.get("vcbench.latency_avg") is None:
                print(f"{n:8d} no operation completed in the window: "
                      f"{json.dumps(r)[:1500]}")
                continue
            server = (r.get("split") or {}).get("server_s") or float("nan")
            floor = n / server
            little = f.get("vcbench.littles_ideal_ops_per_s") or float("nan")
            ops = f["vcbench.ops_per_s"]
            p99 = max((v.get("op_latency_p99") or 0) for v in r["per_op"].values())
            print(f"{n:8d} {ops:6.1f} {little:12.1f} {ops / little:6.3f} {floor:14.1f} "
                  f"{ops / floor:6.3f} {f['vcbench.latency_avg']:8.3f}s {p99:7.3f}s "
                  f"{int(f['vcbench.failed']):7d} {r['controller_cpu_cores']:7.2f} "
                  f"{r['rss_peak_mib']:7.0f} MiB")  # fmt: skip
            print(f"   vcsim CPU {r['vcsim_cpu_cores']:.2f} cores; load average "
                  f"{r['loadavg']:.1f}; pool + logins {r['prepare_s']:.0f}s")
            if r.get("split"):
                print("   latency split (mean s):", json.dumps(
                    {k: round(v, 3) for k, v in r["split"].items()}))
            if r.get("profile"):
                print("   profile:", json.dumps(r["profile"]["areas"]))
                print("   top:", json.dumps(r["profile"]["top_leaf_functions"][:6]))
            if r["failures"]:
                print("   failures:", r["failures"])
        for n in [int(x) for x in a.govc.split(",") if x]:
            g = measure_govc(tmp, n, a.delay, a.warmup, a.steady)
            f = g["figures"]
            nominal = n / (a.delay / 1000)
            print(f"govc {n:4d} {f['vcbench.ops_per_s']:6.1f} {nominal:14.1f} "
                  f"{f['vcbench.ops_per_s'] / nominal:6.3f}  mean lat "
                  f"{f['vcbench.latency_avg']:.3f}s  failed {int(f['vcbench.failed'])}  "
                  f"govc CPU {g['govc_cpu_cores']:.2f} cores")  # fmt: skip
            if g["faults"]:
                print("   faults:", json.dumps(g["faults"])[:400])
        Path("/tmp/vcbench-bench.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
