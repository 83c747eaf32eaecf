"""The testbed a run recorded (see vbench/vsphere/testbed.py), as a few terminal lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vbench.config.hygiene import POLICY_NAMES


def _v(value: Any, unit: str = "") -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value}{unit}"


def _host(h: Mapping[str, Any]) -> str:
    where = f" (cluster {h['cluster']})" if h.get("cluster") else ""
    nics = ", ".join(
        f"{n.get('device')} {_v(n.get('speed_mbps'), ' Mb/s')}" for n in h.get("nics") or ()
    )
    return (
        f"host {h.get('name')}{where}: {_v(h.get('vendor'))} {_v(h.get('model'))}; "
        f"{_v(h.get('cpu_model'))}, {_v(h.get('sockets'))} sockets / {_v(h.get('cores'))} cores / "
        f"{_v(h.get('threads'))} threads at {_v(h.get('cpu_mhz'), ' MHz')}, HT "
        f"{_v(h.get('hyperthreading'))}, power policy {_policy(h.get('power_policy'))}; "
        f"{_v(h.get('memory_gib'), ' GiB')}; ESXi {_v(h.get('esxi_version'))} build "
        f"{_v(h.get('esxi_build'))}; NICs {nics or '—'}"
    )


def _policy(short: Any) -> str:
    """"balanced (dynamic)": the name the hygiene lines and scenarios use, and vSphere's."""
    name = POLICY_NAMES.get(str(short)) if short else None
    return f"{name} ({short})" if name and name != short else _v(short)


def _vm(v: Mapping[str, Any]) -> str:
    disks = ", ".join(
        f"{_v(d.get('size_gib'), ' GiB')} {_v(d.get('controller'))} {_v(d.get('provisioning'))}"
        for d in v.get("disks") or ()
    )
    nics = ", ".join(_v(n.get("type")) for n in v.get("nics") or ())
    return (
        f"VM {v.get('name')} on {_v(v.get('host'))}: {_v(v.get('vcpus'))} vCPU, "
        f"{_v(v.get('memory_mib'), ' MiB')}, {_v(v.get('hardware_version'))}, latency "
        f"sensitivity {_v(v.get('latency_sensitivity'))}, reservations "
        f"{_v(v.get('cpu_reservation_mhz'), ' MHz')} / "
        f"{_v(v.get('memory_reservation_mib'), ' MiB')}"
        f"; disks {disks or '—'}; NICs {nics or '—'}"
    )


def testbed_lines(tb: Mapping[str, Any] | None,
                  trials: Iterable[Mapping[str, Any]] | None = None) -> list[str]:
    """One line for the vCenter, then one per host, datastore, cluster and VM."""
    if not tb:
        return []
    vcs = tb.get("vcenters") or ([tb["vcenter"]] if tb.get("vcenter") else [])
    # A lab without vCenter records only what it watched (its disturbances).
    lines = [] if vcs else ["testbed: a lab without vCenter (no vSphere inventory recorded)"]
    lines += [
        f"testbed: vCenter {vc.get('name')} {_v(vc.get('version'))} build {_v(vc.get('build'))}"
        f" (statistics level {_v(vc.get('stats_level'))})"
        for vc in vcs
    ]
    lines += [f"  {_host(h)}" for h in tb.get("hosts") or ()]
    for d in tb.get("datastores") or ():
        lines.append(
            f"  datastore {d.get('name')}: {_v(d.get('type'))}, {_v(d.get('capacity_gib'), ' GiB')}"
            f" ({_v(d.get('free_gib'), ' GiB')} free), hardware acceleration "
            f"{_v(d.get('hardware_acceleration'))}"
        )
    for c in tb.get("clusters") or ():
        lines.append(
            f"  cluster {c.get('name')}: {_v(c.get('hosts'))} hosts, DRS {_v(c.get('drs'))} "
            f"({_v(c.get('drs_behavior'))}), HA {_v(c.get('ha'))}, EVC {_v(c.get('evc_mode'))}"
        )
    lines += [f"  {_vm(v)}" for v in tb.get("vms") or ()]
    from vbench.report.hygiene_text import hygiene_lines, statuses_of

    return lines + hygiene_lines(tb, None if trials is None else statuses_of(trials))
