"""Light commands load no heavy library (issue 27): which modules a command imports is a
fact about the code, checked here in fresh processes; how long they take is measured by
bench/cli_startup.py, never asserted.

`vbench --version` used to import pandas, NumPy, SciPy and pyarrow (≈ 1 s) through the
analysis commands' modules, and `validate` also pyVmomi, httpx and SQLAlchemy through
plugin discovery importing every driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
# What no light command may load (the data stack, the lab clients, the report stack).
HEAVY = frozenset({"pandas", "numpy", "pyarrow", "scipy", "matplotlib", "jinja2",
                   "pyVmomi", "pyVim", "paramiko", "httpx"})
# What `--help` and `--version` need is click alone.
CLICK_ONLY = HEAVY | {"sqlalchemy", "rich", "pydantic", "yaml"}

# Runs the CLI in this process's interpreter and reports the top-level packages loaded.
PROBE = """
import json, sys
argv = json.loads(sys.argv[1])
code = None
try:
    from vbench.cli import main
    if argv is not None:
        main(argv)
except SystemExit as exc:
    code = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules})
ours = sorted(m for m in sys.modules if m.startswith("vbench."))
print("\\n" + json.dumps({"code": code, "loaded": loaded, "vbench": ours}), file=sys.stderr)
"""


def _environ() -> dict[str, str]:
    # This process's environment (PYTHONPATH included: another checkout can be checked
    # with it) without a store or results folder named from outside.
    skip = ("VBENCH_STORE", "VBENCH_RESULTS", "_VBENCH_COMPLETE")
    return {k: v for k, v in os.environ.items() if k not in skip}


def _loaded(argv: list[str] | None, home: Path, **env: str) -> tuple[set[str], str]:
    """The packages a fresh `vbench ARGV` (None: `import vbench.cli`) loads, and its output."""
    report, out = _probe(argv, home, **env)
    return set(report["loaded"]), out


def _probe(argv: list[str] | None, home: Path, **env: str) -> tuple[dict[str, Any], str]:
    """What the probe reports of a fresh `vbench ARGV` (packages, vbench modules), and
    its output."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        capture_output=True, text=True, cwd=home, timeout=120,
        env={**_environ(), "VBENCH_HOME": str(home), "COLUMNS": "100", **env},
    )
    report: dict[str, Any] = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (None, 0), done.stderr
    return report, done.stdout


@pytest.mark.parametrize("argv", [None, ["--help"], ["--version"], ["lab", "--help"]],
                         ids=["import vbench.cli", "--help", "--version", "lab --help"])
def test_the_cli_itself_loads_click_only(argv: list[str] | None, tmp_path: Path) -> None:
    loaded, _out = _loaded(argv, tmp_path)
    assert "click" in loaded  # the probe sees what was imported
    assert sorted(loaded & CLICK_ONLY) == []


def test_shell_completion_loads_click_only(tmp_path: Path) -> None:
    loaded, out = _loaded([], tmp_path, _VBENCH_COMPLETE="bash_complete",
                          COMP_WORDS="vbench vali", COMP_CWORD="1")
    assert "validate" in out
    assert sorted(loaded & CLICK_ONLY) == []


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_validate_and_plan_load_no_heavy_library(command: str, tmp_path: Path) -> None:
    # A first-use home: no store to learn the estimate from, so no SQLAlchemy either.
    loaded, out = _loaded([command, str(QUICKSTART)], tmp_path)
    assert "2 points" in out  # the scenario was checked, with its fio driver
    assert "pydantic" in loaded
    assert sorted(loaded & (HEAVY | {"sqlalchemy", "rich"})) == []


def test_validate_imports_its_own_command_module_alone(tmp_path: Path) -> None:
    # The top-level group imports a command's module when the command is looked up
    # (vbench.cli.COMMAND_MODULES); importing all nine cost validate ≈ 4 ms.
    report, out = _probe(["validate", str(QUICKSTART)], tmp_path)
    assert "2 points" in out
    modules = {m for m in report["vbench"] if m.endswith("_cmds")}
    assert sorted(modules) == ["vbench.cli.run_cmds"]


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_scenario_without_a_lab_builds_no_lab_model(command: str, tmp_path: Path) -> None:
    # The lab's models (and its publish targets') are imported with `--lab` only: the
    # scenario's VM model takes its guest-name type from config.guestname (≈ 8 ms).
    report, out = _probe([command, str(QUICKSTART)], tmp_path)
    assert "2 points" in out
    loaded = set(report["vbench"])
    assert "vbench.config.scenario" in loaded
    assert sorted(loaded & {"vbench.config.lab", "vbench.config.publish"}) == []


def test_validate_leaves_what_only_a_trial_or_other_scenarios_need(tmp_path: Path) -> None:
    # The fio parser, its auto warm-up, the collectors' registry and the steady-state
    # rule are imported where they are used (≈ 6 ms together); the quickstart has no
    # collector, no steady_state and no `warmup: auto`. The fio driver's catalogue reads
    # its names and units from parsers.fio_metrics.
    report, out = _probe(["validate", str(QUICKSTART)], tmp_path)
    assert "2 points" in out
    loaded = set(report["vbench"])
    assert "vbench.workloads.fio" in loaded and "vbench.parsers.fio_metrics" in loaded
    later = {"vbench.parsers.fio", "vbench.analysis.warmup", "vbench.workloads.fio.warmup",
             "vbench.collectors.base", "vbench.analysis.steady_state",
             "vbench.analysis.findmax_qos"}
    # Nor statistics or pkgutil: validate learns from no stored run in a first-use home
    # and looks its driver up by name. (json too, but the probe itself imports it.)
    assert sorted(set(report["loaded"]) & {"statistics", "pkgutil"}) == []
    assert sorted(loaded & later) == []


def test_no_model_field_takes_the_builtin_list_as_its_factory() -> None:
    # pydantic reads each default_factory's signature; for the builtin `list`, inspect
    # parses its text signature with tokenize (≈ 1 ms to compile its regexes, then 50 µs
    # a field). config.types.new_list is read directly.
    from pydantic import BaseModel

    from vbench.config.lab import Lab
    from vbench.config.scenario import Scenario
    from vbench.config.schema import _models
    from vbench.workloads.base import driver_names, get_driver

    roots: list[type[BaseModel]] = [Scenario, Lab]
    roots += [get_driver(name).Params for name in driver_names()]
    models = {m for root in roots for m in _models(root)}
    assert len(models) > 40  # the walk reached the nested models
    with_list = sorted(f"{m.__module__}.{m.__name__}.{name}" for m in models
                       for name, f in m.model_fields.items() if f.default_factory is list)
    assert with_list == []


def test_the_command_table_names_every_command_of_every_module() -> None:
    import importlib
    import pkgutil

    import vbench.cli
    from vbench.cli import COMMAND_MODULES

    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(vbench.cli.__path__):
        module = importlib.import_module(f"vbench.cli.{info.name}")
        for command in getattr(module, "COMMANDS", ()):
            found[command.name] = info.name
    assert "validate" in found and "lab" in found  # the modules were read
    assert found == COMMAND_MODULES


def test_a_mistyped_command_is_answered_with_the_closest_one() -> None:
    from click.testing import CliRunner

    from vbench.cli import cli

    result = CliRunner().invoke(cli, ["valdate", "x.yaml"])
    assert result.exit_code == 2
    assert "No such command 'valdate'. Did you mean 'validate'?" in result.output


@pytest.mark.parametrize("command", ["plugins", "drivers"])
def test_discovering_every_plugin_loads_no_heavy_library(command: str, tmp_path: Path) -> None:
    # Discovery imports each built-in plugin package (drivers, collectors, parsers): what
    # they need to run (pyVmomi, httpx, pandas...) waits until they run.
    loaded, out = _loaded([command], tmp_path)
    assert "fio" in out and "content_library" in out
    assert sorted(loaded & HEAVY) == []


def test_ls_loads_no_data_stack(tmp_path: Path) -> None:
    from vbench.results.records import RunInfo
    from vbench.results.store import Store

    store = Store.open(None, tmp_path / "results")
    store.create_run(RunInfo("run-1", "quickstart", 1_800_000_000.0, tags=("nightly",)))
    store.finish_run("run-1", "ok", 1_800_000_600.0)
    store.close()
    loaded, out = _loaded(["ls"], tmp_path)
    assert "run-1" in out
    assert "sqlalchemy" in loaded
    assert sorted(loaded & HEAVY) == []


def test_a_lazy_module_imports_at_first_use_and_takes_its_place() -> None:
    from vbench.lazy import LazyModule

    namespace: dict[str, object] = {}
    exec("from vbench.lazy import lazy_module\ncs = lazy_module('colorsys')", namespace)
    assert isinstance(namespace["cs"], LazyModule)
    assert namespace["cs"].rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)  # type: ignore[attr-defined]
    import colorsys

    assert namespace["cs"] is colorsys  # the real module, in the namespace that asked


def test_looking_up_one_plugin_imports_its_package_alone(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "from vbench.workloads.base import driver_names, get_driver\n"
        "from vbench.collectors.base import get_collector\n"
        "get_driver('fio'); get_collector('esxtop')\n"
        "first = [m for m in sys.modules if m.startswith('vbench.')]\n"
        "print(json.dumps([first, driver_names()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=_environ(), timeout=120, check=True)
    first, names = json.loads(done.stdout)
    assert {"vbench.workloads.fio", "vbench.collectors.esxtop"} <= set(first)
    others = ("vbench.workloads.content_library", "vbench.workloads.cloudstone",
              "vbench.workloads.redis_scaleout", "vbench.collectors.vcenter_perf",
              "vbench.collectors.guest_sysstat")
    assert [m for m in others if m in first] == []
    assert {"fio", "content_library", "cloudstone"} <= set(names)  # listing finds them all
