"""What a report is made of: :class:`ReportData` (as stored) and :class:`ReportView`
(what both the terminal and the HTML report show, computed once).

Every figure a view hands out is formatted with its unit; the view also knows the
steady-state window and the trial counts, so that no renderer has to invent them.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from vbench.analysis.aggregate import MetricSummary, summarize_points
from vbench.analysis.figures import factor_order
from vbench.analysis.regression import RegressionResult
from vbench.analysis.run_analysis import RunAnalysis, analyze
from vbench.analysis.stats import DEFAULT_CV_THRESHOLD, Summary
from vbench.analysis.verdict import Verdict, decimals_for
from vbench.config.labels import render_label
from vbench.lazy import lazy_module
from vbench.report.units import Scale, plain
from vbench.results.stored import StoredRun, StoredScenario

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")

NO_DATA = "no data"
MISSING = "—"
OK_STATUS = "ok"
DEFAULT_HEADLINE_COUNT = 3
# A trial whose measured window differs more than this from the scenario's is flagged.
WINDOW_TOLERANCE = 0.10
PHASE_ORDER = (
    "prepare_start", "warmup_start", "steady_start", "steady_end",
    "cooldown_end", "teardown_end",
)  # fmt: skip


@dataclass(frozen=True)
class ReportData:
    """One run as read back from the store (see the store for the field contents)."""

    run: dict[str, Any]
    points: list[dict[str, Any]]
    trials: list[dict[str, Any]]
    samples: pd.DataFrame
    headline_metrics: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # Computed from the above when None (see vbench.analysis.run_analysis).
    analysis: RunAnalysis | None = None
    regression: RegressionResult | None = None
    series: pd.DataFrame | None = None  # collectors' time series, when stored
    others: tuple[ReportData, ...] = ()  # further runs overlaid on this one
    # The run's verdict (vbench/analysis/verdict.py), as the engine computed it with the
    # schedule's and the driver's answers; see :meth:`verdicted`.
    verdict: Verdict | None = None
    # The run as read once from the store (report_data_of), when it was.
    source: StoredRun | None = None

    @property
    def stored(self) -> StoredRun:
        """The run record, typed (what a renderer should read instead of ``run``)."""
        return self.source if self.source is not None else StoredRun.of(self.run)

    def verdicted(self) -> Verdict:
        """The run's verdict: the one attached (vbench/engine/verdict.py), else the one
        stored in its run directory, else one computed here without the schedule's and
        driver's answers (the headline at the best point)."""
        if self.verdict is not None:
            return self.verdict
        from vbench.analysis.findmax_answer import findmax_answers
        from vbench.analysis.verdict import read_stored
        from vbench.analysis.verdict_build import AnswerInputs, build_verdict, simulated_text

        found = read_stored(self.run.get("run_dir"), str(self.run.get("status")))
        if found is not None:
            return found
        inputs = AnswerInputs(self.run, self.points, self.trials, self.analyzed(),
                              tuple(self.headline_metrics),
                              simulated_text(self.run) is not None)
        # The search's answer is pure analysis (the engine's SearchSchedule.answer gives
        # the same); a driver's own answer needs the engine (vbench/engine/verdict.py).
        answers = findmax_answers(inputs) if self.stored.scenario.doc.get("search") else ()
        return build_verdict(inputs, answers, warnings=self.warnings)

    def analyzed(self) -> RunAnalysis:
        if self.analysis is not None:
            return self.analysis
        return analyze(self.run, self.points, self.trials, self.samples)


# ---------------------------------------------------------------- formatting


def finite(x: Any) -> float | None:
    """A finite float, or None for anything else (None, NaN, inf, text, numpy NA)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt_num(value: Any, decimals: int | None = None) -> str:
    x = finite(value)
    if x is None:
        return MISSING
    if 0 < abs(x) < 1e-6 and decimals is None:
        return f"{x:.3g}"
    d = decimals_for(x) if decimals is None else decimals
    return f"{x:,.{d}f}"


def with_unit(text: str, unit: str) -> str:
    if not unit or text in (MISSING, NO_DATA):
        return text
    return f"{text} {unit}"


def fmt_value(x: Any, unit: str) -> str:
    shown = plain(unit)  # 0.05 fraction reads 5 %, 0 count reads 0
    value = finite(x)
    return with_unit(fmt_num(x if value is None else shown.value(value)), shown.unit)


def fmt_mean_ci(s: Summary | None, unit: str) -> str:
    """``mean ± half-width unit``; only the mean when there is no interval (n = 1)."""
    shown = plain(unit)
    s, unit = shown.summary(s), shown.unit
    if s is None or s.n == 0 or s.mean is None:
        return NO_DATA
    d = decimals_for(s.mean)
    half = s.ci_half
    if half is None:
        return with_unit(fmt_num(s.mean, d), unit)
    return with_unit(f"{fmt_num(s.mean, d)} ± {fmt_num(half, d)}", unit)


def fmt_range(s: Summary | None, unit: str) -> str:
    shown = plain(unit)
    s, unit = shown.summary(s), shown.unit
    if s is None or s.n == 0 or s.min is None or s.max is None:
        return NO_DATA
    d = decimals_for(max(abs(s.min), abs(s.max)))
    return with_unit(f"{fmt_num(s.min, d)}–{fmt_num(s.max, d)}", unit)


def fmt_pct(value: Any) -> str:
    fraction = finite(value)
    return MISSING if fraction is None else f"{fraction * 100:.1f} %"


def fmt_seconds(value: Any) -> str:
    seconds = finite(value)
    if seconds is None:
        return MISSING
    if abs(seconds) >= 10 or seconds == int(seconds):
        return f"{seconds:.0f} s"
    return f"{seconds:.1f} s"


def fmt_duration(value: Any) -> str:
    """A human duration: ``90 s``, ``2 min``, ``2 min 05 s``, ``1 h``, ``1 h 02 min``."""
    seconds = finite(value)
    if seconds is None:
        return MISSING
    s = round(seconds)
    if abs(s) < 120:  # benchmark windows read best in seconds up to here
        return fmt_seconds(seconds)
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60:02d} s" if s % 60 else "")
    minutes = (s % 3600) // 60
    return f"{s // 3600} h" + (f" {minutes:02d} min" if minutes else "")


def fmt_time(value: Any, *, seconds: bool = True, zone: bool = False) -> str:
    """Local time of an epoch timestamp."""
    epoch = finite(value)
    if epoch is None:
        return MISSING
    stamp = datetime.fromtimestamp(epoch).astimezone()
    pattern = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return stamp.strftime(pattern + (" %z" if zone else ""))


def fmt_clock(value: Any) -> str:
    epoch = finite(value)
    if epoch is None:
        return MISSING
    return datetime.fromtimestamp(epoch).astimezone().strftime("%H:%M:%S")


# --------------------------------------------------------------------- view


@dataclass(frozen=True)
class PointView:
    point: int
    labels: dict[str, str]
    title: str  # "bs=4k, rw=randread" (or "point 3" when unlabelled)
    ok: int  # successful trials
    total: int  # trials attempted

    @property
    def has_data(self) -> bool:
        return self.ok > 0


@dataclass(frozen=True)
class Cell:
    """One metric at one point, ready to print."""

    summary: Summary | None
    unit: str
    mean_ci: str
    range: str
    median: str
    stdev: str
    cv: str
    n: int

    @property
    def noisy(self) -> bool:
        return bool(self.summary and self.summary.noisy)


@dataclass
class ReportView:
    """Everything the renderers need, derived once from :class:`ReportData`."""

    data: ReportData
    metrics_filter: Sequence[str] | None = None
    cv_threshold: float = DEFAULT_CV_THRESHOLD
    points: list[PointView] = field(init=False)
    factors: list[str] = field(init=False)
    metrics: list[str] = field(init=False)  # all aggregate metrics, headline first
    headline: list[str] = field(init=False)
    units: dict[str, str] = field(init=False)
    summaries: dict[tuple[int, str], MetricSummary] = field(init=False)
    unit_conflicts: list[str] = field(init=False)
    scenario: dict[str, Any] = field(init=False)
    ok_trials: set[tuple[int, int]] = field(init=False)  # (point, trial) that succeeded
    with_data: set[str] = field(init=False)  # metrics with a value in some point

    def __post_init__(self) -> None:
        self.scenario = self.data.run.get("scenario") or {}
        self.ok_trials = self._ok_trials()
        self.points = self._points()
        self.factors = list(factor_order(self.scenario, [p.labels for p in self.points]))
        found = summarize_points(
            self.data.samples,
            include_trials=self.ok_trials,
            cv_threshold=self.cv_threshold,
        )
        self._index(found)
        # A metric no trial reported (e.g. a single-guest percentile in a multi-guest
        # run) would only be a column of "no data": leave it out unless asked for.
        self.with_data = {m for (_p, m), ms in self.summaries.items() if ms.summary.n > 0}
        self.headline = self._headline()
        rest = sorted(m for m in self.with_data if m not in self.headline)
        self.metrics = [*self.headline, *rest]

    # ------------------------------------------------------------- building

    def _ok_trials(self) -> set[tuple[int, int]]:
        if not self.data.trials and not self.data.samples.empty:
            # No trial records (an imported or partial run): every sampled trial counts.
            pairs = self.data.samples[["point", "trial"]].dropna().astype(int)
            return set(pairs.itertuples(index=False, name=None))
        return {
            (int(t["point"]), int(t["trial"]))
            for t in self.data.trials
            if t.get("status") == OK_STATUS
        }

    def _points(self) -> list[PointView]:
        labels: dict[int, dict[str, str]] = {}
        for p in self.data.points:
            labels[int(p["point"])] = {str(k): str(v) for k, v in (p.get("labels") or {}).items()}
        for t in self.data.trials:
            labels.setdefault(int(t["point"]), {})
        if not self.data.samples.empty:
            for p in self.data.samples["point"].dropna().unique():
                labels.setdefault(int(p), {})
        out = []
        order = factor_order(self.scenario, labels.values())
        for point in sorted(labels):
            lab = {k: labels[point][k] for k in order if k in labels[point]}
            # People count points from 1 (the stored index is 0-based).
            title = ", ".join(f"{k}={v}" for k, v in lab.items()) or f"point {point + 1}"
            if self.scenario.get("label") and lab:
                title = render_label(str(self.scenario["label"]), lab)
            ok = sum(1 for p, _ in self.ok_trials if p == point)
            total = sum(1 for t in self.data.trials if int(t["point"]) == point)
            out.append(PointView(point, lab, title, ok, max(ok, total)))
        return out

    def _index(self, found: list[MetricSummary]) -> None:
        self.summaries, self.units, self.unit_conflicts = {}, {}, []
        for ms in found:
            unit = self.units.setdefault(ms.metric, ms.unit)
            if unit != ms.unit:
                # Keep the first unit; mixing units in one column would be worse.
                self.unit_conflicts.append(f"{ms.metric}: {unit} vs {ms.unit}")
                continue
            self.summaries[(ms.point, ms.metric)] = ms

    def _headline(self) -> list[str]:
        if self.metrics_filter:  # asked for explicitly: shown even when absent
            return list(dict.fromkeys(self.metrics_filter))
        chosen = [m for m in dict.fromkeys(self.data.headline_metrics) if m in self.with_data]
        return chosen or sorted(self.with_data)[:DEFAULT_HEADLINE_COUNT]

    # ------------------------------------------------------------- queries

    def cell(self, point: int, metric: str, scale: Scale | None = None) -> Cell:
        """One figure, formatted; ``scale`` shows it in another unit of its family."""
        ms = self.summaries.get((point, metric))
        unit = ms.unit if ms else self.units.get(metric, "")
        s = ms.summary if ms else None
        if scale is not None:
            return self._cell(scale.summary(s), scale.unit)
        return self._cell(s, unit)

    def _cell(self, s: Summary | None, unit: str) -> Cell:
        return Cell(
            summary=s,
            unit=unit,
            mean_ci=fmt_mean_ci(s, unit),
            range=fmt_range(s, unit),
            median=fmt_value(s.median, unit) if s else NO_DATA,
            stdev=fmt_value(s.stdev, unit) if s else NO_DATA,
            cv=fmt_pct(s.cv) if s else MISSING,
            n=s.n if s else 0,
        )

    @property
    def phases(self) -> dict[str, float | None]:
        return StoredScenario(self.scenario).phases

    @property
    def auto_warmup_cap(self) -> float | None:
        return StoredScenario(self.scenario).auto_warmup_cap

    @property
    def repeat(self) -> int | None:
        r = StoredScenario(self.scenario).repeat
        if r is not None:
            return r
        return max((p.total for p in self.points), default=None) or None

    def trial_window(self, trial: Mapping[str, Any]) -> float | None:
        """Measured steady-state window of one trial: the workload's own (fio's runtime …)
        when the driver recorded it, else the controller's marks, else its samples."""
        ph = trial.get("phases") or {}
        for first, last in (("workload_start", "workload_end"), ("steady_start", "steady_end")):
            start, end = finite(ph.get(first)), finite(ph.get(last))
            if start is not None and end is not None:
                return end - start
        df = self.data.samples
        if df.empty or "window_start" not in df:
            return None
        rows = df[(df["point"] == trial["point"]) & (df["trial"] == trial["trial"])]
        ws = pd.to_numeric(rows["window_start"], errors="coerce").dropna()
        we = pd.to_numeric(rows["window_end"], errors="coerce").dropna()
        return float(we.max() - ws.min()) if len(ws) and len(we) else None

    @property
    def measured_window(self) -> float | None:
        """Median measured steady-state window over successful trials."""
        windows = [
            w
            for t in self.data.trials
            if t.get("status") == OK_STATUS and (w := self.trial_window(t)) is not None
        ]
        df = self.data.samples
        if not windows and not self.data.trials and "window_start" in df:
            spans = pd.to_numeric(df["window_end"], errors="coerce") - pd.to_numeric(
                df["window_start"], errors="coerce"
            )
            windows = spans.dropna().tolist()
        return float(statistics.median(windows)) if windows else None

    def wall_overhead(self, trial: Mapping[str, Any]) -> float | None:
        """The controller's steady window minus the workload's own (starting the tool,
        seeing it exit): None when the driver recorded no window of its own."""
        ph = trial.get("phases") or {}
        values = [finite(ph.get(k)) for k in
                  ("steady_start", "steady_end", "workload_start", "workload_end")]
        if any(v is None for v in values):
            return None
        s, e, ws, we = values
        return (e - s) - (we - ws)  # type: ignore[operator]

    @property
    def median_overhead(self) -> float | None:
        found = [o for t in self.data.trials if t.get("status") == OK_STATUS
                 and (o := self.wall_overhead(t)) is not None]
        return float(statistics.median(found)) if found else None

    @property
    def window_text(self) -> str:
        """e.g. ``60 s steady-state window`` (with the measured median if it differs, and
        the controller's overhead around the workload's own window when known)."""
        nominal, measured = self.phases["steady"], self.measured_window
        if nominal is None and measured is None:
            return "steady-state window not recorded"
        if nominal is None:
            return f"{fmt_duration(measured)} steady-state window (measured)"
        notes = []
        if measured is not None and nominal > 0 and abs(measured - nominal) / nominal > 0.02:
            notes.append(f"measured median {fmt_duration(measured)}")
        overhead = self.median_overhead
        if overhead is not None:  # the window is the workload's own; say what it left out
            notes.append(f"workload-timed; controller +{overhead:.1f} s")
        text = f"{fmt_duration(nominal)} steady-state window"
        return text + (f" ({'; '.join(notes)})" if notes else "")

    @property
    def trials_text(self) -> str:
        from vbench.config.steady import PTS_MAX_ROUNDS

        steady = self.scenario.get("steady_state")
        if isinstance(steady, Mapping):  # rounds until the SNIA PTS rule holds, up to a cap
            rounds = max((int(t["trial"]) for t in self.data.trials), default=0)
            return (f"{rounds} round{'s' if rounds != 1 else ''} per point (until steady "
                    f"state, at most {steady.get('max_rounds', PTS_MAX_ROUNDS)})")
        adaptive = self.scenario.get("repeat")
        if self.scenario.get("search") and isinstance(adaptive, Mapping):
            # A find-max level takes search.trials, then more while its verdict is
            # uncertain (and its verification): the trials the levels took, as stored.
            took = Counter(int(t["point"]) for t in self.data.trials
                           if t.get("status") != "interrupted").values()  # it measured nothing
            lo, hi = (min(took), max(took)) if took else (0, 0)
            return (f"{lo}–{hi} trials per level (more while its verdict was uncertain)"
                    if lo != hi else f"{hi} trials per level")
        if isinstance(adaptive, Mapping):  # repeat: {min, max, target}: as many as needed
            lo, hi = adaptive.get("min", "?"), adaptive.get("max", "?")
            return f"{lo}–{hi} trials per point (until the confidence target)"
        r = self.repeat
        return f"{r} trial{'s' if r != 1 else ''} per point" if r else "trial count unknown"

    def failed_trials(self) -> list[dict[str, Any]]:
        return [t for t in self.data.trials if t.get("status") != OK_STATUS]

    def warnings(self) -> list[str]:
        """Stored warnings, then what the statistics themselves reveal."""
        out = [str(w) for w in self.data.warnings]
        titles = {p.point: p.title for p in self.points}
        for t in self.failed_trials():
            where = titles.get(int(t["point"]), f"point {int(t['point']) + 1}")
            error = t.get("error") or "no error recorded"
            out.append(f"Trial {t['trial']} of {where} {t.get('status', 'failed')}: {error}")
        for p in self.points:
            if not p.has_data:
                out.append(f"{p.title}: no successful trial, no data.")
        out.extend(self._noise_warnings(titles))
        out.extend(self._window_warnings(titles))
        out.extend(f"Metric with two units, second ignored: {c}" for c in self.unit_conflicts)
        return out

    def _noise_warnings(self, titles: Mapping[int, str]) -> list[str]:
        out = []
        limit = fmt_pct(self.cv_threshold)
        for (point, metric), ms in self.summaries.items():
            s = ms.summary
            if metric not in self.headline or not s.noisy:
                continue
            advice = (
                f"; about {s.trials_needed} trials would give a 95 % CI within ±{limit}"
                if s.trials_needed
                else ""
            )
            out.append(
                f"Noisy: {metric} at {titles.get(point, point)} has cv {fmt_pct(s.cv)} "
                f"> {limit} over {s.n} trials{advice}."
            )
        return out

    def _window_warnings(self, titles: Mapping[int, str]) -> list[str]:
        nominal = self.phases["steady"]
        if not nominal:
            return []
        out = []
        for t in self.data.trials:
            w = self.trial_window(t)
            if t.get("status") != OK_STATUS or w is None:
                continue
            if abs(w - nominal) / nominal > WINDOW_TOLERANCE:
                out.append(
                    f"Trial {t['trial']} of {titles.get(int(t['point']), t['point'])}: "
                    f"steady-state window {fmt_seconds(w)}, scenario asks "
                    f"{fmt_seconds(nominal)}."
                )
        return out
