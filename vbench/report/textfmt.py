"""Plain-text output of compare, QoS and regression checks (history: historyfmt.py):
aligned columns, no colour. Given a width (a terminal's), tables fold columns under their
rows and prose wraps between words to fit it (:mod:`vbench.report.fit`); without one
nothing wraps, so that cron logs and golden files read the same everywhere. Times are
printed in UTC for the same reason."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vbench.analysis.compare import CompareResult
from vbench.analysis.qos import QosResult
from vbench.analysis.regression import RegressionResult
from vbench.report.data import MISSING, fmt_mean_ci, fmt_value
from vbench.report.fit import pack, table, wrap

__all__ = ["format_compare", "format_qos", "format_regression", "table", "utc"]


def utc(epoch: Any) -> str:
    try:
        return datetime.fromtimestamp(float(epoch), tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, OverflowError):
        return MISSING


def _with_n(text: str, n: int) -> str:
    return f"{text} (n={n})" if n else text


# ------------------------------------------------------------------ compare


def _run_line(tag: str, run: Any, width: int | None) -> list[str]:
    version = run.get("vbench_version") or MISSING
    tags = ", ".join(run.get("tags") or ()) or "-"
    parts = [f"{tag}  {run.get('run_id')}", str(run.get("scenario_name")),
             utc(run.get("started")), str(run.get("status")), f"vbench {version}", f"tags {tags}"]
    return pack(parts, width, indent="", gap="  ")


def _facts(result: CompareResult, width: int | None) -> list[str]:
    """The testbed facts that differ: a table, or one wrapped line per fact when the table
    is wider than the width."""
    rows = [[d.key, d.a if d.a is not None else "absent", "→",
             d.b if d.b is not None else "absent"] for d in result.differences]
    lines = ["  " + x for x in table(["fact", "A", "", "B"], rows)[1:]]
    if width is None or max(len(x) for x in lines) <= width:
        return lines
    return [x for r in rows for x in wrap(f"{r[0]}: {r[1]} → {r[3]}", width, "  ", "      ")]


def format_compare(result: CompareResult, width: int | None = None) -> str:
    """The comparison as text; with ``width``, fitted to it (see the module)."""
    out = [*_run_line("A", result.run_a, width), *_run_line("B", result.run_b, width), ""]
    if result.comparability is not None:
        out += (result.comparability.lines(width) if width is not None
                else result.comparability.lines())
    if result.differences:
        kind = "hardware and versions" if result.hardware_differs else "versions or settings"
        out.append(f"testbeds differ ({len(result.differences)} facts, {kind}):")
        out += _facts(result, width)
    else:
        out.append("testbeds: same facts (testbed, guests, vbench version)")
    out.append("")
    if result.rows:
        rows = [
            [r.title, r.metric, _with_n(fmt_mean_ci(r.a, r.unit), r.a.n),
             _with_n(fmt_mean_ci(r.b, r.unit), r.b.n),
             f"{r.ratio:.3f}" if r.ratio is not None else MISSING, r.verdict, r.reason]
            for r in result.rows
        ]
        # Narrow: the test, then the two figures, go under their row; the verdict stays.
        out += table(["point", "metric", "A mean ± 95 % CI", "B mean ± 95 % CI", "B/A",
                      "verdict", "test"], rows, right=(2, 3, 4), width=width,
                     fold=(6, (2, 3)), names={2: "A", 3: "B", 6: ""})
    else:
        out.append("no metric with data at a common point")
    out.append("")
    out += wrap(
        f"significance: two-sided Mann–Whitney U at α = {result.alpha:g}; where the trial "
        "counts are too small for the test to reach α, the 95 % confidence intervals are "
        "compared (disjoint = significant). better/worse only when significant and the "
        f"change is larger than ±{result.min_effect * 100:g} % (report.min_effect sets it "
        "per metric); within it: same. A metric the QoS caps (a rate limit) is not compared; "
        "one without a direction of improvement is changed at most.", width)
    if result.only_a:
        out += wrap("only in A: " + "; ".join(result.only_a), width, "", "  ")
    if result.only_b:
        out += wrap("only in B: " + "; ".join(result.only_b), width, "", "  ")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ QoS, regression


def format_qos(qos: QosResult, width: int | None = None) -> str:
    """The QoS checks; with ``width``, fitted to it (the subject, then the point, go under
    their row)."""
    if not qos.declared:
        return "QoS: no criteria declared\n"
    subjects = any(c.subject for c in qos.checks)
    rows = [[c.criterion, *([c.subject_text or "-"] if subjects else []), c.point_title,
             fmt_value(c.value, c.unit) if c.value is not None else c.why or "no data",
             c.status.upper() if c.status != "pass" else "pass"] for c in qos.checks]
    head = ["criterion", *(["subject"] if subjects else []), "point", "value", "status"]
    fold = (1, 2) if subjects else (1,)
    lines = [*wrap(qos.verdict(), width),
             *table(head, rows, right=(len(head) - 2,), width=width, fold=fold)]
    # Why a check has no verdict, once per criterion and reason (not per point).
    why: dict[str, str] = {}
    for c in qos.checks:
        if c.why:
            why.setdefault(f"{c.criterion}: {c.message}", c.status.upper())
    for text, status in why.items():
        lines += wrap(f"{status} {text}", width, "", "  ")
    return "\n".join(lines) + "\n"


def format_regression(reg: RegressionResult, width: int | None = None) -> str:
    """The regression check; with ``width``, fitted to it (see the module)."""
    lines = wrap(reg.verdict(), width, "", "  ")
    comp = reg.comparability
    if comp is not None and not (comp.alike and comp.same_overrides):
        lines.append("the baseline and this run differ:")
        lines += ["  " + x for x in comp.lines(98 if width is None else max(40, width - 2),
                                               labels=("the baseline", "this run"))]
    if reg.checks:
        rows = [[c.title, c.metric, _with_n(fmt_mean_ci(c.baseline, c.unit), c.baseline.n),
                 _with_n(fmt_mean_ci(c.current, c.unit), c.current.n),
                 f"{c.change * 100:+.1f} %" if c.change is not None else MISSING,
                 _status_text(c), c.sig.reason]
                for c in reg.checks]
        # Narrow: the test, then the two figures, go under their row; the status stays.
        lines += table(["point", "metric", "baseline", "this run", "change", "status", "test"],
                       rows, right=(2, 3, 4), width=width, fold=(6, (2, 3)), names={6: ""})
        lines += wrap(f"regression = worse by more than {reg.min_effect * 100:g} % and "
                      f"significant at α = {reg.alpha:g}", width)
        lines += [f"  known: {c.title} {c.metric}: {c.triage}" for c in reg.checks if c.triage]
    lines += _change_alerts(reg)
    return "\n".join(lines) + "\n"


def _status_text(c: Any) -> str:
    if c.status != "regression":
        return str(c.status)
    return "known" if c.triage else "REGRESSION"


def _change_alerts(reg: RegressionResult) -> list[str]:
    """Each regression change point tonight sits after: new (failing) or known."""
    from vbench.report.changesfmt import change_lines

    out = []
    for c in reg.changes:
        new = c in reg.failing_changes
        out.append(f"{'CHANGE POINT (new, fails tonight)' if new else 'change point (known)'}:")
        out += change_lines(c)
    return out
