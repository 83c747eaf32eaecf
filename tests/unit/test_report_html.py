"""The self-contained HTML report, rendered from a hand-built ReportData."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from vbench.errors import ConfigError
from vbench.report.data import ReportData
from vbench.report.html import render_html

HOSTILE = "<script>alert('x')</script>"
T0 = 1_700_000_000.0
UNITS = {"read_iops": "IO/s", "read_bw": "MiB/s", "read_clat_p99": "ms"}


def make_data(
    n_points: int = 3,
    n_trials: int = 3,
    metrics: tuple[str, ...] = ("read_iops", "read_bw", "read_clat_p99"),
    failed: frozenset[tuple[int, int]] = frozenset({(1, 2)}),
    dead_points: frozenset[int] = frozenset({2}),
) -> ReportData:
    """Point 0 clean, point 1 with one failed trial, point 2 all failed (by default)."""
    points = [
        {"point": p, "labels": {"bs": HOSTILE if p == 1 else f"{4 << p}k", "rw": "randread"}}
        for p in range(n_points)
    ]
    trials, rows = [], []
    for p in range(n_points):
        for t in range(n_trials):
            start = T0 + (p * n_trials + t) * 100
            ok = (p, t) not in failed and p not in dead_points
            trials.append(
                {
                    "point": p,
                    "trial": t,
                    "status": "ok" if ok else "failed",
                    "error": None if ok else f"fio exited 1 on guest-{p}: <disk & gone>",
                    "phases": {
                        "warmup_start": start,
                        "steady_start": start + 10,
                        "steady_end": start + 70,
                        "cooldown_end": start + 75,
                    },
                    "started": start,
                    "ended": start + 80,
                }
            )
            if not ok:
                continue
            for i, m in enumerate(metrics):
                value = (1000.0 + 10 * t) * (p + 1) + i
                sample = {"point": p, "trial": t, "metric": m, "unit": UNITS.get(m, "ops/s")}
                common = {"source": "fio", "window_start": start + 10, "window_end": start + 70}
                rows.append({**sample, **common, "guest": None, "value": value, "labels": "{}"})
                for g in ("vm-a", "vm-b"):
                    rows.append(
                        {**sample, **common, "guest": g, "value": value / 2, "labels": "{}"}
                    )
    run = {
        "run_id": "20240101-abc",
        "scenario_name": "fio-4k-sweep",
        "status": "completed",
        "started": T0,
        "ended": T0 + 3725,
        "tags": ["nightly", "<b>tag</b>"],
        "scenario": {"phases": {"warmup": 10, "steady": 60, "cooldown": 5}, "repeat": n_trials},
        "environment": {
            "controller_host": "ctl-01",
            "python": "3.11.2",
            "vbench_version": "0.1.0",
            "guests": {
                "vm-a": {"uname": "Linux 6.1.0-13-amd64", "cpu": "Xeon Gold 6230", "fio": "3.33"},
                "vm-b": {"uname": "Linux 6.1.0-13-amd64", "cpu": "Xeon Gold 6230"},
            },
        },
        "testbed": {"hosts": [{"name": "esx-07", "model": "PowerEdge R740", "build": 22380479}]},
        "lab": {"name": "perf-lab"},
    }
    return ReportData(
        run=run,
        points=points,
        trials=trials,
        samples=pd.DataFrame(rows),
        headline_metrics=("read_iops", "read_clat_p99"),
        warnings=("esxtop collector unavailable on esx-07",),
    )


@pytest.fixture(scope="module")
def html() -> str:
    return render_html(make_data())


def _section(html: str, name: str) -> str:
    match = re.search(rf'<section id="{name}">(.*?)</section>', html, re.DOTALL)
    assert match, f"section {name} missing"
    return match.group(1)


def test_report_is_self_contained(html: str) -> None:
    assert html.lstrip().startswith("<!DOCTYPE html>")
    assert "http" not in html  # no external resource, not even an SVG namespace URL
    assert "<script" not in html.lower()
    assert not re.search(r"\ssrc=|<link\b|@import", html)
    assert "<style>" in html and "font-variant-numeric" in html  # CSS inlined


def test_charts_are_inline_svg_one_per_headline_metric(html: str) -> None:
    charts = _section(html, "summary")  # the summary leads with them
    assert charts.count("<svg ") == 2
    assert charts.count("<figcaption>") == 2
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "element ids must be unique across charts"
    caption = re.findall(r"<figcaption>(.*?)</figcaption>", charts, re.DOTALL)[0]
    assert "read_iops in IO/s" in caption
    assert "min–max" in caption and "95 % CI" in caption
    assert "60 s steady-state window" in caption and "n = 2–3 per point" in caption


def test_hostile_label_is_escaped_everywhere(html: str) -> None:
    assert HOSTILE not in html
    assert "&lt;script&gt;" in html
    assert "<b>tag</b>" not in html and "&lt;b&gt;tag&lt;/b&gt;" in html


def test_header_states_run_identity_and_duration(html: str) -> None:
    header = html.split("</header>")[0]
    for text in ("fio-4k-sweep", "20240101-abc", "completed", "nightly", "perf-lab", "0.1.0"):
        assert text in header
    assert "1 h 02 min" in header


def test_measurement_method_is_stated(html: str) -> None:
    method = _section(html, "method")
    assert "10 s" in method and "60 s" in method and "5 s" in method
    assert "3 trials per point" in method
    assert "95 % confidence interval" in method and "min–max" in method


def test_every_result_figure_carries_its_unit(html: str) -> None:
    results = _section(html, "results")
    # Each table in one unit, the one its values read best in: read_clat_p99 was
    # stored in ms, at about 1,000–2,000 ms it reads in s; read_bw (MiB/s) in GiB/s.
    units = {"read_iops": "IO/s", "read_bw": "GiB/s", "read_clat_p99": "s"}
    tables = re.findall(r"<caption>(\w+) \(([^)]+)\)(.*?)</table>", results, re.DOTALL)
    assert {m: u for m, u, _ in tables} == units
    for _metric, unit, body in tables:
        cells = re.findall(r'<td class="num">([^<]*\d[^<]*)</td>', body)
        figures = [c for c in cells if "±" in c or "–" in c]
        assert figures, "no mean/CI or range cells found"
        assert all(c.rstrip().endswith(" " + unit) for c in figures), figures
    assert "1,010 ± " in results and " IO/s" in results
    assert "1.012 ± 0.025 s" in results  # 1,012 ms
    # Every table names the window and the trial count is shown per row.
    assert results.count("60 s steady-state window") >= 3
    assert "2/3" in results and "3/3" in results


def test_point_without_successful_trial_says_no_data(html: str) -> None:
    results = _section(html, "results")
    dead_rows = re.findall(r'<tr class="nodata">(.*?)</tr>', results, re.DOTALL)
    assert len(dead_rows) == 3  # one per metric table
    assert all("no data" in r and "0/3" in r and "±" not in r for r in dead_rows)
    assert "16k" in dead_rows[0]


def test_failed_trials_are_listed_with_their_error(html: str) -> None:
    trials = _section(html, "trials")
    assert trials.count('class="failed"') == 4  # (1,2) and the three of point 2
    assert "fio exited 1 on guest-2: &lt;disk &amp; gone&gt;" in trials
    warnings = _section(html, "warnings")
    assert "esxtop collector unavailable on esx-07" in warnings
    assert "fio exited 1 on guest-1" in warnings
    assert "no successful trial" in warnings


def test_trials_table_shows_phases_and_window(html: str) -> None:
    trials = _section(html, "trials")
    for head in ("warmup start", "steady start", "steady end", "cooldown end", "window"):
        assert head in trials
    assert trials.count(">60 s<") == 9


def test_per_guest_table_has_mean_per_guest(html: str) -> None:
    guests = _section(html, "guests")
    assert "vm-a" in guests and "vm-b" in guests
    assert "505.0 IO/s (n=3)" in guests  # (1000 + 1010 + 1020) / 3 / 2 at point 0
    assert "read_clat_p99 (ms)" in guests


def test_environment_and_testbed_are_tabulated(html: str) -> None:
    env = _section(html, "environment")
    for text in ("ctl-01", "3.11.2", "Linux 6.1.0-13-amd64", "Xeon Gold 6230", "3.33"):
        assert text in env
    assert "esx-07" in env and "PowerEdge R740" in env and "22380479" in env


def test_run_without_testbed_or_samples_still_renders() -> None:
    data = make_data(dead_points=frozenset({0, 1, 2}))
    data.run["testbed"] = None
    out = render_html(data)
    assert "No testbed captured" in out
    assert "No aggregate samples in this run: no data." in out
    assert "<svg" not in out
    assert not re.search(r"\d ± \d", out)


def test_custom_template_and_css_are_used(tmp_path: Path) -> None:
    (tmp_path / "mine.html.j2").write_text(
        "<html><style>{{ css }}</style><p>{{ header[1][1] }}</p>"
        "{% for c in charts %}{{ c.svg }}{% endfor %}</html>",
        encoding="utf-8",
    )
    (tmp_path / "mine.css").write_text("p > b { color: red } </style>", encoding="utf-8")
    out = render_html(make_data(), tmp_path / "mine.html.j2")
    assert "<p>20240101-abc</p>" in out
    # CSS is not HTML-escaped, but it cannot close the style element early either.
    assert out.startswith("<html><style>p > b { color: red } <\\/style></style><p>")
    assert out.count("<svg ") == 2


def test_missing_template_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        render_html(make_data(), tmp_path / "nope.html.j2")


def test_large_report_renders_every_table_and_chart() -> None:
    # Its speed is measured, not asserted: bench/report_render.py, docs/performance.md.
    metrics = tuple(f"metric_{i:02d}" for i in range(10))
    data = make_data(20, 5, metrics, failed=frozenset(), dead_points=frozenset())
    data = ReportData(
        run=data.run,
        points=data.points,
        trials=data.trials,
        samples=data.samples,
        headline_metrics=metrics[:4],
    )
    out = render_html(data)
    assert out.count("<svg ") == 4
    assert _section(out, "results").count("<table ") == 10


def test_figures_are_formatted_with_sensible_precision() -> None:
    from vbench.analysis.stats import summarize
    from vbench.report.data import fmt_duration, fmt_mean_ci, fmt_num, fmt_range

    assert fmt_num(123456.7) == "123,457"
    assert fmt_num(3.0612) == "3.061"
    assert fmt_num(0.12) == "0.1200"
    assert fmt_num(None) == fmt_num(float("nan")) == "—"
    s = summarize([0.12, 0.13, 0.14])
    assert fmt_mean_ci(s, "ms") == "0.1300 ± 0.0248 ms"
    assert fmt_range(s, "ms") == "0.1200–0.1400 ms"
    assert fmt_mean_ci(summarize([7.0]), "ops/s") == "7.000 ops/s"  # no interval with n = 1
    assert fmt_mean_ci(summarize([]), "ms") == "no data"
    assert [fmt_duration(x) for x in (45, 90, 120, 125, 1800, 3725)] == [
        "45 s", "90 s", "2 min", "2 min 05 s", "30 min", "1 h 02 min",
    ]  # fmt: skip
