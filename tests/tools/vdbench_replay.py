#!/usr/bin/env python3
"""A replay of recorded vdbench output, run on a loopback SSH guest as `vdbench`.

vdbench (Java, an Oracle download) is not installed here, so the vdbench workload is
tested against this stand-in: it takes vdbench's `-f PARMFILE -o OUTDIR`, checks the
parameter file is there, and writes a real recorded output (tests/data/vdbench/<name>/,
see PROVENANCE.md there) into OUTDIR. The recording is named in the parameter file by a
comment line `* replay: <name>`; a line `* replay-exit: N` makes it exit N instead.
"""

import shutil
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "vdbench"


def main(argv: list[str]) -> int:
    opts = dict(zip(argv[::2], argv[1::2], strict=False))
    parm = Path(opts.get("-f", ""))
    if not parm.is_file() or "-o" not in opts:
        print(f"vdbench replay: usage: -f PARMFILE -o OUTDIR (got {argv})", file=sys.stderr)
        return 2
    settings = {}
    for line in parm.read_text().splitlines():
        if line.startswith("* replay"):
            key, _, value = line[2:].partition(":")
            settings[key.strip()] = value.strip()
    if "replay-exit" in settings:
        print("vdbench replay: failing as asked", file=sys.stderr)
        return int(settings["replay-exit"])
    out = Path(opts["-o"])
    out.mkdir(parents=True, exist_ok=True)
    for f in (DATA / settings.get("replay", "sd-three-rates")).glob("*.html"):
        shutil.copy(f, out / f.name)
    print("Vdbench execution completed successfully (replay).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
