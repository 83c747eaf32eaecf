"""The generated reference (docs/scenario-reference.md) documents every field of every
model a scenario, a lab, a built-in driver's parameters (with their nested types, such
as Content Library steps) and a built-in collector's options hold, and every link of its
type column lands on a heading of the page (issue 23 item 10)."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel

from vbench.collectors.base import collector_kinds, get_collector
from vbench.config.lab import Lab
from vbench.config.scenario import Scenario
from vbench.config.schema import _models
from vbench.engine.reference import reference_markdown
from vbench.workloads.base import driver_names, get_driver

_HEADING = re.compile(r"^#+ (.+)$", re.M)
_LINK = re.compile(r"\]\(#([^)]+)\)")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _documented_models() -> list[type[BaseModel]]:
    roots: list[type[BaseModel]] = [Scenario, Lab]
    roots += [get_driver(n).Params for n in driver_names()]
    roots += [get_collector(k).Options for k in collector_kinds()]
    return list(dict.fromkeys(m for r in roots for m in _models(r)))


@pytest.fixture(scope="module")
def text() -> str:
    return reference_markdown()


def test_every_link_lands_on_a_heading(text: str) -> None:
    anchors = {_slug(h) for h in _HEADING.findall(text)}
    dangling = sorted({a for a in _LINK.findall(text) if a not in anchors})
    assert dangling == []


def test_every_field_of_every_model_is_documented_under_its_heading(text: str) -> None:
    sections = dict(re.findall(r"^### (\w+)\n(.*?)(?=^#)", text + "\n#", re.M | re.S))
    missing = []
    for model in _documented_models():
        body = sections.get(model.__name__)
        if body is None:
            missing.append(model.__name__)
            continue
        missing += [f"{model.__name__}.{f.alias or name}"
                    for name, f in model.model_fields.items()
                    if f"| `{f.alias or name}` |" not in body]
    assert missing == []


def test_content_library_step_fields_are_in_the_reference(text: str) -> None:
    body = text.split("### Step\n", 1)[1].split("\n### ", 1)[0]
    for field in ("files", "kind", "url", "timeout", "target", "powered_on"):
        assert f"| `{field}` |" in body
    assert "[Target](#target)" in body


def test_every_driver_says_its_roles(text: str) -> None:
    assert "Roles: ." not in text
    assert "## Driver `vcbench`\n\nRoles: none (it acts on vCenter itself; no guests)." in text
