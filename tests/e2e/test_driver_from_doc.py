"""docs/writing-a-driver.md stays true: the driver it builds works.

The page's code blocks marked ``file=PATH`` are the whole driver (module, template,
README), its scenario, and — for shipping it in a distribution of its own — the
distribution's layout and pyproject. This test writes them out as that distribution,
installs it with pip into a folder (offline: setuptools from this venv, no build
isolation), and runs the real `vbench` CLI with that folder on PYTHONPATH against the
loopback guests, so the driver is found only through its `vbench.workloads` entry point.
The run must store the driver's figure for every trial and leave nothing behind.

The doc's scenario names a driver vbench does not ship, so tests/unit/test_docs_honest.py
cannot validate it (its fence carries ``file=``, which that test's pattern skips); it is
validated here, with the driver installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import guest_workdir, remote_processes, run_id_of, show, write_lab

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-driver.md"
FENCE = re.compile(r"^```\w+ file=(\S+)\n(.*?)^```", re.M | re.S)
DRIVER = "stress_cpu"
SCENARIO = "examples/stress-cpu.yaml"


def doc_files() -> dict[str, str]:
    """PATH -> text of the doc's ``file=PATH`` blocks (blocks of one file concatenated
    in page order, as the walk-through adds a file piece by piece)."""
    parts: dict[str, list[str]] = defaultdict(list)
    for m in FENCE.finditer(DOC.read_text(encoding="utf-8")):
        parts[m.group(1)].append(m.group(2))
    return {path: "\n\n".join(chunks) for path, chunks in parts.items()}


def distribution_layout(files: dict[str, str]) -> dict[str, str | None]:
    """The doc's DISTRIBUTION block: path in the distribution -> the doc file it holds
    (None: an empty file)."""
    layout: dict[str, str | None] = {}
    for line in files["DISTRIBUTION"].splitlines():
        dist_path, source = line.split(maxsplit=1)
        if source == "empty":
            layout[dist_path] = None
        elif source.startswith("the file below"):
            layout[dist_path] = dist_path  # the block named after the file itself
        else:
            layout[dist_path] = source.strip()
    return layout


def build_distribution(files: dict[str, str], src: Path) -> None:
    for dist_path, source in distribution_layout(files).items():
        target = src / dist_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("" if source is None else files[source], encoding="utf-8")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The doc's driver, pip-installed as its own distribution into a site folder."""
    tmp = tmp_path_factory.mktemp("driver-from-doc")
    src, site = tmp / "labdrivers", tmp / "site"
    build_distribution(doc_files(), src)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--disable-pip-version-check", "--target", str(site), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return site


def _vbench(site: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "vbench", *args],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": path, "VBENCH_HOME": str(home)},
    )


@pytest.fixture(scope="module")
def workspace(
    installed: Path, local_guests: LocalGuests, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("driver-from-doc-run")
    lab = write_lab(tmp / "lab.yaml", local_guests)
    data = yaml.safe_load(lab.read_text())
    for node in data["nodes"].values():  # the role examples/labs/local.yaml gives them
        node["roles"] = ["clients"]
    lab.write_text(yaml.safe_dump(data, sort_keys=False))
    scenario = tmp / "stress-cpu.yaml"
    scenario.write_text(doc_files()[SCENARIO], encoding="utf-8")
    return {"site": installed, "lab": lab, "scenario": scenario, "home": tmp / "home"}


def test_the_drivers_own_tests_pass_with_vbench_s_kit(
    installed: Path, tmp_path: Path
) -> None:
    """The page's tests of its driver use vbench's kit only (vbench.testing: loopback
    guests, a lab file, the CLI as a process, waiting for a log event); run by pytest
    as a lab runs them, outside vbench's suite (no conftest of ours), with the driver
    found through its entry point. Peers are required: a skip would be a failure."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the lab's own project root
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_stress_cpu.py").write_text(doc_files()["tests/test_stress_cpu.py"])
    path = os.pathsep.join(filter(None, [str(installed), os.environ.get("PYTHONPATH")]))
    res = subprocess.run(
        # -p: where the entry point is installed it is the same plugin, loaded once.
        [sys.executable, "-m", "pytest", "-q", "-p", "vbench.testing", "-p", "no:cacheprovider",
         str(tests)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": path, "VBENCH_REQUIRE_PEERS": "1"},
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert re.search(r"\b3 passed\b", res.stdout), res.stdout[-2000:]


def test_pytest_finds_the_kit_through_an_entry_point() -> None:
    """Installing vbench registers vbench.testing with pytest (named as the module, so
    `-p vbench.testing` does not load it twice)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"vbench.testing": "vbench.testing"}


def test_doc_holds_every_file_a_driver_adds() -> None:
    files = doc_files()
    assert {
        f"vbench/workloads/{DRIVER}/__init__.py", f"drivers/{DRIVER}/cpu.job.j2",
        f"drivers/{DRIVER}/README.md", SCENARIO, "pyproject.toml", "DISTRIBUTION",
        f"tests/test_{DRIVER}.py",
    } <= set(files)
    layout = distribution_layout(files)
    # Every driver file of the walk-through goes into the distribution unchanged.
    shipped = {s for s in layout.values() if s is not None}
    assert {p for p in files if p.startswith(("vbench/", "drivers/"))} <= shipped
    assert all(source in files for source in shipped)
    text = DOC.read_text(encoding="utf-8")
    for group in ("vbench.workloads", "vbench.collectors", "vbench.parsers"):
        assert group in text


def test_doc_driver_code_meets_the_house_style(tmp_path: Path) -> None:
    module = tmp_path / f"{DRIVER}.py"
    module.write_text(doc_files()[f"vbench/workloads/{DRIVER}/__init__.py"], encoding="utf-8")
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"),
         str(module)],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_installed_driver_is_found_through_its_entry_point(workspace: dict[str, Path]) -> None:
    res = _vbench(workspace["site"], workspace["home"], "plugins", "--json", "--check")
    assert res.returncode == 0, res.stdout + res.stderr
    plugins = {(p["kind"], p["name"]): p for p in json.loads(res.stdout)["plugins"]}
    entry = plugins[("vbench.workloads", DRIVER)]
    assert entry["origin"] == f"labdrivers.{DRIVER}" and entry["builtin"] is False
    drivers = _vbench(workspace["site"], workspace["home"], "drivers", "--json")
    [mine] = [d for d in json.loads(drivers.stdout) if d["name"] == DRIVER]
    assert mine["roles"] == ["load"] and mine["tools"] == {"load": ["stress-ng"]}
    # The template ships inside the distribution (package data), not in vbench.
    assert (workspace["site"] / "labdrivers" / "drivers" / DRIVER / "cpu.job.j2").is_file()


def test_doc_scenario_validates_and_its_params_are_checked(workspace: dict[str, Path]) -> None:
    site, home, scenario = workspace["site"], workspace["home"], workspace["scenario"]
    ok = _vbench(site, home, "validate", str(scenario))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _vbench(site, home, "validate", str(scenario), "--set", "workload.params.method=bogus")
    assert bad.returncode == 2
    assert "method" in bad.stderr and "int64" in bad.stderr
    # Without the distribution the driver is unknown: nothing else made it known.
    bare = subprocess.run(
        [sys.executable, "-m", "vbench", "validate", str(scenario)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "VBENCH_HOME": str(home)},
    )
    assert bare.returncode == 2 and f"unknown workload driver '{DRIVER}'" in bare.stderr


def test_plan_shows_the_drivers_commands(workspace: dict[str, Path]) -> None:
    res = _vbench(workspace["site"], workspace["home"], "plan", str(workspace["scenario"]),
                  "--lab", str(workspace["lab"]))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "stress-ng --job" in res.stdout and "steady.yaml" in res.stdout


def test_run_stores_the_drivers_figure_for_every_trial(
    workspace: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    site, home, lab = workspace["site"], workspace["home"], workspace["lab"]
    res = _vbench(site, home, "run", str(workspace["scenario"]), "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = run_id_of(res.stdout)
    # Read back without the distribution on the path: stored runs need no driver code.
    monkeypatch.setenv("VBENCH_HOME", str(home))
    data = show(run_id)
    assert data["run"]["status"] == "ok"
    assert [p["labels"] for p in data["points"]] == [{"workers": "1"}, {"workers": "2"}]
    assert [(t["point"], t["status"]) for t in data["trials"]] == [(0, "ok")] * 2 + [(1, "ok")] * 2
    for t in data["trials"]:
        ph = t["phases"]
        assert ph["warmup_start"] < ph["steady_start"] < ph["steady_end"]
    summary = {(s["point"], s["metric"]): s for s in data["summary"]}
    for point in (0, 1):
        total = summary[(point, "total_bogo_ops")]
        assert total["n"] == 2 and total["mean"] > 0 and total["unit"] == "ops/s"
    # The raw stress-ng reports are kept in the run directory, per guest.
    reports = sorted((home / "results" / run_id).rglob("steady.yaml"))
    assert len(reports) == 2 * 2 * 2  # points x trials x guests
    # Nothing left behind in the guests: no stress-ng, no trial directories.
    assert remote_processes(f"stress-ng --job {guest_workdir(lab)}") == []
    assert not list(guest_workdir(lab).rglob(f"{DRIVER}-*"))
