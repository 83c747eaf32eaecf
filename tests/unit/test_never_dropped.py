"""A figure stored in samples reaches the summaries (issue 22, "never silently
dropped"): the Iometer example's headline iops_ts_cv is made per guest and labelled
with where it came from, and was in samples.csv and in no output."""

from __future__ import annotations

import pandas as pd

from vbench.analysis.aggregate import summarize_points, trial_values
from vbench.report.data import ReportData, ReportView
from vbench.report.shown import choose_metrics
from vbench.report.tables import guest_table

_LOG = '{"from": "per-second log"}'


def _frame(rows: list[tuple[int, str | None, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame([
        {"point": 0, "trial": t, "guest": g, "metric": m, "value": v, "unit": "ratio",
         "source": "fio", "labels": labels}
        for t, g, m, v, labels in rows
    ])


def test_a_per_guest_figure_of_one_guest_is_the_trials_figure() -> None:
    df = _frame([(1, "guest1", "iops_ts_cv", 0.1859, _LOG),
                 (2, "guest1", "iops_ts_cv", 0.2011, _LOG)])
    [s] = summarize_points(df)
    assert (s.metric, s.summary.n) == ("iops_ts_cv", 2)
    [g] = summarize_points(df, per_guest=True)
    assert (g.guest, g.summary.n) == ("guest1", 2)  # per guest too: 'from' is no breakdown


def test_several_guests_ratios_are_not_combined_and_breakdowns_stay_out() -> None:
    df = _frame([(1, "guest1", "iops_ts_cv", 0.18, _LOG), (1, "guest2", "iops_ts_cv", 0.30, _LOG),
                 (1, "guest1", "read_iops", 5.0, '{"job": "0"}'),
                 (1, None, "total", 7.0, "{}"), (1, "guest1", "total", 3.0, "{}")])
    values = trial_values(df)
    assert list(values["metric"]) == ["total"]  # the aggregate row wins; no cv of two guests
    assert float(values["value"].iloc[0]) == 7.0


def _view(rows: list[tuple[str | None, str, float | None, str]], headline: list[str]) -> ReportView:
    trials = [{"point": 0, "trial": 1, "status": "ok", "error": None, "phases": {}}]
    samples = pd.DataFrame([{"point": 0, "trial": 1, "guest": g, "metric": m, "value": v,
                             "unit": "%", "source": "x", "labels": labels,
                             "window_start": None, "window_end": None}
                            for g, m, v, labels in rows])
    run = {"run_id": "r", "scenario_name": "s", "status": "ok", "headline": headline,
           "scenario": {"repeat": 1, "report": {"headline": headline}}}
    return ReportView(ReportData(run, [{"point": 0, "labels": {}}], trials, samples,
                                 headline_metrics=tuple(headline)))


def test_not_shown_names_the_missing_headline_and_only_truly_empty_metrics() -> None:
    op = '{"operation": "%s"}'
    view = _view([(None, "ops", 5.0, "{}"),
                  (None, "mix", None, "{}"),  # the whole mix has no share
                  (None, "mix", 30.0, op % "HomePage"), (None, "mix", 70.0, op % "TagSearch"),
                  (None, "lost", None, "{}"),
                  ("guest1", "client_cpu", 0.05, '{"instance": "1"}')],
                 headline=["ops", "iops_ts_cv"])
    choice = choose_metrics(view, view.data.headline_metrics)
    # Before: iops_ts_cv was in no list, mix was 'no figure at any point'.
    assert choice.missing == {"iops_ts_cv": "no sample stored"}
    assert choice.elsewhere == {"mix": "only per operation (2 values)"}
    assert choice.empty == ["lost"]
    note = choice.note()
    assert note.startswith("Not shown — headline without a figure: iops_ts_cv (no sample")
    assert "no figure at any point: lost." in note


def test_a_guests_only_figure_under_an_instance_label_is_its_per_guest_figure() -> None:
    view = _view([(None, "ops", 5.0, "{}"), ("guest1", "client_cpu", 0.05, '{"instance": "1"}')],
                 headline=["ops"])
    table = guest_table(view, choose_metrics(view))
    assert table is not None  # before: 'No per-guest samples in this run.'
    assert [m for m, _unit in table["metrics"]] == ["client_cpu"]


def test_a_collectors_counter_of_one_target_stays_per_guest() -> None:
    # Unlabelled per-target samples (sysstat, esxtop) are the collector's, not the trial's.
    df = _frame([(1, "guest1", "cpu(all)\\%user", 12.0, "{}")])
    assert trial_values(df).empty
    assert list(trial_values(df, per_guest=True)["guest"]) == ["guest1"]
