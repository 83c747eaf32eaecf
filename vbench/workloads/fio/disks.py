"""``filename: disk:N``: a data disk named by its index, resolved to a device per guest.

On a cloned VM the disks of ``vm.disks`` appear in the guest as ``/dev/sdb``, ``/dev/sdc``
… in an order vSphere does not promise (controllers, PCI slots and the kernel's probing
decide it). The one stable link between a virtual disk and a guest device is the disk's
uuid (``backing.uuid`` of the VirtualDisk): with ``disk.EnableUUID = TRUE`` in the VM's
extraConfig (vbench sets it on clones with data disks) the guest sees it as the disk's
WWN and serial number, ``6000C29a-…`` becoming ``0x6000c29a…``. So provisioning records
each added disk's uuid in ``vm.disks`` order (count expanded) and here, before the trial,
the guest's ``lsblk`` says which device carries it. A lab node may list its data disks
(``nodes.NAME.disks``) as device paths instead.

``filename`` holds fio's ``:``-separated list; an entry is an absolute path or ``disk:N``
(N from 1), e.g. ``disk:1:disk:2``. Everything but the guest call is pure and unit-tested.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vbench.errors import GuestError
from vbench.lazy import lazy_module

if TYPE_CHECKING:
    import json

    from vbench.guest.ssh import Guest
    from vbench.workloads.base import PlannedGuest
else:
    json = lazy_module("json")  # a guest's disk list, read at run time

PREFIX = "disk"
MAX_INDEX = 240  # 4 controllers × 60 disks: more than a VM can have
_INDEX = re.compile(r"[1-9][0-9]{0,2}")
_HEX = re.compile(r"[0-9a-f]+")
# NAME as a full path; -d: whole disks, not their partitions; -J: values never split.
LSBLK = ["lsblk", "-J", "-d", "-p", "-o", "NAME,WWN,SERIAL,TYPE,SIZE"]
NO_DISKS = ("needs a cloned VM with vm.disks, or a lab node that lists its data disks "
            "(nodes.<name>.disks)")


@dataclass(frozen=True)
class DiskRef:
    """``disk:N`` in a filename (N counts from 1)."""

    index: int

    def __str__(self) -> str:
        return f"{PREFIX}:{self.index}"


Entry = str | DiskRef


def split_entries(filename: str) -> list[Entry]:
    """fio's ``filename`` list (``:`` separates, ``\\:`` is a colon) with each ``disk:N``
    as a :class:`DiskRef`; ValueError for a ``disk:`` not followed by a number."""
    parts, cur, escaped, i = [], "", False, 0
    while i < len(filename):
        if filename[i] == "\\" and filename[i + 1:i + 2] == ":":
            cur, escaped, i = cur + ":", True, i + 2
            continue
        if filename[i] == ":":
            parts.append((cur, escaped))
            cur, escaped = "", False
        else:
            cur += filename[i]
        i += 1
    parts.append((cur, escaped))
    out: list[Entry] = []
    k = 0
    while k < len(parts):
        text, was_escaped = parts[k]
        if text == PREFIX and not was_escaped:
            number = parts[k + 1][0] if k + 1 < len(parts) else ""
            if not _INDEX.fullmatch(number) or int(number) > MAX_INDEX:
                raise ValueError(f"{PREFIX}:{number} is not a data disk index (disk:1, disk:2 …)")
            out.append(DiskRef(int(number)))
            k += 2
            continue
        if text:
            out.append(text)
        k += 1
    return out


def check_filename(value: str) -> str:
    """``value`` when every entry is an absolute path or a ``disk:N`` named once."""
    entries = split_entries(value)
    if not entries:
        raise ValueError("filename names no file")
    for entry in entries:
        if isinstance(entry, str) and not entry.startswith("/"):
            raise ValueError(f"{entry!r}: each filename entry is an absolute path in the "
                             "guest (/dev/sdb) or a data disk index (disk:1)")
    refs = [e for e in entries if isinstance(e, DiskRef)]
    twice = sorted({str(r) for r in refs if refs.count(r) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} named twice")
    return value


def disk_refs(filename: str | None) -> list[DiskRef]:
    """The ``disk:N`` entries of ``filename`` (none when it names paths only)."""
    if filename is None:
        return []
    return [e for e in split_entries(filename) if isinstance(e, DiskRef)]


def join_paths(paths: Sequence[str]) -> str:
    """Paths as one fio ``filename`` value (a colon inside a path escaped)."""
    return ":".join(p.replace(":", "\\:") for p in paths)


def plan_problem(refs: Sequence[DiskRef], guest: PlannedGuest) -> str | None:
    """Why ``refs`` cannot name disks of ``guest`` as the lab provides it (pure)."""
    if not refs:
        return None
    top = max(refs, key=lambda r: r.index)
    if guest.kind == "lab node" and not guest.data_disks:
        return (f"{refs[0]} needs a cloned VM with vm.disks; {guest.name} is a lab node: "
                f"name its device, or list its data disks (nodes.{guest.name}.disks)")
    if guest.kind == "existing VM":
        return (f"{refs[0]} needs a cloned VM with vm.disks; {guest.name} is an existing VM "
                f"(group {guest.group}): name its device")
    if not guest.data_disks:
        return (f"{refs[0]} needs data disks: the VMs of group {guest.group} get none "
                "(add vm.disks)")
    if top.index > guest.data_disks:
        where = (f"vm.disks of group {guest.group}" if guest.kind == "clone"
                 else f"nodes.{guest.name}.disks")  # fmt: skip
        return f"{top}: {guest.name} has {guest.data_disks} data disk(s) ({where})"
    return None


# --- the guest's disks ------------------------------------------------------------------


@dataclass(frozen=True)
class BlockDevice:
    """One whole disk as ``lsblk -J -d -p -o NAME,WWN,SERIAL,TYPE,SIZE`` shows it."""

    name: str
    wwn: str | None
    serial: str | None
    type: str | None
    size: str | None = None

    def describe(self) -> str:
        ids = ", ".join(f"{k} {v}" for k, v in (("wwn", self.wwn), ("serial", self.serial)) if v)
        return f"{self.name} {self.size or ''}".strip() + (f" ({ids})" if ids else "")


def parse_lsblk(text: str) -> list[BlockDevice]:
    """The disks of lsblk's JSON (pure); ValueError when it is not that JSON."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"lsblk printed no JSON ({exc.msg})") from None
    rows = doc.get("blockdevices") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise ValueError("lsblk's JSON has no blockdevices list")
    out = []
    for row in rows:
        if not isinstance(row, dict) or not row.get("name"):
            continue
        name = str(row["name"])
        out.append(BlockDevice(
            name=name if name.startswith("/") else f"/dev/{name}",  # lsblk without -p
            wwn=_text(row.get("wwn")), serial=_text(row.get("serial")),
            type=_text(row.get("type")), size=_text(row.get("size")),
        ))  # fmt: skip
    return out


def _text(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def normal_id(value: str | None) -> str:
    """A disk identifier as bare lower-case hex: the VMDK uuid ``6000C29a-12…``, the WWN
    ``0x6000c29a12…`` (or ``naa.``/``eui.`` forms) and the serial all compare equal."""
    if not value:
        return ""
    text = value.strip().lower()
    for prefix in ("0x", "naa.", "eui."):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = text.replace("-", "").replace(" ", "")
    return text if _HEX.fullmatch(text) else ""


def find_uuid(uuid: str, devices: Sequence[BlockDevice]) -> BlockDevice | None:
    """The disk whose WWN or serial is ``uuid``; ValueError when more than one is. An
    older lsblk shows only the first 16 hex digits of a 32-digit WWN (udev's ID_WWN
    without its vendor extension): such a prefix counts only when one disk has it."""
    want = normal_id(uuid)
    if not want:
        return None
    disks = [d for d in devices if d.type in (None, "disk")]
    exact = [d for d in disks if want in (normal_id(d.wwn), normal_id(d.serial))]
    if len(exact) > 1:
        raise ValueError(f"{len(exact)} disks carry uuid {uuid} "
                         f"({', '.join(d.name for d in exact)})")  # fmt: skip
    if exact:
        return exact[0]
    short = [d for d in disks if len(normal_id(d.wwn)) == 16 and want.startswith(normal_id(d.wwn))]
    return short[0] if len(short) == 1 else None


@dataclass(frozen=True)
class Resolved:
    """What ``disk:N`` became in one guest (logged with the run)."""

    index: int
    device: str
    uuid: str | None  # None: a path the lab lists for the node

    def to_json(self) -> dict[str, object]:
        return {"disk": self.index, "device": self.device, "uuid": self.uuid}


def resolve(
    entries: Sequence[Entry], known: Sequence[str], devices: Sequence[BlockDevice] | None
) -> tuple[list[str], list[Resolved]]:
    """Each entry as a path in the guest (pure). ``known``: the guest's data disks in
    order (a VMware disk uuid, or a path its lab node lists); ``devices``: its lsblk
    disks (needed only for uuids). ValueError saying what is wrong."""
    paths: list[str] = []
    done: list[Resolved] = []
    for entry in entries:
        if isinstance(entry, str):
            paths.append(entry)
            continue
        if not known:
            raise ValueError(f"{entry} {NO_DISKS}; no data disks are known for this guest: "
                             "name its device")  # fmt: skip
        if entry.index > len(known):
            raise ValueError(f"{entry}: this guest has {len(known)} data disk(s) "
                             f"(disk:1 … disk:{len(known)})")  # fmt: skip
        ident = known[entry.index - 1]
        if ident.startswith("/"):
            paths.append(ident)
            done.append(Resolved(entry.index, ident, None))
            continue
        found = find_uuid(ident, devices or ())
        if found is None:
            seen = "; ".join(d.describe() for d in devices or () if d.type in (None, "disk"))
            raise ValueError(
                f"{entry} (virtual disk uuid {ident}) is not among the guest's disks "
                f"({seen or 'lsblk lists none'}): the VM needs disk.EnableUUID=TRUE from "
                "its power-on (vbench sets it on clones with vm.disks) and an lsblk that "
                "shows WWN and SERIAL")  # fmt: skip
        paths.append(found.name)
        done.append(Resolved(entry.index, found.name, ident))
    return paths, done


def resolve_in(guest: Guest, entries: Sequence[Entry]) -> tuple[list[str], list[Resolved]]:
    """:func:`resolve` for ``guest`` (its spec's data disks; lsblk asked only when a
    uuid is to be found); GuestError naming the guest."""
    known = guest.spec.data_disks
    devices: list[BlockDevice] | None = None
    wanted = [e for e in entries if isinstance(e, DiskRef)]
    if any(e.index <= len(known) and not known[e.index - 1].startswith("/") for e in wanted):
        res = guest.run(LSBLK, timeout=30, check=False)
        if res.status != 0:
            why = (res.stderr.strip().splitlines() or ["no output"])[-1]
            raise GuestError(guest.name, f"lsblk failed ({why}); it finds the device of "
                             f"{wanted[0]}")  # fmt: skip
        try:
            devices = parse_lsblk(res.stdout)
        except ValueError as exc:
            raise GuestError(guest.name, f"cannot read lsblk's disks: {exc}") from None
    try:
        return resolve(entries, known, devices)
    except ValueError as exc:
        raise GuestError(guest.name, str(exc)) from None
