"""`vbench run` on a lab with a `publish:` section: the run's figures reach a real
Pushgateway (and a real Prometheus scraping it), a webhook that is down does not fail the
run, which keeps what it could not send, and `vbench publish RUN` delivers it later."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, vbench, write_lab, write_scenario
from tests.publish_peers import pushgateway_and_prometheus, webhook_server
from vbench.testing import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def test_a_run_publishes_and_a_failed_webhook_is_sent_by_vbench_publish(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    hook_port = free_port()  # down during the run
    with pushgateway_and_prometheus(tmp_path) as prom:
        doc = yaml.safe_load(lab.read_text())
        doc["publish"] = {"pushgateway": {"url": prom.pushgateway},
                          "webhooks": [{"url": f"http://127.0.0.1:{hook_port}/h",
                                        "name": "ci"}],
                          "tags": ["nightly"]}
        lab.write_text(yaml.safe_dump(doc))
        s = write_scenario(tmp_path / "s.yaml", groups=1, warmup="0s", steady="1s",
                           repeat=1, factors="  bs: [4k]\n")
        res = vbench("run", str(s), "--lab", str(lab), "--tag", "nightly", timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        run_id = run_id_of(res.stdout)
        assert f"published: pushgateway {prom.pushgateway}" in res.stdout
        assert ("not published: webhook ci: ConnectError" in res.stdout
                and f"`vbench publish {run_id}` sends it again" in res.stdout), res.stdout
        [iops] = prom.scraped('vbench_figure{scenario="e2e-fio",lab="e2e",point="bs=4k",'
                              'metric="total_iops",job="vbench"}')
        assert float(iops["value"][1]) > 0
        assert prom.query('vbench_run_info{scenario="e2e-fio"}')[0]["metric"]["run_id"] \
            == run_id

        with webhook_server(hook_port) as hook:
            again = vbench("publish", run_id)
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines() == [f"pushgateway {prom.pushgateway}: sent",
                                             "webhook ci: sent"]
        [(_, body)] = hook.received  # only what had failed was sent again
        assert body["run_id"] == run_id and body["status"] == "ok"
        assert body["figures"][0]["metric"] and body["lab"] == "e2e"
        kept = json.loads((Path(show_dir(run_id)) / "publish.json").read_text())
        assert [len(d["attempts"]) for d in kept["deliveries"]] == [1, 2]


def show_dir(run_id: str) -> str:
    return json.loads(vbench("show", run_id, "--json").stdout)["run"]["run_dir"]


def test_a_run_an_error_stops_is_published_as_failed_and_keeps_its_exit_code(
    local_guests: LocalGuests, tmp_path: Path, vbench_home: Path
) -> None:
    # A lab hook that fails stops the run (exit 3) before its finish steps: it was not
    # published, so the dashboards kept showing the night before as the last, ok one.
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    node = next(iter(local_guests)).name
    with webhook_server() as hook:
        doc = yaml.safe_load(lab.read_text())
        doc["publish"] = {"webhooks": [{"url": hook.url, "name": "ci"}]}
        lab.write_text(yaml.safe_dump(doc))
        s = write_scenario(tmp_path / "s.yaml", groups=1, warmup="0s", steady="1s",
                           repeat=1, factors=f"  knob:\n    hook: {{node: {node}, "
                           "run: ['false'], undo: ['true']}\n    levels: [a]\n")
        res = vbench("run", str(s), "--lab", str(lab), timeout=300)
    assert res.returncode == 3, res.stdout + res.stderr
    assert res.stderr.rstrip().splitlines()[-1].startswith("error: "), res.stderr
    assert "published: webhook ci" in res.stderr
    [(_, body)] = hook.received
    assert (body["status"], body["exit_code"], body["lab"]) == ("failed", 3, "e2e")
