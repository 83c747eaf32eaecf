#!/usr/bin/env python3
"""A stand-in for a lab set-up command (tc … netem, an array CLI, a BIOS tool) that only
records its arguments: netem is not available in this machine's kernel, so the hook
tests check what a hook runs, in which order, with which arguments, not its effect.

Each call appends ``{"argv": [...], "time": ...}`` to ``calls.jsonl`` beside it. When a
file ``fail-on`` beside it holds a text found in one of the arguments, the call fails
(exit 1), like a set-up command that refuses a value.
"""

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    with (HERE / "calls.jsonl").open("a") as f:
        f.write(json.dumps({"argv": argv, "time": time.time()}) + "\n")
    fail = HERE / "fail-on"
    if fail.exists() and any(fail.read_text().strip() in a for a in argv):
        print(f"record_args: refusing {argv}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
