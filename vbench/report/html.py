"""The self-contained HTML report: one file, CSS inlined, charts as inline SVG.

The template only lays out text the view has already formatted (every figure with its
unit); Jinja2 autoescaping is on, so labels, errors and environment strings coming
from a lab cannot inject markup. Only the CSS and the chart SVG (both produced here)
are marked safe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    TemplateNotFound,
    TemplateSyntaxError,
)
from markupsafe import Markup

from vbench import __version__
from vbench.analysis.direction import directions_of
from vbench.analysis.run_analysis import cv_threshold_of
from vbench.errors import ConfigError
from vbench.report.chartplan import ChartIds, derived_charts, error_text, qos_charts
from vbench.report.data import (
    MISSING,
    PHASE_ORDER,
    ReportData,
    ReportView,
    fmt_clock,
    fmt_duration,
    fmt_num,
    fmt_pct,
    fmt_seconds,
    fmt_time,
)
from vbench.report.disturbed import by_title, of_data
from vbench.report.exports import shown_text
from vbench.report.findmax import findmax_reports, findmax_section
from vbench.report.lead import lead_charts
from vbench.report.ops_section import operation_figures, ops_section
from vbench.report.overlay import overlay_section
from vbench.report.sections import (
    badges,
    derived_headline_rows,
    derived_tables,
    extra_warnings,
    footer,
    headline_rows,
    qos_rows,
    regression_section,
    scenario_section,
    testbed_tables,
)
from vbench.report.series import flat_series, read_series, series_charts
from vbench.report.shown import choose_metrics, families
from vbench.report.steady_chart import steady_charts
from vbench.report.svg import PALETTE
from vbench.report.tables import guest_table, result_tables
from vbench.report.tabulate import scalar_text, tabulate
from vbench.report.verdict_view import html_context
from vbench.report.warmup_chart import warmup_charts
from vbench.resources import data_dir

DEFAULT_TEMPLATE = "default.html.j2"
DEFAULT_CSS = "default.css"


def _template_path(template: Path | None) -> Path:
    return Path(template) if template is not None else data_dir("reports") / DEFAULT_TEMPLATE


def _css_for(template: Path) -> str:
    """``<name>.css`` beside ``<name>.html.j2``, else default.css beside it, else the
    packaged default.css."""
    stem = template.name.split(".", 1)[0]
    for candidate in (
        template.parent / f"{stem}.css",
        template.parent / DEFAULT_CSS,
        data_dir("reports") / DEFAULT_CSS,
    ):
        if candidate.is_file():
            # "</" cannot end a <style> element early once escaped this way.
            return candidate.read_text(encoding="utf-8").replace("</", "<\\/")
    return ""


def _header(view: ReportView) -> list[tuple[str, str]]:
    run = view.data.run
    env = run.get("environment") or {}
    tags = run.get("tags") or []
    started, ended = run.get("started"), run.get("ended")
    duration = (
        fmt_duration(float(ended) - float(started))
        if started is not None and ended is not None
        else MISSING
    )
    lab = run.get("lab") or {}
    rows = [
        ("scenario", str(run.get("scenario_name", MISSING))),
        ("run id", str(run.get("run_id", MISSING))),
        ("status", str(run.get("status", MISSING))),
        ("tags", ", ".join(str(t) for t in tags) if tags else "none"),
        ("started", fmt_time(started, zone=True)),
        ("ended", fmt_time(ended, zone=True)),
        ("duration", duration),
        ("vbench version", str(run.get("vbench_version") or env.get("vbench_version") or MISSING)),
        ("rendered by", f"vbench {__version__}"),
    ]
    if lab.get("name"):
        rows.insert(2, ("lab", str(lab["name"])))
    return rows


def _method(view: ReportView) -> dict[str, str]:
    ph = view.phases
    return {
        "warmup": (fmt_duration(ph["warmup"]) if view.auto_warmup_cap is None
                   else f"auto (cap {fmt_duration(view.auto_warmup_cap)}; "
                   "each trial's under Warnings)"),
        "steady": fmt_duration(ph["steady"]),
        "cooldown": fmt_duration(ph["cooldown"]),
        "measured_window": fmt_duration(view.measured_window),
        "trials": view.trials_text,
        "window": view.window_text,
        "cv_threshold": fmt_pct(view.cv_threshold),
    }


def _trial_rows(view: ReportView) -> tuple[list[str], list[dict[str, Any]]]:
    from vbench.report.disturbed import entries_of, trial_text

    present = {k for t in view.data.trials for k, v in (t.get("phases") or {}).items() if v}
    phases = [k for k in PHASE_ORDER if k in present]
    titles = {p.point: p.title for p in view.points}
    watched = entries_of(view.data.run.get("testbed"))
    rows = []
    trials = sorted(view.data.trials, key=lambda t: (int(t["point"]), int(t["trial"])))
    for t in trials:
        ph = t.get("phases") or {}
        rows.append(
            {
                "point": titles.get(int(t["point"]), str(t["point"])),
                "trial": t["trial"],
                "status": str(t.get("status", MISSING)),
                "ok": t.get("status") == "ok",
                "error": scalar_text(t.get("error")) if t.get("error") else "",
                "started": fmt_clock(t.get("started")),
                "ended": fmt_clock(t.get("ended")),
                "phases": [fmt_clock(ph.get(k)) for k in phases],
                "window": fmt_seconds(view.trial_window(t)),
                "disturbed": trial_text(watched.get((int(t["point"]), int(t["trial"])), [])),
            }
        )
    return [k.replace("_", " ") for k in phases], rows


def _sources(view: ReportView) -> list[dict[str, Any]]:
    """Metrics per source other than the workload driver (collectors: esxtop, vCenter,
    guest sysstat …), so host and guest metrics are easy to find."""
    df = view.data.samples
    if df.empty or "source" not in df:
        return []
    driver = str((view.scenario.get("workload") or {}).get("driver") or "")
    out = []
    for source, rows in df.groupby("source", sort=True):
        if str(source) == driver:
            continue
        aggregate = sorted(set(rows.loc[rows["guest"].isna(), "metric"].astype(str)))
        per_entity = sorted(set(rows.loc[rows["guest"].notna(), "metric"].astype(str)))
        entities = sorted(set(rows["guest"].dropna().astype(str)))
        out.append({"source": str(source), "aggregate": aggregate, "per_entity": per_entity,
                    "entities": entities})
    return out


def _scenario_title(view: ReportView) -> str:
    run = view.data.run
    title = (view.scenario.get("report") or {}).get("title")
    return str(title or run.get("scenario_name") or "vbench")


def build_context(view: ReportView) -> dict[str, Any]:
    """The template's variables (see reports/README.md)."""
    run = view.data.run
    analysis = view.data.analyzed()
    overrides = directions_of(view.data.run)  # the run's catalogue, report.better on top
    mode = str((view.scenario.get("report") or {}).get("error_bars") or "range")
    ids = ChartIds()
    phase_names, trials = _trial_rows(view)
    choice = choose_metrics(view, view.data.headline_metrics)
    lead = lead_charts(view, analysis, choice, ids, mode, overrides)
    derived_figs = derived_charts(
        analysis.derived, view.factors, ids, mode, view.window_text,
        template=view.scenario.get("label"),
        names=[n for n in analysis.derived.names() if n not in lead.derived_in_headline])
    series = _series(view, ids)
    others = [o.analyzed().figures for o in view.data.others]
    compared = list(dict.fromkeys([*view.headline, *analysis.derived.names()]))
    verdict = view.data.verdicted()
    # A search's best/worst levels are not its answer (the worst ones fail by design).
    searched = any(a.qos_expected for a in verdict.answers)
    warnings = [*view.warnings(), *extra_warnings(view, analysis), *lead.problems,
                *series["problems"]]
    return {
        "title": f"{run.get('scenario_name', 'vbench')} · run {run.get('run_id', '?')}",
        "heading": _scenario_title(view),
        "header": _header(view),
        "warnings": list(dict.fromkeys(warnings)),
        "verdict": html_context(verdict, by_title(view.data)),
        "summary": {"badges": badges(view, analysis, view.data.regression, verdict),
                    "headline": [] if searched else [*derived_headline_rows(
                        view, analysis.derived, view.data.headline_metrics),
                        *headline_rows(view, overrides, choice.hidden())]},
        "scenario_info": scenario_section(view),
        "method": _method(view),
        "factors": view.factors,
        "points": view.points,
        "results": result_tables(view, choice),
        "disturbed": _disturbed(view),
        "hidden_metrics": choice.note(),
        "derived": derived_tables(analysis.derived, view.factors,
                                  {p: d.text() for p, d in of_data(view.data).items()}),
        "qos": {"verdict": analysis.qos.verdict(), "passed": analysis.qos.passed,
                "rows": qos_rows(analysis.qos),
                "charts": qos_charts(analysis.qos, ids, by_title(view.data)),
                "has_subject": any(c.subject for c in analysis.qos.checks)}
        if analysis.qos.declared else None,
        "regression": regression_section(view.data.regression),
        "findmax": findmax_section(findmax_reports(
            run, view.data.points, view.data.trials, analysis.figures),
            analysis.figures.points, {p: d.text() for p, d in of_data(view.data).items()}),
        "charts": [*steady_charts(view.data, ids.next), *warmup_charts(view.data, ids.next),
                   *lead.headline],
        "derived_charts": derived_figs,
        "extra_charts": lead.extra,
        "series_charts": series["charts"],
        "series_flat": series["flat"],
        "series_legend": series["legend"],
        "overlay": _with_disturbed_runs(overlay_section(
            analysis.figures, others, compared, ids, mode, overrides), view),
        "operations": _with_disturbed(ops_section(operation_figures(
            view.data.samples, {p.point: p.title for p in view.points}, run.get("run_dir"),
            cv_threshold=view.cv_threshold), ids, mode, {p.point: p.labels for p in view.points}),
            view),
        "sources": _sources(view),
        "guests": guest_table(view, choice),
        "trial_phases": phase_names,
        "trials": trials,
        "environment": tabulate(run.get("environment"), "controller"),
        "testbed": testbed_tables(run.get("testbed")) if run.get("testbed") else None,
        "footer": footer(view),
        "error_bars": error_text(mode),
        "fmt_num": fmt_num,
        "version": __version__,
    }


def _with_disturbed_runs(section: dict[str, Any] | None, view: ReportView
                         ) -> dict[str, Any] | None:
    """Each comparison with the disturbed trials of its two runs, a line per point, as
    `vbench compare` prints them under its table."""
    from vbench.report.disturbed import run_lines

    for cmp, other in zip((section or {}).get("comparisons", ()), view.data.others,
                          strict=False):
        cmp["disturbed"] = [*run_lines(view.data, "run"), *run_lines(other, "run")]
    return section


def _with_disturbed(section: dict[str, Any] | None, view: ReportView
                    ) -> dict[str, Any] | None:
    """The operations section with each point's disturbed trials said in its caption."""
    found = of_data(view.data)
    for table in (section or {}).get("points", ()):
        mine = found.get(table["point"])
        table["disturbed"] = mine.text() if mine else ""
    return section


def _disturbed(view: ReportView) -> dict[str, Any] | None:
    """The run's disturbed trials (vbench/report/disturbed.py), for the summary's line
    and the notes above the results tables; None when the lab's watch found none."""
    from vbench.report.disturbed import NOTES_TITLE, chart_note, footnotes, of_data

    found = of_data(view.data)
    if not found:
        return None
    titles = {p.point: p.title for p in view.points}
    disturbed = sum(len(p.disturbed) for p in found.values())
    inside = sum(len(p.included) for p in found.values())
    summary = (f"{disturbed} disturbed trial{'s' if disturbed != 1 else ''}: {inside} in the "
               f"statistics, {disturbed - inside} not" if disturbed else
               "no kept trial found disturbed")
    again = sum(len(p.retried) for p in found.values())
    if again:
        summary += (f"; {again} trial{'s' if again != 1 else ''} run again after a disturbed "
                    "attempt")
    # Not watched is not undisturbed: said, lest "none found" read as "none happened".
    blind = sum(len([t for t in p.unwatched if t not in p.included + p.excluded])
                for p in found.values())
    if blind:
        summary += (f"; {blind} trial{'s' if blind != 1 else ''} not watched (may have "
                    "been disturbed)")
    return {"summary": summary, "charts": chart_note(found), "title": NOTES_TITLE,
            "notes": footnotes(found, titles)}


MAX_SERIES_CHARTS = 48
MAX_LEGEND = 10  # colours told apart in the key of the time series


def _series(view: ReportView, ids: ChartIds) -> dict[str, Any]:
    """The time-series small multiples, the flat series named instead of charted, and
    problems reading them."""
    out: dict[str, Any] = {"charts": [], "flat": "", "problems": [], "legend": []}
    frame = view.data.series
    if frame is None:
        frame, out["problems"] = read_series(view.data.run.get("run_dir"))
    if frame is None or frame.empty:
        return out
    zero, const = flat_series(frame)
    flat = [*zero, *const]
    parts = [f"zero throughout: {families(zero)}" if zero else "",
             f"constant: {families(const)}" if const else ""]
    out["flat"] = "; ".join(p for p in parts if p)
    frame = frame[~frame["metric"].astype(str).isin(flat)]
    titles = {p.point: p.title for p in view.points}
    ok = [t for t in view.data.trials if t.get("status") == "ok"]
    metrics = sorted(frame["metric"].astype(str).unique())
    if len(metrics) > MAX_SERIES_CHARTS:
        # An all-counters esxtop capture has hundreds of series; nobody reads a chart
        # of each. The data stays in series/.
        keep = metrics[:MAX_SERIES_CHARTS]
        out["problems"].append(
            f"{len(metrics)} time series; the first {MAX_SERIES_CHARTS} by name are "
            f"charted, all are in the run's series/ Parquet files"
        )
        frame = frame[frame["metric"].astype(str).isin(keep)]
    from vbench.report.disturbed import event_times, of_data

    events = event_times(of_data(view.data), ok, titles)
    out["charts"] = series_charts(frame, ok, titles, ids.next, _settled(frame, ok, view),
                                  events)
    # The key to the colours of every small multiple, once above them.
    out["legend"] = [(titles[p], PALETTE[i % len(PALETTE)])
                     for i, p in enumerate(sorted(titles))][:MAX_LEGEND]
    return out


def _settled(frame: Any, ok: list[dict[str, Any]], view: ReportView) -> dict[str, float]:
    """Where the workload's own series settled, per metric (the charts' dashed line)."""
    from vbench.analysis.warmup import settled_marks, settlings
    from vbench.report.series import assign_trials

    driver = ((view.data.run.get("scenario") or {}).get("workload") or {}).get("driver")
    mine = frame[frame["source"].astype(str) == str(driver)]
    if mine.empty or not ok:
        return {}
    return settled_marks(settlings(assign_trials(mine, ok), ok))


def render_html(data: ReportData, template: Path | None = None) -> str:
    """Render a run as one self-contained HTML document."""
    path = _template_path(template)
    env = Environment(
        loader=FileSystemLoader(str(path.parent)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    try:
        tpl = env.get_template(path.name)
    except TemplateNotFound as exc:
        raise ConfigError(f"report template not found: {path}") from exc
    except TemplateSyntaxError as exc:
        raise ConfigError(f"{exc.filename or path}:{exc.lineno}: {exc.message}") from exc
    view = ReportView(data, cv_threshold=cv_threshold_of(data.run.get("scenario") or {}))
    context = build_context(view)
    # A control character in a value (a stored label, a guest's error) is shown, not
    # written: the document stays one a parser reads.
    return shown_text(tpl.render(css=Markup(_css_for(path)), **context))
