"""What a run publishes, as pure functions: the run's facts (from its summary document and
stored record) → Prometheus text exposition for a Pushgateway, and the JSON body of a
webhook. No I/O here."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vbench.analysis.regression import RegressionResult


@dataclass(frozen=True)
class PointFigure:
    """One headline (or derived) figure at one point."""

    point: str  # the point's title as tables print it ("bs=4k"; "all" without factors)
    labels: Mapping[str, str]
    metric: str
    unit: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


@dataclass(frozen=True)
class PointWatch:
    """A point's trials the lab's watch found disturbed (docs/lab-hygiene.md): those
    whose figures are in the point's statistics, and those left out (failed)."""

    point: str
    labels: Mapping[str, str]
    included: tuple[int, ...]  # trial numbers
    excluded: tuple[int, ...]


@dataclass(frozen=True)
class Alert:
    """A change worth a person's attention: a regression against the baseline, or (when
    change-point detection reports one) a change point the run is the first after."""

    kind: str  # regression (against the baseline) | change (a new change point)
    metric: str
    point: str
    text: str
    change: float | None = None  # relative, in the metric's unit direction (+0.05 = +5 %)
    labels: Mapping[str, str] = field(default_factory=dict)  # the point's factor levels


@dataclass(frozen=True)
class RunFacts:
    run_id: str
    scenario: str
    lab: str
    lab_fingerprint: str
    status: str  # ok | failed | interrupted
    exit_code: int
    verdict_status: str  # the verdict's status ("answered", "fail", ...)
    verdict_text: str  # its first answer's one line
    tags: tuple[str, ...]
    started: float | None
    ended: float | None
    report: str | None
    figures: tuple[PointFigure, ...]
    alerts: tuple[Alert, ...]
    # Every point the summary says its disturbed trials of (none: a summary without them)
    disturbed: tuple[PointWatch, ...] = ()


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def alerts_of(regression: RegressionResult | None) -> tuple[Alert, ...]:
    """What the run's check alerts on, once (as its exit code does): the pairwise
    regressions no known change explains, and the unacknowledged regression change
    points first seen tonight (vbench/analysis/nightly_check.py). A change acknowledged,
    or alerted on an earlier night, is not an alert again."""
    if regression is None:
        return ()
    out = [Alert("regression", c.metric, c.title or "all", c.message, c.change,
                 dict(c.labels)) for c in regression.regressions]
    out += [Alert("change", c.metric, c.title or "all", c.text(), _num(c.change.relative),
                  dict(c.labels)) for c in regression.failing_changes]
    return tuple(out)


def facts_of(doc: Mapping[str, Any], record: Mapping[str, Any], exit_code: int,
             report: str | None, alerts: Sequence[Alert] = ()) -> RunFacts:
    """The facts of a run from its summary document (summary.json), its stored record
    (lab, fingerprint, times), how it ended and what it alerts on (:func:`alerts_of`)."""
    verdict = doc.get("verdict") or {}
    answers = verdict.get("answers") or []
    lab = record.get("lab") or {}
    titles = [str(p.get("title") or "all") for p in doc.get("points") or ()]
    shared = {t for t in titles if titles.count(t) > 1}
    return RunFacts(
        run_id=str(doc.get("run_id") or record.get("run_id")),
        scenario=str(doc.get("scenario_name") or record.get("scenario_name") or ""),
        lab=str(lab.get("name") or record.get("lab_name") or ""),
        lab_fingerprint=str(record.get("lab_fingerprint") or ""),
        status=str(doc.get("status") or record.get("status") or ""),
        exit_code=exit_code,
        verdict_status=str(verdict.get("status") or ""),
        verdict_text=str(answers[0].get("text", "")) if answers else "",
        tags=tuple(str(t) for t in doc.get("tags") or ()),
        started=_num(record.get("started")),
        ended=_num(record.get("ended")),
        report=report,
        figures=tuple(replace(f, point=_told_apart(f.point, f.labels, shared))
                      for f in _figures(doc)),
        alerts=tuple(replace(a, point=_told_apart(a.point, a.labels, shared))
                     for a in alerts),
        disturbed=tuple(replace(w, point=_told_apart(w.point, w.labels, shared))
                        for w in _watched(doc)),
    )


def _told_apart(title: str, labels: Mapping[str, str], shared: set[str]) -> str:
    """A point's name on the Pushgateway: its title, with its levels when another point
    has the same title (a `label:` template naming not every factor), as one push may not
    hold two series with the same labels."""
    if title not in shared or not labels:
        return title
    return f"{title} ({','.join(f'{k}={v}' for k, v in labels.items())})"


def _figures(doc: Mapping[str, Any]) -> list[PointFigure]:
    out = []
    for p in doc.get("points") or ():
        title = str(p.get("title") or "all")
        labels = {str(k): str(v) for k, v in (p.get("labels") or {}).items()}
        for metric, f in (p.get("figures") or {}).items():
            out.append(PointFigure(title, labels, str(metric), str(f.get("unit") or ""),
                                   _num(f.get("mean")), _num(f.get("ci_low")),
                                   _num(f.get("ci_high")), int(f.get("n") or 0)))
    return out


def _watched(doc: Mapping[str, Any]) -> list[PointWatch]:
    """Each point's ``disturbed_included`` / ``disturbed_excluded`` (summary.json)."""
    out = []
    for p in doc.get("points") or ():
        inside, left = p.get("disturbed_included"), p.get("disturbed_excluded")
        if not isinstance(inside, list) or not isinstance(left, list):
            continue  # a summary written before they were kept: unknown, not 0
        labels = {str(k): str(v) for k, v in (p.get("labels") or {}).items()}
        out.append(PointWatch(str(p.get("title") or "all"), labels,
                              tuple(int(t) for t in inside), tuple(int(t) for t in left)))
    return out


# --- Prometheus ----------------------------------------------------------------------

# (name, help) of every family pushed: each family is announced once, typed gauge.
FAMILIES = {
    "vbench_figure": "Mean of a headline figure over the point's trials (unit in `unit`).",
    "vbench_figure_ci_low": "Lower end of the 95 % confidence interval of the mean.",
    "vbench_figure_ci_high": "Upper end of the 95 % confidence interval of the mean.",
    "vbench_figure_trials": "Trials the figure is the mean of.",
    "vbench_point_disturbed_trials": "Trials of the point the lab's watch found disturbed "
    "(statistics: included in its figures, or excluded).",
    "vbench_run_info": "Always 1: the last run published for this scenario and lab.",
    "vbench_run_exit_code": "The run's exit code (0 ok, 1 QoS/regression, 3 lab, 130).",
    "vbench_run_ok": "1 when the run ended ok and exited 0, else 0.",
    "vbench_run_end_timestamp_seconds": "When the run ended (Unix time).",
    "vbench_alerts": "How many alerts the run raised (regressions, change points).",
    "vbench_alert": "Always 1: one alert of the run (kind, metric, point).",
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _series(name: str, labels: Mapping[str, str], value: float) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return f"{name}{{{inner}}} {value!r}" if inner else f"{name} {value!r}"


def prometheus_text(facts: RunFacts) -> str:
    """The run as text exposition (format 0.0.4). The scenario and lab are not labels
    here: they are the group's key (:func:`grouping_path`), which the Pushgateway adds to
    every series."""
    rows: dict[str, list[str]] = {name: [] for name in FAMILIES}
    for f in facts.figures:
        key = {"point": f.point, "metric": f.metric, "unit": f.unit}
        for name, value in (("vbench_figure", f.mean), ("vbench_figure_ci_low", f.ci_low),
                            ("vbench_figure_ci_high", f.ci_high)):
            if value is not None:  # a missing figure is absent, never 0
                rows[name].append(_series(name, key, value))
        rows["vbench_figure_trials"].append(_series("vbench_figure_trials", key, float(f.n)))
    for w in facts.disturbed:
        for which, trials in (("included", w.included), ("excluded", w.excluded)):
            rows["vbench_point_disturbed_trials"].append(_series(
                "vbench_point_disturbed_trials", {"point": w.point, "statistics": which},
                float(len(trials))))
    info = {"run_id": facts.run_id, "status": facts.status, "verdict": facts.verdict_status,
            "lab_fingerprint": facts.lab_fingerprint, "verdict_text": facts.verdict_text}
    rows["vbench_run_info"].append(_series("vbench_run_info", info, 1.0))
    rows["vbench_run_exit_code"].append(_series("vbench_run_exit_code", {},
                                                float(facts.exit_code)))
    ok = facts.status == "ok" and facts.exit_code == 0
    rows["vbench_run_ok"].append(_series("vbench_run_ok", {}, 1.0 if ok else 0.0))
    if facts.ended is not None:
        rows["vbench_run_end_timestamp_seconds"].append(
            _series("vbench_run_end_timestamp_seconds", {}, facts.ended))
    rows["vbench_alerts"].append(_series("vbench_alerts", {}, float(len(facts.alerts))))
    for a in facts.alerts:
        rows["vbench_alert"].append(_series(
            "vbench_alert", {"kind": a.kind, "metric": a.metric, "point": a.point}, 1.0))
    out = []
    for name, lines in rows.items():
        if lines:
            out += [f"# HELP {name} {FAMILIES[name]}", f"# TYPE {name} gauge", *lines]
    return "\n".join(out) + "\n"


def grouping_path(job: str, facts: RunFacts) -> str:
    """``/metrics/job@base64/…/scenario@base64/…/lab@base64/…``: every value base64 (URL
    alphabet), so a ``/`` or an empty value cannot break the path."""
    parts = [("job", job), ("scenario", facts.scenario), ("lab", facts.lab)]
    return "/metrics/" + "/".join(f"{k}@base64/{_b64(v)}" for k, v in parts)


def _b64(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode()).decode() if value else "="


# --- webhook -------------------------------------------------------------------------

def webhook_body(facts: RunFacts) -> dict[str, Any]:
    """The JSON a webhook receives: the run, its verdict, figures and alerts."""
    doc = asdict(facts)
    doc["event"] = "vbench.run.finished"
    doc["verdict"] = {"status": doc.pop("verdict_status"), "text": doc.pop("verdict_text")}
    doc["figures"] = [{**f, "labels": dict(f["labels"])} for f in doc["figures"]]
    doc["tags"] = list(facts.tags)
    doc["disturbed"] = [{"point": w.point, "labels": dict(w.labels),
                         "included": len(w.included), "excluded": len(w.excluded),
                         "included_trials": list(w.included),
                         "excluded_trials": list(w.excluded)} for w in facts.disturbed]
    return doc
