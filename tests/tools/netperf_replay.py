#!/usr/bin/env python3
"""A replay of recorded netperf output, installed on a loopback SSH guest as `netperf`
and as `netserver` (netperf is not in Debian's main archive, so it cannot run here).

As `netserver -D -L ADDR -p PORT` it listens on ADDR:PORT and accepts connections until
it is killed (so the driver's wait for a listening server and its cleanup are real).
As `netperf -H ADDR -p PORT -t TEST -l SECONDS … -- -o SELECTORS …` it connects to that
server (failing like netperf when nothing listens), waits the -l seconds a real run
takes, and prints the recorded capture ``recording.txt`` beside it, unchanged: the
recording's columns are what the recorded netperf printed, whatever -o asked for.
Each invocation appends its argv to ``calls.log`` beside it.
"""

import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def opts(argv: list[str]) -> dict[str, str]:
    out, it = {}, iter(argv)
    for arg in it:
        if arg == "--":
            break
        if arg in ("-H", "-p", "-t", "-l", "-L"):
            out[arg] = next(it)
    return out


def netserver(o: dict[str, str]) -> int:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((o.get("-L", "0.0.0.0"), int(o.get("-p", "12865"))))
        s.listen(16)
        while True:
            conn, _ = s.accept()
            conn.close()


def netperf(o: dict[str, str]) -> int:
    try:
        socket.create_connection((o["-H"], int(o.get("-p", "12865"))), timeout=10).close()
    except OSError as exc:
        print(f"establish control: are you sure there is a netserver listening on "
              f"{o['-H']} at port {o.get('-p')}? ({exc})", file=sys.stderr)
        return 1
    time.sleep(float(o.get("-l", "10")))
    sys.stdout.write((HERE / "recording.txt").read_text())
    sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    with (HERE / "calls.log").open("a") as log:
        log.write(" ".join([Path(sys.argv[0]).name, *argv]) + "\n")
    if argv[:1] in (["--version"], ["-V"]):
        print(f"{Path(sys.argv[0]).name}: a replay of recorded netperf output (vbench tests)")
        return 0
    o = opts(argv)
    return netserver(o) if Path(sys.argv[0]).name == "netserver" else netperf(o)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
