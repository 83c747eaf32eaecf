"""What the clone benchmarks (bench/vsphere_clone.py, bench/vm_scaling.py) share: a vcsim
whose CloneVM_Task takes DELAY ms, a lab on it with an address pool for the clones, and
the template they clone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

TEMPLATE = "bench-tmpl"
USER, PASSWORD = "bench", "bench-pw"


def start_slow_clones(tmp: Path, delay_ms: int) -> Any:
    """A vcsim (log in ``tmp``) delaying every CloneVM_Task call by ``delay_ms``."""
    from vbench.vsphere.simulator import VcsimOptions, start_vcsim

    opts = VcsimOptions(
        username=USER, password=PASSWORD, method_delay_ms=(("CloneVM_Task", delay_ms),)
    )
    return start_vcsim(opts, tmp / "vcsim.log")


def clone_lab(proc: Any, vms: int, net: str) -> Any:
    """The lab of vcsim ``proc``: one vCenter ``vc`` whose pool holds ``vms`` addresses
    from ``<net>.0.10`` on (``net``: the first two octets)."""
    from vbench.config.lab import Lab
    from vbench.vsphere.connection import server_thumbprint

    os.environ["VBENCH_BENCH_VC_PASSWORD"] = PASSWORD
    last = 10 + vms
    return Lab.model_validate({
        "version": 1,
        "name": "bench",
        "vcenters": {"vc": {
            "url": proc.url, "user": USER, "password": "${env:VBENCH_BENCH_VC_PASSWORD}",
            "thumbprint": server_thumbprint(proc.address, proc.port),
            "ip_pool": {"addresses": [f"{net}.0.10-{net}.{last // 256}.{last % 256}"]},
        }},
    })


def make_template(lab: Any) -> None:
    """Create ``TEMPLATE`` (a clone of the simulator's first VM) unless it exists."""
    from vbench.vsphere.connection import SessionPool
    from vbench.vsphere.simulator import ensure_templates

    with SessionPool.for_lab(lab) as pool:
        ensure_templates(pool.get("vc"), [TEMPLATE])
