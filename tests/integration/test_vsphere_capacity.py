"""The capacity preflight on a real inventory read from vcsim: with every size reported it
passes with figures; with the template's size and memory missing (a vCenter that does not
let the user read them) it warns "unknown" instead of passing on 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_vsphere_provision import TEMPLATE, make_lab, make_scenario
from tests.vcsim import VcsimServer
from vbench.vsphere.checks import check_groups
from vbench.vsphere.connection import SessionPool
from vbench.vsphere.inventory import Inventory, Obj
from vbench.vsphere.simulator import ensure_templates

pytestmark = pytest.mark.integration

UNREADABLE = ("summary.storage.committed", "summary.config.memorySizeMB")


def _checks(server: VcsimServer, strip: tuple[str, ...]) -> dict[str, object]:
    lab = make_lab(server)
    scenario = make_scenario({"template": TEMPLATE, "cluster": "DC0_C0"}, count=3)
    with SessionPool.for_lab(lab) as pool:
        session = pool.get("vc1")
        ensure_templates(session, [TEMPLATE])
        real = Inventory.load(session)
    objs = [
        Obj(o.ref, {k: v for k, v in o.props.items() if k not in strip})
        if o.name == TEMPLATE
        else o
        for o in real.objects.values()
    ]
    inv = Inventory("vc1", objs)
    checks = check_groups(inv, lab, "vc1", {"web": scenario.topology["web"].vm}, {"web": 3})
    return {c.check: c for c in checks}


def test_reported_sizes_are_checked(vcsim_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    by = _checks(vcsim_factory(), ())
    for name in ("capacity", "memory"):
        c = by[name]
        assert c.ok and c.level == "info" and "unknown" not in c.detail, c  # type: ignore[attr-defined]


def test_unreported_template_size_and_memory_warn_unknown(vcsim_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    by = _checks(vcsim_factory(), UNREADABLE)
    for name in ("capacity", "memory"):
        c = by[name]
        assert c.ok and c.level == "warning", c  # type: ignore[attr-defined]
        assert "unknown: vCenter reports no size for group web" in c.detail  # type: ignore[attr-defined]
        assert "0.0 GiB of" in c.detail  # type: ignore[attr-defined] - the known part is nothing
