"""`vbench history` as plain text: per metric one row per run (its lab, its variant, the
figure at every point), and before the tables what the runs differ in — the variants
(scenario after --set, lab) as a diff against the newest run's, and the runs' --set
arguments. Aligned columns, no colour, times in UTC (as textfmt)."""

from __future__ import annotations

from collections.abc import Mapping

from vbench.analysis.direction import way_text
from vbench.analysis.history import History, sparkline
from vbench.analysis.stats import Summary
from vbench.analysis.verdict import Verdict
from vbench.report.data import MISSING, fmt_num
from vbench.report.disturbed import PointDisturbance
from vbench.report.history_watch import LEGEND, MARK, cells, run_lines
from vbench.report.textfmt import table, utc

WIDTH = 100


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _variant_lines(history: History) -> list[str]:
    if len(history.variants) < 2:
        return []
    out = ["variants (the same scenario after --set, in the same lab):"]
    for v in history.variants:
        head = (f"  {v.name}  lab {v.lab or '-'}, {v.lab_kind}; scenario {v.scenario_hash}; "
                f"{_plural(v.runs, 'run')}")
        if v.against_a is None:
            out.append(head + " — the newest run's")
            continue
        out.append(head + "; against A:")
        out += ["      " + line for line in v.against_a.lines(WIDTH - 6, labels=("A", v.name))]
    return out


def _override_lines(history: History) -> list[str]:
    marked = [r for r in history.runs if r.overrides]
    if not marked:
        return []
    out = ["runs with --set (+):"]
    for r in marked:
        out.append(f"  {r.run_id}  {' '.join(r.overrides)}")
    return [line if len(line) <= WIDTH else line[: WIDTH - 1] + "…" for line in out]


def _answer_lines(history: History, verdicts: Mapping[str, Verdict | None]) -> list[str]:
    """One entry per run: its answer (the study's, as every output of the run leads with)
    under the run, then its headline figures. Indented: a line that starts with a run id
    is its row in a metric's table below."""
    if not verdicts:
        return []
    out = ["answer of each run (oldest first):"]
    for r in history.runs:
        v = verdicts.get(r.run_id)
        a = v.answer if v is not None else None
        sim = " [simulated lab]" if v is not None and v.simulated else ""
        out.append(f"  {r.run_id}  {utc(r.started)}  {r.status}{sim}")
        if v is None:  # an older run not answered yet (history computes the newest only)
            out.append(f"      {MISSING} (no stored verdict: `vbench show {r.run_id}` "
                       "computes it)")
            continue
        out.append(f"      {a.line() if a is not None else MISSING}")
        out += [f"        {f.text()}" for f in (v.headline if v is not None else ())]
    return [*out, ""]


def _cell(summary: Summary | None, disturbed: PointDisturbance | None) -> str:
    if summary is None:
        return MISSING
    return fmt_num(summary.mean) + (f" {MARK}" if disturbed and disturbed.included else "")


def format_history(history: History,
                   verdicts: Mapping[str, Verdict | None] | None = None) -> str:
    if not history.runs:
        return f"no stored run of scenario {history.scenario}\n"
    runs = history.runs
    several = len(history.variants) > 1
    out = [f"history of {history.scenario}: {_plural(len(runs), 'run')}, "
           f"{utc(runs[0].started)} → {utc(runs[-1].started)}",
           "(oldest first; * = baseline, + = ran with --set"
           + (", v = variant)" if several else ")")]
    out += _variant_lines(history)
    out += _override_lines(history)
    disturbed = cells(history)
    place = {id(s): k for k, s in enumerate(history.series)}
    watched = run_lines(history)
    if watched:
        out += [LEGEND, "disturbed trials (oldest first; `vbench show RUN` says more):",
                *watched]
    out.append("")
    out += _answer_lines(history, verdicts or {})
    for m in history.metrics:
        series = history.for_metric(m)
        if not series:
            out += [f"{m}: no data in these runs", ""]
            continue
        unit = series[0].unit
        out.append(f"{m}{f' ({unit})' if unit else ''} — {way_text(series[0].better)} — "
                   "mean over the successful trials of each run")
        lead = ["run", "lab", *(["v"] if several else []), "started"]
        rows = []
        for i, r in enumerate(runs):
            figures = [_cell(s.summaries[i], disturbed.get((place[id(s)], i)))
                       for s in series]
            mark = (" *" if r.baseline else "") + (" +" if r.overrides else "")
            rows.append([r.run_id + mark, r.lab or "-", *([r.variant] if several else []),
                         utc(r.started), *figures])
        right = tuple(range(len(lead), len(lead) + len(series)))
        pad = [""] * (len(lead) - 1)
        trend = ["trend", *pad, *(sparkline(s.means) for s in series)]
        changes = [history.change(s) for s in series]
        change = ["first → last" + (" (A)" if several else ""), *pad,
                  *(f"{c * 100:+.1f} %" if c is not None else MISSING for c in changes)]
        out += table([*lead, *(s.title for s in series)], [*rows, trend, change], right=right)
        out.append("")
    return "\n".join(out)
