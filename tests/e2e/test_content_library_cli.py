"""`vbench run` of the content_library workload against vcsim, end to end: figures
stored, wrong credentials and a missing datastore as one line with exit 3, Ctrl-C and
kill -9 (then `vbench cleanup`) leaving no library, item or VM behind."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import content_library_env as env
from tests.e2e.helpers import run_id_of, show, vbench, vbench_popen, wait_for
from tests.vcsim import VcsimServer
from vbench.vsphere import content_library as cl
from vbench.vsphere.connection import server_thumbprint

Factory = Callable[..., VcsimServer]


def write_lab(path: Path, servers: dict[str, VcsimServer], **vc_extra: Any) -> Path:
    vcs = {}
    for name, s in servers.items():
        vcs[name] = s.lab_vcenter(thumbprint=server_thumbprint(s.host, s.port), **vc_extra)
    doc = {
        "version": 1,
        "name": "cl-e2e",
        "vcenters": vcs,
        "profiles": {
            "same-vc": {"vcenter": "vc1", "datastore": "LocalDS_0", "labels": {"elm": "same"}},
        },
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_scenario(
    path: Path,
    *,
    datastore: str = "LocalDS_0",
    items: int = 2,
    size: str = "1m",
    concurrency: list[int] | None = None,
) -> Path:
    doc = {
        "version": 1,
        "name": "cl-e2e",
        "workload": {
            "driver": "content_library",
            "params": {
                "datastore": datastore, "items": items, "item_size": size,
                "steps": [
                    {"op": "create_library", "library": "pub", "publish": True},
                    {"op": "import", "library": "pub", "label": "import"},
                    {"op": "export", "library": "pub", "label": "export", "checksum": True},
                    {"op": "subscribe", "library": "sub", "publisher": "pub"},
                    {"op": "sync", "library": "sub", "label": "sync"},
                ],
            },
        },
        "factors": {"concurrency": concurrency or [1, 2]},
        "repeat": 1,
        "phases": {"warmup": "0s", "steady": "1s"},
    }  # fmt: skip
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def vc(vcsim_factory: Factory, vc_password: str) -> Iterator[VcsimServer]:
    server = vcsim_factory()
    yield server
    assert server.process.alive(), f"vcsim died: {server.process.log}"


def library_names(server: VcsimServer) -> list[str]:
    with env.rest(server) as s:
        return [cl.get_library(s, i).name for i in s.call("GET", cl.LIBRARY) or []]


def test_run_stores_per_op_figures_and_leaves_nothing(vc: VcsimServer, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", {"vc1": vc})
    scenario = write_scenario(tmp_path / "s.yaml")
    res = vbench("run", str(scenario), "--lab", str(lab))
    assert res.returncode == 0, res.stdout + res.stderr
    data = show(run_id_of(res.stdout))
    assert [t["status"] for t in data["trials"]] == ["ok", "ok"]
    run_dir = Path(data["run"]["run_dir"])
    rows = (run_dir / "samples.csv").read_text().splitlines()
    assert any("export_throughput" in r for r in rows)
    assert any("sync_items" in r for r in rows)
    assert library_names(vc) == []
    # The answer (on stderr with the summary) flags the sync time: vcsim copies nothing.
    assert "* sync: vcsim shares the publisher's items with the subscriber" in res.stderr


def test_wrong_credentials_are_one_line_and_exit_3(vc: VcsimServer, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", {"vc1": vc})
    scenario = write_scenario(tmp_path / "s.yaml")
    res = vbench("run", str(scenario), "--lab", str(lab),
                 env={"VBENCH_TEST_VC_PASSWORD": "not-the-password"})  # fmt: skip
    assert res.returncode == 3, res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if "login failed" in ln]
    assert len(lines) == 1 and "vcenter vc1" in lines[0], res.stderr
    assert library_names(vc) == []


def test_missing_datastore_is_one_line_and_exit_3(vc: VcsimServer, tmp_path: Path) -> None:
    lab = write_lab(tmp_path / "lab.yaml", {"vc1": vc})
    scenario = write_scenario(tmp_path / "s.yaml", datastore="NoSuchDS")
    res = vbench("run", str(scenario), "--lab", str(lab))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "no datastore named 'NoSuchDS'" in res.stderr, res.stderr
    assert library_names(vc) == []


def _journal(run_dir: Path) -> list[dict]:
    path = run_dir / "vsphere-journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _run_dir_with_item(results: Path) -> Path:
    """The run directory once its journal says an item exists (imports under way)."""
    found: list[Path] = []

    def ready() -> bool:
        for d in results.glob("*"):
            if any(e["event"] == "created" and e.get("kind") == "cl_item" for e in _journal(d)):
                found.append(d)
                return True
        return False

    wait_for(ready, 90, "a library item in the journal")
    return found[0]


@pytest.mark.parametrize("how", ["sigint", "kill9"])
def test_interrupted_run_leaves_nothing(vc: VcsimServer, tmp_path: Path, how: str) -> None:
    lab = write_lab(tmp_path / "lab.yaml", {"vc1": vc})
    scenario = write_scenario(tmp_path / "s.yaml", items=40, size="8m", concurrency=[1])
    results = Path(os.environ["VBENCH_HOME"]) / "results"
    proc = vbench_popen("run", str(scenario), "--lab", str(lab))
    try:
        run_dir = _run_dir_with_item(results)
        if how == "sigint":
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, out + err
        else:
            proc.kill()
            proc.communicate(timeout=30)
            assert library_names(vc) != []  # the dead run left its library behind
            res = vbench("cleanup", run_dir.name, "--lab", str(lab))
            assert res.returncode == 0, res.stdout + res.stderr
            again = vbench("cleanup", run_dir.name, "--lab", str(lab))
            assert again.returncode == 0 and "0 destroyed" in again.stdout, again.stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert library_names(vc) == []
