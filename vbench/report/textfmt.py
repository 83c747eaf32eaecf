"""Plain-text output of compare, QoS and regression checks (history: historyfmt.py):
aligned columns, no colour and no terminal-width wrapping, so that cron logs and golden
files read the same everywhere. Times are printed in UTC for the same reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from vbench.analysis.compare import CompareResult
from vbench.analysis.qos import QosResult
from vbench.analysis.regression import RegressionResult
from vbench.report.data import MISSING, fmt_mean_ci, fmt_value


def utc(epoch: Any) -> str:
    try:
        return datetime.fromtimestamp(float(epoch), tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, OverflowError):
        return MISSING


def table(head: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[
    str
]:
    """Columns padded to their widest cell, two spaces apart, trailing blanks removed."""
    widths = [len(h) for h in head]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    return [line(head), *(line(r) for r in rows)]


def _with_n(text: str, n: int) -> str:
    return f"{text} (n={n})" if n else text


# ------------------------------------------------------------------ compare


def _run_line(tag: str, run: Any) -> str:
    version = run.get("vbench_version") or MISSING
    tags = ", ".join(run.get("tags") or ()) or "-"
    return (f"{tag}  {run.get('run_id')}  {run.get('scenario_name')}  {utc(run.get('started'))}"
            f"  {run.get('status')}  vbench {version}  tags {tags}")


def format_compare(result: CompareResult) -> str:
    out = [_run_line("A", result.run_a), _run_line("B", result.run_b), ""]
    if result.comparability is not None:
        out += result.comparability.lines()
    if result.differences:
        kind = "hardware and versions" if result.hardware_differs else "versions or settings"
        out.append(f"testbeds differ ({len(result.differences)} facts, {kind}):")
        rows = [[d.key, d.a if d.a is not None else "absent", "→",
                 d.b if d.b is not None else "absent"] for d in result.differences]
        out += ["  " + x for x in table(["fact", "A", "", "B"], rows)[1:]]
    else:
        out.append("testbeds: same facts (testbed, guests, vbench version)")
    out.append("")
    if result.rows:
        rows = [
            [r.title, r.metric, _with_n(fmt_mean_ci(r.a, r.unit), r.a.n),
             _with_n(fmt_mean_ci(r.b, r.unit), r.b.n),
             f"{r.ratio:.3f}" if r.ratio is not None else MISSING, r.verdict, r.sig.reason]
            for r in result.rows
        ]
        out += table(["point", "metric", "A mean ± 95 % CI", "B mean ± 95 % CI", "B/A",
                      "verdict", "test"], rows, right=(2, 3, 4))
    else:
        out.append("no metric with data at a common point")
    out.append("")
    out.append(
        f"significance: two-sided Mann–Whitney U at α = {result.alpha:g}; where the trial "
        "counts are too small for the test to reach α, the 95 % confidence intervals are "
        "compared (disjoint = significant). better/worse only when significant."
    )
    if result.only_a:
        out.append("only in A: " + "; ".join(result.only_a))
    if result.only_b:
        out.append("only in B: " + "; ".join(result.only_b))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ QoS, regression


def format_qos(qos: QosResult) -> str:
    if not qos.declared:
        return "QoS: no criteria declared\n"
    subjects = any(c.subject for c in qos.checks)
    rows = [[c.criterion, *([c.subject_text or "-"] if subjects else []), c.point_title,
             fmt_value(c.value, c.unit) if c.value is not None else c.why or "no data",
             c.status.upper() if c.status != "pass" else "pass"] for c in qos.checks]
    head = ["criterion", *(["subject"] if subjects else []), "point", "value", "status"]
    lines = [qos.verdict(), *table(head, rows, right=(len(head) - 2,))]
    # Why a check has no verdict, once per criterion and reason (not per point).
    why: dict[str, str] = {}
    for c in qos.checks:
        if c.why:
            why.setdefault(f"{c.criterion}: {c.message}", c.status.upper())
    lines += [f"{status} {text}" for text, status in why.items()]
    return "\n".join(lines) + "\n"


def format_regression(reg: RegressionResult) -> str:
    lines = [reg.verdict()]
    comp = reg.comparability
    if comp is not None and not (comp.alike and comp.same_overrides):
        lines.append("the baseline and this run differ:")
        lines += ["  " + x for x in comp.lines(98, labels=("the baseline", "this run"))]
    if reg.checks:
        rows = [[c.title, c.metric, _with_n(fmt_mean_ci(c.baseline, c.unit), c.baseline.n),
                 _with_n(fmt_mean_ci(c.current, c.unit), c.current.n),
                 f"{c.change * 100:+.1f} %" if c.change is not None else MISSING,
                 c.status.upper() if c.status == "regression" else c.status, c.sig.reason]
                for c in reg.checks]
        lines += table(["point", "metric", "baseline", "this run", "change", "status", "test"],
                       rows, right=(2, 3, 4))
        lines.append(f"regression = worse by more than {reg.min_effect * 100:g} % and "
                     f"significant at α = {reg.alpha:g}")
    return "\n".join(lines) + "\n"
