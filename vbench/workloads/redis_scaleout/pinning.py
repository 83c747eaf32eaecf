"""The pinned variant: CPU affinity for processes, NIC interrupts, irqbalance.

Everything changed in a guest is recorded first (:class:`PinState`) and put back by
:func:`restore`, which the driver calls from teardown, so a failed or interrupted
trial restores too. Scripts get their values as positional arguments (never formatted
into the script text). ``proc_root`` / ``sys_root`` exist so that the save/restore logic
can be exercised on a copy of the /proc and /sys layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vbench.errors import GuestError
from vbench.workloads.redis_scaleout.params import PinSpec, parse_cpu_list

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest

Log = Callable[..., None]

_IRQBALANCE_STATE = r"""
if command -v systemctl >/dev/null 2>&1 && \
   systemctl list-unit-files irqbalance.service 2>/dev/null | grep -q '^irqbalance'; then
  if systemctl is-active --quiet irqbalance; then echo "systemd active"
  else echo "systemd inactive"; fi
elif [ -x /etc/init.d/irqbalance ]; then
  if pgrep -x irqbalance >/dev/null 2>&1; then echo "sysv active"; else echo "sysv inactive"; fi
elif pgrep -x irqbalance >/dev/null 2>&1; then echo "process active"
elif command -v irqbalance >/dev/null 2>&1; then echo "process inactive"
else echo "absent"; fi
"""
# The NIC's MSI vectors, else the /proc/interrupts lines whose device name is the
# interface or starts with "<nic>-" / "<nic>:" (eth0-TxRx-0): a substring match would
# also catch unrelated devices ("lo" in "floppy").
_NIC_IRQS = r"""
msi="$2/class/net/$1/device/msi_irqs"
if [ -d "$msi" ]; then ls "$msi"
else awk -v n="$1" '{
  irq = $1; sub(":", "", irq); if (irq !~ /^[0-9]+$/) next
  for (i = 2; i <= NF; i++) { f = $i; sub(/,$/, "", f)
    if (f == n || index(f, n "-") == 1 || index(f, n ":") == 1) { print irq; next } }
}' "$3/interrupts"; fi
"""
_READ_AFFINITY = r"""
proc=$1; shift
for i in "$@"; do printf '%s %s\n' "$i" "$(cat "$proc/irq/$i/smp_affinity_list" 2>/dev/null)"; done
"""
_WRITE_AFFINITY = r"""
proc=$1; shift
while [ $# -ge 2 ]; do
  printf '%s\n' "$2" > "$proc/irq/$1/smp_affinity_list" 2>/dev/null || echo "failed $1"
  shift 2
done
"""


@dataclass
class PinState:
    """What pinning changed in one guest, to be restored."""

    guest: str
    cpus: str
    irqbalance: str = "untouched"  # absent | untouched | stopped:<systemd|sysv|process>
    irq_affinity: dict[str, str] = field(default_factory=dict)  # irq -> previous list
    restored: bool = False


def resolve_cpus(guest: Guest, pin: PinSpec, sys_root: str = "/sys") -> str:
    """The CPU list to pin to: given, or that of the NUMA node as the guest reports it."""
    if pin.cpus is not None:
        return pin.cpus
    path = f"{sys_root}/devices/system/node/node{pin.numa_node}/cpulist"
    res = guest.run(["cat", path], check=False, timeout=30)
    text = res.stdout.strip()
    if res.status != 0 or not text:
        raise GuestError(guest.name, f"pin.numa_node {pin.numa_node}: no such NUMA node ({path})")
    parse_cpu_list(text)
    return text


def cpus_for(pin: PinSpec, cpus: str, index_on_guest: int) -> str:
    """The CPUs of the n-th pinned process on a guest (``spread``: one CPU each)."""
    if not pin.spread:
        return cpus
    cpu_ids = parse_cpu_list(cpus)
    return str(cpu_ids[index_on_guest % len(cpu_ids)])


def taskset_prefix(cpus: str) -> list[str]:
    return ["taskset", "-c", cpus]


def _sudo(guest: Guest) -> list[str]:
    uid = guest.run(["id", "-u"], timeout=30).stdout.strip()
    return [] if uid == "0" else ["sudo", "-n"]


def apply(
    guest: Guest, pin: PinSpec, cpus: str, log: Log, *,
    proc_root: str = "/proc", sys_root: str = "/sys",
) -> PinState:
    """Stop irqbalance and pin the NIC's IRQs as asked; returns what to restore.

    On a failure half-way the partial state is restored before the error is raised.
    """
    state = PinState(guest.name, cpus)
    try:
        if pin.stop_irqbalance:
            _stop_irqbalance(guest, state, log)
        if pin.irqs:
            assert pin.nic is not None  # checked by PinSpec
            _pin_irqs(guest, pin.nic, cpus, state, log, proc_root, sys_root)
    except BaseException:
        restore(guest, state, log, proc_root=proc_root)
        raise
    return state


def _stop_irqbalance(guest: Guest, state: PinState, log: Log) -> None:
    found = guest.run(["sh", "-c", _IRQBALANCE_STATE], timeout=30).stdout.split()
    kind = found[0] if found else "absent"
    if kind == "absent":
        state.irqbalance = "absent"
        log("redis_pin_irqbalance", level="warning", guest=guest.name, action="skipped",
            reason="irqbalance is not installed in the guest: nothing to stop")
        return
    if found[1:] != ["active"]:
        log("redis_pin_irqbalance", guest=guest.name, action="none", reason="not running")
        return
    cmd = {
        "systemd": ["systemctl", "stop", "irqbalance"],
        "sysv": ["/etc/init.d/irqbalance", "stop"],
        "process": ["pkill", "-x", "irqbalance"],
    }[kind]
    res = guest.run([*_sudo(guest), *cmd], check=False, timeout=60)
    if res.status != 0:
        raise GuestError(guest.name, f"cannot stop irqbalance ({' '.join(cmd)}): "
                         f"{(res.stderr or res.stdout).strip()[-300:]} (needs root or sudo -n)")
    state.irqbalance = f"stopped:{kind}"
    log("redis_pin_irqbalance", guest=guest.name, action="stopped", how=kind)


def nic_irqs(guest: Guest, nic: str, proc_root: str = "/proc", sys_root: str = "/sys") -> list[str]:
    out = guest.run(["sh", "-c", _NIC_IRQS, "sh", nic, sys_root, proc_root], timeout=30)
    return [w for w in out.stdout.split() if w.isdigit()]


def _pin_irqs(
    guest: Guest, nic: str, cpus: str, state: PinState, log: Log, proc_root: str, sys_root: str
) -> None:
    irqs = nic_irqs(guest, nic, proc_root, sys_root)
    if not irqs:
        log("redis_pin_irqs", level="warning", guest=guest.name, nic=nic, action="skipped",
            reason=f"no interrupts found for {nic} (loopback and some virtual NICs have none)")
        return
    state.irq_affinity = read_affinity(guest, irqs, proc_root)
    failed = write_affinity(guest, {irq: cpus for irq in irqs}, proc_root)
    log("redis_pin_irqs", guest=guest.name, nic=nic, cpus=cpus, irqs=irqs,
        previous=state.irq_affinity, failed=failed)


def read_affinity(guest: Guest, irqs: list[str], proc_root: str = "/proc") -> dict[str, str]:
    out = guest.run(["sh", "-c", _READ_AFFINITY, "sh", proc_root, *irqs], timeout=30).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        irq, _, value = line.partition(" ")
        if irq and value.strip():
            found[irq] = value.strip()
    return found


def write_affinity(guest: Guest, values: dict[str, str], proc_root: str = "/proc") -> list[str]:
    """Write smp_affinity_list of each IRQ; returns the IRQs the kernel refused."""
    if not values:
        return []
    pairs = [x for irq, cpus in values.items() for x in (irq, cpus)]
    argv = [*_sudo(guest), "sh", "-c", _WRITE_AFFINITY, "sh", proc_root, *pairs]
    out = guest.run(argv, timeout=60).stdout
    return [ln.split()[1] for ln in out.splitlines() if ln.startswith("failed ")]


def restore(guest: Guest, state: PinState, log: Log, *, proc_root: str = "/proc") -> None:
    """Put back IRQ affinities and irqbalance; safe to call twice."""
    if state.restored:
        return
    errors: list[str] = []
    if state.irq_affinity:
        try:
            failed = write_affinity(guest, state.irq_affinity, proc_root)
            if failed:
                errors.append(f"IRQ affinity not restored for {', '.join(failed)}")
        except GuestError as exc:
            errors.append(str(exc))
    if state.irqbalance.startswith("stopped:"):
        kind = state.irqbalance.split(":", 1)[1]
        cmd = {
            "systemd": ["systemctl", "start", "irqbalance"],
            "sysv": ["/etc/init.d/irqbalance", "start"],
            "process": ["irqbalance"],
        }[kind]
        try:
            res = guest.run([*_sudo(guest), *cmd], check=False, timeout=60)
            if res.status != 0:
                errors.append(f"irqbalance not restarted: {(res.stderr or res.stdout).strip()}")
        except GuestError as exc:
            errors.append(str(exc))
    state.restored = True
    log("redis_pin_restored", level="error" if errors else "info", guest=guest.name,
        irqs=sorted(state.irq_affinity), irqbalance=state.irqbalance, errors=errors)
    if errors:
        raise GuestError(guest.name, "pinning not fully restored: " + "; ".join(errors))


_GROUP_AFFINITY = r"""
for p in $(ps -e -o pid= -o pgid= | awk -v g="$1" '$2 == g { print $1 }'); do
  c=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$p/status" 2>/dev/null)
  printf '%s %s %s
' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)" "$c"
done
"""


def group_affinity(guest: Guest, pgid: int) -> dict[str, str]:
    """``"<pid> <command>"`` → Cpus_allowed_list of every process in a process group.

    The group also holds vbench's own sh wrapper (not pinned): the command tells them
    apart.
    """
    out = guest.run(["sh", "-c", _GROUP_AFFINITY, "sh", str(pgid)], timeout=30).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit():
            found[f"{parts[0]} {parts[1]}"] = parts[2]
    return found
