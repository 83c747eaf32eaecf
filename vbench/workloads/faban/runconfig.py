"""The user's Faban run configuration (run.xml) with vbench's settings written in (pure).

Faban reads the run's shape from its run configuration: ``fa:scale`` (users per driver),
``fa:runControl`` (``rampUp``, ``steadyState`` and ``rampDown`` in seconds when its
``unit`` is ``time``) and ``outputDir``. vbench writes the scenario's phases, ``users``
and the trial's own output folder into a copy of the user's file, so that the numbers
the scenario states are the ones Faban runs with.

Values go through :func:`vbench.templates.render_value` (format ``xml``: control
characters refused, markup escaped), the one path for files guest tools read. The edit
is made on the text, element by element, after the XML has been parsed and each
element found exactly once: everything else in the user's file (namespace prefixes,
comments, layout) stays byte for byte, which a re-serialised tree would not keep.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from vbench.templates import render_value

FA = "http://faban.sunsource.net/ns/faban"


class RunConfigError(ValueError):
    """The run configuration cannot take vbench's settings (the message names why)."""


@dataclass(frozen=True)
class RunShape:
    """What a run configuration asks of Faban (seconds; users); ``None`` where it is silent."""

    ramp_up: float | None
    steady: float | None
    ramp_down: float | None
    users: int | None


def rewrite(text: str, *, output_dir: str, phases: tuple[float, float, float] | None,
            users: int | None, source: str) -> tuple[str, RunShape]:  # fmt: skip
    """``text`` with the output folder, and optionally phases and users, set; and its shape."""
    root, prefixes = _parse(text, source)
    # Every value goes through the one rendering path for guest files (XML text here).
    edits: list[tuple[str, str | None, str]] = [
        ("outputDir", None, render_value(output_dir, "xml", "faban outputDir"))]
    if phases is not None:
        control = _one(root, "runControl", FA, source)
        if control.get("unit", "time") != "time":
            raise RunConfigError(
                f"{source}: fa:runControl unit={control.get('unit')!r} counts cycles, not "
                "seconds; set set_phases: false to keep the file's own run length")
        for tag, seconds in zip(("rampUp", "steadyState", "rampDown"), phases, strict=True):
            edits.append((tag, FA, render_value(round(seconds), "xml", f"faban {tag}")))
    if users is not None:
        edits.append(("scale", FA, render_value(users, "xml", "faban scale")))
    for local, uri, value in edits:
        if len(_one(root, local, uri, source)):
            raise RunConfigError(f"{source}: <{local}> holds elements, not a value")
        text = _replace_text(text, local, _prefixes_of(uri, prefixes), value, source)
    return text, shape(_parse(text, source)[0])


def shape(root: ET.Element) -> RunShape:
    """The phases and users a parsed run configuration states."""

    def number(tag: str) -> float | None:
        el = root.find(f".//{{{FA}}}{tag}")
        try:
            return float((el.text or "").strip()) if el is not None else None
        except ValueError:
            return None

    users = number("scale")
    control = root.find(f".//{{{FA}}}runControl")
    timed = control is not None and control.get("unit", "time") == "time"
    return RunShape(number("rampUp") if timed else None,
                    number("steadyState") if timed else None,
                    number("rampDown") if timed else None,
                    int(users) if users is not None else None)  # fmt: skip


def _parse(text: str, source: str) -> tuple[ET.Element, list[tuple[str, str]]]:
    prefixes: list[tuple[str, str]] = []
    try:
        for _event, ns in ET.iterparse(io.StringIO(text), events=("start-ns",)):
            prefixes.append(ns)  # type: ignore[arg-type]
        return ET.fromstring(text), prefixes
    except ET.ParseError as exc:
        raise RunConfigError(f"{source}: not XML: {exc}") from None


def _one(root: ET.Element, local: str, uri: str | None, source: str) -> ET.Element:
    """The single element ``local`` in namespace ``uri`` (any namespace when ``None``)."""
    found = [el for el in root.iter() if isinstance(el.tag, str)
             and el.tag.split("}")[-1] == local
             and (uri is None or el.tag == f"{{{uri}}}{local}")]  # fmt: skip
    if not found:
        raise RunConfigError(f"{source}: no <{local}> element; is this a Faban run.xml?")
    if len(found) > 1:
        raise RunConfigError(f"{source}: {len(found)} <{local}> elements; expected one")
    return found[0]


def _prefixes_of(uri: str | None, prefixes: list[tuple[str, str]]) -> list[str] | None:
    """The prefixes bound to ``uri`` in the file (``""`` for a default namespace)."""
    return None if uri is None else sorted({p for p, u in prefixes if u == uri})


def _replace_text(text: str, local: str, prefixes: list[str] | None, value: str,
                  source: str) -> str:  # fmt: skip
    names = r"(?:[\w.-]+:)?" if prefixes is None else (
        "(?:" + "|".join(re.escape(f"{p}:") if p else "" for p in prefixes) + ")")
    element = re.compile(rf"(<({names}{local})(?:\s[^<>]*)?>)[^<]*(</\2\s*>)|<{names}{local}"
                         rf"(?:\s[^<>]*)?/>")  # fmt: skip
    hits = list(element.finditer(text))
    if len(hits) != 1:
        raise RunConfigError(f"{source}: cannot place a value in <{local}> "
                             f"({len(hits)} candidates in the text)")
    m = hits[0]
    if m.group(1) is None:  # <tag/>: empty element
        name = m.group(0)[1:].split()[0].rstrip("/>")
        new = f"<{m.group(0)[1:-2].rstrip()}>{value}</{name}>"
    else:
        new = f"{m.group(1)}{value}{m.group(3)}"
    return text[:m.start()] + new + text[m.end():]
