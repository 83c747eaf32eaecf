"""Rendering the files a driver pushes to its guests (job files, configs, scripts).

One renderer for every driver: Jinja2 with undefined names refused and no HTML escaping.
A guest tool reads its file with a grammar of its own, so a value holding a newline, a
``;`` or a quote could add a line, an option or a directive of its own (a fio
``exec_prerun``, an nginx ``include`` …). Every ``{{ value }}`` therefore passes through
the rule of the file's *format* before it is written:

- every format refuses control characters (newline, CR, …; a tab only where the driver
  allows it), since a newline in a value would start a line of its own;
- then the format escapes the value (redis quotes it) or refuses characters its grammar
  gives a meaning (nginx ``;{}``, a fio ``;`` that starts a comment, …), naming the
  template and the value.

A template declares its format on its first line, ``{# vbench: format=fio #}``; one
without a declaration gets ``line`` (control characters refused, nothing else). A value
meant for a comment line is written ``{{ header | comment }}`` (control characters
refused only). Finally every rendered line is checked again for control characters.
Files built without a template use the same rules through :func:`render_value` (a
format's rule for one value) and :func:`render_json` (JSON, escaped by the encoder).

Where a driver's templates live: a built-in driver's under ``drivers/<name>/`` (package
data, see :mod:`vbench.resources`); a driver shipped in a distribution of its own keeps
them in ``<its top-level package>/drivers/<name>/``. :meth:`Templates.for_driver` picks
by the module asking, so the same driver code works in both places.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vbench.errors import ConfigError
from vbench.lazy import lazy_module
from vbench.resources import data_dir

# Jinja only when a file is rendered: scenarios are checked (has_control) without it.
if TYPE_CHECKING:
    import jinja2
else:
    jinja2 = lazy_module("jinja2")

# Every C0 control character and DEL; a tab is allowed only where a template asks.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_TAB = "\t"
_DECLARED = re.compile(r"\A\{#\s*vbench:\s*format=([a-z-]+)\s*#\}")


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


# ----------------------------------------------------------------------------- formats


class Checked(str):
    """A value already passed through a rule (the ``comment`` filter): written as is."""


def _as_is(text: str) -> str:
    return text


def _fio(text: str) -> str:
    # fio cuts a value at ';' or '#' (an inline comment): the rest would be lost silently.
    if ";" in text or "#" in text:
        raise ValueError("';' and '#' start a comment in a fio job file")
    if text != text.strip():
        raise ValueError("leading or trailing spaces")
    return text


_REDIS_PLAIN = re.compile(r"^[^\s\"'\\]+$")


def _redis(text: str) -> str:
    """A redis.conf argument: as is when plain, else double-quoted with the escapes
    redis's argument splitter reads (a quote anywhere in a word starts a string)."""
    if _REDIS_PLAIN.match(text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    return f'"{escaped}"'


def _token(pattern: str, meaning: str) -> Callable[[str], str]:
    allowed = re.compile(pattern)

    def rule(text: str) -> str:
        if not allowed.match(text):
            raise ValueError(f"only {meaning} are allowed here")
        return text

    return rule


def _php_string(text: str) -> str:
    # The value stands inside a single-quoted PHP string: ' or \ would end or bend it.
    if "'" in text or "\\" in text:
        raise ValueError("' and \\ are not allowed inside a PHP string")
    return text


_PATHLIKE = "letters, digits and _ . / : @ + = % , -"
def _xml_text(text: str) -> str:
    # Imported here: xml.sax.saxutils imports urllib.request (http, email, ssl), a third
    # of `vbench validate`'s floor, for the one format that needs it.
    from xml.sax.saxutils import escape

    return escape(text, {'"': "&quot;", "'": "&apos;"})


FORMATS: dict[str, Callable[[str], str]] = {
    # Control characters refused, nothing else: a value on a line of its own kind.
    "line": _as_is,
    "fio": _fio,
    "redis": _redis,
    # Words split at white space; '#' comments, quotes, '\' and '$' have a meaning.
    "haproxy": _token(r"^[A-Za-z0-9_./:@+=%,\[\]-]+$", "letters, digits and _ . / : @ + = "
                      "% , [ ] -"),
    # Plain YAML scalars: no indicator characters, no ': ' or ' #'.
    "yaml": _token(r"^[A-Za-z0-9_/.][A-Za-z0-9_./:+-]*$", "letters, digits and _ . / : + - "
                   "(starting with a letter, digit, _ . or /)"),
    # nginx tokens end at white space or ';', '{' '}' open blocks, '$' is a variable.
    "nginx": _token(r"^[A-Za-z0-9_./:@+=%,\[\]-]+$", _PATHLIKE + " [ ]"),
    # PHP's INI reader: ';' comments, quotes, '${…}', and | & ~ ! ^ ( ) are operators.
    "ini": _token(r"^[A-Za-z0-9_./:@+-]+$", "letters, digits and _ . / : @ + -"),
    "php-string": _php_string,
    "sql": _token(r"^[A-Za-z0-9_.]+$", "letters, digits, _ and ."),
    # Element text of an XML file (Faban's run.xml): markup characters escaped.
    "xml": _xml_text,
}


def render_value(value: Any, fmt: str, what: str, *, tabs: bool = False) -> str:
    """``value`` as it may be written in a file of format ``fmt``; ConfigError naming
    ``what`` when the format refuses it. Numbers are written as they are."""
    try:
        return _apply(value, fmt, tabs)
    except ValueError as exc:
        raise ConfigError(f"{what}: {value!r} refused: {exc}") from None


def _apply(value: Any, fmt: str, tabs: bool) -> str:
    if isinstance(value, Checked):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    text = str(value)
    if has_control(text, tabs=tabs):
        raise ValueError("a control character (newline, tab …): a value must stay on its line")
    try:
        rule = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown file format {fmt!r} (known: {', '.join(FORMATS)})") from None
    return rule(text)


def render_json(data: Any) -> str:
    """A JSON document for a guest tool: every string escaped by the encoder."""
    import json  # a rendered JSON file only: checking a scenario needs none

    return json.dumps(data, ensure_ascii=True)


def _comment(value: Any) -> Checked:
    """A value on a comment line: control characters refused, anything else kept."""
    text = str(value)
    if has_control(text):
        raise _Refused(value, "control characters (newline, tab …) would end the comment")
    return Checked(text)


class _Refused(Exception):
    def __init__(self, value: Any, reason: str) -> None:
        super().__init__(reason)
        self.value = value
        self.reason = reason


# ----------------------------------------------------------------------------- templates


class Templates:
    """The Jinja2 templates of one folder, every value rendered by its file's format."""

    def __init__(self, folder: Path | str, *, tabs: bool = False) -> None:
        self.folder = Path(folder)
        self.tabs = tabs  # True where a tool reads tabs as plain white space
        self._formats: dict[str, str] = {}

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
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(self.folder)),
            undefined=jinja2.StrictUndefined,  # a missing value is an error, not ""
            autoescape=False,  # job files and configs, not HTML
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            # A function of its own: the decorator marks its argument, which a bound
            # method refuses (and a class-level decorator would import Jinja early).
            finalize=jinja2.pass_context(lambda ctx, value: self._finalize(ctx, value)),
        )
        env.filters["comment"] = _comment
        return env

    def format_of(self, template: str) -> str:
        """The format ``template`` declares on its first line (``line`` if none)."""
        if template not in self._formats:
            source, _, _ = self._env.loader.get_source(self._env, template)  # type: ignore[union-attr]
            m = _DECLARED.match(source)
            fmt = m.group(1) if m else "line"
            if fmt not in FORMATS:
                raise ConfigError(f"template {template!r} declares an unknown format {fmt!r} "
                                  f"(known: {', '.join(FORMATS)})")
            self._formats[template] = fmt
        return self._formats[template]

    def _finalize(self, ctx: jinja2.runtime.Context, value: Any) -> Any:
        fmt = self.format_of(ctx.name) if ctx.name else "line"
        try:
            return _apply(value, fmt, self.tabs)
        except ValueError as exc:
            raise _Refused(value, f"{exc} (format {fmt})") from None

    def render(self, template: str, **values: Any) -> str:
        """The rendered text; ConfigError names the template and the refused value (or
        the line of a control character the template itself holds, or a missing
        template)."""
        try:
            self.format_of(template)
            text = self._env.get_template(template).render(**values)
        except jinja2.TemplateNotFound as exc:
            raise ConfigError(f"template {template!r} not found in {self.folder}") from exc
        except _Refused as exc:
            raise ConfigError(f"{template}: value {exc.value!r} refused: {exc.reason}") from None
        number = control_line(text, tabs=self.tabs)
        if number is not None:
            raise ConfigError(f"{template}: line {number} has a control character")
        return text
