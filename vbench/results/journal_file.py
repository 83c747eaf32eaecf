"""An append-only JSON-lines journal in a run directory: one record per line, written
and fsynced before the action it announces, so a process killed at any instant leaves
what `vbench cleanup` needs. A line cut by a kill is skipped on reading (its action was
announced by the line before). Used by the lab hooks (engine/hooks.py) and the lab
tuning (vsphere/hygiene_tune.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any


class AppendJournal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({**record, "time": time.time()}) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill: its action was journaled before
        return out

    def last_in(self, states: Collection[str]) -> list[dict[str, Any]]:
        """The last record of every ``id`` whose state is one of ``states``, oldest first."""
        last: dict[str, dict[str, Any]] = {}
        for rec in self.read():
            last[rec["id"]] = rec
        return [r for r in last.values() if r["state"] in states]
