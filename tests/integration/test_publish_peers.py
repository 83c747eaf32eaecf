"""Publishing against real peers: a run's figures, verdict and alerts pushed to Debian's
Prometheus Pushgateway and scraped from it by a real Prometheus (queried by the labels
people filter on), a JSON webhook received by a real HTTP server with its credential
resolved from a secret reference, and a failed target kept in the run directory and
delivered by a retry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.publish_peers import Prom, pushgateway_and_prometheus, webhook_server
from vbench.config.publish import Publish
from vbench.publish import Alert, RunFacts, publish_run, read_outbox, retry_run
from vbench.publish.payload import PointFigure
from vbench.results.store import Store
from vbench.testing import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prom]:
    with pushgateway_and_prometheus(tmp_path_factory.mktemp("prom")) as p:
        yield p


def facts(run_id: str, scenario: str, iops: float | None = 1234.5) -> RunFacts:
    return RunFacts(
        run_id=run_id, scenario=scenario, lab="lab/a", lab_fingerprint="0123456789abcdef",
        status="ok", exit_code=1, verdict_status="answered",
        verdict_text='total_iops 1,234 ± 10 IO/s at bs=4k "best"', tags=("nightly",),
        started=1.0e9, ended=1.0e9 + 60, report="/r/report.html",
        figures=(PointFigure("bs=4k", {"bs": "4k"}, "total_iops", "IO/s", iops, 1200.0,
                             1270.0, 3),
                 PointFigure("bs=64k", {"bs": "64k"}, "total_iops", "IO/s", 300.25, None,
                             None, 1)),
        alerts=(Alert("regression", "total_iops", "bs=64k", "total_iops -12 % (p=0.01)",
                      -0.12),))


def test_a_run_reaches_prometheus_through_the_pushgateway(prom: Prom, tmp_path: Path) -> None:
    scenario = f"randread-{tmp_path.name}"  # this test's own series on the shared peers
    spec = Publish.model_validate({"pushgateway": {"url": prom.pushgateway, "job": "nightly"}})
    outcome = publish_run(tmp_path, spec, facts("run-1", scenario))
    assert [(o.sent, o.error) for o in outcome] == [(True, None)]

    q = f'vbench_figure{{job="nightly",scenario="{scenario}",lab="lab/a",metric="total_iops"}}'
    found = {r["metric"]["point"]: r for r in prom.scraped(q)}
    assert sorted(found) == ["bs=4k", "bs=64k"]
    assert float(found["bs=4k"]["value"][1]) == 1234.5
    assert found["bs=4k"]["metric"]["unit"] == "IO/s"
    # A confidence interval the point has not got (one trial) is absent, never 0.
    lows = prom.query(f'vbench_figure_ci_low{{scenario="{scenario}"}}')
    assert [r["metric"]["point"] for r in lows] == ["bs=4k"]
    alert = prom.query(f'vbench_alert{{scenario="{scenario}"}}')
    assert [(r["metric"]["kind"], r["metric"]["point"]) for r in alert] == [
        ("regression", "bs=64k")]
    info = prom.query(f'vbench_run_info{{scenario="{scenario}"}}')[0]["metric"]
    assert info["run_id"] == "run-1" and info["verdict_text"].endswith('"best"')
    assert prom.query(f'vbench_run_exit_code{{scenario="{scenario}"}}')[0]["value"][1] == "1"

    # The next night replaces the group: its figure, and only its run's info.
    publish_run(tmp_path, spec, facts("run-2", scenario, iops=999.0))
    q4k = q.replace("}", ',point="bs=4k"}')
    prom.scraped(f"{q4k} == 999")
    assert [r["metric"]["run_id"] for r in
            prom.query(f'vbench_run_info{{scenario="{scenario}"}}')] == ["run-2"]


def test_a_webhook_gets_the_run_with_its_secret_header(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VBENCH_TEST_HOOK_TOKEN", "Bearer s3cr3t-hook")
    with webhook_server() as hook:
        spec = Publish.model_validate({"webhooks": [{
            "url": hook.url, "name": "ci",
            "headers": {"Authorization": "${env:VBENCH_TEST_HOOK_TOKEN}", "X-Lab": "a"}}]})
        [outcome] = publish_run(tmp_path, spec, facts("run-1", "s"))
    assert (outcome.target, outcome.sent) == ("webhook ci", True)
    [(headers, body)] = hook.received
    assert headers["Authorization"] == "Bearer s3cr3t-hook" and headers["X-Lab"] == "a"
    assert body["event"] == "vbench.run.finished" and body["run_id"] == "run-1"
    assert body["verdict"]["status"] == "answered" and body["exit_code"] == 1
    assert body["alerts"][0]["metric"] == "total_iops"
    assert {f["point"]: f["mean"] for f in body["figures"]} == {"bs=4k": 1234.5,
                                                                "bs=64k": 300.25}
    # The run directory keeps the reference, never the secret.
    kept = (tmp_path / "publish.json").read_text()
    assert "s3cr3t" not in kept and "${env:VBENCH_TEST_HOOK_TOKEN}" in kept


def test_a_failed_target_is_kept_and_a_retry_delivers_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()  # nobody listens there yet
    monkeypatch.setenv("VBENCH_TEST_HOOK_TOKEN", "tok-9f")
    spec = Publish.model_validate({"webhooks": [
        {"url": f"http://127.0.0.1:{port}/x",
         "headers": {"X-Token": "${env:VBENCH_TEST_HOOK_TOKEN}"}},
        {"url": "${env:VBENCH_TEST_MISSING_URL}", "name": "by-ref"}]})
    first = publish_run(tmp_path, spec, facts("run-1", "s"))
    assert [(o.target, o.sent) for o in first] == [(f"webhook 127.0.0.1:{port}", False),
                                                   ("webhook by-ref", False)]
    assert "ConnectError" in (first[0].error or "")
    assert first[1].error == ("webhook by-ref: url: environment variable "
                              "VBENCH_TEST_MISSING_URL is not set")
    kept = read_outbox(tmp_path)
    assert [len(r["attempts"]) for r in kept] == [1, 1]
    assert kept[0]["payload"]["run_id"] == "run-1"

    with webhook_server(port, status=503) as hook:
        again = retry_run(tmp_path)
        assert again[0].error == "HTTP 503 Service Unavailable: try later"
        hook.status = 200
        monkeypatch.setenv("VBENCH_TEST_MISSING_URL", hook.url)
        done = retry_run(tmp_path)
    assert [o.sent for o in done] == [True, True]
    assert [b["run_id"] for _, b in hook.received] == ["run-1"] * 3
    assert [len(r["attempts"]) for r in read_outbox(tmp_path)] == [3, 3]
    # Nothing left to send: a retry sends nothing and says all were sent.
    assert [o.sent for o in retry_run(tmp_path)] == [True, True]
    assert len(hook.received) == 3
    assert json.loads((tmp_path / "publish.json").read_text())["deliveries"][0]["sent"]


def test_vbench_publish_sends_a_run_that_never_published(tmp_path: Path) -> None:
    """A run killed before its end has no publish.json: `vbench publish RUN` builds its
    payloads from the store, keeps what fails (exit 3), and sends it when it can."""
    from click.testing import CliRunner

    from tests.analysis_runs import add_run
    from vbench.cli import cli

    port = free_port()
    url = f"sqlite:///{tmp_path}/t.db"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lab = {"name": "lab1", "publish": {"webhooks": [{"url": f"http://127.0.0.1:{port}/h",
                                                     "name": "ci"}]}}
    with Store.open(url, tmp_path) as store:
        add_run(store, "20270101-020000-00000001", [({}, {"ops": [5.0, 5.1, 4.9]})],
                lab=lab, run_dir=str(run_dir))
    down = CliRunner().invoke(cli, ["publish", "20270101-020000", "--store", url])
    assert down.exit_code == 3, down.output
    assert down.output.startswith("webhook ci: not sent: ConnectError")
    with webhook_server(port) as hook:
        up = CliRunner().invoke(cli, ["publish", "20270101-020000", "--store", url])
        assert (up.exit_code, up.output) == (0, "webhook ci: sent\n")
        again = CliRunner().invoke(cli, ["publish", "20270101-020000", "--again", "--json",
                                         "--store", url])
    assert again.exit_code == 0
    assert json.loads(again.output) == [{"target": "webhook ci", "sent": True, "error": None}]
    bodies = [b for _, b in hook.received]
    assert len(bodies) == 2 and bodies[0] == bodies[1]  # the kept payload, sent again
    assert bodies[0]["run_id"] == "20270101-020000-00000001"
    assert bodies[0]["figures"][0]["metric"] == "ops" and bodies[0]["lab"] == "lab1"


def test_vbench_publish_refuses_a_run_whose_lab_publishes_nowhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.analysis_runs import add_run
    from vbench.cli import main

    url = f"sqlite:///{tmp_path}/t.db"
    with Store.open(url, tmp_path) as store:
        add_run(store, "20270101-020000-00000001", [({}, {"ops": [5.0]})],
                run_dir=str(tmp_path))
    with pytest.raises(SystemExit) as ended:
        main(["publish", "20270101-020000-00000001", "--store", url])
    assert ended.value.code == 2
    assert capsys.readouterr().err == (
        "error: run 20270101-020000-00000001: its lab has no `publish:` section "
        "(docs/publishing.md)\n")


def test_pushgateway_basic_auth_is_resolved_and_kept_out_of_the_run_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    monkeypatch.setenv("VBENCH_TEST_PGW_PASSWORD", "pgw-s3cret")
    with webhook_server() as gw:  # a real HTTP server standing in for an authenticating proxy
        spec = Publish.model_validate({"pushgateway": {
            "url": f"http://127.0.0.1:{gw.port}/", "username": "vbench",
            "password": "${env:VBENCH_TEST_PGW_PASSWORD}"}})
        [outcome] = publish_run(tmp_path, spec, facts("run-1", "a/b"))
    assert outcome.sent
    [(headers, text)] = gw.received
    assert headers["Authorization"] == "Basic " + base64.b64encode(
        b"vbench:pgw-s3cret").decode()
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert headers["path"] == ("/metrics/job@base64/dmJlbmNo/scenario@base64/YS9i"
                               "/lab@base64/bGFiL2E=")
    assert 'vbench_figure{point="bs=4k",metric="total_iops",unit="IO/s"} 1234.5' in text
    kept = (tmp_path / "publish.json").read_text()
    assert "pgw-s3cret" not in kept and "${env:VBENCH_TEST_PGW_PASSWORD}" in kept


def test_a_webhook_url_by_reference_stays_out_of_the_error_that_echoes_its_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Servers answer a wrong route with its path ('Cannot POST /hooks/T01/<token>'): the
    # token of a URL given by reference was kept in publish.json and printed by `run`.
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(404)
            self.end_headers()
            self.wfile.write(f"Cannot POST {self.path}".encode())

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Echo)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("VBENCH_TEST_HOOK_URL", f"http://127.0.0.1:{server.server_port}"
                           "/hooks/T01/xq7Tok3n?key=k9Zsecret")
        spec = Publish.model_validate({"webhooks": [
            {"url": "${env:VBENCH_TEST_HOOK_URL}", "name": "chat"}]})
        [outcome] = publish_run(tmp_path, spec, facts("run-1", "s"))
    finally:
        server.shutdown()
        server.server_close()
    assert outcome.error is not None and outcome.error.startswith("HTTP 404 Not Found: ")
    for secret in ("xq7Tok3n", "k9Zsecret"):
        assert secret not in outcome.error
        assert secret not in (tmp_path / "publish.json").read_text()


def test_a_target_whose_url_cannot_be_sent_to_does_not_stop_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx's InvalidURL is no HTTPError: it left send(), so the targets after it were
    # never tried and publish.json was not written (each retry failed the same way).
    monkeypatch.setenv("VBENCH_TEST_TYPO_URL", "http://127.0.0.1:port/x")  # read when sent
    with webhook_server() as hook:
        spec = Publish.model_validate({"webhooks": [
            {"url": "${env:VBENCH_TEST_TYPO_URL}", "name": "typo"},
            {"url": hook.url, "name": "ci"}]})
        outcomes = publish_run(tmp_path, spec, facts("run-1", "s"))
    assert [(o.target, o.sent) for o in outcomes] == [("webhook typo", False),
                                                      ("webhook ci", True)]
    assert (outcomes[0].error or "").startswith("InvalidURL: ")
    assert [b["run_id"] for _, b in hook.received] == ["run-1"]
    assert [r["sent"] for r in read_outbox(tmp_path)] == [False, True]
