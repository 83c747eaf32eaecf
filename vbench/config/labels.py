"""Point label templates: ``label: "{mode}-{vms}VMs-{instances}S"`` over factor levels.

A study names its configurations (``Native-16S``, ``VM-8VMs-16S``, ``VM-Docker-8VMs-16S``)
from the levels of its factors. The template is a text with ``{factor}`` placeholders,
each replaced by that factor's level label at the point (``{{`` and ``}}`` are literal
braces). Nothing else is allowed inside braces (no attribute, index, conversion or
format spec), so a template cannot reach anything but the level labels.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping

from vbench.templates import has_control


def template_problems(
    template: str, factors: Iterable[str], required: Iterable[str] = ()
) -> list[str]:
    """What is wrong with ``template`` for these factor names (empty: nothing).
    ``required``: factors the template must name (a find-max search's factor: without
    it every level of a search would have the same name)."""
    known = list(dict.fromkeys([*factors, *required]))
    if has_control(template):
        return ["control characters are not allowed in a label template"]
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [f"not a label template ({exc}); use {{factor}} and {{{{ }}}} for braces"]
    problems = []
    for _text, name, spec, conversion in parts:
        if name is None:
            continue
        if not name:
            problems.append("an empty {} placeholder: name a factor inside the braces")
        elif name not in known:
            problems.append(f"{{{name}}} names no factor (factors: "
                            f"{', '.join(known) or 'none defined'})")
        if spec or conversion:
            problems.append(f"{{{name}...}}: only plain {{factor}} placeholders are allowed")
    named = {name for _t, name, _s, _c in parts if name}
    problems += [f"name {{{r}}} in the template: the search sets it, and without it every "
                 "level would have the same name" for r in required if r not in named]
    return problems


def render_label(template: str, labels: Mapping[str, str]) -> str:
    """The point's name: each placeholder replaced by its factor's level label."""
    out = []
    for text, name, _spec, _conv in string.Formatter().parse(template):
        out.append(text)
        if name is not None:
            out.append(str(labels.get(name, "?")))
    return "".join(out)
