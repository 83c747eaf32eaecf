"""Plugins shipped by another distribution are found through their entry points
(`vbench.parsers`, `vbench.collectors`, `vbench.workloads`), and one that fails to load is
listed as broken without hiding the others.

The distribution is a real installed one as far as Python is concerned: a package and its
``.dist-info`` (METADATA, entry_points.txt) on the path of a `vbench` process. Building it
with pip from a pyproject is the job of tests/e2e/test_driver_from_doc.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PARSER = '''
from vbench.parsers.base import ToolParser


def rows(text, source):
    return [{"line": n, "words": len(line.split())}
            for n, line in enumerate(text.splitlines(), start=1)]


PARSER = ToolParser("wordcount", "one row per line with its word count.", rows)
'''

COLLECTOR = '''
from vbench.collectors.base import Collector, Series, register


@register
class Probe(Collector):
    kind = "probe"
    target_kind = "guest"

    def start(self, ctx):
        pass

    def stop(self, ctx):
        return Series(Series.empty())
'''

ENTRY_POINTS = """\
[vbench.parsers]
wordcount = labplugins.parser:PARSER

[vbench.collectors]
probe = labplugins.collector

[vbench.workloads]
needs_missing = labplugins.needs_missing
fio = labplugins.second_fio
"""

# A driver taking a name vbench already has: refused, not silently replacing fio.
SECOND_FIO = '''
from vbench.workloads.fio import FioWorkload
from vbench.workloads.base import register


@register
class SecondFio(FioWorkload):
    pass
'''



@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder holding the package and its dist-info, as `pip install --target` makes."""
    root = tmp_path / "site"
    pkg = root / "labplugins"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "parser.py").write_text(PARSER)
    (pkg / "collector.py").write_text(COLLECTOR)
    # A driver whose dependency is not installed: discovery must survive it.
    (pkg / "needs_missing.py").write_text("import no_such_dependency_here\n")
    (pkg / "second_fio.py").write_text(SECOND_FIO)
    info = root / "labplugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labplugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def _vbench(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-m", "vbench", *args],
        capture_output=True, text=True, env=env, timeout=120,
    )


def test_plugins_lists_entry_point_plugins_and_the_broken_one(site: Path) -> None:
    res = _vbench(site, "plugins", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    found = {(p["kind"], p["name"]): p for p in data["plugins"]}
    assert found[("vbench.parsers", "wordcount")]["origin"] == "labplugins.parser"
    assert found[("vbench.collectors", "probe")]["origin"] == "labplugins.collector"
    assert not found[("vbench.parsers", "wordcount")]["builtin"]
    assert found[("vbench.workloads", "fio")]["builtin"]  # the built-ins are all still there
    assert found[("vbench.workloads", "fio")]["origin"] == "vbench.workloads.fio"
    broken = {b["name"]: b for b in data["broken"]}
    assert set(broken) == {"needs_missing", "fio"}
    assert all(b["kind"] == "vbench.workloads" for b in broken.values())
    assert "no_such_dependency_here" in broken["needs_missing"]["reason"]
    assert (
        "two workload drivers named 'fio': vbench.workloads.fio and labplugins.second_fio"
        in broken["fio"]["reason"]
    )


def test_plugins_check_exits_3_on_a_broken_plugin_and_says_why(site: Path) -> None:
    res = _vbench(site, "plugins", "--check")
    assert res.returncode == 3
    lines = [ln.split() for ln in res.stdout.splitlines()]
    assert ["wordcount", "labplugins.parser", "(entry", "point)"] in lines
    broken = res.stdout.split("broken:\n", 1)[1].splitlines()
    assert len(broken) == 2
    assert any(
        ln.startswith("  workloads needs_missing: labplugins.needs_missing: ModuleNotFoundError")
        for ln in broken
    )


def test_entry_point_parser_is_a_parse_command(site: Path, tmp_path: Path) -> None:
    text = tmp_path / "out.txt"
    text.write_text("one two three\nfour\n")
    res = _vbench(site, "parse", "wordcount", str(text), "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [{"line": 1, "words": 3}, {"line": 2, "words": 1}]


def test_asking_for_the_broken_driver_names_the_cause(site: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "version: 1\nname: x\ntopology:\n  g:\n    count: 1\n"
        "workload:\n  driver: needs_missing\nphases:\n  steady: 1s\n"
    )
    res = _vbench(site, "validate", str(scenario))
    assert res.returncode == 2
    assert "needs_missing" in res.stderr and "no_such_dependency_here" in res.stderr


# Entry points that name an object directly (not a module that registers itself): one
# whose name clashes with a built-in driver, one that is no plugin at all.
CLASHING = '''
from vbench.workloads.fio import FioWorkload


class Clash(FioWorkload):  # not decorated: the entry point names the class itself
    pass


NOT_A_PLUGIN = 42
'''


def test_an_entry_point_naming_a_clashing_class_is_broken_not_fatal(tmp_path: Path) -> None:
    root = tmp_path / "site"
    (root / "labclash").mkdir(parents=True)
    (root / "labclash" / "__init__.py").write_text("")
    (root / "labclash" / "drivers.py").write_text(CLASHING)
    info = root / "labclash-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labclash\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[vbench.workloads]\nclash = labclash.drivers:Clash\n"
        "notaplugin = labclash.drivers:NOT_A_PLUGIN\n"
    )
    res = _vbench(root, "plugins", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    found = {(p["kind"], p["name"]): p for p in data["plugins"]}
    assert found[("vbench.workloads", "fio")]["origin"] == "vbench.workloads.fio"
    broken = {b["name"]: b["reason"] for b in data["broken"]}
    assert set(broken) == {"clash", "notaplugin"}
    assert "two workload drivers named 'fio'" in broken["clash"]
    assert broken["notaplugin"].startswith("labclash.drivers:NOT_A_PLUGIN: ")
