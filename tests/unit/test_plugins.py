"""Plugin discovery: every kind finds its built-ins with nothing broken; every parser
is a `vbench parse` command named in docs/cli.md; `vbench plugins` lists them all."""

from __future__ import annotations

import json
import pkgutil
from importlib import import_module
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from vbench.cli import cli
from vbench.cli.parse_cmds import parse
from vbench.cli.plugins_cmds import survey
from vbench.collectors.base import REGISTRY as COLLECTORS
from vbench.errors import ConfigError
from vbench.parsers.base import REGISTRY as PARSERS
from vbench.plugins import Registry
from vbench.workloads.base import REGISTRY as WORKLOADS

ROOT = Path(__file__).resolve().parents[2]
KINDS = [WORKLOADS, COLLECTORS, PARSERS]


def _builtin_packages(registry: Registry) -> list[str]:
    pkg = import_module(registry.package)
    return sorted(
        info.name for info in pkgutil.iter_modules(pkg.__path__, f"{registry.package}.")
        if info.ispkg
    )


@pytest.mark.parametrize("registry", KINDS, ids=lambda r: r.package)
def test_every_builtin_package_registers_a_plugin_and_none_is_broken(registry: Registry) -> None:
    assert registry.broken() == {}
    packages = _builtin_packages(registry)
    assert packages, f"no plugin packages under {registry.package}"
    origins = {registry.origin(name) for name in registry.names()}
    # Each package registers (at least) one plugin from itself or a module inside it.
    for package in packages:
        assert any(o == package or o.startswith(package + ".") for o in origins), (
            f"{package} registers no {registry.what}"
        )


@pytest.mark.parametrize("registry", KINDS, ids=lambda r: r.package)
def test_every_plugin_is_looked_up_by_its_name(registry: Registry) -> None:
    for name in registry.names():
        assert registry.get(name) is registry.loaded()[name]


def test_workloads_include_the_shipped_drivers() -> None:
    assert {"fio", "redis_scaleout"} <= set(WORKLOADS.names())


def test_every_parser_has_a_parse_command_named_in_the_cli_doc() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text()
    ctx = click.Context(parse)
    assert parse.list_commands(ctx) == PARSERS.names()
    for tool in PARSERS.names():
        command = parse.get_command(ctx, tool)
        assert isinstance(command, click.Command), f"no `vbench parse {tool}` command"
    undocumented = [t for t in PARSERS.names() if f"`vbench parse {t} " not in doc]
    assert not undocumented, f"parsers missing from docs/cli.md: {undocumented}"


def test_plugins_command_lists_every_plugin_with_its_origin() -> None:
    res = CliRunner().invoke(cli, ["plugins"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    for registry in KINDS:
        header = registry.package.removeprefix("vbench.") + ":"
        start = lines.index(header)
        block = lines[start + 1 : start + 1 + len(registry.names())]
        for name, line in zip(registry.names(), block, strict=True):
            assert line.split() == [name, registry.origin(name)]
    assert "broken:" not in res.output


def test_plugins_command_json_matches_discovery() -> None:
    res = CliRunner().invoke(cli, ["plugins", "--json", "--check"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["broken"] == []
    listed = {(p["kind"], p["name"]) for p in data["plugins"]}
    assert listed == {(r.package, n) for r in KINDS for n in r.names()}
    assert all(p["builtin"] for p in data["plugins"])
    rows, broken = survey()
    assert [r.name for r in rows if r.kind == "vbench.workloads"] == WORKLOADS.names()
    assert broken == []


def test_a_plugin_package_whose_import_fails_is_listed_broken_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plugin kind of its own: one good package, one whose import raises a plain error.
    root = tmp_path / "kindpkg"
    (root / "good").mkdir(parents=True)
    (root / "bad").mkdir()
    (root / "__init__.py").write_text("")
    (root / "good" / "__init__.py").write_text(
        "from kindpkg import REG\nclass Good:\n    name = 'good'\nREG.register(Good)\n"
    )
    (root / "bad" / "__init__.py").write_text("raise RuntimeError('a bug in the plugin')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = import_module("kindpkg")
    reg: Registry[type] = Registry("kindpkg", "thing", lambda c: c.name)
    mod.REG = reg
    assert reg.names() == ["good"]
    assert reg.broken() == {"bad": "kindpkg.bad: RuntimeError: a bug in the plugin"}
    with pytest.raises(ConfigError, match=r"could not be loaded.*a bug in the plugin"):
        reg.get("bad")
    assert reg.names() == ["good"]  # asked again: the same, not a half-filled registry
