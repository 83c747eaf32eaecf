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
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the top-level group imports each on lookup
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
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
    if "workload" in data or "workloads" in data:
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


# ------------------------------------------------------------- every CLI option


def _leaf_commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # a lazy group (parse) builds its commands here
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        full = f"{prefix}{name}"
        if isinstance(cmd, click.Group):
            out += _leaf_commands(cmd, full + " ")
        else:
            out.append((full, cmd))
    return out


def _cli_sections() -> list[str]:
    return re.split(r"^## ", (ROOT / "docs" / "cli.md").read_text(), flags=re.M)


def _undocumented_options(sections: list[str]) -> list[str]:
    missing = []
    for full, cmd in _leaf_commands(cli):
        text = "\n".join(s for s in sections if f"`vbench {full}" in s.splitlines()[0])
        assert text, f"`vbench {full}` has no section in docs/cli.md"
        for p in cmd.params:
            if not isinstance(p, click.Option) or "--help" in p.opts:
                continue
            if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text) for o in p.opts):
                missing.append(f"vbench {full} {'/'.join(p.opts)}")
    return missing


def test_every_option_of_every_command_is_documented_in_its_section() -> None:
    missing = _undocumented_options(_cli_sections())
    assert not missing, f"options missing from their command's section of docs/cli.md: {missing}"


def test_the_option_check_finds_a_missing_option() -> None:
    """The check above can fail: a section without `--limit` is caught."""
    sections = [s.replace("--limit", "--lim1t") if s.startswith("`vbench ls") else s
                for s in _cli_sections()]
    assert "vbench ls --limit" in _undocumented_options(sections)


# ----------------------------------------------- driver docs against their models

def _builtin_drivers() -> list[str]:
    from vbench.workloads.base import REGISTRY, driver_names

    return sorted(n for n in driver_names() if REGISTRY.origin(n).startswith("vbench."))


def test_every_builtin_driver_declares_its_doc_pages() -> None:
    """Each driver says where its parameters are documented (``docs``): a new built-in
    needs no list edited here, as docs/writing-a-driver.md promises."""
    from vbench.testing import driver_doc_pages
    from vbench.workloads.base import get_driver

    for name in _builtin_drivers():
        pages = driver_doc_pages(get_driver(name))
        assert pages and all(p.is_file() for p in pages), (name, pages)
        assert all(p.is_relative_to(ROOT) for p in pages), (name, pages)


@pytest.mark.parametrize("driver", _builtin_drivers())
def test_driver_docs_match_the_parameter_model(driver: str) -> None:
    from vbench.testing import driver_doc_problems
    from vbench.workloads.base import get_driver

    assert driver_doc_problems(get_driver(driver)) == []


def test_the_driver_doc_check_finds_a_stale_table_row() -> None:
    from vbench.testing import mentioned, table_names

    text = "| parameter | default |\n|---|---|\n| `iodepth` | 1 |\n| `io_depth` | 1 |\n"
    assert table_names(text) == {"iodepth", "io_depth"}
    assert not mentioned("numjobs", text)


def test_the_driver_doc_check_finds_an_unnamed_parameter_and_a_missing_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vbench.testing import driver_doc_problems
    from vbench.workloads.base import get_driver

    fio = get_driver("fio")
    monkeypatch.setattr(fio, "docs", ("drivers/iperf3/README.md",))  # another driver's page
    assert any("never name" in p and "iodepth" in p for p in driver_doc_problems(fio))
    monkeypatch.setattr(fio, "docs", ("drivers/fio/NOPE.md",))
    assert "declared doc pages missing" in driver_doc_problems(fio)[0]
    monkeypatch.setattr(fio, "docs", ())
    assert driver_doc_problems(fio) == ["fio: declares no doc page (docs = (...))"]


# ------------------------------------------------------ what the docs may cite


_CODE_DIRS = ("vbench", "scenarios", "examples", "drivers", "docs", "tests", "bench")
_OUTSIDE = ("STUDIES" + ".md", "../" + "shared")


def _project_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    for d in _CODE_DIRS:
        files += [p for p in (ROOT / d).rglob("*") if p.is_file()
                  and p.suffix in {".py", ".md", ".yaml", ".yml", ".sh", ".j2", ".txt", ""}
                  and "__pycache__" not in p.parts]
    # The one module that knows where the corpus sits (see docs/design.md, Tests).
    return [p for p in files if p != ROOT / "tests" / "corpus.py"]


def test_nothing_cites_documents_outside_the_project() -> None:
    cited = [f"{p.relative_to(ROOT)}: {word}" for p in _project_files()
             for word in _OUTSIDE if word in p.read_text(errors="replace")]
    assert not cited, cited


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def test_docs_cited_in_the_code_exist() -> None:
    """Every docs/… or drivers/…/README.md a module names exists (with its #anchor)."""
    pattern = re.compile(r"\b((?:docs/[\w.-]+\.md|drivers/[\w-]+/README\.md))(#[\w-]+)?")
    broken = []
    for py in sorted((ROOT / "vbench").rglob("*.py")):
        for m in pattern.finditer(py.read_text()):
            target = ROOT / m.group(1)
            if not target.is_file():
                broken.append(f"{py.relative_to(ROOT)}: {m.group(0)}")
            elif m.group(2):
                slugs = {_slug(h) for h in re.findall(r"^#+ (.*)$", target.read_text(), re.M)}
                if m.group(2)[1:] not in slugs:
                    broken.append(f"{py.relative_to(ROOT)}: {m.group(0)} (no such heading)")
    assert not broken, broken


def test_design_doc_describes_every_layer_as_built() -> None:
    design = (ROOT / "docs" / "design.md").read_text()
    for pkg in sorted(p.name for p in (ROOT / "vbench").iterdir()
                      if (p / "__init__.py").is_file()):
        assert f"`vbench/{pkg}/`" in design, f"docs/design.md has no layer row for {pkg}"
    for word in ("to come", "not yet written", "will be added"):
        assert word not in design.lower(), f"docs/design.md still says {word!r}"
