#!/usr/bin/env python3
"""A replay of a recorded DVD Store driver console run, installed on a loopback SSH guest
in place of the user's driver (ds2webdriver.exe & co. are C# programs that cannot run
here).

It takes the driver's ``--name=value`` options, appends them to ``calls.log`` beside it,
and prints ``recording.txt`` (a real console capture: the echoed settings, the periodic
``et=`` lines, ``Stats reset``, ``Run over``, the hard-wrapped ``Final`` line …) at its
recorded pace, time-scaled so that the recorded warm-up lasts ``--warmup_time`` and the
recorded steady part ``--run_time`` (both in minutes, as the driver takes them): each
``et=`` line appears at its recorded ``et`` times that scale. The lines are printed as
recorded. ``--target=unreachable`` fails like a driver that cannot connect.
"""

import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_ET = re.compile(r"^et=\s*([\d.]+)")


def segments(lines: list[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    """(head, warm-up lines, steady lines, tail) of the recording."""
    first = next(i for i, ln in enumerate(lines) if _ET.match(ln))
    reset = lines.index("Stats reset")
    over = lines.index("Run over")
    return lines[:first], lines[first:reset + 1], lines[reset + 1:over], lines[over:]


def play(block: list[str], seconds: float) -> None:
    """Print ``block`` so that its last et= line comes ``seconds`` after the start."""
    ets = [float(m.group(1)) for ln in block if (m := _ET.match(ln))]
    scale = seconds / max(ets) if ets and max(ets) > 0 else 0.0
    start = time.monotonic()
    for line in block:
        m = _ET.match(line)
        if m:
            time.sleep(max(0.0, start + float(m.group(1)) * scale - time.monotonic()))
        print(line, flush=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print("dvdstore_replay: a replay of a recorded DVD Store driver run (vbench tests)")
        return 0
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    with (HERE / "calls.log").open("a") as log:
        log.write("\t".join(argv) + "\n")
    if opts.get("target") == "unreachable":
        print("Thread 0: Error connecting to unreachable", flush=True)
        return 1
    lines = (HERE / "recording.txt").read_text().splitlines()
    head, warm, steady, tail = segments(lines)
    print("\n".join(head), flush=True)
    play(warm, float(opts.get("warmup_time", "1")) * 60)
    play(steady, float(opts.get("run_time", "1")) * 60)
    print("\n".join(tail), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
