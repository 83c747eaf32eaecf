"""Fuzzing (issue 18): every example, catalog scenario, lab and a study of each driver no
scenario uses (faban, netperf, vdbench; issue 23), mutated a few hundred ways
per run (tests/fuzz_configs.py), goes through ``vbench validate`` and ``vbench plan`` (and,
for labs, the lab loader and ``validate --lab``) in process. Each variant must succeed or
exit 2 with every message located (file:line:column, or the ``--set`` it is about) —
never a traceback, an internal error or another exit code — within 5 s of CPU and 256 MB.

The seed rotates from run to run (the session's seed, tests/seed.py), so that runs
together explore far more variants than one run's budget; it is printed in pytest's
header and summary, and every failure message names seed and variant. VBENCH_TEST_SEED
(or VBENCH_FUZZ_SEED, for this file alone) repeats a run; VBENCH_FUZZ_PER_FILE explores
further in one run.
"""

from __future__ import annotations

import io
import os
import random
import re
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from types import FrameType

import pytest

from tests import seed as session_seed
from tests.fuzz_configs import Variant, variants
from vbench.config.load import load_lab
from vbench.errors import EXIT_CONFIG, ConfigValidationError

ROOT = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("VBENCH_FUZZ_SEED") or session_seed.SEED)
GENERATOR_SEED = 18  # the generator's own test checks one fixed sample: it must not flake
PER_FILE = int(os.environ.get("VBENCH_FUZZ_PER_FILE", "10"))
CPU_SECONDS = 5.0  # the old loader spent > 20 s on a 473-byte alias bomb
RSS_MB = 256  # growth of the process's peak memory one variant may cause
SCENARIOS = sorted([*ROOT.glob("examples/*.yaml"), *ROOT.glob("scenarios/*.yaml")])
LABS = sorted(ROOT.glob("examples/labs/*.yaml"))
LAB_OF = re.compile(r"--lab (examples/labs/[\w.-]+\.yaml)")
LOCATED = re.compile(r"^(?P<where>.+?):\d+:\d+: ")  # then the path (may be blank) and message


class CpuLimit(BaseException):
    """Raised in the case when it has used its CPU time (not an Exception: the CLI's
    catch-all must not turn it into an exit code)."""


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    def expired(signum: int, frame: FrameType | None) -> None:
        raise CpuLimit()

    previous = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def vbench(argv: list[str]) -> tuple[int, str]:
    """``vbench ARGV`` as the console script runs it: (exit code, stderr)."""
    from vbench.cli import main

    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
            return (code if isinstance(code, int) else 1), err.getvalue()
    return 0, err.getvalue()


def unlocated(stderr: str, places: tuple[str, ...]) -> list[str]:
    """The lines of an exit-2 answer that name no file:line:column (or --set)."""
    bad = []
    for line in stderr.splitlines():
        if not line.strip():
            continue
        m = LOCATED.match(line)
        if m and m.group("where").startswith(places):
            continue
        if line.startswith("--set "):
            continue
        bad.append(line)
    return bad or ([] if stderr.strip() else ["(no message)"])


def check(variant: Variant, argv: list[str], places: tuple[str, ...], where: Path) -> None:
    before = peak_mb()
    try:
        with cpu_limit(CPU_SECONDS):
            code, stderr = vbench(argv)
    except CpuLimit:
        pytest.fail(f"seed {SEED}, {variant.name}: over {CPU_SECONDS} s of CPU: "
                    f"vbench {' '.join(argv)} (variant kept in {where})")
    grew = peak_mb() - before
    context = f"seed {SEED}, {variant.name}: vbench {' '.join(argv)[:300]} (in {where})"
    assert grew < RSS_MB, f"{context}: peak memory grew {grew:.0f} MB"
    assert code in (0, EXIT_CONFIG), f"{context}: exit {code}\n{stderr[-2000:]}"
    assert "Traceback" not in stderr and "internal error" not in stderr, f"{context}\n{stderr}"
    if code == EXIT_CONFIG:
        bad = unlocated(stderr, places)
        assert not bad, f"{context}: unlocated: {bad[:3]}\n{stderr[-2000:]}"


def lab_for(scenario: Path) -> Path | None:
    m = LAB_OF.search(scenario.read_text(encoding="utf-8"))
    return ROOT / m.group(1) if m else None


def test_mutated_scenarios_validate_and_plan_or_exit_2_located(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    cases = 0
    for source in SCENARIOS:
        lab = lab_for(source)
        for i, variant in enumerate(variants(source.name, source.read_text(), rng, PER_FILE)):
            path = tmp_path / f"{source.stem}-{i}.yaml"
            path.write_bytes(variant.data)
            sets = [a for s in variant.sets for a in ("--set", s)]
            command = "validate" if i % 2 == 0 else "plan"
            argv, places = [command, str(path), *sets], (str(path),)
            if lab is not None and i % 3 == 0:  # the lab may be at fault (a missing key)
                argv, places = [*argv, "--lab", str(lab)], (str(path), str(lab))
            check(variant, argv, places, path)
            cases += 1
    assert cases == len(SCENARIOS) * PER_FILE


# Studies of the drivers no example or catalog scenario uses (issue 23: every study is
# fuzzed): factors, QoS with `where:`, derived figures, charts, as a user writes them.
STUDIES = {
    "faban-study.yaml": """\
version: 1
name: faban-study
description: Faban driver on 1 to 4 clients, per-operation response time against a limit.
topology: {clients: {count: 4}}
workload: {driver: faban, params: {command: [faban-driver, -run, "{output_dir}"]}}
factors:
  instances: {path: topology.clients.count, levels: [1, 2, 4]}
  grace: [300, 600]
repeat: 2
phases: {warmup: 5s, steady: 30s}
qos:
  - {metric: rt_p95, where: {operation: [Browse, Order]}, op: "<=", threshold: 500, unit: ms}
  - {metric: ops_per_sec, op: ">=", threshold: 10, at: {instances: [2, 4]}}
derived:
  - {name: speedup, kind: speedup, metric: ops_per_sec, baseline: {instances: 1}}
report: {headline: [ops_per_sec, rt_p95], charts: [{metric: ops_per_sec, x: instances}]}
""",
    "netperf-study.yaml": """\
version: 1
name: netperf-study
description: netperf TCP_STREAM over message sizes, throughput per core.
topology: {servers: {count: 1}, clients: {count: 1}}
workload: {driver: netperf, params: {test: TCP_STREAM}}
factors:
  message_size: [1K, 16K, 64K]
repeat: 3
phases: {warmup: 2s, steady: 20s}
report: {charts: [{metric: gbps, x: message_size}]}
""",
    "vdbench-study.yaml": """\
version: 1
name: vdbench-study
description: vdbench run definitions from a parameter file, two guest counts.
topology: {target: {count: 2}}
workload: {driver: vdbench, params: {parmfile: PARMFILE, command: vdbench}}
factors:
  guests: {path: topology.target.count, levels: [1, 2]}
phases: {steady: 1m}
qos:
  - {metric: resp, op: "<=", threshold: 2, unit: ms}
derived:
  - {name: per_guest, kind: expr, expr: "total_iops / 2"}
report: {charts: [{metric: total_iops, x: guests}]}
""",
}


def test_mutated_studies_without_a_catalog_scenario_validate_or_exit_2_located(
    tmp_path: Path,
) -> None:
    from vbench.workloads.base import driver_names

    parm = tmp_path / "fuzz.parm"
    parm.write_text("sd=sd1,lun=/dev/null\n")
    sources = {}
    for name, text in STUDIES.items():
        sources[name] = tmp_path / name
        sources[name].write_text(text.replace("PARMFILE", str(parm)))
        assert vbench(["validate", str(sources[name])])[0] == 0, name  # the study is valid
    import yaml

    cataloged = {d for p in SCENARIOS
                 for d in drivers_of(yaml.safe_load(p.read_text(encoding="utf-8")))}
    studied = {yaml.safe_load(t)["workload"]["driver"] for t in STUDIES.values()}
    assert set(driver_names()) <= cataloged | studied, "a driver with no study to fuzz"
    rng = random.Random(SEED + 2)
    cases = 0
    for name, source in sources.items():
        for i, variant in enumerate(variants(name, source.read_text(), rng, PER_FILE)):
            path = tmp_path / f"{source.stem}-{i}.yaml"
            path.write_bytes(variant.data)
            sets = [a for s in variant.sets for a in ("--set", s)]
            command = "validate" if i % 2 == 0 else "plan"
            check(variant, [command, str(path), *sets], (str(path),), path)
            cases += 1
    assert cases == len(STUDIES) * PER_FILE


def test_mutated_labs_load_and_validate_or_exit_2_located(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    scenario_of = {
        "local.yaml": "examples/quickstart.yaml",
        "sim.yaml": "examples/quickstart.yaml",
        "redis-3host.yaml": "scenarios/redis-scaleout.yaml",
        "vcbench-sim.yaml": "examples/vcbench-sim.yaml",
    }
    assert {p.name for p in LABS} <= set(scenario_of), "a new lab needs its scenario here"
    for source in LABS:
        scenario = ROOT / scenario_of[source.name]
        for i, variant in enumerate(variants(source.name, source.read_text(), rng,
                                             PER_FILE * 3)):
            path = tmp_path / f"lab-{source.stem}-{i}.yaml"
            path.write_bytes(variant.data)
            try:
                with cpu_limit(CPU_SECONDS):
                    load_lab(path)
            except ConfigValidationError as exc:
                bad = [str(x) for x in exc.issues if x.line is None or x.file != str(path)]
                assert not bad, f"seed {SEED + 1}, {variant.name}: unlocated {bad[:3]}"
            except CpuLimit:
                pytest.fail(f"seed {SEED + 1}, {variant.name}: load_lab over {CPU_SECONDS} s "
                            f"of CPU (variant kept in {path})")
            # --set mutations apply to the scenario here
            sets = [a for s in variant.sets for a in ("--set", s)]
            argv = ["validate", str(scenario), "--lab", str(path), *sets]
            check(variant, argv, (str(path), str(scenario)), path)


def test_the_fuzzer_makes_the_attack_classes_of_issue_18() -> None:
    """The generator must keep producing what the issue's attacks were (a refactor that
    loses a class would let the test pass on a weaker diet)."""
    rng = random.Random(GENERATOR_SEED)
    made = [v.name for s in SCENARIOS for v in variants(s.name, s.read_text(), rng, PER_FILE)]
    for kind in ("m_nul", "m_bad_utf8", "m_deep_value", "m_laughs", "m_recursive_alias",
                 "m_huge_number", "m_control", "d_rename_key", "d_unknown_key", "d_value",
                 "d_wrong_type", "--set"):
        assert any(kind in name for name in made), kind
    assert len(made) >= 250


# -- hostile values in every string field of every driver (issue 28) ----------------------

HOSTILE_TEXT = [
    "", " ", "x" * 5000, "a\x1bb", "\x1b]0;owned\x07", "a\x00b", "one\rtwo", "two\nlines",
    "guest1\n[global]\nexec_prerun=touch PWNED", "../../etc/passwd", "..", "a/b",
    "${env:VB_FUZZ_UNSET}", "$(touch x)", "; rm -rf /", "x;touch /tmp/pwned",
    "--logfile=/tmp/x", "-o", "é✓💥", "{value}", "{{", "%s%n",
]
# A scenario per driver: the catalog's first, else a minimal one (no catalog scenario).
MINIMAL = {
    "faban": {"topology": {"clients": {"count": 1}},
              "workload": {"driver": "faban", "params": {"command": ["faban-driver"]}}},
    "netperf": {"topology": {"servers": {"count": 1}, "clients": {"count": 1}},
                "workload": {"driver": "netperf", "params": {}}},
    "vdbench": {"topology": {"target": {"count": 1}},
                "workload": {"driver": "vdbench", "params": {"parmfile": "PARMFILE"}}},
}


def _is_text(annotation: object) -> bool:
    import typing

    return annotation is str or any(_is_text(a) for a in typing.get_args(annotation))


def _models(annotation: object) -> list[type]:
    import typing

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models(a)]


def string_fields(model: type, data: object, prefix: str = "") -> list[str]:
    """Dotted paths (below workload.params) of every text field of a parameter model,
    nested models included (the first item of a list the scenario has)."""
    out = []
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        here = data.get(name) if isinstance(data, dict) else None
        if _is_text(field.annotation):
            out.append(f"{prefix}{name}")
        for sub in _models(field.annotation):
            if isinstance(here, list) and here and isinstance(here[0], dict):
                out += string_fields(sub, here[0], f"{prefix}{name}.0.")
            elif isinstance(here, dict) or here is None:
                out += string_fields(sub, here or {}, f"{prefix}{name}.")
    return out


def drivers_of(doc: dict) -> list[str]:
    """The drivers a scenario runs: its workload's, or each of its `workloads:`."""
    if "workload" in doc:
        return [doc["workload"]["driver"]]
    return [w["driver"] for w in (doc.get("workloads") or {}).values()]


def driver_scenarios(tmp_path: Path) -> dict[str, Path]:
    import yaml

    out: dict[str, Path] = {}
    for path in SCENARIOS:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "workload" in doc:  # a `workloads:` bundle's drivers have their own scenarios
            out.setdefault(doc["workload"]["driver"], path)
    parm = tmp_path / "fuzz.parm"
    parm.write_text("sd=sd1,lun=/dev/null\n")
    for driver, doc in MINIMAL.items():
        if driver not in out:
            text = yaml.safe_dump({"version": 1, "name": f"fuzz-{driver}", **doc,
                                   "phases": {"steady": "10s"}})
            out[driver] = tmp_path / f"{driver}.yaml"
            out[driver].write_text(text.replace("PARMFILE", str(parm)))
    return out


def test_hostile_text_in_every_string_field_of_every_driver(tmp_path: Path) -> None:
    import json

    import yaml

    from vbench.workloads.base import driver_names, get_driver

    scenarios = driver_scenarios(tmp_path)
    assert set(driver_names()) <= set(scenarios), "a driver without a scenario to fuzz"
    rng = session_seed.rng("hostile-driver-text")
    cases = 0
    for driver in sorted(driver_names()):
        source = scenarios[driver]
        params = yaml.safe_load(source.read_text(encoding="utf-8"))["workload"]["params"]
        fields = string_fields(get_driver(driver).Params, params)
        assert fields, driver
        for path in fields:
            values = (HOSTILE_TEXT if session_seed.every_case()
                      else rng.sample(HOSTILE_TEXT, 3))
            for value in values:
                given = f"workload.params.{path}={json.dumps(value)}"
                command = "plan" if cases % 2 else "validate"
                variant = Variant(f"{driver} {path}={value!r:.40}", b"")
                check(variant, [command, str(source), "--set", given], (str(source),), source)
                cases += 1
    assert cases >= 3 * len(scenarios)
