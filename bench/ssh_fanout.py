"""Fan-out of one command to many loopback SSH guests: vbench vs parallel-ssh (pssh).

Every phase boundary of a run is a fan-out over SSH (start the load everywhere, stop it,
fetch results), and the storage studies drive 32 and more workers. Private sshds
(the local lab's, started under a temporary VBENCH home; one per 16 addresses, sshd's
limit) listen on N loopback addresses; each side runs ``date +%s.%N`` on every guest,
C at a time:

- vbench first: a fresh GuestPool (connections opened on the way, as at a run's first
  phase boundary);
- vbench again: the same pool, connections open (every later phase boundary);
- pssh: ``parallel-ssh -p C`` (a new ssh process and connection per guest, every time).

The spread of start times is max − min of the guests' own ``date`` stamps in one fan-out
(all guests share this machine's clock): how simultaneous "simultaneous" is. The sides
alternate within each of REPEAT rounds; medians and min–max are reported.

    .venv/bin/python -m bench.ssh_fanout [--guests 64] [--parallel 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vbench.guest.locallab import lab_down, lab_guest_specs, lab_up, local_key_file
from vbench.guest.pool import GuestPool

COMMAND = ["date", "+%s.%N"]
SSHD_ADDRESSES = 16  # sshd's limit of listen sockets (MAX_LISTEN_SOCKS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stamps(outputs: list[str]) -> list[float]:
    return [float(x) for out in outputs for x in out.split() if x.replace(".", "").isdigit()]


def _spread(stamps: list[float]) -> float | None:
    return max(stamps) - min(stamps) if len(stamps) > 1 else None


def vbench_side(specs: list[Any], parallel: int) -> dict[str, float | None]:
    """First fan-out on a fresh pool, then a second on the open connections."""
    with GuestPool(specs, max_parallel=parallel) as pool:
        names = pool.names
        t0 = time.perf_counter()
        first = pool.fan_out(names, lambda g: g.run(COMMAND).stdout)
        t1 = time.perf_counter()
        second = pool.fan_out(names, lambda g: g.run(COMMAND).stdout)
        t2 = time.perf_counter()
    assert len(first) == len(second) == len(names)
    return {
        "first_s": t1 - t0, "second_s": t2 - t1,
        "first_spread_s": _spread(_stamps(list(first.values()))),
        "second_spread_s": _spread(_stamps(list(second.values()))),
    }  # fmt: skip


def pssh_side(
    hosts: Path, user: str, key: Path, known: Path, parallel: int
) -> dict[str, float | None]:
    argv = [
        "parallel-ssh", "-h", str(hosts), "-l", user, "-p", str(parallel), "-t", "60", "-i",
        "-O", f"IdentityFile={key}", "-O", f"UserKnownHostsFile={known}",
        "-O", "StrictHostKeyChecking=yes", "-O", "BatchMode=yes", *COMMAND,
    ]  # fmt: skip
    t0 = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - t0
    ok = res.stdout.count("[SUCCESS]")
    n = len(hosts.read_text().split())
    if res.returncode != 0 or ok != n:
        raise SystemExit(f"parallel-ssh: {ok}/{n} succeeded (rc {res.returncode}):\n"
                         f"{res.stdout[-2000:]}{res.stderr[-2000:]}")  # fmt: skip
    lines = [ln for ln in res.stdout.splitlines() if "[SUCCESS]" not in ln]
    return {"first_s": elapsed, "first_spread_s": _spread(_stamps(lines))}


def _summary(values: list[float | None]) -> dict[str, float | None]:
    xs = [v for v in values if v is not None]
    if not xs:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--guests", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = ap.parse_args(argv)
    if shutil.which("parallel-ssh") is None:
        raise SystemExit("parallel-ssh not found (Debian package pssh: `make system`)")
    addresses = [f"127.0.{(i + 2) // 256}.{(i + 2) % 256}" for i in range(args.guests)]
    user = os.environ.get("USER") or subprocess.run(
        ["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    root = Path(tempfile.mkdtemp(prefix="vbench-fanout-"))
    port = _free_port()
    # sshd listens on at most 16 addresses: one lab sshd per 16 guests, all sharing
    # the first one's host and user keys (lab_up keeps keys it finds).
    groups = [addresses[i : i + SSHD_ADDRESSES] for i in range(0, len(addresses), SSHD_ADDRESSES)]
    homes = [root / f"lab{k}" for k in range(len(groups))]
    rounds: list[dict[str, Any]] = []
    try:
        specs = []
        for k, (home, group) in enumerate(zip(homes, groups, strict=True)):
            if k:
                (home / "lab").mkdir(parents=True)
                for f in (homes[0] / "lab").glob("*ed25519_key*"):
                    shutil.copy2(f, home / "lab" / f.name)
                for f in (homes[0] / "lab").glob("id_ed25519*"):
                    shutil.copy2(f, home / "lab" / f.name)
            lab_up(group, port, user=user, home=home)
            specs += lab_guest_specs(group, port, user=user, home=home, workdir=str(root / "w"),
                                     prefix=f"g{k}-")  # fmt: skip
        hosts = root / "hosts"
        hosts.write_text("".join(f"{a}:{port}\n" for a in addresses))
        known = root / "known_hosts"
        known.write_text("".join((h / "lab" / "known_hosts").read_text() for h in homes))
        home = homes[0]
        for r in range(args.repeat):
            # Alternate which side goes first, so neither always meets a warmer sshd.
            order = ("vbench", "pssh") if r % 2 == 0 else ("pssh", "vbench")
            row: dict[str, Any] = {}
            for side in order:
                if side == "vbench":
                    row["vbench"] = vbench_side(specs, args.parallel)
                else:
                    row["pssh"] = pssh_side(hosts, user, local_key_file(home), known,
                                            args.parallel)  # fmt: skip
            rounds.append(row)
    finally:
        for h in homes:
            if (h / "lab").exists():
                lab_down(home=h)
        shutil.rmtree(root, ignore_errors=True)
    report = _report(rounds, args)
    print(json.dumps({"rounds": rounds, **report}, indent=2) if args.json else _text(report))
    return 0


def _report(rounds: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    def col(side: str, key: str) -> list[float | None]:
        return [r[side].get(key) for r in rounds]

    first_ratio = [r["vbench"]["first_s"] / r["pssh"]["first_s"] for r in rounds]
    second_ratio = [r["vbench"]["second_s"] / r["vbench"]["first_s"] for r in rounds]
    return {
        "guests": args.guests, "parallel": args.parallel, "repeat": args.repeat,
        "vbench_first_s": _summary(col("vbench", "first_s")),
        "vbench_second_s": _summary(col("vbench", "second_s")),
        "pssh_s": _summary(col("pssh", "first_s")),
        "first_over_pssh": _summary(first_ratio),  # target <= 1.0
        "second_over_first": _summary(second_ratio),  # target <= 0.2
        "spread_vbench_first_s": _summary(col("vbench", "first_spread_s")),
        "spread_vbench_second_s": _summary(col("vbench", "second_spread_s")),
        "spread_pssh_s": _summary(col("pssh", "first_spread_s")),
    }  # fmt: skip


def _text(rep: dict[str, Any]) -> str:
    def fmt(s: dict[str, float | None], unit: str = "s", k: float = 1.0) -> str:
        if s["median"] is None:
            return "n/a"
        return (f"{s['median'] * k:.3f} {unit} (min {s['min'] * k:.3f}, "
                f"max {s['max'] * k:.3f})")  # fmt: skip

    lines = [
        f"fan-out of `{' '.join(COMMAND)}` to {rep['guests']} loopback guests, "
        f"{rep['parallel']} at a time, {rep['repeat']} rounds (median, min–max)",
        f"  vbench first (connect + run):   {fmt(rep['vbench_first_s'])}",
        f"  vbench second (open conns):     {fmt(rep['vbench_second_s'])}",
        f"  parallel-ssh:                   {fmt(rep['pssh_s'])}",
        f"  vbench first / pssh:            {fmt(rep['first_over_pssh'], 'x')}  (target <= 1.0)",
        f"  vbench second / first:          {fmt(rep['second_over_first'], 'x')}  (target <= 0.2)",
        f"  start spread vbench first:      {fmt(rep['spread_vbench_first_s'], 'ms', 1000)}",
        f"  start spread vbench second:     {fmt(rep['spread_vbench_second_s'], 'ms', 1000)}",
        f"  start spread parallel-ssh:      {fmt(rep['spread_pssh_s'], 'ms', 1000)}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
