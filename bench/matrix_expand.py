"""Benchmark: factor expansion and the loader's limits (issue 18, denial of service by input).

Measured in the same run, each the median CPU time of ``--repeat`` (peak memory from
one traced run each):

- ``expand 1000``: :func:`vbench.config.matrix.expand` of a legit 10 × 10 × 10 fio
  matrix (1,000 points), next to the baseline: the same points built the way the
  expansion did before, a deep copy of the scenario's data and of its position tables
  per point (the function ``_deepcopy_point`` below);
- ``refuse 10^7``: loading and expanding seven factors of ten levels (10,000,000
  points, over ``settings.max_points``), refused before any point is built, next to
  loading the same file alone; the old way is projected from its per-point cost (it
  was not run: it ran out of memory after minutes);
- ``billion laughs``: loading a 402-byte file whose aliases expand to 4.8 million
  values (refused), next to loading ``examples/quickstart.yaml``.

    .venv/bin/python -m bench.matrix_expand [--repeat 5]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from vbench.config.load import load_scenario, set_path, validate_model
from vbench.config.matrix import PointSpec, expand
from vbench.config.scenario import Scenario
from vbench.config.yamlsrc import Source, load_yaml_file
from vbench.errors import ConfigValidationError

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
LEVELS = {
    "bs": [f"{i + 1}k" for i in range(10)],
    "iodepth": list(range(1, 11)),
    "numjobs": list(range(1, 11)),
    "rwmixread": list(range(10, 20)),
    "size": [f"{i + 1}m" for i in range(10)],
    "rate_iops": list(range(100, 110)),
    "blockalign": [f"{i + 1}k" for i in range(10)],
}
# Seven anchors, each a list of nine aliases of the one before: 9^7 values in 473 bytes.
LAUGHS = "version: 1\nname: laughs\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['lol'] * 9)}]\n"
    for i in range(7)
)


def scenario_file(root: Path, factors: int) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    data.pop("derived", None)
    data["factors"] = {name: LEVELS[name] for name in list(LEVELS)[:factors]}
    path = root / f"matrix-{factors}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _deepcopy_point(spec: PointSpec, scenario: Scenario, src: Source) -> PointSpec:
    """The baseline: how a point was built before issue 18 (a deep copy per point)."""
    data = copy.deepcopy(src.data)
    for path, value, _origin in spec.overrides:
        parts = tuple(int(p) if p.isdigit() else p for p in path.split("."))
        set_path(data, parts, value)
    point_src = Source(src.file, data, dict(src.values), dict(src.keys), dict(src.overridden))
    for path, _value, origin in spec.overrides:
        parts = tuple(int(p) if p.isdigit() else p for p in path.split("."))
        _file, line, col = src.locate(origin)
        point_src.values[parts] = (line or 1, col or 1)
    point = validate_model(Scenario, point_src)
    return PointSpec(spec.index, spec.labels, spec.overrides, spec.profiles, point, point_src)


def expand_deepcopy(path: Path) -> int:
    loaded = load_scenario(path)
    import vbench.config.matrix as matrix

    original = matrix._with_scenario
    matrix._with_scenario = _deepcopy_point  # type: ignore[assignment]
    try:
        return len(expand(loaded.model, loaded.source))
    finally:
        matrix._with_scenario = original


def expand_now(path: Path) -> int:
    loaded = load_scenario(path)
    return len(expand(loaded.model, loaded.source))


def refused(fn: Callable[[], Any]) -> Callable[[], str]:
    def run() -> str:
        try:
            fn()
        except ConfigValidationError as exc:
            return str(exc.issues[0])
        raise AssertionError("not refused")

    return run


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median CPU seconds of this process (the work is single-threaded; CPU time is what
    a loaded machine does not distort)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        m1000, m7 = scenario_file(root, 3), scenario_file(root, 7)
        laughs = root / "laughs.yaml"
        laughs.write_text(LAUGHS, encoding="utf-8")
        assert expand_now(m1000) == expand_deepcopy(m1000) == 1000
        rows = []
        new = timed(lambda: expand_now(m1000), args.repeat)
        old = timed(lambda: expand_deepcopy(m1000), args.repeat)
        new_mb = peak_mb(lambda: expand_now(m1000))
        old_mb = peak_mb(lambda: expand_deepcopy(m1000))
        rows.append(("expand 1000 points", new, old, f"peak {new_mb:.1f} MB vs {old_mb:.1f} MB"))
        refuse = timed(refused(lambda: expand_now(m7)), args.repeat)
        load = timed(lambda: load_scenario(m7), args.repeat)
        projected = old / 1000 * 10**7
        rows.append(("refuse 10^7 points", refuse, load,
                     f"the old way, projected: {projected / 3600:.1f} h"))
        laugh = timed(refused(lambda: load_yaml_file(laughs)), args.repeat)
        quick = timed(lambda: load_yaml_file(QUICKSTART), args.repeat)
        rows.append((f"billion laughs ({len(LAUGHS)} bytes)", laugh, quick,
                     "baseline: loading quickstart.yaml"))
        print(f"{'case':32s} {'seconds':>9s} {'baseline':>9s} {'ratio':>7s}  note")
        for name, t, base, note in rows:
            print(f"{name:32s} {t:9.4f} {base:9.4f} {t / base:7.2f}  {note}")
        print(refused(lambda: expand_now(m7))())
        print(refused(lambda: load_yaml_file(laughs))())


if __name__ == "__main__":
    main()
