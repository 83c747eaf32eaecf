"""One verdict per run, the same in every output (issue 22): a find-max search on the local
lab, a plain fio matrix and a Content Library run on vcsim are each rendered by `run`,
`show`, `show --json`, `report` as HTML, Markdown, JSON and JUnit, `history` and
`compare`; every output must lead with the same answer and carry the same headline set.

Reproductions held here: (1) a converged find-max's answer buried under a red "QoS fail"
badge, a "best point" at a failing level, no answer in Markdown; (4) figures measured on
vcsim not flagged, and `vSphere cleanup: 0 destroyed` after a run that created and
removed libraries and items."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import LocalGuests
from tests.e2e.helpers import run_id_of, show, vbench, write_lab, write_scenario

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

EXAMPLES = Path(__file__).parents[2] / "examples"


def _outputs(run_id: str, tmp: Path) -> dict[str, str]:
    """Every output of one stored run, as text."""
    out = {}
    for fmt, suffix in (("html", "html"), ("markdown", "md"), ("json", "json"),
                        ("junit", "xml")):
        path = tmp / f"{run_id[:8]}.{suffix}"
        res = vbench("report", run_id, "-o", str(path))
        assert res.returncode == 0, res.stderr
        out[fmt] = path.read_text(encoding="utf-8")
    res = vbench("show", run_id, env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    out["show"] = res.stdout
    out["show_json"] = json.dumps(show(run_id))
    return out


def _verdict(outputs: dict[str, str]) -> dict[str, Any]:
    doc = json.loads(outputs["json"])["runs"][0]["verdict"]
    assert doc == json.loads(outputs["show_json"])["verdict"]
    return doc


def _same_everywhere(outputs: dict[str, str], run_out: str | None) -> dict[str, Any]:
    """The answer and the headline set are the same in every output; returns the verdict."""
    from vbench.analysis.verdict import verdict_from_json

    v = _verdict(outputs)
    answer = v["answer"]["text"]
    stored = verdict_from_json(v)
    assert stored is not None and stored.headline, v
    # Each headline figure by its value and where it was measured, not by its name alone
    # (every output's table names the headline metrics anyway).
    figures = [(f.metric, f.value, f.where) for f in stored.headline]
    texts = {**outputs, **({"run": run_out} if run_out is not None else {})}
    for name, text in texts.items():
        shown = html.unescape(text) if name in ("html", "junit") else text
        if name in ("json", "show_json"):  # as a reader of the JSON sees it (no \u escapes)
            shown = json.dumps(json.loads(text), ensure_ascii=False)
            doc = json.loads(text)
            doc = doc["runs"][0] if "runs" in doc else doc
            got = [(f["metric"], f["value"], f["where"]) for f in doc["verdict"]["headline"]]
            assert got == figures, f"{name}: {got} != {figures}"
        assert answer in shown, f"{name} lacks the answer {answer!r}"
        if name in ("json", "show_json"):
            continue
        for f in stored.headline:
            assert f.value_text() in shown, f"{name} lacks {f.metric} = {f.value_text()!r}"
            assert f.where is None or f.where in shown, f"{name} lacks where {f.where!r}"
    page = html.unescape(outputs["html"])
    # The answer leads the page: before the badges and every chart.
    assert page.index(answer) < page.index('class="badges"'), "answer not first in HTML"
    return v


def _badge(page: str, label: str) -> tuple[str, str]:
    m = re.search(r'<li class="badge (\w+)"><span class="badge-label">' + label +
                  r'</span> <span class="badge-text">([^<]*)</span>', page)
    assert m, f"no {label} badge"
    return m.group(1), m.group(2)


def test_findmax_answer_leads_every_output(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    res = vbench("run", str(EXAMPLES / "fio-findmax-local.yaml"), "--lab", str(lab),
                 timeout=600, env={"COLUMNS": "200"})
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    run_id = run_id_of(said)
    outputs = _outputs(run_id, tmp_path)
    v = _same_everywhere(outputs, said)
    answer = v["answer"]
    assert answer["kind"] == "find-max" and answer["status"] == "converged", answer
    hp = next(f["value"] for f in answer["facts"] if f["label"] == "highest pass")
    # Terminal: the answer before the table; a converged search is not a "QoS FAIL".
    assert "QoS FAIL" not in said, said
    # (the summary goes to the progress console: stderr)
    assert said.index(answer["text"]) < said.index("mean ± 95 % CI"), said
    # HTML: no red QoS badge, and the headline is measured at the highest pass.
    page = html.unescape(outputs["html"])
    kind, text = _badge(page, "QoS")
    assert kind != "bad", text
    assert all(f["where"] == f"rate_iops={int(hp)}" for f in v["headline"]), v["headline"]
    assert "best point" not in page.split('id="findmax"')[0]
    # JUnit: the answer is a passing case; levels above it fail no QoS case.
    suite = ET.fromstring(outputs["junit"])
    assert suite.get("failures") == "0", outputs["junit"]
    assert any(c.get("name", "").startswith("find-max rate_iops")
               for c in suite.iter("testcase"))
    assert v["qos"]["status"] == "bracket", v["qos"]


def test_fio_matrix_answer_is_the_best_point(local_guests: LocalGuests, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", local_guests)
    scenario = write_scenario(tmp_path / "s.yaml", groups=1, repeat=2, warmup="0s",
                              extra="report:\n  headline: [total_iops, read_clat_p99_max]\n")
    res = vbench("run", str(scenario), "--lab", str(lab), env={"COLUMNS": "200"})
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    run_id = run_id_of(said)
    outputs = _outputs(run_id, tmp_path)
    v = _same_everywhere(outputs, said)
    assert v["answer"]["kind"] == "best point", v["answer"]
    assert [f["metric"] for f in v["headline"]] == ["total_iops", "read_clat_p99_max"]
    assert all(f["n"] == 2 and f["ci_low"] is not None and f["window"] for f in v["headline"])
    assert v["simulated"] is None and "SIMULATED" not in outputs["show"]
    # history: one row per run, with its answer.
    hist = vbench("history", "e2e-fio", "--json")
    assert hist.returncode == 0, hist.stderr
    rows = [r for r in json.loads(hist.stdout)["runs"] if r["run_id"] == run_id]
    assert len(rows) == 1 and rows[0]["answer"] == v["answer"]["text"], hist.stdout


def test_simulated_figures_are_flagged_and_both_vcenters_and_effects_are_told(
    vcsim_factory: Any, vc_password: str, tmp_path: Path
) -> None:
    """Reproduction 4: a Content Library run whose subscriber is in a second simulated
    vCenter."""
    from vbench.vsphere.connection import server_thumbprint

    servers = {"vc1": vcsim_factory(), "vc2": vcsim_factory()}
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"version": 1, "name": "two-sims", "vcenters": {
        name: s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port), simulator={})
        for name, s in servers.items()},
        "profiles": {"publisher": {"vcenter": "vc1", "datastore": "LocalDS_0"}}},
        sort_keys=False))
    scenario = tmp_path / "cl.yaml"
    scenario.write_text(yaml.safe_dump({
        "version": 1, "name": "cl-two", "repeat": 1,
        "factors": {"site": {"path": None, "levels": [
            {"label": "two-vcenters", "profile": "publisher"}]}},
        "phases": {"warmup": "0s", "steady": "1s"},
        "workload": {"driver": "content_library", "params": {
            "datastore": "LocalDS_0", "items": 2, "item_size": "1m",
            "subscriber_vcenter": "vc2", "subscriber_datastore": "LocalDS_0",
            "steps": [
                {"op": "create_library", "library": "pub", "publish": True, "vcenter": "vc1"},
                {"op": "import", "library": "pub", "label": "import"},
                {"op": "export", "library": "pub", "label": "export"},
                # vcsim cannot sync across two simulators: subscribing there is enough.
                {"op": "subscribe", "library": "sub", "publisher": "pub", "on_demand": True},
            ]}},
        "report": {"headline": ["export_throughput", "import_throughput"]},
    }, sort_keys=False))
    res = vbench("run", str(scenario), "--lab", str(lab), env={"COLUMNS": "200"})
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    # The run created and removed libraries and items: its last word on vSphere says so.
    assert "vSphere cleanup: 0 destroyed" not in said
    line = next(ln for ln in said.splitlines() if ln.startswith("vSphere: created"))
    assert "library" in line and "library item" in line and "removed all of it" in line, line
    run_id = run_id_of(said)
    outputs = _outputs(run_id, tmp_path)
    v = _same_everywhere(outputs, said)
    assert v["simulated"] and "vc1" in v["simulated"] and "vc2" in v["simulated"], v
    assert all(f["simulated"] for f in v["headline"] if f["value"] is not None)
    # Beside the figures, in every human output.
    assert "SIMULATED LAB" in said and "SIMULATED LAB" in outputs["show"]
    assert "[simulated lab]" in said
    assert "Simulated lab" in outputs["markdown"] and "(simulated lab)" in outputs["markdown"]
    page = html.unescape(outputs["html"])
    assert page.index("Simulated lab") < page.index('class="badges"')
    assert 'class="sim-flag"' in outputs["html"]
    # The testbed holds both vCenters, not only the publisher's.
    testbed = json.loads(outputs["show_json"])["run"]["testbed"]
    assert {vc["name"] for vc in testbed["vcenters"]} == {"vc1", "vc2"}, testbed
    assert v["effects"]["created"].get("library") == 2, v["effects"]
