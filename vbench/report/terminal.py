"""Terminal tables: the per-point summary of a run (rich) and the list of runs (fitted
to the terminal's width, see :mod:`vbench.report.fit`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from vbench.report.data import (
    MISSING,
    NO_DATA,
    ReportData,
    ReportView,
    fmt_duration,
    fmt_mean_ci,
    fmt_pct,
    fmt_range,
    fmt_time,
)
from vbench.report.fit import fit

if TYPE_CHECKING:  # types only: `vbench ls` needs no scenario model (pydantic)
    from vbench.analysis.derived import DerivedFigure
    from vbench.analysis.stats import Summary
from vbench.analysis.verdict_build import simulated_text

# Beside the n of a point with a disturbed trial; disturbed_lines() below the table.
DISTURBED_MARK = "†"
_STATUS_STYLE = {
    "ok": "green",
    "completed": "green",
    "failed": "red",
    "interrupted": "red",
    "running": "yellow",
    "provisioning": "yellow",
}
# A run still going has no end; its duration column says which phase it is in.
_UNDER_WAY = ("running", "provisioning")


def _figure_cells(s: Summary | None, unit: str, trials: str, ok: int, total: int) -> list[Text]:
    """mean ± CI, min–max, n and cv of one figure at one point (a derived figure's too)."""
    if s is None or not s.n:
        return [Text(NO_DATA, style="red"), Text(""), Text(trials), Text("")]
    # A figure missing in some trials has fewer values than the point has trials.
    n = f"{s.n}/{ok}" if s.n != ok else trials
    cv = fmt_pct(s.cv) + (" noisy" if s.noisy else "")
    return [Text(fmt_mean_ci(s, unit)), Text(fmt_range(s, unit)),
            Text(n, style="red" if ok < total else ""),
            Text(cv, style="yellow" if s.noisy else "")]


def _derived_by_point(data: ReportData) -> dict[int | None, list[DerivedFigure]]:
    """The scenario's derived figures (normalize, speedup, …) per point; None: across
    points (geomean)."""
    out: dict[int | None, list[DerivedFigure]] = {}
    for fig in data.analyzed().derived.figures:
        out.setdefault(fig.point, []).append(fig)
    return out


def summary_table(data: ReportData, metrics: Sequence[str] | None = None) -> Table:
    """One row per point and headline metric, then the scenario's derived figures (in
    italics): the point's factor labels, ``mean ± 95 % CI`` and ``min–max`` (units on
    every figure), successful trials, and the cv with a noise flag; figures across points
    (geomean) close the table. Long rather than wide, so it fits an 80-column cron log.
    ``metrics`` picks the metrics instead (and leaves the derived figures out)."""
    from vbench.report.disturbed import of_data

    view = ReportView(data, metrics_filter=metrics)
    derived = _derived_by_point(data) if metrics is None else {}
    found = of_data(data)  # a point with a disturbed trial: its n marked, noted below
    shown = view.headline
    title = (
        f"{data.run.get('scenario_name', '?')} · run {data.run.get('run_id', '?')} · "
        f"mean ± 95 % CI and min–max over trials · {view.trials_text} · {view.window_text}"
    )
    simulated = simulated_text(data.run)
    if simulated:  # every figure below is the simulator's: said beside them
        title += f" · SIMULATED LAB ({simulated})"
    # Text everywhere: labels and errors come from a lab and must not be read as markup.
    table = Table(title=Text(title), title_justify="left")
    table.add_column("#", justify="right", style="dim")
    # A scenario that names its points (label template) shows the name, not the factors.
    named = bool(view.scenario.get("label"))
    for factor in ["point"] if named else view.factors:
        table.add_column(Text(factor))
    table.add_column("metric")
    table.add_column("mean ± 95 % CI", justify="right")
    table.add_column("min–max", justify="right")
    table.add_column("n", justify="right")
    table.add_column("cv", justify="right")
    for p in view.points:
        head = [Text(str(p.point + 1)), *([Text(p.title)] if named else
                                      (Text(p.labels.get(f, MISSING)) for f in view.factors))]
        blank = [Text("")] * len(head)
        trials = f"{p.ok}/{p.total}" if p.total and p.ok != p.total else str(p.ok)
        rows = [(Text(m), view.cell(p.point, m).summary if p.has_data else None,
                 view.cell(p.point, m).unit) for m in shown]
        rows += [(Text(f.name, style="italic"), f.summary, f.unit)
                 for f in derived.get(p.point, [])]
        marked = bool(found.get(p.point) and found[p.point].disturbed)
        for i, (name, summary, unit) in enumerate(rows):
            figure = _figure_cells(summary, unit, trials, p.ok, p.total)
            if marked:
                figure[2].append(f" {DISTURBED_MARK}", style="yellow")
            cells = [*list(head if i == 0 else blank), name, *figure]
            table.add_row(*cells, end_section=i == len(rows) - 1)
    for f in derived.get(None, []):  # across points: the levels it spans
        where = [Text(", ".join(f"{k}={v}" for k, v in f.labels.items()) or "all points")]
        if not named:
            where = [Text(f.labels.get(k, "all")) for k in view.factors]
        table.add_row(Text(""), *where, Text(f.name, style="italic"),
                      *_figure_cells(f.summary, f.unit, str(f.summary.n), f.summary.n,
                                     f.summary.n))
    return table


def disturbed_lines(data: ReportData) -> list[str]:
    """The lines under the summary table of a run with disturbed trials: per point how
    many of its trials and whether in its figures, then each trial."""
    from vbench.report.disturbed import of_data, point_where

    out = []
    for p, mine in sorted(of_data(data).items()):
        # The mark only where the table put it (a kept trial disturbed): a point whose
        # disturbed attempts were run again, or not watched, has a line but no mark.
        mark = f"{DISTURBED_MARK} " if mine.disturbed else ""
        out.append(f"{mark}{point_where(p, data.analyzed().figures.title(p))}: "
                   f"{mine.text()}")
        out += [f"  trial {d.trial}: {d.text}" for d in mine.disturbed]
    return out


def _first(row: Mapping[str, Any], *keys: str) -> Any:
    return next((row[k] for k in keys if row.get(k) is not None), None)


def _points_by_trials(row: Mapping[str, Any]) -> str:
    """``points×trials per point``, plus the trials recorded when that differs
    (a running or interrupted run)."""
    points = _first(row, "points", "n_points")
    scenario = row.get("scenario")
    per_point = _first(row, "trials", "repeat")
    if per_point is None and isinstance(scenario, Mapping):
        per_point = scenario.get("repeat")
    done = row.get("n_trials")
    if isinstance(per_point, Mapping):  # repeat: {min, max, target}: a range per point
        text = f"{points if points is not None else '?'}×{per_point.get('min', '?')}–" \
               f"{per_point.get('max', '?')}"
        return text if done is None else f"{text} ({done} run)"
    if per_point is None and points and done is not None and done % points == 0:
        per_point = done // points
    if points is None and per_point is None:
        return MISSING
    text = f"{points if points is not None else '?'}×{per_point if per_point is not None else '?'}"
    if None in (done, points, per_point) or int(done) == int(points) * int(per_point):
        return text
    return f"{text} ({done} run)"


def _scenario_name(row: Mapping[str, Any]) -> str | None:
    scenario = row.get("scenario")
    if isinstance(scenario, Mapping):
        return scenario.get("name")
    return str(scenario) if scenario else None


def _tags(value: Any) -> str:
    if not value:
        return ""
    if isinstance(value, str):
        return value
    return ", ".join(str(v) for v in value)


RUNS_HEAD = ("run id", "scenario", "status", "started", "duration", "points×trials", "tags")
# Narrow terminals: these columns go under their run, in this order, until the rest fits.
_RUNS_FOLD = (6, 5, 4, 3)


def runs_table(rows: Sequence[Mapping[str, Any]], width: int | None = None) -> Text:
    """The runs of a store for ``vbench ls``: aligned columns (a run id, a scenario name
    and a time are never cut or wrapped), status in colour; with ``width``, the tags,
    points × trials, duration and start go under their run as needed to fit it.

    Each row: ``run_id``, ``scenario_name`` (or ``scenario``), ``status``, ``started``
    and ``ended`` (epoch s; ended None while running), ``points``, ``trials`` (per
    point; else ``repeat`` or ``scenario["repeat"]``), ``n_points``/``n_trials`` (as
    counted by the store; n_trials is the total recorded) and ``tags`` (list or
    string). Missing keys print as a dash.
    """
    cells = []
    for row in rows:
        status = str(row.get("status") or MISSING)
        started, ended = row.get("started"), row.get("ended")
        if started is not None and ended is not None:
            duration = fmt_duration(float(ended) - float(started))
        else:
            duration = status if status in _UNDER_WAY else MISSING
        cells.append([
            str(row.get("run_id", MISSING)),
            str(row.get("scenario_name") or _scenario_name(row) or MISSING),
            status, fmt_time(started, seconds=False), duration, _points_by_trials(row),
            _tags(row.get("tags")),
        ])
    laid = fit(RUNS_HEAD, cells, right=(4, 5), width=width, fold=_RUNS_FOLD)
    # Text throughout: names and tags come from a lab and must not be read as markup.
    out = Text("runs (times are local)\n")
    status_at = laid.offsets[2][0]
    row_of = dict(zip(laid.row_lines, cells, strict=True))
    for i, line in enumerate(laid.lines):
        text = Text(line, style="bold" if i == 0 else "")
        if i in row_of:
            status = row_of[i][2]
            text.stylize(_STATUS_STYLE.get(status, ""), status_at, status_at + len(status))
        out.append_text(text)
        out.append("\n")
    out.rstrip()
    return out
