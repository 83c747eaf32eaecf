#!/usr/bin/env python3
"""A replay of recorded esxtop batch output, installed on a loopback SSH guest as `esxtop`.

ESXi cannot run here, so the esxtop collector is tested against this stand-in: it takes
esxtop's batch options (-b, -d SECONDS, -n COUNT, -a, -c FILE) and prints a real
recorded capture (``recording.csv`` beside it): the header at once, then one recorded
sample every -d seconds, cycling through the recording, each stamped with the current
UTC time the way esxtop stamps it. A file ``die-after`` beside it holding N makes it
fail after N samples, like an esxtop that dies mid-trial.
"""

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


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
        row = rows[i % len(rows)]
        quoted = row.startswith(b'"')
        stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime()).encode()
        rest = row.split(b",", 1)[1]
        out.write((b'"' + stamp + b'"' if quoted else stamp) + b"," + rest + b"\n")
        out.flush()
        i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
