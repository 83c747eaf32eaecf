"""Which metrics a report shows: not those without a figure, not those that are zero at
every point (the write and trim figures of a read-only run), and not a second copy of
another metric (``read_clat_p99`` and ``read_clat_p99_max`` are the same numbers when
one guest ran). What is left out is listed in one line, never dropped silently: a
headline metric without a figure first, with the reason; "no figure at any point" only
for what is truly empty (no value stored in a successful trial); a metric whose values
are all broken down (per operation, per instance) or per guest is named with that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vbench.analysis.aggregate import why_no_figure
from vbench.report.data import ReportView


@dataclass(frozen=True)
class MetricChoice:
    shown: list[str]  # in the view's order (headline first)
    zero: list[str] = field(default_factory=list)  # 0 at every point with a figure
    empty: list[str] = field(default_factory=list)  # no figure at any point
    same: dict[str, str] = field(default_factory=dict)  # hidden metric -> the one shown
    # Headline metrics without a figure -> why (they are never left out silently).
    missing: dict[str, str] = field(default_factory=dict)
    # Metrics with values, but none for a point as a whole -> how they are given.
    elsewhere: dict[str, str] = field(default_factory=dict)

    def hidden(self) -> set[str]:
        return {*self.zero, *self.empty, *self.same, *self.missing, *self.elsewhere}

    def note(self) -> str:
        """One line naming every metric left out and why ("" when none is)."""
        parts = []
        if self.missing:
            parts.append("headline without a figure: " + ", ".join(
                f"{m} ({why})" for m, why in self.missing.items()))
        if self.elsewhere:
            parts.append("no figure for a point as a whole: " + ", ".join(
                f"{m} ({why})" for m, why in self.elsewhere.items()))
        if self.zero:
            parts.append("zero at every point: " + families(self.zero))
        if self.empty:
            parts.append("no figure at any point: " + families(self.empty))
        if self.same:
            parts.append("identical to a metric shown: " + ", ".join(
                f"{m} (= {kept})" for m, kept in self.same.items()))
        return ("Not shown — " + "; ".join(parts) + ".") if parts else ""


def families(names: Sequence[str], least: int = 3) -> str:
    """Names, a family of ``least`` or more sharing their first two words (or sysstat's
    object) written once: ``trim_clat_{p50, p95, p99}``, or ``trim_clat_* (12)`` when
    the rest would be long, rather than twelve trim_clat_… names."""
    groups: dict[tuple[str, str], list[str]] = {}
    for n in names:
        # sysstat's object(instance)\counter: the object is the family
        sep = "\\" if "\\" in n else "_"
        head = sep.join(n.split(sep)[: 1 if sep == "\\" else 2])
        groups.setdefault((head, sep) if head != n else (n, ""), []).append(n)
    out = []
    for (head, sep), members in groups.items():
        if len(members) < least:
            out.append(", ".join(members))
            continue
        rest = ", ".join(m[len(head) + len(sep):] for m in members)
        out.append(f"{head}{sep}{{{rest}}}" if len(rest) <= 40
                   else f"{head}{sep}* ({len(members)})")
    return ", ".join(out)


def _signature(view: ReportView, metric: str) -> tuple[object, ...]:
    """What two metrics must share to be one: the unit and, at every point, the trial
    count, mean, min and max (exactly: a copy is a copy, not a near miss)."""
    cells = []
    for p in view.points:
        ms = view.summaries.get((p.point, metric))
        s = ms.summary if ms else None
        cells.append(None if s is None or s.n == 0 else (s.n, s.mean, s.min, s.max))
    return (view.units.get(metric, ""), *cells)


def _all_zero(view: ReportView, metric: str) -> bool:
    found = [ms.summary for (_, m), ms in view.summaries.items() if m == metric
             and ms.summary.n > 0]
    return bool(found) and all(s.mean == 0 and s.min == 0 and s.max == 0 for s in found)


def choose_metrics(view: ReportView, keep: Sequence[str] = ()) -> MetricChoice:
    """The metrics of ``view`` worth a table, chart or column. ``keep`` (the headline a
    scenario asked for) is never hidden as a copy of another metric."""
    keep_set = set(keep) | set(view.headline)
    zero = [m for m in view.metrics if _all_zero(view, m)]
    samples, ok = view.data.samples, view.ok_trials
    missing = {m: why_no_figure(samples, m, ok) or "no figure"
               for m in dict.fromkeys(keep) if m not in view.with_data}
    elsewhere: dict[str, str] = {}
    empty = []
    for m in sorted(set(view.units) - view.with_data - keep_set):
        why = why_no_figure(samples, m, ok)
        if why.startswith("only per"):
            elsewhere[m] = why
        else:
            empty.append(m)
    rest = [m for m in view.metrics if m not in zero]
    # Which copy stays: a headline metric, else the shorter (plainer) name.
    order = sorted(rest, key=lambda m: (m not in keep_set, len(m), m))
    kept: dict[tuple[object, ...], str] = {}
    same: dict[str, str] = {}
    for m in order:
        sig = _signature(view, m)
        if sig in kept and m not in keep_set:
            same[m] = kept[sig]
        else:
            kept.setdefault(sig, m)
    shown = [m for m in rest if m not in same]
    return MetricChoice(shown, zero, empty, dict(sorted(same.items())), missing, elsewhere)
