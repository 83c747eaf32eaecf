#!/usr/bin/env python3
"""A replay of recorded esxtop batch output, installed on a loopback SSH guest as `esxtop`.

ESXi cannot run here, so the esxtop collector is tested against this stand-in: it takes
esxtop's batch options (-b, -d SECONDS, -n COUNT, -a, -c FILE) and prints a real
recorded capture (``recording.csv`` beside it): the header at once, then one recorded
sample every -d seconds, cycling through the recording, each stamped with the current
UTC time the way esxtop stamps it. A file ``die-after`` beside it holding N makes it
fail after N samples, like an esxtop that dies mid-trial.

Recorded and measured: every value it prints is the recording's, except where a file
``busy-groups`` beside it maps a VM group of the recording to a real process on this
machine, one per line (``poseidon=4242``). Then that group's ``Group Cpu(<id>:poseidon)
\\% Used`` is *measured*: the CPU time the process and all its descendants used over the
sample's interval (utime + stime from /proc/<pid>/stat, in clock ticks), in % of one
core, as esxtop measures a VM's group. A process gone counts 0. This lets a test load a
"VM" with a real `stress-ng --cpu 1` and see what vbench makes of it.
"""

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TICKS = os.sysconf("SC_CLK_TCK")


def _stats() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, utime + stime in ticks) of every process now."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        rest = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
        out[int(entry.name)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
    return out


def tree_ticks(pid: int) -> int:
    """CPU ticks used so far by ``pid`` and its descendants (0 when it is gone)."""
    stats = _stats()
    children: dict[int, list[int]] = {}
    for p, (parent, _) in stats.items():
        children.setdefault(parent, []).append(p)
    total, todo = 0, [pid] if pid in stats else []
    while todo:
        p = todo.pop()
        total += stats[p][1]
        todo += children.get(p, [])
    return total


def busy_groups(header: bytes) -> dict[int, int]:
    """Column index -> pid for the groups ``busy-groups`` maps to a process."""
    path = HERE / "busy-groups"
    if not path.exists():
        return {}
    wanted = dict(line.split("=", 1) for line in path.read_text().split() if "=" in line)
    out = {}
    for i, cell in enumerate(header.decode().split(",")):
        name = cell.strip('"')
        if "\\Group Cpu(" not in name or not name.endswith("\\% Used"):
            continue
        group = name.split("Group Cpu(", 1)[1].rsplit(")", 1)[0].partition(":")[2]
        if group in wanted:
            out[i] = int(wanted[group])
    return out


def measured(row: bytes, columns: dict[int, int], last: dict[int, tuple[float, int]]
             ) -> bytes:
    """``row`` with each busy group's value replaced by its process tree's CPU % since the
    previous sample (``last``: column -> (time, ticks), updated)."""
    if not columns:
        return row
    cells = row.split(b",")
    for i, pid in columns.items():
        now, ticks = time.monotonic(), tree_ticks(pid)
        then, before = last.get(i, (now, ticks))
        used = max(0, ticks - before) / TICKS / max(now - then, 1e-6) * 100
        last[i] = (now, ticks)
        quoted = cells[i].startswith(b'"')
        value = f"{used:.2f}".encode()
        cells[i] = b'"' + value + b'"' if quoted else value
    return b",".join(cells)


def main(argv: list[str]) -> int:
    delay, count, batch = 5.0, None, False
    it = iter(argv)
    for arg in it:
        if arg == "-b":
            batch = True
        elif arg == "-d":
            delay = float(next(it))
        elif arg == "-n":
            count = int(next(it))
        elif arg == "-c":
            if not Path(next(it)).is_file():
                print("esxtop: cannot read the configuration file", file=sys.stderr)
                return 1
        elif arg != "-a":
            print(f"esxtop: unknown option {arg}", file=sys.stderr)
            return 1
    if not batch:
        print("esxtop (replay) only replays batch mode (-b)", file=sys.stderr)
        return 1
    lines = (HERE / "recording.csv").read_bytes().split(b"\n")
    header, rows = lines[0], [r for r in lines[1:] if r.strip()]
    die = HERE / "die-after"
    die_after = int(die.read_text()) if die.exists() else None
    busy = busy_groups(header)
    last = {i: (time.monotonic(), tree_ticks(pid)) for i, pid in busy.items()}
    out = sys.stdout.buffer
    out.write(header + b"\n")
    out.flush()
    start = time.time()
    i = 0
    while count is None or i < count:
        if die_after is not None and i >= die_after:
            print("esxtop: replay told to die", file=sys.stderr)
            return 1
        time.sleep(max(0.0, start + (i + 1) * delay - time.time()))
        row = measured(rows[i % len(rows)], busy, last)
        quoted = row.startswith(b'"')
        stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime()).encode()
        rest = row.split(b",", 1)[1]
        out.write((b'"' + stamp + b'"' if quoted else stamp) + b"," + rest + b"\n")
        out.flush()
        i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
