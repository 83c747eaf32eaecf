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
from collections.abc import Callable, Collection, Iterable, Sequence
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
VIRTUAL_DISK, VCPU = "Virtual Disk", "Vcpu"
DISK_READ = "Average MilliSec/Read"  # always read (the collector's BASE_COUNTERS)
# A VM's virtual disk instance: "<vm>:scsi0:0", "<vm>:nvme0:1", "<vm>:sata0:2".
_DISK = re.compile(r":[a-z]+\d+:\d+$")


def vms_shown(objects: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The names a capture's (object, instance) pairs show to be VMs, whatever they look
    like: every VM with a virtual disk (``Virtual Disk(<vm>)``, ``(<vm>:scsi0:0)``) and
    every group with a VMX world (``Vcpu(<id>:<vm>:<world id>:vmx)``, in ``-a``
    captures). User worlds have neither."""
    out: set[str] = set()
    for obj, instance in objects:
        if obj == VIRTUAL_DISK:
            out.add(_DISK.sub("", instance))
        elif obj == VCPU and instance.endswith(":vmx"):
            group = instance.removesuffix(":vmx").rpartition(":")[0]  # "<id>:<vm>"
            out.add(group.partition(":")[2])
    return frozenset(out - {""})


def vm_of_group(instance: str, shown: Collection[str] = frozenset()) -> str | None:
    """The VM a ``Group Cpu`` instance is (``1423953:poseidon`` -> ``poseidon``), or None
    for the host's own groups and its user worlds. A name ending in ``.<digits>`` is a user
    world's (esxtop names both alike) unless ``shown`` (:func:`vms_shown`) names it."""
    gid, sep, name = instance.partition(":")
    if not sep or not gid.isdigit() or not name:
        return None
    if name in shown:
        return name
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
    """Every VM's ``% Used`` on ``host`` over ``window``: the mean over the window's
    samples — one where the VM has no value (powered off, or not yet in the capture)
    counts 0 — and the highest one (a VM with two groups in the window, powered off and
    on, is their sum at each time). ``frame``: tidy esxtop rows in controller time (its
    ``Virtual Disk`` rows tell VMs named like user worlds: :func:`vms_shown`)."""
    from vbench.collectors.series import in_window

    rows = frame[frame["object"].eq(GROUP_CPU) & frame["counter"].eq(USED)
                 & in_window(frame["time"], window, interval)]
    samples = rows["time"].nunique()
    evidence = frame[frame["object"].isin((VIRTUAL_DISK, VCPU))]
    shown = vms_shown(evidence[["object", "instance"]].drop_duplicates()
                      .itertuples(index=False, name=None))
    vms = rows["instance"].map(lambda i: vm_of_group(i, shown))
    rows = rows.assign(vm=vms)[vms.notna()].dropna(subset=["value"])
    out = []
    for vm, part in rows.groupby("vm", sort=True):
        per_time = part.groupby("time")["value"].sum()
        peak_at = float(per_time.idxmax())
        out.append(VmCpu(str(vm), host, float(per_time.sum() / samples),
                         float(per_time.max()), peak_at))
    return out


@dataclass(frozen=True)
class Benchmarks:
    """Which VMs are the benchmark's: by name, case-insensitive as typed in a lab file
    (the lab nodes the run uses, its `vm:` groups' VMs), by prefix (the VMs it clones:
    ``vb-<run id>-``), and those the scenario says to ignore (``disturbance.ignore``,
    glob patterns)."""

    names: Callable[[], Collection[str]] = frozenset  # asked each time: VMs come and go
    prefixes: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def owns(self, vm: str) -> bool:
        low = vm.casefold()
        return (any(n.casefold() == low for n in self.names())
                or any(vm.startswith(p) for p in self.prefixes if p)
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
