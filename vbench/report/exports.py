"""Machine-readable exports of stored runs: JSON (samples and aggregates), CSV
(aggregates), JUnit XML (QoS criteria and regression checks, for CI servers) and
Markdown (a short summary for a merge request or an e-mail)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from vbench.analysis.comparable import comparable_json
from vbench.analysis.compare import compare_figures
from vbench.analysis.direction import directions_of, way_text
from vbench.analysis.figures import better, present
from vbench.analysis.qos import QosResult
from vbench.analysis.regression import RegressionResult
from vbench.analysis.run_analysis import RunAnalysis
from vbench.analysis.stats import Summary, summarize
from vbench.analysis.verdict import QosView
from vbench.report.data import MISSING, ReportData, fmt_mean_ci, fmt_time
from vbench.report.disturbed import (
    NOTES_TITLE,
    by_title,
    disturbed_in,
    footnotes,
    kinds_of_notes,
    of_data,
    verdict_json,
)
from vbench.report.verdict_view import junit_answer, markdown_lines
from vbench.shown import shown_text

FORMATS = ("html", "json", "csv", "junit", "markdown")
SUFFIXES = {".html": "html", ".htm": "html", ".json": "json", ".csv": "csv", ".xml": "junit",
            ".md": "markdown", ".markdown": "markdown"}  # fmt: skip
STAT_FIELDS = ("n", "mean", "median", "stdev", "min", "max", "cv", "ci_low", "ci_high",
               "noisy", "trials_needed")  # fmt: skip
DISTURBED_FIELDS = ("disturbed_included", "disturbed_excluded")


def format_for(path: str, given: str | None) -> str:
    """``--format`` if given, else from the output's suffix, else html."""
    if given:
        return given
    for suffix, fmt in SUFFIXES.items():
        if path.lower().endswith(suffix):
            return fmt
    return "html"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinity replaced by None: strict JSON has neither."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def _stats(s: Summary) -> dict[str, Any]:
    return {k: _clean(getattr(s, k)) for k in STAT_FIELDS}


def aggregate_rows(data: ReportData, analysis: RunAnalysis) -> list[dict[str, Any]]:
    """One row per (point, metric) and per derived figure, with the trial statistics."""
    f = analysis.figures
    derived = set(analysis.derived.names())
    cv = data.stored.scenario.cv_threshold
    found = of_data(data)
    rows = []
    for (point, metric), values in sorted(f.values.items()):
        inside, left_out = disturbed_in(found.get(point), values)
        rows.append({
            # point: the stored index (from 0, as in raw/<point>-<trial>/); point_number:
            # the number tables and progress print (from 1).
            "run_id": f.run_id, "point": point, "point_number": point + 1,
            "title": f.title(point),
            "labels": dict(f.points.get(point, {})),
            "metric": metric, "kind": "derived" if metric in derived else "measured",
            "unit": f.units.get(metric, ""), **_stats(summarize(present(values), cv)),
            # Disturbed trials of the point whose value is in these statistics, and those
            # that are not (failed): vbench/report/disturbed.py.
            "disturbed_included": inside, "disturbed_excluded": left_out,
        })
    for fig in analysis.derived.figures:
        if fig.point is None:  # across points: not in f.values
            rows.append({
                "run_id": f.run_id, "point": None, "point_number": None,
                "labels": dict(fig.labels),
                "metric": fig.name, "kind": "derived", "unit": fig.unit,
                **_stats(fig.summary),
                # Across points: the disturbed trials are in each point's figures.
                "disturbed_included": None, "disturbed_excluded": None,
            })
    return rows


def qos_json(qos: QosResult, view: QosView) -> dict[str, Any]:
    """The QoS as the run's verdict reads it (``view``: a search's failing levels above
    its answer are its bracket, not a failure), then every check as measured."""
    return {
        "declared": qos.declared,
        "status": view.status,  # "pass", "fail", "bracket" or "none"
        "passed": not view.bad,
        "verdict": view.text,
        "failed_checks": view.failed,  # every check that did not pass, expected or not
        "unexpected_failures": list(view.unexpected),
        "all_checks_passed": qos.passed,
        "checks": [
            {"criterion": c.criterion, "metric": c.metric, "subject": dict(c.subject),
             "point": c.point, "point_title": c.point_title, "stat": c.stat, "op": c.op,
             "threshold": c.threshold, "unit": c.unit, "value": _clean(c.value), "n": c.n,
             "status": c.status, "message": c.message}
            for c in qos.checks
        ],
    }


def regression_json(reg: RegressionResult | None) -> dict[str, Any] | None:
    if reg is None:
        return None
    from vbench.report.changesfmt import change_json

    return {
        "skipped": reg.skipped,
        "regressed": reg.regressed,
        "verdict": reg.verdict(),
        "baseline": list(reg.baseline.run_ids) if reg.baseline else [],
        "baseline_description": reg.baseline.description if reg.baseline else None,
        "min_effect": reg.min_effect,
        "alpha": reg.alpha,
        # What differs between the baseline's experiment and this one (scenario after
        # --set, the --set arguments, the lab): None when there was no baseline.
        "comparable": comparable_json(reg.comparability),
        "checks": [
            {"point": c.title, "labels": dict(c.labels), "metric": c.metric, "unit": c.unit,
             "better": c.better, "baseline": _stats(c.baseline), "current": _stats(c.current),
             "change": _clean(c.change), "p_value": c.sig.p_value, "test": c.sig.method,
             "significant": c.sig.significant, "status": c.status, "message": c.message,
             "not_judged": c.note or None, "known": c.triage or None}
            for c in reg.checks
        ],
        # Unacknowledged regression change points this run sits after (new: fail tonight).
        "changes": [change_json(ch) | {"new": ch in reg.failing_changes}
                    for ch in reg.changes],
    }


def run_json(data: ReportData, *, with_samples: bool = True) -> dict[str, Any]:
    analysis = data.analyzed()
    out: dict[str, Any] = {
        "run": data.run,
        "points": data.points,
        "trials": data.trials,
        "aggregates": aggregate_rows(data, analysis),
        # Per point with a disturbed, retried or unwatched trial (vbench/report/disturbed.py).
        "disturbed": [p.to_json() for _, p in sorted(of_data(data).items())],
        "qos": qos_json(analysis.qos, data.verdicted().qos),
        "regression": regression_json(data.regression),
        "warnings": [*data.warnings, *analysis.problems],
        "verdict": verdict_json(data),
    }
    if with_samples:
        out["samples"] = json.loads(data.samples.to_json(orient="records"))
    return out


def to_json(datas: Sequence[ReportData]) -> str:
    runs = [run_json(d) for d in datas]
    doc: dict[str, Any] = {"runs": runs}
    if len(datas) > 1:
        first = datas[0].analyzed()
        overrides = directions_of(datas[0].run)
        metrics = list(datas[0].headline_metrics) or first.figures.metrics()
        doc["comparisons"] = []
        for other in datas[1:]:
            res = compare_figures(first.figures, other.analyzed().figures, metrics,
                                  better_overrides=overrides)
            doc["comparisons"].append({
                "a": first.figures.run_id, "b": res.run_b.get("run_id"),
                "differences": [{"key": d.key, "a": d.a, "b": d.b} for d in res.differences],
                "comparable": comparable_json(res.comparability),
                "rows": [{"point": r.title, "metric": r.metric, "unit": r.unit,
                          "a": _stats(r.a), "b": _stats(r.b), "ratio": _clean(r.ratio),
                          "p_value": r.sig.p_value, "test": r.sig.method,
                          "significant": r.sig.significant, "verdict": r.verdict,
                          "reason": r.reason, "min_effect": r.min_effect, "capped": r.capped}
                         for r in res.rows],
            })
    return json.dumps(finite(doc), indent=2, default=str, allow_nan=False)


# -------------------------------------------------------------------- CSV

# No export writes a control character as it is (vbench/shown.py): a label of a run
# stored before they were refused, or a guest's error text, may hold one.


# A spreadsheet runs a cell that begins with one of these as a formula (OWASP, "CSV
# Injection"): a point label "=HYPERLINK(…)" would become a live link.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet runs: text beginning with = + - @, a tab or
    a carriage return gets a leading ``'`` (shown as text); numbers, and text that is a
    plain number such as ``-1.5``, are kept as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(
        value
    ):
        return "'" + value
    return value


def csv_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: csv_cell(v) for k, v in row.items()}


def write_csv(out: Any, head: Sequence[str], rows: Any) -> int:
    """Header and rows (dicts keyed by ``head``) as CSV into ``out``, every cell, header
    included, through :func:`csv_cell`; the number of rows written."""
    writer = csv.DictWriter(out, fieldnames=list(head), lineterminator="\n")
    writer.writerow({h: csv_cell(h) for h in head})
    n = 0
    for row in rows:
        writer.writerow(csv_row(row))
        n += 1
    return n


def csv_frame(frame: Any) -> Any:
    """A pandas DataFrame with every text cell and column name through :func:`csv_cell`."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype.kind not in "biufcmM":  # text (object or string dtype)
            out[column] = out[column].map(csv_cell)
    return out.rename(columns=csv_cell)


def to_csv(datas: Sequence[ReportData]) -> str:
    rows = []
    factors: dict[str, None] = {}
    for d in datas:
        analysis = d.analyzed()
        factors.update(dict.fromkeys(analysis.figures.factors))
        rows += aggregate_rows(d, analysis)
    buf = io.StringIO()
    # A scenario that names its points (label template) gets a title column.
    titled = any((d.run.get("scenario") or {}).get("label") for d in datas)
    head = ["run_id", "point", "point_number", *(["title"] if titled else []), *factors,
            "metric", "kind", "unit", *STAT_FIELDS, *DISTURBED_FIELDS]
    out = []
    for r in rows:
        labels = r.pop("labels")
        for k in DISTURBED_FIELDS:  # trial numbers, space-separated in one cell
            r[k] = " ".join(map(str, r[k])) if r[k] is not None else ""
        if not titled:
            r.pop("title", None)
        out.append({**r, **{f: labels.get(f, "") for f in factors}})
    write_csv(buf, head, out)
    return shown_text(buf.getvalue())


# -------------------------------------------------------------------- JUnit


def _case(suite: ET.Element, classname: str, name: str, failure: str | None,
          output: str, skipped: str | None = None) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
    if skipped is not None:
        ET.SubElement(case, "skipped", message=skipped)
    elif failure is not None:
        el = ET.SubElement(case, "failure", message=failure, type="failure")
        el.text = output
    ET.SubElement(case, "system-out").text = output


def _suite(data: ReportData) -> ET.Element:
    analysis = data.analyzed()
    run = data.run
    stored = data.stored
    name = f"vbench.{stored.scenario_name or 'run'}"
    suite = ET.Element("testsuite", name=name, timestamp=fmt_time(stored.started),
                       hostname=stored.environment.hostname or "")
    props = ET.SubElement(suite, "properties")
    for key in ("run_id", "status", "vbench_version"):
        ET.SubElement(props, "property", name=key, value=str(run.get(key, "")))
    bad = [t for t in data.trials if t.get("status") != "ok"]
    found = of_data(data)  # disturbed trials: said in the output, never a failure here
    # each line prefixed by what it is: "disturbed: …" only of a kept attempt disturbed
    disturbed = [f"{kind}: {line}" for kind, line in
                 kinds_of_notes(found, {p: analysis.figures.title(p) for p in found})]
    _case(suite, f"{name}.run", "trials completed",
          f"{len(bad)} of {len(data.trials)} trials did not complete" if bad else None,
          "\n".join([*([f"point {int(t['point']) + 1} trial {t['trial']}: {t.get('error')}"
                        for t in bad] or [f"{len(data.trials)} trials ok"]),
                     *disturbed]))
    verdict = data.verdicted()
    answer_name, answer_failure, answer_out = junit_answer(verdict, by_title(data))
    _case(suite, f"{name}.answer", answer_name, answer_failure, answer_out)
    # A search's levels above its answer fail QoS by design: not a failing test.
    expected = {p for a in verdict.answers for p in a.qos_expected}
    for criterion, checks in analysis.qos.by_criterion().items():
        failed = [c for c in checks if not c.passed and c.point not in expected]
        text = "\n".join(f"{c.point_title}{' ' + c.subject_text if c.subject else ''}: "
                         f"{c.status}: {c.message}" for c in checks)
        # Per tile (or other subject): several checks a point, so count checks.
        counted = "checks" if any(c.subject for c in checks) else "points"
        _case(suite, f"{name}.qos", criterion,
              f"{len(failed)} of {len(checks)} {counted} fail" if failed else None, text)
    reg = data.regression
    if reg is not None and reg.skipped:
        _case(suite, f"{name}.regression", "baseline", None, reg.note, skipped=reg.note)
    elif reg is not None:
        for c in reg.checks:
            _case(suite, f"{name}.regression.{c.metric}", c.title,
                  f"regression: {c.message}" if c.status == "regression" and not c.triage
                  else None,
                  f"{c.status}: baseline {fmt_mean_ci(c.baseline, c.unit)}, "
                  f"this run {fmt_mean_ci(c.current, c.unit)}; {c.message}")
    for ch in reg.changes if reg is not None else ():
        # A change point fails the night its check first sees it; later nights list it.
        from vbench.report.changesfmt import change_lines

        _case(suite, f"{name}.changepoint.{ch.metric}", ch.title,
              f"change point {ch.change_id}: {ch.text()}" if ch in reg.failing_changes
              else None, "\n".join(change_lines(ch, "")))
    if reg is not None and reg.comparability is not None:
        # What the baseline measured differently (scenario after --set, lab), for the
        # reader of a failed nightly: JUnit's place for text that is not a test case.
        out = ET.SubElement(suite, "system-out")
        out.text = "\n".join([reg.verdict(), *reg.comparability.lines()])
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("errors", "0")
    suite.set("time", "0")
    return suite


def _md_changes(reg: RegressionResult | None) -> list[str]:
    """Unacknowledged regression change points the run sits after (new ones first)."""
    if reg is None or not reg.changes:
        return []
    out = ["", "Change points (unacknowledged regressions; `vbench ack ID --why …`):", ""]
    for ch in sorted(reg.changes, key=lambda c: c not in reg.failing_changes):
        new = "**new tonight**" if ch in reg.failing_changes else "alerted before"
        diff = "; ".join(f"{d.key}: {d.a} → {d.b}" for d in ch.testbed[:3])
        out.append(f"- `{_md(ch.change_id)}` ({new}): {_md(ch.text())}"
                   + (f"; testbed: {_md(diff)}" if diff else ""))
    return out


def to_junit(datas: Sequence[ReportData]) -> str:
    root = ET.Element("testsuites", name="vbench")
    for d in datas:
        root.append(_suite(d))
    for key in ("tests", "failures", "skipped"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root)))
    ET.indent(root)
    return shown_text('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode")
                      + "\n")


# ----------------------------------------------------------------- Markdown


def _md(text: Any) -> str:
    """A table cell: pipes and newlines would break the table, HTML would render."""
    s = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    return s.replace("<", "&lt;").replace(">", "&gt;")


def _md_run(d: ReportData) -> list[str]:
    a = d.analyzed()
    verdict = d.verdicted()
    run, f = d.run, a.figures
    ok = sum(1 for t in d.trials if t.get("status") == "ok")
    title = d.stored.title
    lines = [
        f"### {_md(title)} — run `{run.get('run_id')}`",
        "",
        f"- status **{_md(run.get('status'))}**, {ok}/{len(d.trials)} trials ok, "
        f"started {fmt_time(run.get('started'), seconds=False)}",
        "",
        *markdown_lines(verdict, _md, by_title(d)),
    ]
    if d.regression is not None:
        lines.append(f"- {d.regression.verdict()}")
        comp = d.regression.comparability
        if comp is not None and not comp.alike:
            lines.append(f"- the baseline differs: {_md(comp.summary())}")
    metrics = [m for m in (d.headline_metrics or tuple(f.metrics()[:3])) if m in f.units]
    overrides = directions_of(d.run)
    found = of_data(d)
    if metrics and f.points:
        lines += ["", "| point | " + " | ".join(
            f"{_md(m)} ({_md(f.units.get(m) or '-')}, "
            f"{way_text(better(m, f.units.get(m, ''), overrides))})" for m in metrics)
            + (" | disturbed" if found else "") + " |",
            "|---|" + "---:|" * len(metrics) + ("---|" if found else "")]
        for p in sorted(f.points):
            cells = [fmt_mean_ci(summarize(present(f.trial_values(p, m))), f.units.get(m, ""))
                     for m in metrics]
            if found:
                cells.append(found[p].text() if p in found else "")
            lines.append(f"| {_md(f.title(p))} | " + " | ".join(_md(c) for c in cells) + " |")
        lines.append("")
        lines.append("Mean ± 95 % CI over successful trials."
                     + (" Measured on a simulated lab: the simulator's figures, not a real "
                        "vSphere's." if verdict.simulated else ""))
    if found:
        lines += ["", f"{NOTES_TITLE}:", ""]
        lines += [f"- {_md(n)}" for n in footnotes(found, {p: f.title(p) for p in found})]
    expected = {p for ans in verdict.answers for p in ans.qos_expected}
    bad = [c for c in a.qos.failures if c.point not in expected]
    if bad:
        lines += ["", "QoS checks not passing:", ""]
        lines += [f"- {_md(c.criterion)} at {_md(c.point_title)}: {_md(c.message)}"
                  for c in bad[:20]]
    if d.regression is not None and d.regression.regressions:
        lines += ["", "Regressions:", ""]
        lines += [f"- {_md(c.metric)} at {_md(c.title)}: {_md(c.message)}"
                  for c in d.regression.regressions[:20]]
    lines += _md_changes(d.regression)
    warnings = [*d.warnings, *a.problems]
    if warnings:
        lines += ["", f"{len(warnings)} warning(s): " + _md("; ".join(warnings[:5]))
                  + (" …" if len(warnings) > 5 else "")]
    return lines


def to_markdown(datas: Sequence[ReportData]) -> str:
    out: list[str] = []
    for d in datas:
        if out:
            out.append("")
        out += _md_run(d)
    if len(datas) > 1:
        out += ["", "### Compared with the first run", ""]
        first = datas[0].analyzed().figures
        metrics = list(datas[0].headline_metrics) or first.metrics()[:3]
        for other in datas[1:]:
            res = compare_figures(first, other.analyzed().figures, metrics)
            out.append(f"`{res.run_b.get('run_id')}` against `{first.run_id}`: "
                       f"{sum(1 for r in res.rows if r.verdict == 'better')} better, "
                       f"{sum(1 for r in res.rows if r.verdict == 'worse')} worse, "
                       f"{sum(1 for r in res.rows if r.verdict not in ('better', 'worse'))} "
                       "without a significant difference"
                       + (f"; testbeds differ in {len(res.differences)} facts"
                          if res.differences else "") + ".")
            comp = res.comparability
            if comp is not None and not comp.alike:
                out.append(f"The experiments differ: {_md(comp.summary())}.")
    return shown_text("\n".join(out) + "\n") if out else f"{MISSING}\n"
