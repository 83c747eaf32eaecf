"""The content_library workload against one and two vcsim instances and a loopback web
server: steps, concurrency, figures, honesty checks, and nothing left behind."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import content_library_env as env
from tests.integration.vcbench_harness import Harness, context, lab_for
from tests.vcsim import VcsimServer
from vbench.errors import LabError
from vbench.results.records import Sample
from vbench.vsphere import content_library as cl
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.journal import IndexedJournal, pending
from vbench.workloads.content_library import ContentLibraryWorkload
from vbench.workloads.content_library.ops import SyncShort
from vbench.workloads.content_library.params import ContentLibraryParams

pytestmark = pytest.mark.integration
Factory = Callable[..., VcsimServer]


def harness(servers: dict[str, VcsimServer], tmp: Path, run_id: str = "t1") -> Harness:
    """The run's vSphere resources as the engine builds them (an indexed journal)."""
    run_dir = tmp / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    journal = IndexedJournal.in_run_dir(run_dir)
    journal.open(run_id)
    lab = lab_for(servers)
    return Harness(lab, run_id, run_dir, SessionPool.for_lab(lab, pool_size=16), journal)


@pytest.fixture
def two(vcsim_factory: Factory, tmp_path: Path) -> Iterator[tuple[Harness, dict]]:
    servers = {"vc1": vcsim_factory(), "vc2": vcsim_factory()}
    h = harness(servers, tmp_path)
    try:
        yield h, servers
    finally:
        h.close()


def trial(
    h: Harness, params: dict[str, Any], *, cancel: threading.Event | None = None
) -> tuple[list[Sample], Path, list[dict[str, Any]]]:
    wl = ContentLibraryWorkload(ContentLibraryParams.model_validate(params))
    raw = h.run_dir / "raw"
    ctx, _marks, log = context(h, "vc1", raw, warmup=0, steady=0, cancel=cancel)
    try:
        wl.prepare(ctx)
        wl.run(ctx)
        return wl.collect(ctx), raw, log
    finally:
        wl.teardown(ctx)


def value(samples: list[Sample], figure: str, step: str) -> float | None:
    """The figure of one step (metrics are named ``<step>_<figure>``)."""
    hits = [s.value for s in samples if s.metric == f"{step}_{figure}" and not s.labels]
    assert len(hits) == 1, (figure, step, hits)
    return hits[0]


def libraries(server: VcsimServer) -> list[str]:
    with env.rest(server) as s:
        return [cl.get_library(s, i).name for i in s.call("GET", cl.LIBRARY) or []]


def left_behind(h: Harness, servers: dict) -> list[str]:
    names = [n for srv in servers.values() for n in libraries(srv)]
    open_items = [i.name for i in pending(h.journal.read())]
    return names + open_items


def test_import_export_concurrent_with_checksums(two: tuple) -> None:
    h, servers = two
    size = 3 * (1 << 20) + 11
    samples, raw, _ = trial(h, {
        "datastore": "LocalDS_0", "items": 4, "item_size": size, "concurrency": 2,
        "steps": [
            {"op": "create_library", "library": "pub"},
            {"op": "import", "library": "pub", "label": "up"},
            {"op": "export", "library": "pub", "label": "down", "checksum": True},
        ],
    })  # fmt: skip
    assert value(samples, "bytes", "up") == 4 * size
    assert value(samples, "bytes", "down") == 4 * size
    assert value(samples, "ops", "up") == 4
    wall = value(samples, "batch_time", "down")
    assert value(samples, "throughput", "down") == pytest.approx(4 * size / 1e6 / wall)
    assert (value(samples, "overhead", "up") or 0) > 0
    rows = (raw / "ops.csv").read_text().splitlines()
    assert len(rows) == 1 + 1 + 4 + 4  # header, create, 4 imports, 4 exports
    assert left_behind(h, servers) == []


def test_pull_import_from_a_web_server(two: tuple, tmp_path: Path) -> None:
    h, servers = two
    www = tmp_path / "www"
    www.mkdir()
    from vbench.vsphere.content_library_transfer import write_generated

    write_generated(www / "media.iso", 2 << 20)
    with env.web_server(www) as base:
        samples, _, _ = trial(h, {
            "datastore": "LocalDS_0",
            "steps": [
                {"op": "create_library", "library": "pub"},
                {"op": "import", "library": "pub", "label": "pull", "url": f"{base}/media.iso",
                 "kind": "iso", "count": 2, "concurrency": 2},
                {"op": "export", "library": "pub", "label": "down"},
            ],
        })  # fmt: skip
    assert value(samples, "bytes", "pull") == 2 * (2 << 20)
    assert value(samples, "bytes", "down") == 2 * (2 << 20)
    assert left_behind(h, servers) == []


def test_subscribe_and_sync_on_the_same_vcenter_counts_items(two: tuple) -> None:
    h, servers = two
    samples, _, _ = trial(h, {
        "datastore": "LocalDS_0", "items": 3, "item_size": "64k",
        "steps": [
            {"op": "create_library", "library": "pub", "publish": True},
            {"op": "import", "library": "pub"},
            {"op": "subscribe", "library": "sub", "publisher": "pub", "on_demand": False},
            {"op": "sync", "library": "sub", "label": "sync"},
            {"op": "sync", "library": "sub", "label": "sync_one", "item": "import-1"},
        ],
    })  # fmt: skip
    assert value(samples, "items", "sync") == 3
    assert value(samples, "items", "sync_one") == 1
    assert (value(samples, "time", "sync") or 0) > 0
    # (No export from the subscriber: vcsim v0.46 shares the publisher's items and serves a
    # download from whichever library its map yields first, the subscriber's holding no
    # files: HTTP 500 about half the time. A real vCenter serves the subscriber's copy.)
    assert left_behind(h, servers) == []


def test_cross_vcenter_sync_with_zero_items_fails_the_trial(two: tuple) -> None:
    h, servers = two
    with pytest.raises(SyncShort) as err:
        trial(h, {
            "datastore": "LocalDS_0", "items": 2, "item_size": "4k",
            "steps": [
                {"op": "create_library", "library": "pub", "publish": True},
                {"op": "import", "library": "pub"},
                {"op": "subscribe", "library": "sub", "publisher": "pub", "vcenter": "vc2"},
                {"op": "sync", "library": "sub"},
            ],
        })  # fmt: skip
    assert "holds 0 of the publisher's 2 items" in str(err.value)
    assert "vcenter vc1" in str(err.value) and "vcenter vc2" in str(err.value)
    assert left_behind(h, servers) == []


def test_a_run_time_error_names_the_scenarios_library_first(two: tuple) -> None:
    """Issue 23 item 4: the trial's error spoke of the generated vb-…-pub-1 only. (The
    driver's findings refuse this scenario at validate; the model alone admits it.)"""
    h, servers = two
    with pytest.raises(LabError) as err:
        trial(h, {
            "datastore": "LocalDS_0", "items": 1, "item_size": "4k",
            "steps": [
                {"op": "create_library", "library": "pub"},
                {"op": "import", "library": "pub"},
                {"op": "deploy", "library": "pub", "item": "goldn"},
            ],
        })  # fmt: skip
    text = str(err.value)
    assert text.startswith("library pub (") and "in vCenter): has no item 'goldn'" in text
    assert left_behind(h, servers) == []


def test_deploy_from_ovf_and_template_items_powered_on(two: tuple, tmp_path: Path) -> None:
    h, servers = two
    ovf = env.write_ovf(tmp_path / "appliance.ovf")
    samples, _, _ = trial(h, {
        "datastore": "LocalDS_0",
        "steps": [
            {"op": "create_library", "library": "lib"},
            {"op": "import", "library": "lib", "label": "appliance", "files": [str(ovf)]},
            {"op": "capture", "library": "lib", "label": "golden", "vm": "DC0_C0_RP0_VM0"},
            {"op": "deploy", "library": "lib", "label": "from_ovf", "item": "appliance",
             "count": 2, "concurrency": 2, "powered_on": True},
            {"op": "deploy", "library": "lib", "label": "from_tmpl", "item": "golden",
             "count": 2},
        ],
    })  # fmt: skip
    assert value(samples, "ops", "from_ovf") == 2
    assert value(samples, "ops", "from_tmpl") == 2
    assert (value(samples, "time", "golden") or 0) > 0
    from tests.integration.vcbench_harness import run_vms

    assert run_vms(h, "vc1") == []  # deployed VMs and the captured template are gone
    assert left_behind(h, servers) == []


def test_powering_on_a_template_deploy_on_vcsim_says_why_it_cannot(two: tuple) -> None:
    h, servers = two
    from vbench.errors import LabError

    with pytest.raises(LabError, match="deploys VM-template items as templates"):
        trial(h, {
            "datastore": "LocalDS_0",
            "steps": [
                {"op": "create_library", "library": "lib"},
                {"op": "capture", "library": "lib", "label": "golden", "vm": "DC0_C0_RP0_VM0"},
                {"op": "deploy", "library": "lib", "item": "golden", "powered_on": True},
            ],
        })  # fmt: skip
    assert left_behind(h, servers) == []


def test_an_existing_library_is_read_and_left_as_it_was(two: tuple) -> None:
    h, servers = two
    with env.rest(servers["vc1"]) as s:
        ds = env.sim_ids(servers["vc1"]).datastore
        lib = cl.create_local_library(s, "team-isos", cl.Backing(ds))
        from vbench.vsphere import content_library_transfer as tr

        item = cl.create_item(s, lib, "iso")
        tr.import_files(s, item, lambda sid: [tr.push(s, sid, tr.Source("a.iso", size=70000))])
    samples, _, _ = trial(h, {
        "steps": [
            {"op": "create_library", "library": "team-isos", "existing": True},
            {"op": "export", "library": "team-isos", "label": "down", "count": 3},
        ],
    })  # fmt: skip
    assert value(samples, "bytes", "down") == 3 * 70000
    with env.rest(servers["vc1"]) as s:
        assert cl.list_items(s, lib) == [item] and cl.item_bytes(s, item) == 70000
    assert libraries(servers["vc1"]) == ["team-isos"]


def test_interrupt_mid_step_leaves_nothing(two: tuple) -> None:
    h, servers = two
    cancel = threading.Event()
    params = {
        "datastore": "LocalDS_0", "items": 6, "item_size": "256k",
        "steps": [
            {"op": "create_library", "library": "pub"},
            {"op": "import", "library": "pub", "label": "up"},
        ],
    }  # fmt: skip
    wl = ContentLibraryWorkload(ContentLibraryParams.model_validate(params))
    ctx, _, _log = context(h, "vc1", h.run_dir / "raw", warmup=0, steady=0, cancel=cancel)
    original = ctx.log

    def log_and_cancel(event: str, **kw: Any) -> None:
        original(event, **kw)
        if event == "cl_step" and kw.get("op") == "create_library":
            cancel.set()  # Ctrl-C right after the library exists, before the imports

    ctx.log = log_and_cancel
    from vbench.errors import Interrupted

    wl.prepare(ctx)
    with pytest.raises(Interrupted):
        wl.run(ctx)
    wl.teardown(ctx)
    assert left_behind(h, servers) == []


def test_cleanup_finds_objects_whose_create_call_never_answered(two: tuple, tmp_path: Path) -> None:
    """A run killed while a create call was on the wire journaled the intent but no id:
    cleanup finds the library and the deployed VM by the names this run gave them (and
    leaves alone a library whose name is not this run's)."""
    from vbench.vsphere import content_library_deploy as dp
    from vbench.vsphere import content_library_transfer as tr
    from vbench.vsphere.cleanup import cleanup_journal
    from vbench.workloads.content_library.destroyers import LIBRARY_KIND, VM_DEPLOYED_KIND

    h, servers = two
    res = h.resources("vc1")
    ids = env.sim_ids(servers["vc1"])
    lib_name = res.object_name("p1t1-lib-1")
    vm_name = res.object_name("p1t1-deploy-0-2")
    res.track(LIBRARY_KIND, lib_name, data={"subscribed": False})
    res.track(VM_DEPLOYED_KIND, vm_name, data={})
    res.track(LIBRARY_KIND, "someone-elses", data={"subscribed": False})
    with env.rest(servers["vc1"]) as s:  # the calls land after the process died
        lib = cl.create_local_library(s, lib_name, cl.Backing(ids.datastore))
        other = cl.create_local_library(s, "someone-elses", cl.Backing(ids.datastore))
        item = cl.create_item(s, lib, "appliance", "ovf")
        ovf = env.write_ovf(tmp_path / "a.ovf")
        tr.import_files(s, item, lambda sid: [tr.push(s, sid, tr.Source(ovf.name, ovf))])
        dp.deploy_ovf(s, item, vm_name, env.placement(ids))
    report = cleanup_journal(
        h.sessions.get, h.watcher, h.journal, h.run_id, pending(h.journal.read()), parallel=1
    )
    assert not report.errors, report.errors
    assert sorted(report.destroyed) == sorted(
        [f"{LIBRARY_KIND} {lib_name}", f"{VM_DEPLOYED_KIND} {vm_name}"]
    )
    assert libraries(servers["vc1"]) == ["someone-elses"]
    from tests.integration.vcbench_harness import run_vms

    assert run_vms(h, "vc1") == []
    with env.rest(servers["vc1"]) as s:
        cl.delete_library(s, other, subscribed=False)


def test_operations_finished_in_a_failed_step_are_kept_in_the_raw_log(two: tuple) -> None:
    """The third of four imports meets an item of its name (made by another client right
    after the library was created): the step fails, no figure is made of it, and the two
    imports that finished are in ops.csv with step_ok 0."""
    h, servers = two
    params = {
        "datastore": "LocalDS_0", "items": 4, "item_size": "64k", "concurrency": 1,
        "steps": [
            {"op": "create_library", "library": "pub"},
            {"op": "import", "library": "pub", "label": "up"},
        ],
    }  # fmt: skip
    wl = ContentLibraryWorkload(ContentLibraryParams.model_validate(params))
    raw = h.run_dir / "raw"
    ctx, _, _log = context(h, "vc1", raw, warmup=0, steady=0)
    original = ctx.log

    def log_and_take_a_name(event: str, **kw: Any) -> None:
        original(event, **kw)
        if event == "cl_step" and kw.get("op") == "create_library":
            with env.rest(servers["vc1"]) as s:
                cl.create_item(s, wl._run.libs["pub"].id, "up-2")  # type: ignore[union-attr]

    ctx.log = log_and_take_a_name
    wl.prepare(ctx)
    try:
        with pytest.raises(LabError) as err:
            wl.run(ctx)
        assert "up-2" in str(err.value), str(err.value)
        samples = wl.collect(ctx)
    finally:
        wl.teardown(ctx)
    assert not [s for s in samples if s.metric.startswith("up_")]
    rows = (raw / "ops.csv").read_text().splitlines()
    assert rows[0].endswith(",step_ok")
    imports = [r.split(",") for r in rows[1:] if r.startswith("up,")]
    assert [(r[2], r[-1]) for r in imports] == [("0", "0"), ("1", "0")]
    assert all(int(r[6]) == 64 * 1024 for r in imports)  # bytes moved
    # The library (and the items in it) are gone; the refused create stays journaled as
    # an intent for the run-end cleanup, which vCenter's refusal alone cannot close.
    assert left_behind(h, servers) == ["up-2"]
