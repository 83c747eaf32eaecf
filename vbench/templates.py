"""Rendering the files a driver pushes to its guests (job files, configs, scripts).

One renderer for every driver: Jinja2 with undefined names refused, no HTML escaping,
and a guard on the result. A config file is read line by line by its tool, so a value
holding a newline could add a line of its own: each driver's Params model refuses such
values (:func:`has_control`, before anything is rendered), and the renderer refuses any
rendered line that still holds a control character, naming the template and the line.

Where a driver's templates live: a built-in driver's under ``drivers/<name>/`` (package
data, see :mod:`vbench.resources`); a driver shipped in a distribution of its own keeps
them in ``<its top-level package>/drivers/<name>/``. :meth:`Templates.for_driver` picks
by the module asking, so the same driver code works in both places.
"""

from __future__ import annotations

import re
from functools import cached_property
from importlib import import_module
from pathlib import Path
from typing import Any

import jinja2

from vbench.errors import ConfigError
from vbench.resources import data_dir

# Every C0 control character and DEL; a tab is allowed only where a template asks.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_TAB = "\t"


def has_control(value: str, *, tabs: bool = False) -> bool:
    """Whether one value holds a control character (a tab counts unless ``tabs``): for
    validators of values that will stand on one line of a rendered file."""
    return bool(_CONTROL.search(value)) or (not tabs and _TAB in value)


def control_line(text: str, *, tabs: bool = False) -> int | None:
    """The 1-based number of the first line of ``text`` holding a control character
    (a tab counts unless ``tabs``), or None when every line is clean. Lines end at
    ``\n`` only: ``str.splitlines`` would also split at CR, VT, FF and FS/GS/RS and so
    hide the very characters this looks for."""
    for number, line in enumerate(text.split("\n"), start=1):
        if has_control(line, tabs=tabs):
            return number
    return None


class Templates:
    """The Jinja2 templates of one folder, rendered with the control-character guard."""

    def __init__(self, folder: Path | str, *, tabs: bool = False) -> None:
        self.folder = Path(folder)
        self.tabs = tabs  # True where a tool reads tabs as plain white space

    @classmethod
    def for_driver(cls, name: str, module: str = "vbench", *, tabs: bool = False) -> Templates:
        """The templates of driver ``name``, as seen from ``module`` (pass ``__name__``):
        vbench's ``drivers/<name>/`` for a built-in driver, else ``drivers/<name>/`` inside
        the top-level package of the distribution the module belongs to."""
        top = module.split(".", 1)[0]
        if top == "vbench":
            return cls(data_dir("drivers") / name, tabs=tabs)
        package = import_module(top)
        return cls(Path(package.__file__ or ".").parent / "drivers" / name, tabs=tabs)

    @cached_property
    def _env(self) -> jinja2.Environment:
        return jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(self.folder)),
            undefined=jinja2.StrictUndefined,  # a missing value is an error, not ""
            autoescape=False,  # job files and configs, not HTML
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )

    def render(self, template: str, **values: Any) -> str:
        """The rendered text; ConfigError names the template and line of a control
        character (a value that slipped past validation) or a missing template."""
        try:
            text = self._env.get_template(template).render(**values)
        except jinja2.TemplateNotFound as exc:
            raise ConfigError(f"template {template!r} not found in {self.folder}") from exc
        number = control_line(text, tabs=self.tabs)
        if number is not None:
            raise ConfigError(f"{template}: line {number} has a control character")
        return text

