"""What a run publishes, as pure functions (Prometheus text, the Pushgateway group's path,
the facts read from a summary document) and the lab's `publish:` model."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from vbench.config.publish import Publish
from vbench.errors import ConfigValidationError
from vbench.publish.payload import (
    Alert,
    PointFigure,
    RunFacts,
    alerts_of,
    facts_of,
    grouping_path,
    prometheus_text,
    webhook_body,
)
from vbench.results.identity import lab_fingerprint


def _facts(**kw: object) -> RunFacts:
    base: dict[str, object] = dict(
        run_id="r1", scenario="s", lab="l", lab_fingerprint="f", status="ok", exit_code=0,
        verdict_status="answered", verdict_text="t", tags=(), started=None, ended=None,
        report=None, figures=(), alerts=())
    base.update(kw)
    return RunFacts(**base)  # type: ignore[arg-type]


def test_label_values_are_escaped_and_missing_figures_are_absent() -> None:
    fig = PointFigure('a"b\\c\nd', {}, "lat", "ms", None, None, None, 0)
    ok = PointFigure("p", {}, "iops", "IO/s", 1.5, 1.0, 2.0, 3)
    text = prometheus_text(_facts(figures=(fig, ok), verdict_text='say "hi"'))
    assert 'vbench_figure{point="p",metric="iops",unit="IO/s"} 1.5' in text
    assert 'point="a\\"b\\\\c\\nd"' in text  # the trials count of the empty figure
    assert "vbench_figure{point=\"a" not in text  # no mean: no series, never 0
    assert 'verdict_text="say \\"hi\\""' in text
    assert text.count("# TYPE vbench_figure gauge") == 1
    assert "vbench_run_ok 1.0" in text
    assert "vbench_run_end_timestamp_seconds" not in text  # not ended: absent


def test_the_group_path_survives_slashes_and_empty_values() -> None:
    path = grouping_path("vbench", _facts(scenario="a/b", lab=""))
    parts = path.split("/")
    assert parts[:3] == ["", "metrics", "job@base64"]
    assert base64.urlsafe_b64decode(parts[5]) == b"a/b"
    assert parts[6:] == ["lab@base64", "="]


def _check(metric: str, base: float, now: float, status: str, triage: str = "") -> Any:
    from vbench.analysis.compare import Significance
    from vbench.analysis.regression import RegressionCheck
    from vbench.analysis.stats import Summary

    def summary(mean: float) -> Summary:
        return Summary(3, mean, mean, 1.0, mean, mean, 0.01, None, None, False, None)

    return RegressionCheck("bs=4k", {"bs": "4k"}, metric, "IO/s", "higher", summary(base),
                           summary(now), Significance(True, "mann-whitney", 0.01, "p=0.01"),
                           None, status, triage=triage)


def test_alerts_are_what_tonight_fails_on_once() -> None:
    from vbench.analysis.changepoints import Change
    from vbench.analysis.nightly import SeriesChange
    from vbench.analysis.regression import RegressionResult

    new = SeriesChange("s", "lab1", "ff", "lat", "ms", "lower", {"bs": "4k"}, "bs=4k",
                       Change(5, 1.0, 1.3, 0.3, 1e-6, 5, 3), "r6", "r5", 0.0, 0.05, None)
    reg = RegressionResult(
        None, (_check("iops", 100.0, 80.0, "regression"),
               _check("bw", 100.0, 80.0, "regression", triage="acknowledged by ana"),
               _check("cpu", 100.0, 99.0, "ok")),
        0.05, 0.05, changes=(new,), failing_changes=(new,))
    alerts = alerts_of(reg)
    assert [(a.kind, a.metric, a.point) for a in alerts] == [
        ("regression", "iops", "bs=4k"), ("change", "lat", "bs=4k")]
    assert alerts[0].change == pytest.approx(-0.2) and alerts[1].change == 0.3
    assert "lat at bs=4k" in alerts[1].text
    assert alerts_of(None) == ()


def test_facts_read_figures_from_the_summary() -> None:
    doc = {"run_id": "r1", "scenario_name": "s", "status": "ok", "tags": ["nightly"],
           "points": [{"title": "bs=4k", "labels": {"bs": "4k"}, "figures": {
               "iops": {"unit": "IO/s", "n": 3, "mean": 10.0, "ci_low": float("nan"),
                        "ci_high": 12.0}}}],
           "regression": {"checks": [
               {"point": "bs=4k", "metric": "iops", "status": "regression",
                "message": "-9 %", "change": -0.09},
               {"point": "bs=4k", "metric": "lat", "status": "ok", "message": ""}]},
           "verdict": {"status": "answered", "answers": [{"text": "iops 10 at bs=4k"}]}}
    alert = Alert("regression", "iops", "bs=4k", "-9 %", -0.09)
    facts = facts_of(doc, {"lab": {"name": "lab1"}, "lab_fingerprint": "ff",
                           "ended": 5.0}, 1, None, [alert])
    assert (facts.lab, facts.exit_code, facts.verdict_text) == ("lab1", 1, "iops 10 at bs=4k")
    [fig] = facts.figures
    assert (fig.mean, fig.ci_low, fig.ci_high, fig.n) == (10.0, None, 12.0, 3)
    assert [(a.kind, a.metric, a.change) for a in facts.alerts] == [
        ("regression", "iops", -0.09)]
    body = webhook_body(facts)
    assert body["verdict"] == {"status": "answered", "text": "iops 10 at bs=4k"}
    assert body["tags"] == ["nightly"] and body["figures"][0]["labels"] == {"bs": "4k"}


def test_points_sharing_a_title_are_told_apart_on_the_pushgateway() -> None:
    # A `label:` template that names not every factor gives two points one title: the
    # Pushgateway refused the whole push (HTTP 400 'collected metric ... was collected
    # before with the same name and label values'), so nothing of the run was published.
    doc = {"run_id": "r1", "scenario_name": "s", "status": "ok", "points": [
        {"title": "VM", "labels": {"config": "VM", "n": n}, "figures": {
            "ops": {"unit": "ops/s", "n": 1, "mean": float(n)}}} for n in ("8", "16")]
        + [{"title": "Native", "labels": {"config": "Native", "n": "8"}, "figures": {
            "ops": {"unit": "ops/s", "n": 1, "mean": 1.0}}}]}
    alerts = [Alert("regression", "ops", "VM", "-9 %", -0.09, {"config": "VM", "n": "16"})]
    facts = facts_of(doc, {"lab": {"name": "lab1"}}, 1, None, alerts)
    assert [f.point for f in facts.figures] == ["VM (config=VM,n=8)", "VM (config=VM,n=16)",
                                                "Native"]
    assert [a.point for a in facts.alerts] == ["VM (config=VM,n=16)"]
    series = [line.rsplit(" ", 1)[0] for line in prometheus_text(facts).splitlines()
              if not line.startswith("#")]
    assert len(series) == len(set(series))


@pytest.mark.parametrize(("section", "message"), [
    ({"pushgateway": {"url": "http://g:9091", "port": 1}}, "unknown key"),
    ({"pushgateway": {"url": "g:9091"}}, "expected an http:// or https:// URL"),
    ({"pushgateway": {"url": "http://g", "username": "u"}}, "username and password together"),
    ({"pushgateway": {"url": "http://g", "username": "u", "password": "pw"}},
     "reference"),
    ({"webhooks": [{"url": "http://h", "headers": {"Authorization": "Bearer x"}}]},
     "holds a credential"),
    ({"webhooks": [{"url": "http://h", "headers": {"X-Api-Key": "k"}}]}, "holds a credential"),
    # Kept literally in publish.json and the run's lab.yaml before (not a listed word).
    ({"webhooks": [{"url": "http://h", "headers": {"X-Auth": "k"}}]}, "holds a credential"),
    ({"webhooks": [{"url": "http://h", "headers": {"X-Hub-Signature": "s"}}]},
     "holds a credential"),
    ({"webhooks": [{"url": "http://h", "timeout": 0}]}, "greater than 0"),
    # A password in a literal URL was shown in `vbench run`'s output and kept in
    # publish.json ('published: pushgateway http://vb:pw@gw:9091').
    ({"pushgateway": {"url": "http://vb:pw@g:9091"}}, "user:password@ in a URL"),
    ({"webhooks": [{"url": "https://tok@h/x"}]}, "user:password@ in a URL"),
    ({"webhooks": [{"url": "http://h:port/x"}]}, "not a URL vbench can send to"),
])
def test_the_publish_section_refuses_mistakes(section: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Publish.model_validate(section)


def test_where_a_lab_publishes_is_not_part_of_its_fingerprint() -> None:
    lab = {"version": 1, "name": "l", "nodes": {"g": {"address": "127.0.0.2"}}}
    with_hook = {**lab, "publish": {"webhooks": [{"url": "http://h"}]}}
    assert lab_fingerprint(with_hook) == lab_fingerprint(lab)
    assert lab_fingerprint({**lab, "name": "other"}) != lab_fingerprint(lab)


def test_a_mistake_in_the_labs_publish_section_is_located(tmp_path: Path) -> None:
    from vbench.config.load import load_lab

    lab = tmp_path / "lab.yaml"
    lab.write_text("version: 1\nname: l\npublish:\n  webhooks:\n"
                   "    - url: http://h\n      headers: {Authorization: Bearer x}\n")
    with pytest.raises(ConfigValidationError) as err:
        load_lab(lab)
    [issue] = err.value.issues
    assert str(issue).startswith(f"{lab}:5:")
    assert "header 'Authorization' holds a credential" in str(issue)


def test_publish_tags_choose_the_runs_a_lab_publishes() -> None:
    nightly = Publish.model_validate({"webhooks": [{"url": "http://h"}], "tags": ["nightly"]})
    assert nightly.wants(("nightly", "x")) and not nightly.wants(()) \
        and not nightly.wants(("adhoc",))
    assert Publish.model_validate({"webhooks": [{"url": "http://h"}]}).wants(())


def test_the_pushgateway_and_the_webhook_get_each_points_disturbed_trials(
        tmp_path: Path) -> None:
    """From a stored run's summary (as `vbench run` publishes it): per point, how many
    of its trials the lab's watch found disturbed, in its figures and left out."""
    from tests.analysis_runs import add_run, scenario_doc
    from vbench.report.build import run_summary_json
    from vbench.results.store import Store

    sc = scenario_doc("pub", {"bs": ["4k", "64k"]}, report={"headline": ["ops"]})
    testbed = {"disturbances": [
        {"point": 0, "trial": 1, "action": "flag", "text": "VM poseidon used 48 %"},
        {"point": 0, "trial": 2, "action": "fail", "text": "vMotion of g1"}]}
    with Store.open(f"sqlite:///{tmp_path}/p.db", tmp_path) as store:
        add_run(store, "r1", [({"bs": "4k"}, {"ops": [1.0, 2.0, 3.0]}),
                              ({"bs": "64k"}, {"ops": [4.0, 5.0, 6.0]})],
                scenario=sc, testbed=testbed, failed=[(0, 2)])
        doc = run_summary_json(store, "r1")
    facts = facts_of(doc, {"lab": {"name": "lab1"}}, 0, None)
    text = prometheus_text(facts)
    assert text.count("# TYPE vbench_point_disturbed_trials gauge") == 1
    assert 'vbench_point_disturbed_trials{point="bs=4k",statistics="included"} 1.0' in text
    assert 'vbench_point_disturbed_trials{point="bs=4k",statistics="excluded"} 1.0' in text
    # a point with none found: 0 (a count), never absent while the summary says it
    assert 'vbench_point_disturbed_trials{point="bs=64k",statistics="included"} 0.0' in text
    body = webhook_body(facts)
    assert body["disturbed"] == [
        {"point": "bs=4k", "labels": {"bs": "4k"}, "included": 1, "excluded": 1,
         "included_trials": [1], "excluded_trials": [2]},
        {"point": "bs=64k", "labels": {"bs": "64k"}, "included": 0, "excluded": 0,
         "included_trials": [], "excluded_trials": []}]
    # a summary written before these were kept: nothing said, not 0
    old = facts_of({"points": [{"title": "all", "figures": {}}]}, {}, 0, None)
    assert old.disturbed == () and "disturbed" not in prometheus_text(old)
