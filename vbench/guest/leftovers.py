"""What a killed controller left running in its guests, found and removed.

A run keeps everything it starts in a guest under ``<workdir>/<run_id>``: fio's job
files, redis' and nginx's configs, the databases of the cloudstone tier. After ``kill -9``
of the controller nobody stops those processes (only their own ``timeout``), so
``vbench cleanup RUN`` stops them in two ways: the process groups the run recorded when
it started them (its guest ledger, :mod:`vbench.guest.ledger`; a group only while its
leader is still the process that was started), and every process whose command line
names that directory or whose working directory lies in it (with its process group).
Then it removes the directory. The directory travels to the guest on stdin, never in a
shell string: the scan script is fixed text, and no process of the scan itself names
the directory.

Static guests are the lab's nodes; the guests of `vm:` groups are reached at the
address the ledger recorded, unless their VM is already gone.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vbench.config.lab import Lab
from vbench.errors import GuestError, VbenchError
from vbench.guest import shell
from vbench.guest.host import Guest
from vbench.guest.labspec import guest_spec, reached_guest_spec
from vbench.guest.ledger import RecordedGuest, read_ledger
from vbench.guest.spec import GuestSpec

# new_run_id's format (results.rundir): a run id is a path component of nothing else.
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
KILL_GRACE = 5.0

# Prints "pid pgid" for every process whose cwd is the directory read from stdin (or
# below it) or one of whose arguments names it. `grep -f -` takes the directory as a
# pattern from stdin and awk reads it from the environment, so no scan process carries
# it in its own command line (and none matches itself).
SCAN = r"""
IFS= read -r d || exit 2
case "$d" in /?*) ;; *) exit 2 ;; esac
export d
{
  ls -l /proc/[0-9]*/cwd 2>/dev/null | awk '
    BEGIN { d = ENVIRON["d"] }
    { i = index($0, " -> "); if (!i) next
      t = substr($0, i + 4)
      if (t != d && t != d " (deleted)" && substr(t, 1, length(d) + 1) != d "/") next
      n = split(substr($0, 1, i - 1), a, "/"); print a[n - 1] }'
  printf '%s\n' "$d" | grep -laF -f - /proc/[0-9]*/cmdline 2>/dev/null |
  while IFS= read -r f; do
    p=${f#/proc/}; p=${p%/cmdline}
    tr '\000' '\n' <"$f" 2>/dev/null | awk -v p="$p" '
      BEGIN { d = ENVIRON["d"]; n = length(d) }
      index($0, d "/") || (length($0) >= n && substr($0, length($0) - n + 1) == d) {
        print p; exit }'
  done
} | sort -un | while IFS= read -r p; do
  [ "$p" = "$$" ] && continue
  s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
  s=${s##*) }
  set -- $s
  echo "$p $3"
done
"""


# Reads "PGID START" lines from stdin and prints each PGID whose leader still runs (not a
# zombie), still leads its group and started at START (field 22 of /proc/PID/stat): the
# very process the run started, not one that got its number since.
VERIFY = r"""
while read -r g t; do
  case "$g$t" in ''|*[!0-9]*) continue ;; esac
  s=$(cat "/proc/$g/stat" 2>/dev/null) || continue
  s=${s##*) }
  set -- $s
  [ "$1" != Z ] && [ "$3" = "$g" ] && [ "${20}" = "$t" ] && echo "$g"
done
exit 0
"""


@dataclass(frozen=True)
class GuestLeftovers:
    """What cleanup did in one guest: ``line`` is the report, ``ok`` False on a failure."""

    guest: str
    line: str
    ok: bool


def static_guests(run_dir: Path, lab: Lab) -> tuple[list[str], list[str]]:
    """(static guest names, VM guest names) of the run recorded in ``run_dir``.

    A group with ``vm:`` in a lab with vCenters is VMs (destroyed with the run, or
    existing VMs reached through vCenter): their names are not lab nodes."""
    plan = json.loads((run_dir / "plan.json").read_text(encoding="utf-8"))
    scenario_file = run_dir / "scenario.yaml"
    topology: Mapping[str, Any] = {}
    if scenario_file.is_file():
        topology = (yaml.safe_load(scenario_file.read_text(encoding="utf-8")) or {}).get(
            "topology"
        ) or {}
    static: dict[str, None] = {}
    vms: dict[str, None] = {}
    for group, names in (plan.get("groups") or {}).items():
        is_vm = bool(lab.vcenters) and isinstance(topology.get(group), Mapping) and bool(
            topology[group].get("vm")
        )
        for name in names:
            (vms if is_vm else static).setdefault(str(name), None)
    return [n for n in static if n not in vms], list(vms)


def recorded_workdir(run_dir: Path, name: str) -> str | None:
    """The workdir the run used for node ``name``, from its recorded lab.yaml."""
    lab_file = run_dir / "lab.yaml"
    if not lab_file.is_file():
        return None
    doc = yaml.safe_load(lab_file.read_text(encoding="utf-8")) or {}
    node = (doc.get("nodes") or {}).get(name) or {}
    workdir = node.get("workdir") or (doc.get("defaults") or {}).get("workdir")
    return str(workdir) if workdir else None


def clean_guests(
    lab: Lab, run_id: str, run_dir: Path, vm_gone: Callable[[str], bool] | None = None
) -> list[GuestLeftovers]:
    """Kill the run's processes and remove its scratch directory in each guest it used:
    the lab nodes of its plan, and the guests its ledger recorded (the VMs of `vm:`
    groups; ``vm_gone(guest)`` says a guest's VM was destroyed, so nothing is left)."""
    if not RUN_ID.match(run_id):
        # Not a path component vbench made: nothing is killed or removed on its account.
        why = f"guests: skipped, run id {run_id!r} is not of the form YYYYMMDD-HHMMSS-xxxxxxxx"
        return [GuestLeftovers("-", why, False)]
    recorded = read_ledger(run_dir)
    static: list[str] = []
    vms: list[str] = []
    if (run_dir / "plan.json").is_file():
        try:
            static, vms = static_guests(run_dir, lab)
        except (OSError, ValueError, yaml.YAMLError) as exc:  # a damaged run directory
            return [GuestLeftovers("-", f"guests: cannot read {run_dir}/plan.json or "
                                        f"scenario.yaml: {exc}", False)]  # fmt: skip
    # Without a plan the run ended before its first trial: it started nothing, except in
    # guests its ledger names.
    out = []
    for name in static:
        if name not in lab.nodes:
            out.append(GuestLeftovers(name, f"guest {name}: not a node of this lab", False))
            continue
        workdir = recorded_workdir(run_dir, name)
        out.append(_clean_one(lambda n=name: guest_spec(lab, n), name, run_id, workdir,
                              recorded.get(name)))
    for name in dict.fromkeys([*vms, *(n for n in recorded if n not in static)]):
        rec = recorded.get(name)
        if vm_gone is not None and vm_gone(name):
            out.append(GuestLeftovers(name, f"guest {name}: nothing left (its VM is gone)", True))
        elif rec is None or rec.address is None:
            out.append(GuestLeftovers(name, f"guest {name}: skipped (a VM the run never "
                                            "reached)", True))  # fmt: skip
        else:
            address, port = rec.address, rec.port
            out.append(_clean_one(lambda n=name, a=address, p=port: reached_guest_spec(
                lab, n, a, p), name, run_id, rec.workdir, rec))
    return out


def _clean_one(
    make_spec: Callable[[], GuestSpec],
    name: str,
    run_id: str,
    workdir: str | None,
    recorded: RecordedGuest | None,
) -> GuestLeftovers:
    try:
        spec = make_spec()
    except VbenchError as exc:
        return GuestLeftovers(name, f"guest {name}: {exc}", False)
    root = (workdir or spec.workdir).rstrip("/")
    path = f"{root}/{run_id}"
    if not root.startswith("/") or _CONTROL.search(root):
        return GuestLeftovers(name, f"guest {name}: workdir {root!r} is not a plain path", False)
    if workdir and workdir != spec.workdir:
        spec = dataclasses.replace(spec, workdir=workdir)  # remove() stays inside it
    groups = recorded.groups if recorded is not None else ()
    try:
        with Guest(spec) as guest:
            killed = kill_leftovers(guest, path, groups)
            existed = guest.run(["test", "-e", path], check=False).status == 0
            if existed:
                guest.remove(path)
    except GuestError as exc:
        return GuestLeftovers(name, f"guest {exc}", False)
    if not killed and not existed:
        return GuestLeftovers(name, f"guest {name}: nothing left", True)
    removed = f"removed {path}" if existed else "no directory"
    return GuestLeftovers(name, f"guest {name}: killed {killed}, {removed}", True)


def find_leftovers(guest: Guest, path: str) -> dict[int, int]:
    """pid -> process group of every process of the guest that lives under ``path``."""
    res = guest.run_script(SCAN, stdin=path + "\n", timeout=60)
    found: dict[int, int] = {}
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            found[int(parts[0])] = int(parts[1])
    return found


def recorded_alive(guest: Guest, groups: Sequence[tuple[int, int | None]]) -> set[int]:
    """The recorded process groups whose leader is still the process the run started
    (a group recorded without a start time is never trusted: the scan decides)."""
    lines = "".join(f"{g} {t}\n" for g, t in groups if t is not None and g > 1)
    if not lines:
        return set()
    out = guest.run_script(VERIFY, stdin=lines, timeout=60).stdout.split()
    return {int(x) for x in out if x.isdigit()}


def kill_leftovers(
    guest: Guest, path: str, groups: Sequence[tuple[int, int | None]] = ()
) -> int:
    """Kill what lives under ``path`` and the recorded ``groups`` (pgid, leader start)
    still led by the process started, with their process groups; the number of
    processes and groups found."""
    found = find_leftovers(guest, path)
    recorded = recorded_alive(guest, groups)
    if not found and not recorded:
        return 0
    # A group id of 0 or 1 is never one of ours: only the process itself is signalled.
    targets = set(found) | {g for g in found.values() if g > 1} | recorded
    guest.run_control(shell.kill_groups(sorted(targets), KILL_GRACE), KILL_GRACE)
    left = set(find_leftovers(guest, path)) | recorded_alive(guest, groups)
    if left:
        pids = " ".join(str(p) for p in sorted(left))
        raise GuestError(guest.target, f"{len(left)} processes still running ({pids})")
    return len(set(found) | recorded)
