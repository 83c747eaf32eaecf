"""Inventory and testbed capture on a large simulated vCenter, against `govc find`.

Starts vcsim with HOSTS hosts (clusters of 100, no VMs) and measures, in the same run,
the median of REPEAT rounds of

- govc: ``govc find / -type h`` (one process; its login is persisted beforehand);
- vbench inventory: :meth:`Inventory.load` (one ContainerView, RetrievePropertiesEx with
  paging over every datacenter, folder, cluster, host, datastore, network, pool and VM);
- vbench testbed: that inventory, then :func:`capture_testbed` (vendor, model, CPU, HT,
  power policy, memory, ESXi build, NICs, HBAs, LUNs; datastores; clusters — two more
  PropertyCollector calls) of the hosts a run involves (RUN_HOSTS), and of every host;
- for reference, three lazy pyVmomi properties per host, one round trip each, on the
  first LAZY hosts (extrapolated to all).

    .venv/bin/python -m bench.vsphere_inventory [--hosts 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

USER, PASSWORD = "bench", "bench-pw"


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    from vbench.vsphere.connection import VCenterTarget, connect, server_thumbprint
    from vbench.vsphere.inventory import Inventory
    from vbench.vsphere.simulator import VcsimOptions, find_tool, start_vcsim
    from vbench.vsphere.testbed import capture_testbed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lazy", type=int, default=100, help="hosts read with lazy properties")
    ap.add_argument("--run-hosts", type=int, default=16, help="hosts a run's testbed covers")
    args = ap.parse_args()
    clusters = max(1, args.hosts // 100)
    opts = VcsimOptions(
        clusters=clusters,
        hosts=args.hosts // clusters,
        standalone_hosts=0,
        vms=0,
        username=USER,
        password=PASSWORD,
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = start_vcsim(opts, Path(tmp) / "vcsim.log", timeout=600)
        print(f"vcsim with {args.hosts} hosts ready in {time.perf_counter() - t0:.0f} s")
        try:
            env = {
                **os.environ,
                "GOVC_URL": f"https://{USER}:{PASSWORD}@{proc.address}:{proc.port}/sdk",
                "GOVC_INSECURE": "1",
                "HOME": tmp,
            }
            govc = [find_tool("govc"), "find", "/", "-type", "h"]
            subprocess.run(govc, env=env, check=True, capture_output=True)  # login, warm-up
            found = subprocess.run(govc, env=env, check=True, capture_output=True, text=True)
            n_govc = len(found.stdout.split())
            t_govc = _median(
                lambda: subprocess.run(govc, env=env, check=True, capture_output=True),
                args.repeat,
            )
            target = VCenterTarget(
                name="bench",
                host=proc.address,
                port=proc.port,
                user=USER,
                password=PASSWORD,
                thumbprint=server_thumbprint(proc.address, proc.port),
                timeout=600,
            )
            with connect(target) as session:
                inv = Inventory.load(session)
                hosts = [o.ref for o in inv.candidates("host")]
                t_inv = _median(lambda: Inventory.load(session), args.repeat)

                def testbed(n: int) -> object:
                    i = Inventory.load(session)
                    refs = [o.ref for o in i.candidates("host")][:n]
                    return capture_testbed(session, (), refs)

                tb = capture_testbed(session, (), hosts)
                t_run = _median(lambda: testbed(args.run_hosts), args.repeat)
                t_tb = _median(lambda: testbed(len(hosts)), args.repeat)
                sample = hosts[: args.lazy]
                t0 = time.perf_counter()
                for h in sample:
                    _ = (h.name, h.summary.hardware.cpuModel, h.runtime.connectionState)
                t_lazy = (time.perf_counter() - t0) * len(hosts) / max(1, len(sample))
        finally:
            proc.stop()
    print(f"hosts: govc found {n_govc}, vbench {len(hosts)} (testbed rows {len(tb['hosts'])})")
    print(f"  govc find / -type h       {t_govc:7.3f} s  1.00x")
    print(f"  vbench inventory          {t_inv:7.3f} s  {t_inv / t_govc:5.2f}x govc")
    print(
        f"  vbench inventory+testbed of a run's {args.run_hosts} hosts  {t_run:7.3f} s  "
        f"{t_run / t_govc:5.2f}x govc"
    )
    print(
        f"  vbench inventory+testbed of all {len(hosts)} hosts  {t_tb:7.3f} s  "
        f"{t_tb / t_govc:5.2f}x govc"
    )
    print(
        f"  lazy properties (3/host)  {t_lazy:7.3f} s  {t_lazy / t_inv:5.0f}x the inventory "
        f"(extrapolated from {len(sample)} hosts)"
    )


if __name__ == "__main__":
    main()
