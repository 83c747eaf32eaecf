"""A figure stored in samples reaches the summaries (issue 22, "never silently
dropped"): the Iometer example's headline iops_ts_cv is made per guest and labelled
with where it came from, and was in samples.csv and in no output."""

from __future__ import annotations

import pandas as pd

from vbench.analysis.aggregate import summarize_points, trial_values

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
