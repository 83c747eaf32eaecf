"""The self-contained HTML report: one file, CSS inlined, charts as inline SVG.

The template only lays out text the view has already formatted (every figure with its
unit); Jinja2 autoescaping is on, so labels, errors and environment strings coming
from a lab cannot inject markup. Only the CSS and the chart SVG (both produced here)
are marked safe.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from vbench.analysis.aggregate import summarize_points
from vbench.analysis.run_analysis import better_overrides, cv_threshold_of
from vbench.errors import ConfigError
from vbench.report.chartplan import (
    ChartIds,
    Series,
    caption,
    derived_charts,
    derived_series,
    draw_series,
    error_text,
    explicit_charts,
    metric_series,
    qos_charts,
)
from vbench.report.data import (
    MISSING,
    NO_DATA,
    PHASE_ORDER,
    ReportData,
    ReportView,
    fmt_clock,
    fmt_duration,
    fmt_num,
    fmt_pct,
    fmt_seconds,
    fmt_time,
    fmt_value,
    scalar_text,
    tabulate,
)
from vbench.report.findmax import findmax_reports, findmax_section
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
from vbench.report.series import read_series, series_charts
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
        "warmup": fmt_duration(ph["warmup"]),
        "steady": fmt_duration(ph["steady"]),
        "cooldown": fmt_duration(ph["cooldown"]),
        "measured_window": fmt_duration(view.measured_window),
        "trials": view.trials_text,
        "window": view.window_text,
        "cv_threshold": fmt_pct(view.cv_threshold),
    }


def _result_tables(view: ReportView) -> list[dict[str, Any]]:
    tables = []
    for metric in view.metrics:
        rows = []
        for p in view.points:
            cell = view.cell(p.point, metric)
            s = cell.summary
            noisy = ""
            if s is not None and s.noisy:
                noisy = "noisy" + (f": ~{s.trials_needed} trials needed" if s.trials_needed else "")
            rows.append(
                {"point": p, "cell": cell, "has_data": p.has_data and cell.n > 0, "noisy": noisy}
            )
        tables.append(
            {
                "metric": metric,
                "unit": view.units.get(metric, ""),
                "headline": metric in view.headline,
                "rows": rows,
            }
        )
    return tables


def _headline_chart(
    view: ReportView, metric: str, ids: ChartIds, mode: str, overrides: Mapping[str, str]
) -> dict[str, Any]:
    series = metric_series(view, metric, overrides)
    rel = [
        s.ci_half_rel for _, s in series.rows if s is not None and s.ci_half_rel is not None
    ]
    ci = (
        f"95 % CI half-width {fmt_pct(min(rel))}–{fmt_pct(max(rel))} of the mean"
        if rel
        else "no 95 % CI (fewer than 2 trials)"
    )
    spec = next(
        (c for c in view.data.stored.scenario.charts if c.get("metric") == metric and c.get("x")),
        None,
    )
    svg, shows = draw_series(series, view.factors, ids, mode=mode,
                             x=spec.get("x") if spec else None,
                             template=view.scenario.get("label"))
    cap = caption(series, shows, mode, f"{ci} (see the results table)", view.window_text)
    return {"metric": metric, "svg": Markup(svg), "caption": cap, "title": metric}


def _guest_table(view: ReportView) -> dict[str, Any] | None:
    found = summarize_points(
        view.data.samples,
        per_guest=True,
        include_trials=view.ok_trials,
        cv_threshold=view.cv_threshold,
    )
    if not found:
        return None
    units = {ms.metric: ms.unit for ms in found}
    metrics = [m for m in view.metrics if m in units] + sorted(set(units) - set(view.metrics))
    by_key = {(ms.point, ms.guest, ms.metric): ms for ms in found}
    titles = {p.point: p for p in view.points}
    rows = []
    for point, guest in dict.fromkeys((ms.point, ms.guest) for ms in found):
        cells = []
        for m in metrics:
            ms = by_key.get((point, guest, m))
            if ms is None or ms.summary.n == 0:
                cells.append(NO_DATA)
                continue
            cells.append(f"{fmt_value(ms.summary.mean, ms.unit)} (n={ms.summary.n})")
        p = titles.get(point)
        rows.append({"point": p.title if p else str(point), "guest": guest, "cells": cells})
    return {"metrics": [(m, units[m]) for m in metrics], "rows": rows}


def _trial_rows(view: ReportView) -> tuple[list[str], list[dict[str, Any]]]:
    present = {k for t in view.data.trials for k, v in (t.get("phases") or {}).items() if v}
    phases = [k for k in PHASE_ORDER if k in present]
    titles = {p.point: p.title for p in view.points}
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
    overrides = better_overrides(view.scenario)
    mode = str((view.scenario.get("report") or {}).get("error_bars") or "range")
    ids = ChartIds()
    phase_names, trials = _trial_rows(view)
    charts = [_headline_chart(view, m, ids, mode, overrides)
              for m in view.headline if m in view.units]
    derived_figs = derived_charts(analysis.derived, view.factors, ids, mode, view.window_text,
                                  template=view.scenario.get("label"))

    def lookup(name: str) -> Series | None:
        figs = [f for f in analysis.derived.named(name) if f.point is not None]
        if figs:
            return derived_series(figs)
        return metric_series(view, name, overrides) if name in view.units else None

    extra, chart_problems = explicit_charts(
        [c for c in (view.scenario.get("report") or {}).get("charts") or []
         if not (c.get("metric") in view.headline and c.get("x"))],
        lookup, view.factors, ids, mode, view.window_text,
    )
    series_charts_, series_problems = _series(view, ids)
    others = [o.analyzed().figures for o in view.data.others]
    compared = list(dict.fromkeys([*view.headline, *analysis.derived.names()]))
    warnings = [*view.warnings(), *extra_warnings(view, analysis), *chart_problems,
                *series_problems]
    return {
        "title": f"{run.get('scenario_name', 'vbench')} · run {run.get('run_id', '?')}",
        "heading": _scenario_title(view),
        "header": _header(view),
        "warnings": list(dict.fromkeys(warnings)),
        "summary": {"badges": badges(view, analysis, view.data.regression),
                    "headline": [*derived_headline_rows(
                        view, analysis.derived, view.data.headline_metrics),
                        *headline_rows(view, overrides)]},
        "scenario_info": scenario_section(view),
        "method": _method(view),
        "factors": view.factors,
        "points": view.points,
        "results": _result_tables(view),
        "derived": derived_tables(analysis.derived, view.factors),
        "qos": {"verdict": analysis.qos.verdict(), "passed": analysis.qos.passed,
                "rows": qos_rows(analysis.qos), "charts": qos_charts(analysis.qos, ids),
                "has_subject": any(c.subject for c in analysis.qos.checks)}
        if analysis.qos.declared else None,
        "regression": regression_section(view.data.regression),
        "findmax": findmax_section(findmax_reports(
            run, view.data.points, view.data.trials, analysis.figures)),
        "charts": charts,
        "derived_charts": derived_figs,
        "extra_charts": extra,
        "series_charts": series_charts_,
        "overlay": overlay_section(analysis.figures, others, compared, ids, mode, overrides),
        "operations": ops_section(operation_figures(
            view.data.samples, {p.point: p.title for p in view.points}, run.get("run_dir"),
            cv_threshold=view.cv_threshold), ids, mode),
        "sources": _sources(view),
        "guests": _guest_table(view),
        "trial_phases": phase_names,
        "trials": trials,
        "environment": tabulate(run.get("environment"), "controller"),
        "testbed": testbed_tables(run.get("testbed")) if run.get("testbed") else None,
        "footer": footer(view),
        "error_bars": error_text(mode),
        "fmt_num": fmt_num,
        "version": __version__,
    }


MAX_SERIES_CHARTS = 48


def _series(view: ReportView, ids: ChartIds) -> tuple[list[dict[str, Any]], list[str]]:
    frame = view.data.series
    problems: list[str] = []
    if frame is None:
        frame, problems = read_series(view.data.run.get("run_dir"))
    if frame is None or frame.empty:
        return [], problems
    titles = {p.point: p.title for p in view.points}
    ok = [t for t in view.data.trials if t.get("status") == "ok"]
    metrics = sorted(frame["metric"].astype(str).unique())
    if len(metrics) > MAX_SERIES_CHARTS:
        # An all-counters esxtop capture has hundreds of series; a chart each would
        # take minutes to render and nobody reads them all. The data stays in series/.
        keep = metrics[:MAX_SERIES_CHARTS]
        problems.append(
            f"{len(metrics)} time series; the first {MAX_SERIES_CHARTS} by name are "
            f"charted, all are in the run's series/ Parquet files"
        )
        frame = frame[frame["metric"].astype(str).isin(keep)]
    return series_charts(frame, ok, titles, ids.next), problems


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
    return tpl.render(css=Markup(_css_for(path)), **context)
