"""Docs that tests keep honest: the generated reference, every command, every example."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from vbench.cli import cli
from vbench.config.load import load_lab, load_scenario
from vbench.engine.plan import build_plan
from vbench.engine.reference import reference_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_scenario_reference_is_fresh() -> None:
    committed = (ROOT / "docs" / "scenario-reference.md").read_text()
    assert committed == reference_markdown(), "docs/scenario-reference.md is stale: run `make docs`"


def test_reference_documents_every_field() -> None:
    from vbench.config.scenario import Scenario
    from vbench.config.schema import _models

    text = reference_markdown()
    for model in _models(Scenario):
        for name, f in model.model_fields.items():
            assert f"`{f.alias or name}`" in text
            assert f.description or model.__name__ in {"Scenario"} or name in {"version"}, (
                f"{model.__name__}.{name} has no description"
            )


def _commands(group: click.Group, prefix: str = "") -> list[str]:
    out = []
    for name, cmd in group.commands.items():
        full = f"{prefix}{name}"
        if isinstance(cmd, click.Group):
            out += _commands(cmd, full + " ")
        else:
            out.append(full)
    return out


def test_every_command_is_documented() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text()
    missing = [c for c in _commands(cli) if f"`vbench {c}" not in doc]
    assert not missing, f"commands missing from docs/cli.md: {missing}"


def _yaml_blocks() -> list[tuple[str, str]]:
    blocks = []
    for md in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for m in re.finditer(r"```yaml\n(.*?)```", md.read_text(), re.S):
            blocks.append((md.name, m.group(1)))
    return blocks


@pytest.mark.parametrize(("doc", "block"), _yaml_blocks())
def test_every_yaml_example_in_docs_validates(tmp_path: Path, doc: str, block: str) -> None:
    data = yaml.safe_load(block)
    p = tmp_path / "example.yaml"
    p.write_text(block)
    if "workload" in data:
        build_plan(load_scenario(p))
    else:
        load_lab(p)


SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_shipped_scenario_validates(path: Path) -> None:
    plan = build_plan(load_scenario(path))
    assert plan.n_trials >= 1


def test_quickstart_binds_to_the_local_lab() -> None:
    plan = build_plan(
        load_scenario(ROOT / "examples" / "quickstart.yaml"),
        load_lab(ROOT / "examples" / "labs" / "local.yaml"),
    )
    assert len(plan.points) == 2 and plan.repeat == 3
    assert plan.groups["storage"] == ("guest1", "guest2")
