"""The fio target a scenario names, checked in each guest before anything is written.

A ``filename`` that names a device is the most dangerous value in a storage scenario: a
typo or a guest whose disks enumerate in another order points fio at the wrong disk. So
before the trial vbench asks each guest what the path is: a path that is not there is
an error listing the guest's disks (never a file quietly created under ``/dev``); a block
device that holds a mounted file system or active swap — itself, a partition of it, or
a device built on it (LVM, dm-crypt, md) — is refused when the job writes. A regular
file, a new file in an existing folder, or a character device (``/dev/null``) is fine.

The check is one fixed script with the path as its argument (``sh -c SCRIPT - PATH``),
so the path never becomes shell text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.errors import GuestError

if TYPE_CHECKING:
    from vbench.guest.ssh import Guest

# Prints one of: "missing <parent-exists:0|1>", "dir", "file", "other",
# "block <dev>" followed by lsblk lines "<name> <mountpoint>" of the device and
# everything built on it; then "disks" and the guest's disks ("<name> <size>").
_SCRIPT = r"""
t=$1
if [ -b "$t" ]; then
  dev=$(readlink -f -- "$t")
  echo "block $dev"
  if command -v lsblk >/dev/null 2>&1; then
    lsblk -nrpo NAME,MOUNTPOINT -- "$dev" 2>/dev/null
  else
    grep -F -- "$dev" /proc/mounts /proc/swaps 2>/dev/null | awk '{print $1, "mounted"}'
  fi
elif [ -d "$t" ]; then echo dir
elif [ -f "$t" ]; then echo file
elif [ -e "$t" ]; then echo other
else
  p=$(dirname -- "$t")
  if [ -d "$p" ]; then echo "missing 1"; else echo "missing 0"; fi
fi
echo disks
if command -v lsblk >/dev/null 2>&1; then lsblk -dnrpo NAME,SIZE,TYPE 2>/dev/null; fi
"""


@dataclass(frozen=True)
class TargetState:
    kind: str  # block | file | dir | other | missing
    parent_exists: bool
    mounted: tuple[tuple[str, str], ...]  # (device, mount point or [SWAP])
    disks: tuple[str, ...]  # "name size" of the guest's disks, for messages


def parse_state(text: str) -> TargetState:
    """What the check script printed (pure)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = lines[0].split() if lines else ["missing", "0"]
    split = lines.index("disks") if "disks" in lines else len(lines)
    mounted: list[tuple[str, str]] = []
    if head[0] == "block":
        for line in lines[1:split]:
            name, _, where = line.partition(" ")
            if where.strip():
                mounted.append((name, where.strip().replace("\\x20", " ")))
    disks = tuple(" ".join(ln.split()[:2]) for ln in lines[split + 1:]
                  if ln.split()[-1:] == ["disk"])  # fmt: skip
    parent = head[0] != "missing" or (len(head) > 1 and head[1] == "1")
    return TargetState(head[0], parent, tuple(mounted), disks)


def problem(path: str, state: TargetState, writes: bool) -> str | None:
    """Why fio must not run against ``path`` in this state (pure); ``None`` when it may."""
    disks = f" (its disks: {', '.join(state.disks)})" if state.disks else ""
    if state.kind == "missing":
        if path.startswith("/dev/"):
            return f"fio filename {path} is not there{disks}"
        if not state.parent_exists:
            return f"fio filename {path}: its folder does not exist"
        return None  # fio creates the file
    if state.kind == "dir":
        return f"fio filename {path} is a folder (fio's `directory` option takes folders)"
    if state.kind == "block" and state.mounted and writes:
        used = ", ".join(f"{d} on {m}" if m != "[SWAP]" else f"{d} as swap"
                         for d, m in state.mounted)  # fmt: skip
        return (f"fio would write to {path}, which holds a file system in use ({used}); "
                "name an unused data disk")
    return None


def check(guest: Guest, paths: list[str], writes: bool) -> None:
    """Raise GuestError naming ``guest`` when one of ``paths`` must not be used."""
    for path in paths:
        res = guest.run(["sh", "-c", _SCRIPT, "vbench-target-check", path], timeout=30,
                        check=False)  # fmt: skip
        why = problem(path, parse_state(res.stdout), writes)
        if why:
            raise GuestError(guest.name, why)


def fio_paths(filename: str) -> list[str]:
    """fio's ``filename`` holds several files separated by ``:`` (``\\:`` is a colon)."""
    parts, cur, i = [], "", 0
    while i < len(filename):
        if filename[i] == "\\" and filename[i + 1:i + 2] == ":":
            cur, i = cur + ":", i + 2
            continue
        if filename[i] == ":":
            parts.append(cur)
            cur = ""
        else:
            cur += filename[i]
        i += 1
    return [p for p in [*parts, cur] if p]


def job_writes(rw: str, prepares: bool) -> bool:
    """Whether a job with this ``rw`` (and a prepare phase or not) writes to its target."""
    return prepares or rw not in ("read", "randread")
