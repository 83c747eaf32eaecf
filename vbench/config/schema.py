"""JSON Schema export and the tables of the scenario/lab reference: the reference itself
(docs/scenario-reference.md, with every driver's parameters) is put together by
:mod:`vbench.engine.reference` (`make docs`)."""

from __future__ import annotations

import json
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from vbench.config.lab import Lab
from vbench.config.scenario import Scenario


def json_schema(kind: str = "scenario") -> dict[str, Any]:
    model = {"scenario": Scenario, "lab": Lab}[kind]
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"vbench {kind} file"
    if kind == "scenario":
        # One of the two workload forms is required (the model's own check says which is
        # missing); an editor validating against the schema should say so too.
        schema["oneOf"] = [{"required": ["workload"]}, {"required": ["workloads"]}]
    return schema


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is None:
        if isinstance(annotation, type):
            if issubclass(annotation, BaseModel):
                return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
            return {
                "str": "string",
                "int": "integer",
                "float": "number",
                "bool": "boolean",
                "NoneType": "null",
            }.get(annotation.__name__, annotation.__name__)
        return str(annotation).replace("typing.", "")
    args = [a for a in get_args(annotation)]
    name = getattr(origin, "__name__", str(origin))
    if name in ("Union", "UnionType"):
        return " or ".join(_type_name(a) for a in args)
    if name == "Literal":
        return " \\| ".join(json.dumps(a) for a in args)
    if name == "Annotated":
        meta = " ".join(str(m) for m in args[1:])
        if "parse_duration" in meta:
            return "duration"
        if "secret" in meta:
            return "secret reference"
        return _type_name(args[0])
    if name == "list":
        return f"list of {_type_name(args[0])}" if args else "list"
    if name == "dict":
        return f"mapping of {_type_name(args[0])} → {_type_name(args[1])}" if args else "mapping"
    return name


def _default(f: FieldInfo) -> str:
    if f.is_required():
        return "**required**"
    if f.default_factory is not None:
        value = f.default_factory()  # type: ignore[call-arg]
        value = value.model_dump() if isinstance(value, BaseModel) else value
        return "`{}`" if value == {} else ("`[]`" if value == [] else "(see below)")
    if f.default is PydanticUndefined or f.default is None:
        return "—"
    return f"`{json.dumps(f.default)}`"


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []

    def visit(m: type[BaseModel]) -> None:
        if m in seen:
            return
        seen.append(m)
        for f in m.model_fields.values():
            for sub in _nested(f.annotation):
                visit(sub)

    visit(root)
    return seen


def _nested(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in get_args(annotation) for m in _nested(a)]


def _table(model: type[BaseModel]) -> list[str]:
    doc = (model.__doc__ or "").strip().splitlines()[0] if model.__doc__ else ""
    lines = [
        f"### {model.__name__}",
        "",
        doc,
        "",
        "| field | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, f in model.model_fields.items():
        desc = (f.description or "").replace("|", "\\|")
        lines.append(
            f"| `{f.alias or name}` | {_type_name(f.annotation)} | {_default(f)} | {desc} |"
        )
    return [*lines, ""]
