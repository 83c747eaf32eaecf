"""The run's verdict (vbench/analysis/verdict.py) as each output shows it: the same
answer first and the same headline figures in the terminal, ``show``, Markdown, HTML,
JSON and JUnit. Pure formatting: nothing here decides anything about a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vbench.analysis.verdict import Answer, Figure, Verdict, verdict_to_json
from vbench.report.fit import wrap

# The HTML badge kind of each QoS status (a search's bracket is the study, not a fault).
QOS_KIND = {"pass": "good", "fail": "bad", "bracket": "good", "none": "neutral"}
SIMULATED_NOTE = "simulated lab"


def terminal_lines(v: Verdict, disturbed_at: Mapping[str, str] | None = None) -> list[str]:
    """Answer first, then how to read it, the headline figures, QoS, noise, vSphere;
    ``disturbed_at`` as for :func:`html_context` (said after the line of the first figure
    measured at the point: the lines of its other figures would repeat it)."""
    noted: set[str] = set()
    said = {}
    for f in v.headline:
        first = bool(_note(f, disturbed_at)) and (f.where or "") not in noted
        said[f"  {f.text()}"] = f"  {figure_text(f, disturbed_at if first else None)}"
        if first:
            noted.add(f.where or "")
    return [said.get(line, line) for line in v.lines()]


def figure_text(f: Figure, disturbed_at: Mapping[str, str] | None = None) -> str:
    """:meth:`Figure.text`, and the disturbed trials of the point it was measured at
    (``disturbed_at``: point title -> their text, vbench/report/disturbed.by_title)."""
    note = _note(f, disturbed_at)
    return f.text() + (f" ({note})" if note else "")


def _note(f: Figure, disturbed_at: Mapping[str, str] | None) -> str:
    """What a figure says of its point's disturbed trials (nothing when it has no value:
    no trial is in it), as every output says it."""
    return (disturbed_at or {}).get(f.where or "", "") if f.value is not None else ""


def qos_badge(v: Verdict) -> tuple[str, str]:
    """(text, kind) of the QoS badge: never a red "fail" for a search's upper levels."""
    q = v.qos
    if q.status == "bracket":
        return f"search bracket ({q.failed} of {q.checks} checks fail above the answer)", "good"
    if q.status == "fail":
        return f"fail ({len(q.unexpected) or q.failed} of {q.checks})", "bad"
    if q.status == "pass":
        return "pass", "good"
    return "none declared", "neutral"


def figure_row(f: Figure) -> dict[str, Any]:
    """One headline figure for a table: value ± CI with its unit, n, where, window."""
    return {
        "metric": f.metric, "unit": f.unit, "value": f.value_text(),
        "n": str(f.n) if f.value is not None else "—",
        "where": f.where or "—", "window": f.window or "—",
        "direction": f"{f.direction} is better" if f.direction else "not ranked",
        "missing": f.value is None, "simulated": f.simulated, "noisy": f.noisy,
    }


def answer_context(a: Answer) -> dict[str, Any]:
    return {"kind": a.kind, "title": a.title, "text": a.text, "status": a.status,
            "ok": a.ok, "details": list(a.details), "how_to_read": a.how_to_read,
            "facts": [(f.label, f.text) for f in a.facts]}


def html_context(v: Verdict, disturbed_at: Mapping[str, str] | None = None
                 ) -> dict[str, Any]:
    """What the HTML template's answer block shows (text only: autoescaped);
    ``disturbed_at``: point title -> its disturbed trials' text, said beside a headline
    figure measured there (vbench/report/disturbed.py)."""
    text, kind = qos_badge(v)
    return {
        "answers": [answer_context(a) for a in v.answers],
        "figures": [{**figure_row(f), "disturbed": _note(f, disturbed_at)}
                    for f in v.headline],
        "window": next((f.window for f in v.headline if f.window), None),
        "simulated": v.simulated,
        "qos_text": v.qos.text, "qos_badge": text, "qos_kind": kind,
        "effects": v.effects.text() if v.effects is not None else None,
        "exit": None if v.exit_code is None
        else f"exit {v.exit_code}" + (f": {v.exit_reason}" if v.exit_reason else ""),
        "repeat": None if v.repeat is None else {
            "text": v.repeat.text, "rule": v.repeat.rule, "met": v.repeat.met,
            "points": [(p.title, p.text) for p in v.repeat.points]},
    }


def markdown_lines(v: Verdict, md: Any, disturbed_at: Mapping[str, str] | None = None
                   ) -> list[str]:
    """The answer block of a Markdown summary (``md`` escapes a table cell;
    ``disturbed_at`` as for :func:`html_context`)."""
    out: list[str] = []
    for a in v.answers:
        out.append(f"**{md(a.title)}: {md(a.text)}**")
        out += [f"- {md(d)}" for d in a.details]
        out.append("")
    if v.simulated:
        out += [f"> **Simulated lab** — {md(v.simulated)}: these figures show the "
                "simulator, not a real vSphere.", ""]
    if v.headline:
        out += ["| headline figure | mean ± 95 % CI | n | at | window |",
                "|---|---:|---:|---|---|"]
        for f in v.headline:
            sim = f" ({SIMULATED_NOTE})" if f.simulated else ""
            where = f.where or "—"
            if _note(f, disturbed_at):
                where += f" ({_note(f, disturbed_at)})"
            out.append(f"| {md(f.metric)} | {md(f.value_text())}{sim} | "
                       f"{f.n if f.value is not None else '—'} | {md(where)} | "
                       f"{md(f.window or '—')} |")
        out.append("")
    out.append(f"- QoS: {md(v.qos.text)}")
    if v.effects is not None:
        out.append(f"- vSphere: {md(v.effects.text())}")
    if v.repeat is not None:  # an adaptive repeat: trials and target per point
        out.append(f"- Trials: {md(v.repeat.text)} — {md(v.repeat.rule)}")
        out += [f"  - {md(p.title)}: {md(p.text)}" for p in v.repeat.points]
    return out


def json_doc(v: Verdict) -> dict[str, Any]:
    return verdict_to_json(v)


def junit_answer(v: Verdict, disturbed_at: Mapping[str, str] | None = None
                 ) -> tuple[str, str | None, str]:
    """(name, failure or None, output) of the JUnit case of the study's answer: it fails
    only when the study found no answer it calls good (a search with no passing level);
    ``disturbed_at`` as for :func:`html_context`."""
    a = v.answer
    if a is None:
        return "answer", None, "no answer declared"
    failure = f"{a.title}: {a.text}" if a.ok is False else None
    out = "\n".join([a.line(), *a.details,
                     *(figure_text(f, disturbed_at) for f in v.headline)])
    return a.title, failure, out


def print_verdict(v: Verdict, console: Any, disturbed_at: Mapping[str, str] | None = None
                  ) -> None:
    """The verdict on a rich console, answer first (never cut: off a terminal the
    console does not wrap; lines are the same as :func:`terminal_lines`)."""
    from rich.text import Text

    from vbench.report.fit import console_width

    for line in terminal_lines(v, disturbed_at):
        style = ""
        if v.answer is not None and line == v.answer.line():
            style = "bold red" if v.answer.ok is False else "bold"
        elif line.startswith("SIMULATED LAB"):
            style = "bold yellow"
        elif line.startswith("QoS: FAIL"):
            style = "red"
        # Fitted to the console's width (a terminal's, or COLUMNS): wrapped between words.
        console.print(Text(line, style=style), soft_wrap=console_width(console) is None)


def compare_answers(a: Verdict, b: Verdict) -> dict[str, Any]:
    """Two runs' answers side by side: each answer's line, its numeric facts (a search's
    highest pass, …) and the headline figures they share, with the ratio B/A. The
    point-by-point comparison of a search's levels says nothing about its answer."""
    facts = []
    fa = {f.label: f for ans in a.answers[:1] for f in ans.facts}
    fb = {f.label: f for ans in b.answers[:1] for f in ans.facts}
    shared = {f.metric for f in a.headline}
    for label, x in fa.items():
        y = fb.get(label)
        if label in shared:  # a headline figure: compared below with its CI
            continue
        if y is None or x.value is None or y.value is None or label in ("levels", "trials"):
            continue
        facts.append({"label": label, "a": x.text, "b": y.text,
                      "ratio": y.value / x.value if x.value else None})
    figures = []
    hb = {f.metric: f for f in b.headline}
    for x in a.headline:
        y = hb.get(x.metric)
        if y is None:
            continue
        ratio = y.value / x.value if x.value and y.value is not None else None
        figures.append({"metric": x.metric, "unit": x.unit, "a": x.value_text(),
                        "b": y.value_text(), "a_where": x.where, "b_where": y.where,
                        "ratio": ratio, "direction": x.direction})
    return {"a": {"run_id": a.run_id, "answer": a.answer.line() if a.answer else None},
            "b": {"run_id": b.run_id, "answer": b.answer.line() if b.answer else None},
            "facts": facts, "figures": figures,
            "searches": any(x.qos_expected for x in (*a.answers, *b.answers))}


def compare_answer_lines(doc: dict[str, Any], width: int | None = None) -> list[str]:
    """:func:`compare_answers` as the terminal prints it, before the per-point table;
    with a ``width``, each line wraps between words under its own indent."""
    rows = [("", f"A {doc['a']['run_id']}: {doc['a']['answer'] or 'no answer'}"),
            ("", f"B {doc['b']['run_id']}: {doc['b']['answer'] or 'no answer'}")]
    for f in doc["facts"]:
        ratio = "" if f["ratio"] is None else f"  B/A {f['ratio']:.3f}"
        rows.append(("  ", f"{f['label']}: A {f['a']}  B {f['b']}{ratio}"))
    for f in doc["figures"]:
        ratio = "" if f["ratio"] is None else f"  B/A {f['ratio']:.3f}"
        where = f" (A at {f['a_where']}, B at {f['b_where']})" if f["a_where"] else ""
        better = f", {f['direction']} is better" if f["direction"] else ""
        rows.append(("  ", f"{f['metric']}: A {f['a']}  B {f['b']}{ratio}{where}{better}"))
    return [line for indent, text in rows
            for line in wrap(text, width, first=indent, rest=indent + "    ")]


def answer_json(v: Verdict | None) -> dict[str, Any]:
    """A run's answer and headline for a row of ``history --json`` (None: an older run
    whose verdict history did not compute)."""
    if v is None:
        return {"answer": None, "answer_title": None, "headline": [], "simulated": None}
    a = v.answer
    return {"answer": a.text if a else None, "answer_title": a.title if a else None,
            "headline": [{"metric": f.metric, "value": f.value, "unit": f.unit, "n": f.n,
                          "ci_low": f.ci_low, "ci_high": f.ci_high, "where": f.where,
                          "missing": f.missing} for f in v.headline],
            "simulated": v.simulated}
