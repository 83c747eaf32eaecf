"""The provisioning journal: what a run intends to create, written before each create.

One JSON object per line in ``<run dir>/vsphere-journal.jsonl``, flushed and fsynced
before the vCenter call it announces, so a process killed at any instant leaves enough
for ``vbench cleanup RUN_ID`` to finish the job::

    {"ts": .., "event": "open", "run_id": .., "pid": .., "host": ..}
    {"ts": .., "event": "intent", "vcenter": "vc1", "name": "vb-<run>-web-1", "action": "clone",
     "source": "tmpl", "keep": false}
    {"ts": .., "event": "started", "vcenter": "vc1", "name": .., "task": "task-12"}
    {"ts": .., "event": "created", "vcenter": "vc1", "name": .., "moid": "vm-40"}
    {"ts": .., "event": "call", "vcenter": "vc1", "name": .., "op": "power on"}
    {"ts": .., "event": "task", "vcenter": "vc1", "name": .., "op": "power on", "task": "task-51"}
    {"ts": .., "event": "destroyed" | "missing" | "kept" | "failed", "vcenter": .., "name": ..}

An object of another kind (a snapshot, a content library, a library item, a
subscription…) carries ``"kind"`` on every entry about it (no ``kind`` means a VM) and
what its destroyer needs in ``"data"``; ``created`` names it by ``moid`` (a managed
object id, or the REST id of a REST-side object). See :mod:`vbench.vsphere.resources`.

``call``/``task`` announce each later step on a created VM (reconfigure, customize, power
on) and the task vCenter returned for it. Cleanup waits for those tasks — and for a call
that was in flight when the process died — before destroying the VM: vCenter refuses to
destroy a VM with a task in progress, and a call still travelling would meet a VM that
is gone.

Reading is pure (:func:`pending`): an object is pending until it is destroyed, found
missing or deliberately kept.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from vbench.errors import StoreError

JOURNAL_FILE = "vsphere-journal.jsonl"
FINAL = frozenset({"destroyed", "missing", "kept"})
VM_KIND = "vm"


@dataclass(frozen=True)
class JournalItem:
    """One object the run intended to create, and what is known of it."""

    vcenter: str
    name: str
    action: str
    moid: str | None = None
    task: str | None = None
    keep: bool = False
    state: str = "intent"  # the last event seen for it
    since: float | None = None  # when the intent was written
    step_tasks: tuple[str, ...] = ()  # tasks of later steps on the created VM
    open_call: float | None = None  # when a step call was made that returned no task yet
    kind: str = VM_KIND  # what it is: "vm", "snapshot", "library", … (a destroyer per kind)
    data: Mapping[str, Any] = field(default_factory=dict, compare=False)  # for its destroyer


def parse_lines(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Journal lines -> entries; a torn last line (killed mid-write) is ignored."""
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and "event" in entry:
            out.append(entry)
    return out


def items(entries: Iterable[Mapping[str, Any]]) -> list[JournalItem]:
    """Every intended object in intent order, folded with what happened to it later."""
    by_key: dict[tuple[str, str, str], JournalItem] = {}
    for e in entries:
        ev, vc, name = e.get("event"), e.get("vcenter"), e.get("name")
        if not vc or not name:
            continue
        kind = str(e.get("kind") or VM_KIND)
        key = (str(vc), kind, str(name))
        cur = by_key.get(key)
        if ev == "intent":
            ts = e.get("ts")
            data = e.get("data")
            # An object made again under the same name (a VM registered back) is as new
            # as its latest intent: cleanup goes newest first, so it must move to the end.
            by_key.pop(key, None)
            by_key[key] = JournalItem(
                str(vc),
                str(name),
                str(e.get("action", "clone")),
                keep=bool(e.get("keep")),
                since=float(ts) if isinstance(ts, int | float) else None,
                kind=kind,
                data=dict(data) if isinstance(data, dict) else {},
            )
            continue
        if cur is None:
            continue
        by_key[key] = _fold(cur, e)
    return list(by_key.values())


def _fold(cur: JournalItem, e: Mapping[str, Any]) -> JournalItem:
    """``cur`` after one more event about it."""
    ev = str(e.get("event"))
    if ev == "call":
        ts = e.get("ts")
        return replace(cur, open_call=float(ts) if isinstance(ts, int | float) else time.time())
    if ev == "task":
        task = (str(e["task"]),) if e.get("task") else ()
        return replace(cur, open_call=None, step_tasks=cur.step_tasks + task)
    return replace(
        cur,
        moid=str(e["moid"]) if e.get("moid") else cur.moid,
        task=str(e["task"]) if e.get("task") else cur.task,
        state=ev,
    )


def pending(entries: Iterable[Mapping[str, Any]]) -> list[JournalItem]:
    """Objects still to clean up, in the order they were intended."""
    return [i for i in items(entries) if i.state not in FINAL]


def opened_by(entries: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for e in entries:
        if e.get("event") == "open":
            return e
    return None


class Journal:
    """Appends entries to a run's journal file, durably, from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def in_run_dir(cls, run_dir: Path) -> Self:
        return cls(run_dir / JOURNAL_FILE)

    def open(self, run_id: str) -> None:
        self.write("open", run_id=run_id, pid=os.getpid(), host=socket.gethostname())

    def write(self, event: str, *, durable: bool = True, **fields: Any) -> None:
        """Append one entry. ``durable`` also survives a machine crash (fsync); without
        it the line survives the process being killed, which is all a step needs."""
        entry = {"ts": round(time.time(), 3), "event": event, **fields}
        line = json.dumps(entry, sort_keys=True, default=str) + "\n"
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line)
                    f.flush()
                    if durable:
                        os.fsync(f.fileno())
            except OSError as exc:
                raise StoreError(f"cannot write the journal {self.path}: {exc}") from None

    def read(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return parse_lines(text.splitlines())


class IndexedJournal(Journal):
    """A journal that also remembers, in memory, what it wrote about each object: the
    running process asks about one object (is it ours, is it still there?) without
    reading the whole file back, however many objects a workload creates."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._index_lock = threading.Lock()

    def write(self, event: str, *, durable: bool = True, **fields: Any) -> None:
        super().write(event, durable=durable, **fields)
        vc, name = fields.get("vcenter"), fields.get("name")
        if vc and name:
            key = (str(vc), str(fields.get("kind") or VM_KIND), str(name))
            entry = {"ts": round(time.time(), 3), "event": event, **fields}
            with self._index_lock:
                self._by_key.setdefault(key, []).append(entry)

    def item(self, vcenter: str, kind: str, name: str) -> JournalItem | None:
        """What this process journaled about one object (None: nothing)."""
        with self._index_lock:
            entries = list(self._by_key.get((vcenter, kind, name), ()))
        found = items(entries)
        return found[0] if found else None
