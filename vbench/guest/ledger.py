"""The guest ledger: which guests a run reached and which process groups it started on
them, appended to ``<run dir>/guest-processes.jsonl`` as it happens.

It is what ``vbench cleanup RUN`` needs after a ``kill -9`` of the controller: the
address of every guest the run reached (a VM's address is known only once provisioning
gave it one) and, per guest, the process groups to stop. One JSON object per line::

    {"ts": .., "event": "guest", "guest": "web-1", "address": "10.0.0.7", "port": 22,
     "workdir": "/tmp/vbench"}
    {"ts": .., "event": "started", "guest": "web-1", "pgid": 4711, "start": 123456,
     "command": "fio"}

``start`` is the group leader's start time (clock ticks since the guest booted, field 22
of ``/proc/PID/stat``; None where the guest has no /proc): a group is signalled only
while its leader is that very process, so a pid the guest has reused since is left
alone. Commands are named by their program only (their arguments may hold secrets).
A line is written before the call that needs it returns, so a process killed at any
moment loses at most the line being written (a torn last line is ignored on reading).
"""

from __future__ import annotations

import json
import posixpath
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vbench.guest.spec import GuestSpec

LEDGER_FILE = "guest-processes.jsonl"


@dataclass(frozen=True)
class RecordedGuest:
    """A guest as the run reached it, with the process groups it started there."""

    name: str
    address: str | None = None
    port: int | None = None
    workdir: str | None = None
    groups: tuple[tuple[int, int | None], ...] = field(default=())  # (pgid, leader start)


class GuestLedger:
    """Appends to a run's guest ledger from any thread (a :class:`GuestRecorder`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._reached: set[str] = set()

    @classmethod
    def in_run_dir(cls, run_dir: Path) -> GuestLedger:
        return cls(Path(run_dir) / LEDGER_FILE)

    def reached(self, spec: GuestSpec) -> None:
        """The guest's address as connected to (once per guest name)."""
        with self._lock:
            if spec.name in self._reached:
                return
            self._reached.add(spec.name)
        self._write("guest", guest=spec.name, address=spec.address, port=spec.port,
                    workdir=spec.workdir)

    def started(
        self, spec: GuestSpec, pgid: int, start: int | None, argv: Sequence[str]
    ) -> None:
        self.reached(spec)
        command = posixpath.basename(str(argv[0])) if argv else ""
        self._write("started", guest=spec.name, pgid=int(pgid), start=start, command=command)

    def _write(self, event: str, **fields: Any) -> None:
        line = json.dumps({"ts": round(time.time(), 3), "event": event, **fields},
                          sort_keys=True) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)


def read_ledger(run_dir: Path) -> dict[str, RecordedGuest]:
    """Every guest the ledger of ``run_dir`` names, with its recorded groups (empty
    when the run has no ledger)."""
    try:
        lines = (Path(run_dir) / LEDGER_FILE).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    guests: dict[str, RecordedGuest] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn line of a killed process
        if not isinstance(entry, dict) or not isinstance(entry.get("guest"), str):
            continue
        name = entry["guest"]
        cur = guests.get(name, RecordedGuest(name))
        if entry.get("event") == "guest":
            port = entry.get("port")
            cur = RecordedGuest(
                name,
                str(entry.get("address") or "") or None,
                port if isinstance(port, int) else None,
                str(entry.get("workdir") or "") or None,
                cur.groups,
            )
        elif entry.get("event") == "started" and _is_int(entry.get("pgid")):
            start = entry.get("start")
            group = (int(entry["pgid"]), int(start) if _is_int(start) else None)
            cur = RecordedGuest(cur.name, cur.address, cur.port, cur.workdir,
                                (*cur.groups, group))
        guests[name] = cur
    return guests


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
