"""The CPU of the VMs on an ESXi host, from esxtop's groups, and which of them are not
the benchmark's (see docs/lab-hygiene.md, "Busy VMs that are not the run's").

esxtop gives every VM a CPU group, ``Group Cpu(<group id>:<VM name>)``, beside the
host's own groups (``system``, ``helper``, ``drivers``, ``ft``, ``vmotion``, ``idle``)
and one group per user world (``hostd.65770``: a process of the host, its name and pid).
Only the VM groups are read here: the host's own worlds work for every VM, the
benchmark's I/O and network included, so their CPU is not another tenant's. A group's
``% Used`` is in % of one core (a VM using two whole cores shows 200).

Pure: frames in, records and text out.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vbench.config.hygiene import matches

if TYPE_CHECKING:
    import pandas as pd

    from vbench.results.records import Window

GROUP_CPU = "Group Cpu"
USED = "% Used"
# The host's own CPU groups (not VMs) as esxtop names them.
SYSTEM_GROUPS = frozenset({"idle", "system", "helper", "drivers", "ft", "vmotion"})
# A user world's group: "<process name>.<pid>" (sshd.489601, vmsyslogd.65818).
_USER_WORLD = re.compile(r"\.\d+$")


def vm_of_group(instance: str) -> str | None:
    """The VM a ``Group Cpu`` instance is (``1423953:poseidon`` -> ``poseidon``), or None
    for the host's own groups and its user worlds. A VM whose name ends in ``.<digits>``
    reads as a user world (esxtop names both the same way) and is not seen."""
    gid, sep, name = instance.partition(":")
    if not sep or not gid.isdigit() or not name:
        return None
    if name.lower() in SYSTEM_GROUPS or _USER_WORLD.search(name):
        return None
    return name


@dataclass(frozen=True)
class VmCpu:
    """One VM's CPU on one host over a steady window (% of one core)."""

    vm: str
    host: str
    mean: float
    peak: float
    peak_at: float  # controller clock (epoch seconds): the end of the peak's sample


def vm_cpu(frame: pd.DataFrame, host: str, window: Window, interval: float) -> list[VmCpu]:
    """Every VM's ``% Used`` on ``host`` over ``window``: the mean of the samples inside it
    and the highest one (a VM with two groups in the window — powered off and on — is
    their sum at each time). ``frame``: tidy esxtop rows in controller time."""
    from vbench.collectors.series import in_window

    rows = frame[frame["object"].eq(GROUP_CPU) & frame["counter"].eq(USED)
                 & in_window(frame["time"], window, interval)]
    vms = rows["instance"].map(vm_of_group)
    rows = rows.assign(vm=vms)[vms.notna()].dropna(subset=["value"])
    out = []
    for vm, part in rows.groupby("vm", sort=True):
        per_time = part.groupby("time")["value"].sum()
        peak_at = float(per_time.idxmax())
        out.append(VmCpu(str(vm), host, float(per_time.mean()), float(per_time.max()),
                         peak_at))
    return out


@dataclass(frozen=True)
class Benchmarks:
    """Which VMs are the benchmark's: by name (the lab nodes the run uses, its `vm:`
    groups' VMs), by prefix (the VMs it clones: ``vb-<run id>-``), and those the
    scenario says to ignore (``disturbance.ignore``, glob patterns)."""

    names: Callable[[], Collection[str]] = frozenset  # asked each time: VMs come and go
    prefixes: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def owns(self, vm: str) -> bool:
        return (vm in self.names() or any(vm.startswith(p) for p in self.prefixes if p)
                or matches(vm, self.ignore))


def busy_neighbours(used: Sequence[VmCpu], benchmarks: Benchmarks, threshold: float
                    ) -> list[VmCpu]:
    """The VMs that are not the benchmark's and used more than ``threshold`` % of a core
    (mean over the window), busiest first."""
    out = [u for u in used if u.mean > threshold and not benchmarks.owns(u.vm)]
    return sorted(out, key=lambda u: -u.mean)


def _clock(at: float) -> str:
    return dt.datetime.fromtimestamp(at).strftime("%H:%M:%S")


def neighbour_what(u: VmCpu) -> str:
    return f"VM {u.vm} used {u.mean:.0f} % of a core on {u.host}"


def neighbour_text(u: VmCpu) -> str:
    """"VM poseidon used 48 % of a core on esx1 in the steady window (mean; peak 97 %
    at 12:03:04)"."""
    return (f"{neighbour_what(u)} in the steady window (mean; peak {u.peak:.0f} % at "
            f"{_clock(u.peak_at)})")


def neighbour_event(u: VmCpu) -> dict[str, Any]:
    """The event of a disturbance record (the keys of a vCenter event: docs/lab-hygiene.md,
    "In JSON"); ``at`` is the peak's time."""
    return {"at": u.peak_at, "kind": "cpu", "what": neighbour_what(u), "source": "esxtop",
            "user": None, "about": u.vm}
