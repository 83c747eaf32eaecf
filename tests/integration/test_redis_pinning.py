"""Pinning over real SSH: IRQ affinities saved, set and restored (also after a failure),
on a copy of the /proc and /sys layout, since the loopback NIC has no interrupts and the
test must not re-pin this machine's real IRQs; taskset on a real process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LocalGuests
from vbench.guest.ssh import GuestPool
from vbench.workloads.redis_scaleout import pinning as redis_pinning
from vbench.workloads.redis_scaleout.params import PinSpec

pytestmark = pytest.mark.integration

INTERRUPTS = """\
           CPU0       CPU1
  0:         31          0   IO-APIC   2-edge      timer
  6:          3          0   IO-APIC   6-edge      floppy
 24:        100         50   PCI-MSI 512000-edge      eth7-TxRx-0
 25:        120         40   PCI-MSI 512001-edge      eth7-TxRx-1
 26:          7          1   PCI-MSI 512002-edge      eth70
LOC:       1000       1000   Local timer interrupts
"""


def fake_roots(base: Path, msi: list[str] | None = None) -> tuple[str, str]:
    proc, sys = base / "proc", base / "sys"
    (proc / "irq").mkdir(parents=True)
    (proc / "interrupts").write_text(INTERRUPTS)
    for irq, cpus in {"0": "0-1", "6": "0-1", "24": "0-1", "25": "1", "26": "0-1"}.items():
        (proc / "irq" / irq).mkdir()
        (proc / "irq" / irq / "smp_affinity_list").write_text(cpus + "\n")
    if msi is not None:
        d = sys / "class" / "net" / "eth9" / "device" / "msi_irqs"
        d.mkdir(parents=True)
        for irq in msi:
            (d / irq).write_text("msix\n")
    return str(proc), str(sys)


def affinity(proc: str) -> dict[str, str]:
    return {p.parent.name: p.read_text().strip()
            for p in sorted(Path(proc, "irq").glob("*/smp_affinity_list")) if p.is_file()}


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))


def test_nic_irqs_match_the_interface_name_only(guest_pool: GuestPool, tmp_path: Path) -> None:
    guest = guest_pool.get("guest1")
    proc, sys = fake_roots(tmp_path)
    assert redis_pinning.nic_irqs(guest, "eth7", proc, sys) == ["24", "25"]  # not eth70
    assert redis_pinning.nic_irqs(guest, "lo", proc, sys) == []  # not "floppy"


def test_irq_affinity_set_then_restored_after_a_failure(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    guest = guest_pool.get("guest1")
    proc, sys = fake_roots(tmp_path)
    before = affinity(proc)
    pin = PinSpec(cpus="1", irqs=True, nic="eth7", stop_irqbalance=False)
    log = Log()
    state = redis_pinning.apply(guest, pin, "1", log, proc_root=proc, sys_root=sys)
    assert affinity(proc) == {**before, "24": "1", "25": "1"}
    assert state.irq_affinity == {"24": "0-1", "25": "1"}
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("the trial failed here")
        finally:  # what the driver's teardown does after any failure
            redis_pinning.restore(guest, state, log, proc_root=proc)
    assert affinity(proc) == before
    assert log.events[-1][0] == "redis_pin_restored" and log.events[-1][1]["errors"] == []
    redis_pinning.restore(guest, state, log, proc_root=proc)  # a second call is harmless
    assert affinity(proc) == before


def test_msi_vectors_are_preferred_and_refusals_reported(
    guest_pool: GuestPool, tmp_path: Path
) -> None:
    guest = guest_pool.get("guest1")
    proc, sys = fake_roots(tmp_path, msi=["24", "26"])
    # An IRQ the kernel refuses to move (here: its file is a directory).
    target = Path(proc, "irq", "26", "smp_affinity_list")
    target.unlink()
    target.mkdir()
    log = Log()
    pin = PinSpec(cpus="0", irqs=True, nic="eth9", stop_irqbalance=False)
    state = redis_pinning.apply(guest, pin, "0", log, proc_root=proc, sys_root=sys)
    assert state.irq_affinity == {"24": "0-1"}
    pinned = dict(log.events)["redis_pin_irqs"]
    assert pinned["irqs"] == ["24", "26"] and pinned["failed"] == ["26"]
    assert affinity(proc)["24"] == "0"
    redis_pinning.restore(guest, state, log, proc_root=proc)
    assert affinity(proc)["24"] == "0-1"


def test_numa_node_cpus_are_read_in_the_guest(guest_pool: GuestPool, tmp_path: Path) -> None:
    guest = guest_pool.get("guest1")
    node = tmp_path / "devices" / "system" / "node" / "node1"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("4-7\n")
    assert redis_pinning.resolve_cpus(guest, PinSpec(numa_node=1), str(tmp_path)) == "4-7"
    with pytest.raises(Exception, match="no such NUMA node"):
        redis_pinning.resolve_cpus(guest, PinSpec(numa_node=3), str(tmp_path))


def test_group_affinity_reports_a_tasksets_process(
    local_guests: LocalGuests, guest_pool: GuestPool, tmp_path: Path
) -> None:
    guest = guest_pool.get("guest2")
    proc = guest.start([*redis_pinning.taskset_prefix("1"), "sleep", "30"],
                       log=str(tmp_path / "sleep.log"))
    try:
        found = redis_pinning.group_affinity(guest, proc.pid)
        assert [v for k, v in found.items() if k.endswith(" sleep")] == ["1"]
    finally:
        proc.kill()
