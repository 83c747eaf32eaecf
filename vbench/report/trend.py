"""The multi-run trend page (`vbench report --history SCENARIO`): one self-contained HTML
file, readable offline, no script.

Per headline metric (or chosen metric) and point, a line over the runs' start times:
the mean of each run's successful trials with its 95 % confidence interval as an error
bar. Runs that ran another scenario variant (another scenario hash after ``--set``, or
another lab) are a separate series in their own colour, named in a legend that says how
each variant differs from the newest run's; a run made with ``--set`` has a hollow marker
and its arguments in the runs table. Charts are small hand-made SVGs (lines, bars and
text only), so a page of many runs and points stays small and quick to draw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from vbench.analysis.direction import way_text
from vbench.analysis.history import History, HistoryRun, HistorySeries
from vbench.analysis.stats import Summary
from vbench.report.disturbed import MARK_LABEL, PointDisturbance
from vbench.report.history_watch import figure_disturbance, point_title, run_disturbances
from vbench.report.svg import DISTURBED

# Okabe–Ito, colour-blind safe; variant A (the newest run's) is the first.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
           "#000000")  # fmt: skip
W, H = 440, 230  # chart size (SVG user units)
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 22, 36  # plot margins
XPAD = 12  # first and last run this far inside the frame
Scale = Callable[[float], float]  # data value -> SVG coordinate

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;
max-width:1400px;padding:0 1rem;color:#222}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.sub{color:#555;margin-top:0}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{margin:0;font-size:.8rem;white-space:pre-wrap}
.grid{display:flex;flex-wrap:wrap;gap:1rem}
figure{margin:0;border:1px solid #ddd;padding:.4rem;background:#fff}
figcaption{font-size:.85rem;color:#333;max-width:440px}
svg.chart{width:440px;height:230px;display:block}
svg text{font-size:11px;fill:#333}
.swatch{display:inline-block;width:.9em;height:.9em;border-radius:50%;
vertical-align:middle;margin-right:.3em}
.note{color:#555;font-size:.9rem}
nav{font-size:.9rem;margin-bottom:.5rem}
"""


@dataclass(frozen=True)
class ChangeMark:
    """A change point drawn on the chart of its series: a dashed line between the last
    run before it and the first after it (solid grey once acknowledged)."""

    metric: str
    labels: tuple[tuple[str, str], ...]  # the point's, sorted
    before: float  # start of the last run before the change
    after: float  # start of the first run after it
    text: str  # what moved (the tooltip and the line's label)
    acknowledged: bool


@dataclass(frozen=True)
class TrendExtras:
    """What a static site adds to a trend page (vbench/report/site.py): navigation, links
    from runs to their reports, change-point marks and sections of its own (pre-escaped
    HTML, built by the site)."""

    header: str = ""  # first in the body
    run_href: Callable[[str], str | None] | None = None  # run id -> its report's href
    marks: tuple[ChangeMark, ...] = ()
    sections: str = ""  # after the charts, before the runs table


def _utc(epoch: float | None, fmt: str = "%Y-%m-%d %H:%M UTC") -> str:
    if epoch is None or not math.isfinite(epoch):
        return "—"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime(fmt)


def number(x: float | None) -> str:
    """A figure for a label: thousands separated, about four significant digits."""
    if x is None or not math.isfinite(x):
        return "—"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a == 0:
        return "0"
    if a < 1e-3:
        return f"{x:.3g}"
    return f"{x:.{max(0, 3 - math.floor(math.log10(a)))}f}".rstrip("0").rstrip(".")


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (lo < hi)."""
    raw = (hi - lo) / max(1, count - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return ticks


def _color(variant: str, names: Sequence[str]) -> str:
    i = names.index(variant) if variant in names else len(names)
    return PALETTE[i % len(PALETTE)]


def _y_range(summaries: Sequence[Summary | None]) -> tuple[float, float] | None:
    ys: list[float] = []
    for s in summaries:
        if s is None or s.mean is None:
            continue
        ys += [v for v in (s.mean, s.ci_low, s.ci_high) if v is not None and math.isfinite(v)]
    if not ys:
        return None
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    # A figure that cannot go below zero (a rate, a latency) is not padded below it.
    return (max(lo - pad, 0.0) if lo >= 0 else lo - pad), hi + pad


def _point_tip(run: HistoryRun, s: Summary, unit: str) -> str:
    ci = (f" (95 % CI {number(s.ci_low)}–{number(s.ci_high)})"
          if s.ci_low is not None and s.ci_high is not None else " (one trial: no CI)")
    sets = f"; --set {' '.join(run.overrides)}" if run.overrides else ""
    base = "; baseline" if run.baseline else ""
    return (f"{run.run_id} · {_utc(run.started)} · variant {run.variant} · lab {run.lab}: "
            f"{number(s.mean)} {unit}{ci}, n={s.n}{sets}{base}")


def chart_svg(
    history: History, series: HistorySeries, chart_id: str, names: Sequence[str],
    marks: Sequence[ChangeMark] = (),
) -> str:
    """One point's figure over the runs: a line per variant, error bars = 95 % CI."""
    runs = history.runs
    yr = _y_range(series.summaries)
    times = [r.started for r in runs]
    t0, t1 = min(times), max(times)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(t: float) -> float:
        # Inset from the frame, so that the first and last markers are not cut by it.
        inner = pw - 2 * XPAD
        return LEFT + XPAD + (inner / 2 if t1 == t0 else (t - t0) / (t1 - t0) * inner)

    out = [f'<svg id="{chart_id}" class="chart" viewBox="0 0 {W} {H}" role="img" '
           f'aria-label="{escape(series.metric)} at {escape(series.title)} over runs">',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" '
           'stroke="#bbb"/>']
    if yr is None:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no data</text></svg>')
        return "".join(out)
    lo, hi = yr

    def y(v: float) -> float:
        return TOP + ph - (v - lo) / (hi - lo) * ph

    for tv in nice_ticks(lo, hi):
        yy = y(tv)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{yy:.1f}" y2="{yy:.1f}" '
                   'stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 5}" y="{yy + 4:.1f}" text-anchor="end">'
                   f'{escape(number(tv))}</text>')
    out += _x_axis(t0, t1, x, TOP + ph)
    unit = series.unit
    label = f"{series.metric} ({unit})" if unit else series.metric
    out.append(f'<text x="12" y="{TOP + ph / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 12 {TOP + ph / 2:.1f})">{escape(label)}</text>')
    disturbed = {r.run_id: d for r in runs if r.run_id in history.watch
                 and (d := figure_disturbance(history.watch[r.run_id], series.labels,
                                              series.metric)) is not None and d.included}
    for name in names:
        out += _variant_marks(runs, series, name, _color(name, names), x, y, unit, disturbed)
    if disturbed:  # the key of the orange diamonds, as the run report's charts say it
        out.append(_diamond(LEFT + 10, TOP - 11, 4.0, 'class="key"')
                   + f'<text x="{LEFT + 18}" y="{TOP - 7}">{escape(MARK_LABEL)}</text>')
    key = tuple(sorted(series.labels.items()))
    out += _change_marks([m for m in marks if m.metric == series.metric and m.labels == key],
                         x, TOP + ph)
    if len(names) > 1:  # which colour is which variant, in the corner
        for i, name in enumerate(names):
            lx = LEFT + pw - 14 * (len(names) - i)
            out.append(f'<text class="legend" x="{lx}" y="{TOP - 7}" '
                       f'fill="{_color(name, names)}" style="fill:{_color(name, names)};'
                       f'font-weight:bold">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _x_axis(t0: float, t1: float, x: Scale, base: float) -> list[str]:
    span = t1 - t0
    fmt = "%Y-%m-%d" if span > 3 * 86400 else "%m-%d %H:%M"
    ticks = [t0] if span == 0 else [t0 + span * i / 3 for i in range(4)]
    out = []
    for i, t in enumerate(ticks):
        xx = x(t)
        # The outer labels are anchored inwards so that they stay inside the chart.
        anchor = "middle" if len(ticks) == 1 or 0 < i < len(ticks) - 1 else (
            "start" if i == 0 else "end")
        nudge = {"start": -XPAD, "end": XPAD, "middle": 0}[anchor]
        out.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{base}" y2="{base + 4}" '
                   'stroke="#999"/>')
        out.append(f'<text x="{xx + nudge:.1f}" y="{base + 16}" text-anchor="{anchor}">'
                   f'{escape(_utc(t, fmt))}</text>')
    out.append(f'<text x="{LEFT + (W - LEFT - RIGHT) / 2}" y="{H - 3}" '
               'text-anchor="middle">run start (UTC)</text>')
    return out


def _diamond(x: float, y: float, r: float, attrs: str, tip: str = "") -> str:
    """A figure that includes disturbed trials: an orange diamond, outlined (as the run
    report's charts draw a disturbed trial)."""
    title = f"<title>{escape(tip)}</title>" if tip else ""
    return (f'<polygon {attrs} points="{x:.1f},{y - r:.1f} {x + r:.1f},{y:.1f} {x:.1f},'
            f'{y + r:.1f} {x - r:.1f},{y:.1f}" fill="{DISTURBED}" stroke="#222" '
            f'stroke-width="0.8">{title}</polygon>')


def _variant_marks(
    runs: Sequence[HistoryRun], series: HistorySeries, name: str, color: str,
    x: Scale, y: Scale, unit: str, disturbed: Mapping[str, PointDisturbance],
) -> list[str]:
    pts = [(r, s) for r, s in zip(runs, series.summaries, strict=True)
           if r.variant == name and s is not None and s.mean is not None]
    if not pts:
        return []
    out = []
    if len(pts) > 1:
        path = " ".join(f"{x(r.started):.1f},{y(s.mean):.1f}" for r, s in pts)
        out.append(f'<polyline class="series" data-variant="{escape(name)}" points="{path}" '
                   f'fill="none" stroke="{color}" stroke-width="1.6"/>')
    for r, s in pts:
        xx, yy = x(r.started), y(s.mean)
        if s.ci_low is not None and s.ci_high is not None:
            y1, y2 = y(s.ci_low), y(s.ci_high)
            out.append(f'<path class="errorbar" d="M{xx:.1f} {y1:.1f}V{y2:.1f}'
                       f'M{xx - 4:.1f} {y1:.1f}h8M{xx - 4:.1f} {y2:.1f}h8" '
                       f'stroke="{color}" fill="none"/>')
        if r.run_id in disturbed:
            what = "; ".join(d.note(series.title) for d in disturbed[r.run_id].disturbed)
            out.append(_diamond(xx, yy, 5.5, f'class="disturbed" data-run="{escape(r.run_id)}"',
                                f"{_point_tip(r, s, unit)}; {disturbed[r.run_id].text()}: "
                                f"{what}"))
            continue
        fill = "#fff" if r.overrides else color  # hollow: the run was made with --set
        ring = ' stroke-width="2.5"' if r.baseline else ""
        out.append(f'<circle class="run" data-run="{escape(r.run_id)}" cx="{xx:.1f}" '
                   f'cy="{yy:.1f}" r="4" fill="{fill}" stroke="{color}"{ring}>'
                   f'<title>{escape(_point_tip(r, s, unit))}</title></circle>')
    return out


def _change_marks(marks: Sequence[ChangeMark], x: Scale, base: float) -> list[str]:
    out = []
    for m in marks:
        xx = x((m.before + m.after) / 2)
        kind = "change acknowledged" if m.acknowledged else "change"
        style = 'stroke="#888"' if m.acknowledged else 'stroke="#d55e00" stroke-dasharray="5 3"'
        out.append(f'<g class="{kind}"><line x1="{xx:.1f}" x2="{xx:.1f}" y1="{TOP}" '
                   f'y2="{base:.1f}" {style} stroke-width="1.5"/>'
                   f'<text x="{xx + 3:.1f}" y="{TOP + 11}">{"ack" if m.acknowledged else "Δ"}'
                   f'</text><title>{escape(m.text)}</title></g>')
    return out


# ------------------------------------------------------------------ the page


def _variants_table(history: History, names: Sequence[str]) -> list[str]:
    rows = []
    for v in history.variants:
        diff = ("the newest run's" if v.against_a is None
                else "\n".join(v.against_a.lines(labels=("A", v.name))))
        rows.append(
            f'<tr><td><span class="swatch" style="background:{_color(v.name, names)}">'
            f'</span>{escape(v.name)}</td><td>{escape(v.lab or "—")}</td>'
            f'<td>{escape(v.lab_kind)}</td><td><code>{escape(v.lab_fingerprint)}</code></td>'
            f'<td><code>{escape(v.scenario_hash)}</code></td><td class="num">{v.runs}</td>'
            f'<td><pre>{escape(diff)}</pre></td></tr>')
    return ['<section id="variants"><h2>Variants</h2>',
            '<p class="note">Runs of one variant ran the same scenario (after --set) in the '
            'same lab; each variant is its own series. Differences are against A.</p>',
            '<table><thead><tr><th>variant</th><th>lab</th><th>kind</th><th>lab fingerprint'
            '</th><th>scenario hash</th><th>runs</th><th>differences from A</th></tr></thead>'
            '<tbody>', *rows, "</tbody></table></section>"]


def _run_cell(run_id: str, href: Callable[[str], str | None] | None) -> str:
    link = href(run_id) if href is not None else None
    code = f"<code>{escape(run_id)}</code>"
    return f'<a href="{escape(link)}">{code}</a>' if link else code


def _runs_table(history: History, names: Sequence[str],
                href: Callable[[str], str | None] | None = None) -> list[str]:
    rows = []
    said = bool(history.watch)  # a column only when some run has the watch's records
    for r in reversed(history.runs):  # newest first, as `vbench ls`
        watch = history.watch.get(r.run_id)
        found = run_disturbances(watch)
        what = "; ".join(f"{point_title(history, watch, p)}: {d.text()}"
                         for p, d in sorted(found.items())) if watch is not None else ""
        rows.append(
            f'<tr><td>{_run_cell(r.run_id, href)}{" (baseline)" if r.baseline else ""}'
            f'</td><td>{escape(_utc(r.started))}</td><td>{escape(r.status)}</td>'
            f'<td><span class="swatch" style="background:{_color(r.variant, names)}"></span>'
            f'{escape(r.variant)}</td><td>{escape(r.lab or "—")}</td>'
            f'<td>{escape(r.lab_kind)}</td><td><code>{escape(r.scenario_hash)}</code></td>'
            f'<td>{escape(" ".join(r.overrides) or "—")}</td>'
            f'<td>{escape(", ".join(r.tags) or "—")}</td>'
            + (f'<td class="disturbed">{escape(what or "—")}</td>' if said else "") + "</tr>")
    return ['<section id="runs"><h2>Runs</h2><table><thead><tr><th>run</th><th>started</th>'
            '<th>status</th><th>variant</th><th>lab</th><th>kind</th><th>scenario hash</th>'
            '<th>--set</th><th>tags</th>' + ("<th>disturbed trials</th>" if said else "")
            + '</tr></thead><tbody>', *rows, "</tbody></table></section>"]


def _metric_sections(history: History, names: Sequence[str],
                     marks: Sequence[ChangeMark] = ()) -> list[str]:
    out: list[str] = []
    n = 0
    for m in history.metrics:
        series = history.for_metric(m)
        out.append(f'<section class="metric"><h2>{escape(m)}</h2>')
        if not series:
            out.append('<p class="note">No data in these runs.</p></section>')
            continue
        s0 = series[0]
        unit = f" in {s0.unit}" if s0.unit else ""
        out.append(f'<p class="note">{escape(m)}{escape(unit)}, {escape(way_text(s0.better))}'
                   ': per run, the mean over its successful trials; error bars = 95 % '
                   'confidence interval of the mean (none with a single trial).</p>'
                   '<div class="grid">')
        for s in series:
            n += 1
            svg = chart_svg(history, s, f"trend-chart-{n}", names, marks)
            c = history.change(s)
            within = " (variant A)" if len(names) > 1 else ""
            change = f"; first → last{within} {c * 100:+.1f} %" if c is not None else ""
            out.append(f"<figure>{svg}<figcaption>{escape(s.title)}{escape(change)}"
                       "</figcaption></figure>")
        out.append("</div></section>")
    return out


def render_trend(history: History, selection: Sequence[str] = (),
                 extras: TrendExtras | None = None) -> str:
    """The trend page of ``history``; ``selection`` says how its runs were chosen;
    ``extras``: what a static site adds (navigation, run links, change points)."""
    title = f"History of {history.scenario}"
    runs = history.runs
    names = [v.name for v in history.variants] or ["A"]
    extras = extras or TrendExtras()
    body: list[str] = [extras.header, f"<h1>{escape(title)}</h1>"]
    if not runs:
        body.append(f'<p class="sub">No stored run matches ({escape("; ".join(selection))}).'
                    "</p>")
        body.append(extras.sections)  # a site's list of runs: failed ones have reports too
    else:
        chosen = f"; {'; '.join(selection)}" if selection else ""
        body.append(f'<p class="sub">{len(runs)} run{"s" if len(runs) != 1 else ""}, '
                    f'{escape(_utc(runs[0].started))} → {escape(_utc(runs[-1].started))}'
                    f"{escape(chosen)}. Hollow marker: run made with --set; thick ring: "
                    "the baseline run"
                    + ("; orange diamond: the figure includes disturbed trials (in the "
                       "statistics)" if history.watch else "") + ".</p>")
        if len(history.variants) > 1:
            body += _variants_table(history, names)
        body += _metric_sections(history, names, extras.marks)
        body.append(extras.sections)
        body += _runs_table(history, names, extras.run_href)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")
