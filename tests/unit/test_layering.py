"""The layers of docs/design.md hold: every import inside ``vbench/`` points down.

Every import counts — at module level, inside functions (lazy imports) and under
``TYPE_CHECKING`` — because each one is a dependency a reader has to follow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "vbench"

# Top to bottom; a layer may import itself and any layer below it. The base modules
# (errors, plugins, resources, the package itself) are below everything.
LAYERS = (
    "cli",
    "engine",
    "publish",
    "workloads",
    "collectors",
    "vsphere",
    "guest",
    "report",
    "parsers",
    "analysis",
    "results",
    "config",
)
BASE = ("errors", "plugins", "resources", "templates", "localproc", "__init__", "")
# Third-party libraries that belong to exactly one layer.
OWNED = {"pyVmomi": "vsphere", "pyVim": "vsphere", "paramiko": "guest"}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _rank(layer: str) -> int:
    if layer in ("__main__", "testing"):
        return -1  # `python -m vbench`, and the pytest plugin of tests: above the CLI
    if layer in BASE or layer not in LAYERS:
        return len(LAYERS)  # the base: importable from everywhere
    return LAYERS.index(layer)


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] if len(parts) > 1 else parts
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "vbench":  # `from vbench import x` imports vbench.x
                found += [(node.lineno, f"vbench.{a.name}") for a in node.names]
    return found


def _violations() -> list[str]:
    out: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        me = _layer(_module_name(path))
        where = path.relative_to(ROOT.parent)
        for line, target in _imports(path):
            top = target.split(".")[0]
            if top in OWNED and OWNED[top] != me:
                out.append(f"{where}:{line}: imports {top} (only vbench/{OWNED[top]}/ may)")
            if top != "vbench":
                continue
            them = _layer(target)
            if them != me and _rank(them) < _rank(me):
                out.append(f"{where}:{line}: {me} imports {target} (upward: {them})")
    return out


def test_imports_point_down_the_layers() -> None:
    problems = _violations()
    assert not problems, "upward imports:\n" + "\n".join(problems)


def test_every_package_of_vbench_has_a_layer() -> None:
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(LAYERS), f"no layer for {sorted(packages - set(LAYERS))}"


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    # The walker must find imports in functions and under TYPE_CHECKING.
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from vbench.engine.plan import Plan\n"
        "def f():\n    from vbench.cli import main\n"
    )
    path = tmp_path / "m.py"
    path.write_text(src)
    assert [m for _l, m in _imports(path)] == ["typing", "vbench.engine.plan", "vbench.cli"]


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_order_matches_the_design_doc(layer: str) -> None:
    doc = (ROOT.parent / "docs" / "design.md").read_text(encoding="utf-8")
    assert f"`vbench/{layer}/`" in doc


# Plugin packages: one package per plugin under these folders (flat modules beside
# them are the shared helpers plugins build on).
PLUGIN_FOLDERS = ("workloads", "collectors", "parsers")


def _plugin_of(module: str) -> tuple[str, str] | None:
    """(folder, plugin) of a module inside a plugin package, else None."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] not in PLUGIN_FOLDERS:
        return None
    if not (ROOT / parts[1] / parts[2] / "__init__.py").exists():
        return None  # a flat shared module
    return parts[1], parts[2]


def _plugin_crossings() -> list[str]:
    out: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        me = _plugin_of(_module_name(path))
        if me is None:
            continue
        for line, target in _imports(path):
            them = _plugin_of(target)
            if them is not None and them != me and them[0] == me[0]:
                out.append(f"{path.relative_to(ROOT.parent)}:{line}: the {me[1]} plugin "
                           f"imports the {them[1]} plugin ({target})")
    return out


def test_plugins_never_import_another_plugin() -> None:
    """A plugin may go away (or be replaced by a lab's own): what two plugins share lives
    a layer down, in a flat module beside them (e.g. workloads/pairs.py)."""
    problems = _plugin_crossings()
    assert not problems, "plugins importing plugins:\n" + "\n".join(problems)


def test_the_testing_kit_sits_above_everything() -> None:
    """vbench/testing.py (the pytest plugin) may use every layer; any module importing it
    (the CLI loading test code) is an upward import."""
    assert _rank(_layer("vbench.testing")) < _rank("cli")
    assert all(_rank(_layer("vbench.testing")) < _rank(layer) for layer in LAYERS)


def test_the_plugin_rule_sees_a_sibling_import() -> None:
    assert _plugin_of("vbench.workloads.netperf") == ("workloads", "netperf")
    assert _plugin_of("vbench.workloads.iperf3.params") == ("workloads", "iperf3")
    assert _plugin_of("vbench.workloads.pairs") is None  # shared, flat
    assert _plugin_of("vbench.parsers.fio") == ("parsers", "fio")
    assert _plugin_of("vbench.report.build") is None
