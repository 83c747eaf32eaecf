"""Faban ``driver.log`` → records, phase marks and the final flat mix (pure, no I/O).

java.util.logging's simple format: a header line ``<date> <class> <method>`` then
``LEVEL: message`` (continuation lines belong to the message). The master logs
``Ramp up completed`` / ``Steady state completed`` / ``Ramp down completed``, which
date the steady-state window, and prints the matrix mix flattened to the operation mix
it should produce (``FlatMix`` … ``mix: a, b, …``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from vbench.errors import ParseError

_HEAD = re.compile(
    r"^(?P<when>[A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d{2}:\d{2} [AP]M)"
    r" (?P<cls>\S+) (?P<method>\S+)$"
)
_LEVEL = re.compile(
    r"^(?P<level>SEVERE|WARNING|INFO|CONFIG|FINE|FINER|FINEST|PRINT): ?(?P<msg>.*)$"
)
_PHASES = {"Ramp up completed": "ramp_up_end", "Steady state completed": "steady_end",
           "Ramp down completed": "ramp_down_end"}  # fmt: skip


@dataclass(frozen=True)
class LogRecord:
    when: datetime
    logger: str
    method: str
    level: str
    message: str


@dataclass(frozen=True)
class FabanDriverLog:
    records: tuple[LogRecord, ...]
    phases: dict[str, datetime]  # ramp_up_end, steady_end, ramp_down_end
    flat_mix: dict[str, float]  # operation → required fraction, as Faban computed it

    @property
    def steady_seconds(self) -> float | None:
        start, end = self.phases.get("ramp_up_end"), self.phases.get("steady_end")
        return (end - start).total_seconds() if start and end else None

    @property
    def problems(self) -> list[LogRecord]:
        return [r for r in self.records if r.level in ("SEVERE", "WARNING")]


def parse_driver_log(text: str, source: str = "<text>") -> FabanDriverLog:
    records: list[LogRecord] = []
    head: tuple[datetime, str, str] | None = None
    body: list[str] = []

    def flush() -> None:
        if head is None or not body:
            return
        m = _LEVEL.match(body[0])
        level, first = (m.group("level"), m.group("msg")) if m else ("?", body[0])
        records.append(LogRecord(*head, level, "\n".join([first, *body[1:]]).strip()))

    for line in re.split(r"\r\n|\r|\n", text.replace("\ufeff", "")):
        m = _HEAD.match(line.strip())
        if m:
            flush()
            when = datetime.strptime(m.group("when"), "%b %d, %Y %I:%M:%S %p")
            head, body = (when, m.group("cls"), m.group("method")), []
        elif head is not None:
            body.append(line)
    flush()
    if not records:
        raise ParseError(f"{source}: no java.util.logging records (not a Faban driver.log?)")
    phases = {key: r.when for r in records for text_, key in _PHASES.items() if r.message == text_}
    return FabanDriverLog(tuple(records), phases, _flat_mix(records, source))


def _flat_mix(records: list[LogRecord], source: str) -> dict[str, float]:
    for r in reversed(records):
        if not r.message.startswith("flatMix - after"):
            continue
        ops = re.search(r"^operations: (.*)$", r.message, re.M)
        mix = re.search(r"^mix: (.*)$", r.message, re.M)
        if not ops or not mix:
            raise ParseError(f"{source}: flatMix record without operations/mix lines")
        names = [n.strip() for n in ops.group(1).split(",")]
        values = [float(v) for v in mix.group(1).split(",")]
        if len(names) != len(values):
            raise ParseError(f"{source}: flatMix has {len(names)} operations, {len(values)} values")
        return dict(zip(names, values, strict=True))
    return {}
