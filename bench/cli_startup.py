"""Benchmark: how long each light command takes to start, against the import floor of
what it truly needs (issue 27).

Every figure is a fresh process, as a user, a cron line or an e2e test pays it. Each
command is paired with its floor — a bare ``python -c "import ..."`` of the libraries
the command cannot do without — and the two are run alternately in the same rounds
(the order flips every round, so neither always runs on a warmer machine):

| command | floor | goal |
|---|---|---|
| ``vbench --version``, ``vbench --help`` | ``import click`` | ≤ 2 × |
| ``vbench validate examples/quickstart.yaml`` | ``import click, yaml, pydantic`` | ≤ 2.5 × |
| ``vbench plan`` of a 1,000-point scenario | ``import click, yaml, pydantic`` | (shown) |
| ``vbench ls`` over 100 stored runs | ``import click, sqlalchemy`` | ≤ 2.5 × |
| ``validate`` again, beside that store | ``import click, yaml, pydantic`` | (shown) |
| ``validate`` again | the same floor building one one-field model | (shown) |

``validate`` and ``plan`` run in a home without a store (first use: nothing to learn
the estimate from, so no SQLAlchemy); the row beside the store shows what one adds —
validate then opens it to learn the estimate from earlier runs of the scenario. The last
row shows how much of the gap is pydantic's own: it defers its schema machinery (and its
plugin lookup through ``importlib.metadata``) to the first model a program builds.

The figure is the median over ``--rounds`` of each side (wall time, and the CPU time of
the child process, which moves less when other jobs load the machine), and the ratio of
the medians; the goal is judged on the CPU ratio. ``--source DIR`` measures another
checkout (e.g. the code before the change: ``git worktree add --detach /tmp/old-vbench
<commit>``) with this interpreter; the store and the scenario are the same for both.

    .venv/bin/python -m bench.cli_startup [--rounds 9] [--source /tmp/old-vbench]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
# 10 × 10 × 10 fio levels: 1,000 points.
LEVELS = {
    "bs": [f"{i + 1}k" for i in range(10)],
    "iodepth": list(range(1, 11)),
    "rwmixread": list(range(10, 20)),
}


ONE_MODEL = "click, yaml, pydantic; pydantic.create_model('M', x=(int, ...))"


@dataclass(frozen=True)
class Pair:
    name: str
    argv: tuple[str, ...]  # vbench arguments
    floor: str  # the modules of the floor's `import` (and what follows it)
    goal: float | None  # the target ratio, None when only shown
    store: bool = False  # run with the store of stored runs (else a first-use home)


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def scenario_1000(root: Path) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    data.pop("derived", None)
    data["factors"] = LEVELS
    path = root / "plan-1000.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


# Run by the interpreter with the measured checkout on its path: the store is written by
# the vbench that reads it (the schema moves between versions). Another scenario's name
# than the quickstart's, whose estimate would otherwise read these runs.
BUILD_STORE = """
import sys
from pathlib import Path
from vbench.results.records import RunInfo
from vbench.results.store import Store

home, runs = Path(sys.argv[1]), int(sys.argv[2])
store = Store.open(None, home / "results")
start = 1_800_000_000.0
for r in range(runs):
    run_id = f"run-{r:04d}"
    at = start + r * 3600
    store.create_run(RunInfo(run_id, "bench-ls", at, tags=("nightly",),
                             scenario={"name": "bench-ls"}, lab={"name": "bench"}))
    store.finish_run(run_id, "ok", at + 600)
store.close()
"""


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


def _goal_text(p: Pair, ratio: float) -> str:
    """The goal and whether the CPU-time ratio meets it: on a machine other jobs load,
    a process's wall time waits for the CPU as much as it uses it, and the floor's (a
    few tens of milliseconds) moves most; the wall ratio is printed beside it."""
    if p.floor == ONE_MODEL:
        return "floor: import click, yaml, pydantic and build one one-field model"
    if p.goal is None:
        return "-"
    return f"≤ {p.goal:g}× of `import {p.floor}`: {'met' if ratio <= p.goal else 'NOT met'}"


def _pairs(work: Path, runs: int) -> list[Pair]:
    plan_file = scenario_1000(work)
    return [
        Pair("--version", ("--version",), "click", 2.0),
        Pair("--help", ("--help",), "click", 2.0),
        Pair("validate quickstart", ("validate", str(QUICKSTART)), "click, yaml, pydantic", 2.5),
        Pair("plan, 1,000 points", ("plan", str(plan_file)), "click, yaml, pydantic", None),
        Pair(f"ls, {runs} runs", ("ls",), "click, sqlalchemy", 2.5, store=True),
        Pair("validate, store there", ("validate", str(QUICKSTART)), "click, yaml, pydantic",
             None, store=True),
        Pair("validate vs one model", ("validate", str(QUICKSTART)), ONE_MODEL, None),
    ]


def _environment(work: Path, source: Path | None) -> tuple[dict[str, str], dict[str, str]]:
    """The environment with the store of runs, and the first-use one (no store)."""
    env = {**os.environ, "VBENCH_HOME": str(work / "home"), "COLUMNS": "120"}
    # PYTHONDONTWRITEBYTECODE (set in some shells and CI jobs) would keep the warm-up from
    # writing byte code: every round would then compile the changed modules again, a cost
    # no installed vbench pays.
    for key in ("VBENCH_STORE", "VBENCH_RESULTS", "PYTHONDONTWRITEBYTECODE"):
        env.pop(key, None)
    if source:
        env["PYTHONPATH"] = str(source.resolve())
    (work / "first-use").mkdir()
    return env, {**env, "VBENCH_HOME": str(work / "first-use")}


def measure(pairs: list[Pair], rounds: int, work: Path, with_store: dict[str, str],
            first_use: dict[str, str]) -> dict[str, list[Timing]]:
    """Each command and each floor, ``rounds`` times, alternately, after one warm-up."""
    # The console script users run (the interpreter's `-m` or `-c` would put the
    # working directory first on sys.path).
    vbench = str(Path(sys.executable).parent / "vbench")
    argv = {p.name: [vbench, *p.argv] for p in pairs}
    envs = {p.name: with_store if p.store else first_use for p in pairs}
    for p in pairs:
        argv[f"import {p.floor}"] = [sys.executable, "-c", f"import {p.floor}"]
        envs[f"import {p.floor}"] = with_store
    for key in argv:  # warm-up: byte-code compiled, files cached
        timed(argv[key], envs[key], work)
    times: dict[str, list[Timing]] = {k: [] for k in argv}
    for r in range(rounds):
        for p in pairs:
            sides = [p.name, f"import {p.floor}"]
            for key in sides if r % 2 == 0 else reversed(sides):
                times[key].append(timed(argv[key], envs[key], work))
    return times


def report(pairs: list[Pair], times: dict[str, list[Timing]]) -> None:
    print(f"{'command':<24} {'wall s':>7} {'floor':>7} {'× floor':>8} "
          f"{'CPU s':>7} {'floor':>7} {'× floor':>8}  goal")
    for p in pairs:
        cmd, flo = times[p.name], times[f"import {p.floor}"]
        w, fw = statistics.median(t.wall for t in cmd), statistics.median(t.wall for t in flo)
        c, fc = statistics.median(t.cpu for t in cmd), statistics.median(t.cpu for t in flo)
        print(f"{p.name:<24} {w:7.3f} {fw:7.3f} {w / fw:7.1f}× {c:7.3f} {fc:7.3f} "
              f"{c / fc:7.1f}×  {_goal_text(p, c / fc)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=100, help="stored runs for `vbench ls`")
    ap.add_argument("--source", type=Path, help="measure the vbench of this checkout")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vbench-bench-startup-"))
    try:
        with_store, first_use = _environment(work, args.source)
        build = [sys.executable, "-c", BUILD_STORE, str(work / "home"), str(args.runs)]
        timed(build, with_store, work)
        pairs = _pairs(work, args.runs)
        load = os.getloadavg()[0]
        times = measure(pairs, args.rounds, work, with_store, first_use)
        print(f"vbench from {args.source or ROOT}; {args.rounds} rounds; load average "
              f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
              f"{os.cpu_count()} CPUs")
        report(pairs, times)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
