"""Content Library transfers: memory, throughput against curl, and vbench's own overhead.

Against one vcsim (loopback TLS) in one run:

- memory: a child process imports (update session, PUSH) and then exports (download
  session) a generated item of BIG bytes (default 4 GiB) through vbench's client; its
  peak RSS (ru_maxrss) is reported. Target: < 150 MB (the transfer streams in 1 MiB
  chunks; nothing holds the item).
- throughput: SIZE bytes (default 1 GiB) uploaded to an update session's upload
  endpoint and downloaded from a download session's endpoint, by vbench's client and
  by ``curl`` moving the same file to/from the same kind of endpoint, sides alternating
  within each of REPEAT rounds (an even REPEAT gives each side the first place equally
  often). Only the byte transfer is timed on both sides (the PUT or GET); sessions are
  opened and completed outside the timed part. Each uploaded copy is checked and
  deleted before the next transfer; the exported item is uploaded untimed first and
  written back to disk (``sync``), so no timed transfer competes with write-back.
  Target: vbench's median ≥ 0.9× curl's median.
- overhead: OPS small imports and exports (64 KiB); for each, the time from "the last
  byte was acknowledged" to "the operation is recorded" (session completed, state
  polled, sizes checked, session deleted, sample made). Target: median ≤ 50 ms.

    .venv/bin/python -m bench.content_library [--big-gib 4] [--size-mib 1024] [--repeat 6]
        [--ops 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

USER, PASSWORD = "bench", "bench-pw"
MIB = 1 << 20


def _start(tmp: Path) -> Any:
    from vbench.vsphere.simulator import VcsimOptions, start_vcsim

    return start_vcsim(VcsimOptions(username=USER, password=PASSWORD), tmp / "vcsim.log")


def _target(proc: Any) -> Any:
    from vbench.vsphere.connection import VCenterTarget, server_thumbprint

    return VCenterTarget(
        name="bench", host=proc.address, port=proc.port, user=USER, password=PASSWORD,
        thumbprint=server_thumbprint(proc.address, proc.port), timeout=600.0,
    )  # fmt: skip


def _datastore(target: Any) -> str:
    from vbench.vsphere.connection import session_for
    from vbench.vsphere.inventory import Inventory

    with session_for(target) as vs:
        return Inventory.load(vs).find("datastore", "LocalDS_0").moid


def _library(s: Any, ds: str, name: str) -> str:
    from vbench.vsphere import content_library as cl

    return cl.create_local_library(s, name, cl.Backing(ds))


# --- memory (child process) --------------------------------------------------------------
def memory_child(host: str, port: int, ds: str, big: int) -> dict[str, Any]:
    from vbench.vsphere import content_library as cl
    from vbench.vsphere import content_library_transfer as tr
    from vbench.vsphere.connection import VCenterTarget, server_thumbprint

    target = VCenterTarget(
        name="bench", host=host, port=port, user=USER, password=PASSWORD,
        thumbprint=server_thumbprint(host, port), timeout=600.0,
    )  # fmt: skip
    s = cl.session_for(target)
    try:
        lib = _library(s, ds, "mem")
        item = cl.create_item(s, lib, "big")
        src = tr.Source("big.bin", size=big)
        t0 = time.monotonic()
        up = tr.import_files(s, item, lambda sid: [tr.push(s, sid, src)])
        t1 = time.monotonic()
        down = tr.export_item(s, item, None, checksum=True)
        t2 = time.monotonic()
        assert up[0].bytes == down[0].bytes == big and up[0].sha256 == down[0].sha256
        cl.delete_library(s, lib, subscribed=False)
    finally:
        s.close()
    return {
        "bytes": big,
        "import_s": round(t1 - t0, 2),
        "export_s": round(t2 - t1, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def memory(proc: Any, ds: str, big: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.content_library", "--child-memory",
            f"{proc.address}:{proc.port}:{ds}:{big}"]  # fmt: skip
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# --- throughput ------------------------------------------------------------------------------
def _curl(args: list[str]) -> float:
    t0 = time.monotonic()
    subprocess.run(["curl", "-sS", "-f", "-k", *args], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its finished children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


CPU: dict[str, list[float]] = {}


def _cpu_of(key: str, side: str, before: tuple[float, float]) -> None:
    """Record the CPU seconds one transfer cost its side (vbench: this process, curl:
    the child): a load-independent view of the two clients' efficiency."""
    after = _cpu()
    spent = after[0] - before[0] if side == "vbench" else after[1] - before[1]
    CPU.setdefault(f"{key}_{side}", []).append(spent)


def upload_once(s: Any, lib: str, src: Path, side: str, n: int) -> float:
    """Seconds of the PUT alone, by vbench's client or by curl; the item is checked."""
    from vbench.vsphere import content_library as cl
    from vbench.vsphere import content_library_transfer as tr

    item = cl.create_item(s, lib, f"{side}-{n}")
    sid = tr.open_update_session(s, item)
    try:
        if side == "vbench":
            before = _cpu()
            seconds = tr.push(s, sid, tr.Source(src.name, src), checksum=False).seconds
            _cpu_of("import", side, before)
        else:
            spec = {"name": src.name, "source_type": "PUSH", "size": src.stat().st_size}
            info = tr._add_file(s, sid, spec)
            uri = info["upload_endpoint"]["uri"]
            hdr = f"{cl.SESSION_HEADER}: {s.session_id}"
            before = _cpu()
            seconds = _curl(["-X", "PUT", "-T", str(src), "-H", hdr, uri])
            _cpu_of("import", side, before)
        tr.finish_update_session(s, sid, 600)
    finally:
        tr.drop_update_session(s, sid, failed=False)
    assert cl.item_bytes(s, item) == src.stat().st_size
    # Deleted at once, so that the next upload (the other side's) does not run while
    # this gigabyte is written back to disk: with the copies kept until the end of a
    # round, whichever side uploaded second ran up to 3.6x slower, whatever the client
    # (per-round ratios swung between 0.28 and 1.9 with the order alone).
    cl.delete_item(s, item)
    return seconds


def download_once(s: Any, item: str, name: str, size: int, side: str) -> float:
    from vbench.vsphere import content_library as cl
    from vbench.vsphere import content_library_transfer as tr

    sid = tr.open_download_session(s, item)
    try:
        info = tr._prepared(s, sid, name, 60)
        uri = info["download_endpoint"]["uri"]
        if side == "vbench":
            before = _cpu()
            t = tr.fetch(s, uri, name, None, checksum=False)
            _cpu_of("export", side, before)
            assert t.bytes == size
            return t.seconds
        hdr = f"{cl.SESSION_HEADER}: {s.session_id}"
        before = _cpu()
        seconds = _curl(["-o", os.devnull, "-H", hdr, uri])
        _cpu_of("export", side, before)
        return seconds
    finally:
        tr.drop_download_session(s, sid)


def throughput(s: Any, ds: str, tmp: Path, size: int, repeat: int) -> dict[str, Any]:
    from vbench.vsphere import content_library as cl
    from vbench.vsphere import content_library_transfer as tr

    src = tr.write_generated(tmp / "item.bin", size, seed=1)
    lib = _library(s, ds, "tput")
    # The item both sides export, uploaded untimed; then every dirty page (it, the
    # source file) is written back so that no timed transfer shares the disk with that.
    exported = cl.create_item(s, lib, "exported")
    tr.import_files(s, exported, lambda sid: [tr.push(s, sid, tr.Source(src.name, src))])
    os.sync()
    kinds = ("import_vbench", "import_curl", "export_vbench", "export_curl")
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(repeat):
        sides = ("vbench", "curl") if r % 2 == 0 else ("curl", "vbench")
        for side in sides:
            times[f"import_{side}"].append(upload_once(s, lib, src, side, r))
        for side in sides:
            times[f"export_{side}"].append(download_once(s, exported, src.name, size, side))
    cl.delete_library(s, lib, subscribed=False)
    src.unlink()
    mbs = {k: [size / 1e6 / t for t in v] for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in mbs.items()}
    return {
        "bytes": size,
        "rounds": repeat,
        "MB_per_s": {k: [round(x, 1) for x in v] for k, v in mbs.items()},
        "median_MB_per_s": {k: round(v, 1) for k, v in med.items()},
        "import_ratio": round(med["import_vbench"] / med["import_curl"], 3),
        "export_ratio": round(med["export_vbench"] / med["export_curl"], 3),
        # The two sides of one round ran back to back: their ratio is the least
        # disturbed by other load on the machine.
        "cpu_s_per_GiB": {
            k: round(statistics.median(v) * (1 << 30) / size, 2) for k, v in sorted(CPU.items())
        },
        "import_ratio_per_round": _ratios(mbs["import_vbench"], mbs["import_curl"]),
        "export_ratio_per_round": _ratios(mbs["export_vbench"], mbs["export_curl"]),
    }


def _ratios(ours: list[float], theirs: list[float]) -> dict[str, Any]:
    r = [a / b for a, b in zip(ours, theirs, strict=True)]
    return {"each": [round(x, 3) for x in r], "median": round(statistics.median(r), 3)}


# --- overhead ------------------------------------------------------------------------------
def overhead(s: Any, ds: str, ops: int) -> dict[str, Any]:
    from vbench.vsphere import content_library as cl
    from vbench.vsphere import content_library_transfer as tr

    lib = _library(s, ds, "ovh")
    imp, exp = [], []
    for n in range(ops):
        item = cl.create_item(s, lib, f"o{n}")
        done = tr.import_files(
            s, item, lambda sid: [tr.push(s, sid, tr.Source("o", size=64 << 10))]
        )
        recorded = {"op": "import", "bytes": sum(t.bytes for t in done), "at": time.monotonic()}
        imp.append(recorded["at"] - done[-1].ended)
        out = tr.export_item(s, item, None)
        recorded = {"op": "export", "bytes": sum(t.bytes for t in out), "at": time.monotonic()}
        exp.append(recorded["at"] - out[-1].ended)
    cl.delete_library(s, lib, subscribed=False)

    def ms(v: list[float]) -> dict[str, float]:
        return {"median": round(statistics.median(v) * 1e3, 1), "max": round(max(v) * 1e3, 1)}

    return {"ops": ops, "import_ms": ms(imp), "export_ms": ms(exp)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big-gib", type=float, default=4.0)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--ops", type=int, default=30)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child-memory", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_memory:
        host, port, ds, big = a.child_memory.split(":")
        print(json.dumps(memory_child(host, int(port), ds, int(big))))
        return
    from vbench.vsphere import content_library as cl

    with tempfile.TemporaryDirectory(prefix="vbench-bench-cl-") as d:
        tmp = Path(d)
        proc = _start(tmp)
        try:
            target = _target(proc)
            ds = _datastore(target)
            result: dict[str, Any] = {}
            s = cl.session_for(target)
            try:
                result["overhead"] = overhead(s, ds, a.ops)
                print(json.dumps({"overhead": result["overhead"]}), flush=True)
                result["throughput"] = throughput(s, ds, tmp, a.size_mib * MIB, a.repeat)
                print(json.dumps({"throughput": result["throughput"]}), flush=True)
            finally:
                s.close()
            result["memory"] = memory(proc, ds, int(a.big_gib * (1 << 30)))
            print(json.dumps({"memory": result["memory"]}), flush=True)
        finally:
            proc.stop()
    if a.json:
        a.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
