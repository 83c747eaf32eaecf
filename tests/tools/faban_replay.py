#!/usr/bin/env python3
"""A replay of a recorded Faban run, installed on a loopback SSH guest in place of the
user's Faban driver command (Faban is a Java harness with agents and a master that
vbench's test lab does not run).

Usage: ``faban_replay.py RUN_XML OUTPUT_DIR``. It reads the run configuration it is
given (as Faban would), appends what it found there — rampUp, steadyState, rampDown,
scale, outputDir — to ``calls.log`` beside it, then at once leaves the recorded run's
files (``summary.xml``, ``detail.xan``, ``driver.log``, whichever lie beside it) in
``OUTPUT_DIR/129/`` as Faban leaves a run's output in a folder named by its run id, and
prints the recorded console output (``console.txt`` beside it, when present). The files
are written as recorded. ``--exit N`` ends with status N, leaving nothing.
"""

import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
FA = "{http://faban.sunsource.net/ns/faban}"


def setting(root: ET.Element, tag: str) -> str:
    el = next((e for e in root.iter() if isinstance(e.tag, str) and e.tag.endswith(tag)), None)
    return "" if el is None or el.text is None else el.text.strip()


def main(argv: list[str]) -> int:
    status = 0
    if argv[:1] == ["--exit"]:
        status, argv = int(argv[1]), argv[2:]
    config, output = Path(argv[0]), Path(argv[1])
    root = ET.parse(config).getroot()
    found = {t: setting(root, t) for t in (f"{FA}rampUp", f"{FA}steadyState", f"{FA}rampDown",
                                           f"{FA}scale", "outputDir")}
    with (HERE / "calls.log").open("a") as log:
        log.write("\t".join(f"{k.split('}')[-1]}={v}" for k, v in found.items()) + "\n")
    # It ends at once: the driver marks the phases on its own clock whatever the
    # command does, and a Faban run that ends early with status 0 is still imported.
    if status:
        print("SEVERE: replayed failure", flush=True)
        return status
    run = output / "129"
    run.mkdir(parents=True, exist_ok=True)
    for name in ("summary.xml", "detail.xan", "driver.log"):
        if (HERE / name).exists():
            shutil.copyfile(HERE / name, run / name)
    if (HERE / "console.txt").exists():
        sys.stdout.write((HERE / "console.txt").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
